// Each tile is made once per block: `split` takes the block, so a second set of the same
// tiles (aliasing the first) cannot be made.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (_first, a) = block.split();
    let (_second, b) = block.split();
    let _ = (a, b);
}

fn main() {}
