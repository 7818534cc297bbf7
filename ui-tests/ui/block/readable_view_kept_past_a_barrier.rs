// A readable tile's view borrows the tile, and the barrier takes the tile by value: no read of
// one phase survives into the next, where the tile is written again.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i, j]| (i + j) as f32);
    let readable = block.sync(written);
    let view = readable.view();
    let tile = block.sync(readable);
    let _ = block.write(tile, |[i, j]| (view.extent(0) * i + j) as f32);
}

fn main() {}
