// A tile staged in runs is cut into runs of `G` along the dimension the partition deals
// fastest: `G` must divide that extent. A 6 × 64 tile read in runs of 3 along its rows would
// have runs crossing from one row into the next (or past the tile); refused when the kernel
// is compiled.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tile = TileOf<f32, (Const<6>, Const<64>)>;

pub fn body(block: Block<'_, 32, Tile>) {
    let (mut block, tile) = block.split();
    // 4 runs of 3 for each of 32 threads: the tile's 384 elements, but 64 is not runs of 3.
    let staged = block.each(|lane| lane.stage::<Tile>().read_runs::<4, 3>(|[i, j]| [(i + j) as f32; 3]));
    let written = block.write_staged(tile, staged);
    let _readable = block.sync(written);
}

fn main() {
    // Compiled, not only checked: the runs are constants of the compiled kernel.
    let _ = body as fn(Block<'static, 32, Tile>);
}
