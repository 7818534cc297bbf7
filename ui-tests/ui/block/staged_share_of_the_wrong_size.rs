// A thread's staged share of a tile is the tile's elements over the block's threads: a 32 × 32
// tile over 256 threads is 4 each. Staging 3 would leave elements of the tile unwritten, which
// the next phase would read; the count is checked when the kernel is compiled.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tile32 = TileOf<f32, (Const<32>, Const<32>)>;

pub fn body(block: Block<'_, 256, Tile32>) {
    let (mut block, tile) = block.split();
    let staged = block.each(|lane| lane.stage::<Tile32>().read::<3>(|[i, j]| (i + j) as f32));
    let written = block.write_staged(tile, staged);
    let _readable = block.sync(written);
}

fn main() {
    // Compiled, not only checked: the count is a constant of the compiled kernel.
    let _ = body as fn(Block<'static, 256, Tile32>);
}
