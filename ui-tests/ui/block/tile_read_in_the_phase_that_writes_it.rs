// A tile written in this phase is not readable until a barrier: another thread's element may
// not be there yet. `Block::write` returns it `Written`, which has no indexing.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i, j]| (i + j) as f32);
    let _ = written[[0, 31]];
}

fn main() {}
