// A tile lives in block-shared memory, which ends with the block: it cannot outlive the
// kernel's body that made it.
use dlmd::kernel::Block;
use dlmd::kernel::block::{Tile, TileOf};
use dlmd::{Const, LayoutRight};

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

use dlmd::kernel::block::Writable;

pub fn body(block: Block<'_, 256, Tiles>) -> Tile<'static, f32, (Const<32>, Const<33>), LayoutRight, Writable> {
    let (_block, tile) = block.split();
    tile
}

fn main() {}
