// A helper generic over the chunk shape cuts by the shape of the block it is handed, never by
// one it names: a kernel that hands it its block in one branch of a per-block value and asks it
// for a block of another shape in the other would cut one view with two shapes, and two blocks
// would write one element. The block's shape is its type, which no safe code changes.
use dlmd::kernel::Block;
use dlmd::kernel::block::{ChunkShape, Chunks};
use dlmd::{Const, Device, DeviceMdspanMut, Dims, LayoutRight};

fn cut<'v, C: ChunkShape<[usize; 1]>>(
    block: &Block<'_, 256, (), C>,
    out: DeviceMdspanMut<'v, f32, Dims<1>>,
) -> Chunks<'v, f32, Dims<1>, LayoutRight, Device> {
    block.chunks(out)
}

pub fn body(mut block: Block<'_, 256, (), (Const<256>,)>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let chunks = if block.index() == 0 {
        cut::<(Const<256>,)>(&block, out)
    } else {
        cut::<(Const<512>,)>(&block, out)
    };
    for chunk in chunks {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {}
