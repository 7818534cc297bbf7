// `Block::write_runs` deals a tile's elements in runs of `K` along its fastest dimension: `K`
// must divide that extent. Runs of 4 along rows of 30 would cross from one row into the next;
// refused when the kernel is compiled.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tile = TileOf<f32, (Const<8>, Const<30>)>;

pub fn body(block: Block<'_, 64, Tile>) {
    let (mut block, tile) = block.split();
    let written = block.write_runs(tile, |[i, j]| [(i + j) as f32; 4]);
    let _readable = block.sync(written);
}

fn main() {
    // Compiled, not only checked: the runs are constants of the compiled kernel.
    let _ = body as fn(Block<'static, 64, Tile>);
}
