// A tile's extents are those its `Block` declares (the block-shared memory is sized from
// them): a tile of other extents is another type.
use dlmd::kernel::Block;
use dlmd::kernel::block::{Tile, TileOf};
use dlmd::{Const, LayoutRight};

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

use dlmd::kernel::block::Writable;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (_block, tile): (_, Tile<'_, f32, (Const<32>, Const<32>), LayoutRight, Writable>) = block.split();
    let _ = tile;
}

fn main() {}
