// A tile is written only through `Block::write`, which hands each element to exactly one
// thread; a thread cannot pick an element to write itself.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (block, mut tile) = block.split();
    block.each(|lane| tile[[lane.index() % 32, 0]] = 1.0);
}

fn main() {}
