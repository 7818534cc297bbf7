// A barrier inside per-thread code would be reached by the threads that take the branch and
// not the others. Barriers take `&mut Block`, which no per-thread closure can hold.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::Const;

type Tiles = TileOf<f32, (Const<32>, Const<33>)>;

pub fn body(block: Block<'_, 256, Tiles>) {
    let (mut block, _tile) = block.split();
    block.each(|lane| {
        if lane.index() < 128 {
            block.sync(());
        }
    });
}

fn main() {}
