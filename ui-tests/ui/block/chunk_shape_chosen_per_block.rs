// A view is cut by one chunk shape in every block: a kernel that picks the shape on a value of
// its own block (here its index) would cut one view with two shapes, and the blocks' chunks
// would overlap, so that two blocks write one element. The shape is the block's type, fixed by
// the kernel's signature for the whole grid (`Block<'_, 256, (), (Const<256>,)>`), and
// `Block::chunks` takes none of its own: shapes chosen at the calls are refused.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

pub fn body(mut block: Block<'_, 256>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let chunks = if block.index() == 0 {
        block.chunks(out, (Const::<256>,))
    } else {
        block.chunks(out, (Const::<512>,))
    };
    for mut chunk in chunks {
        block.store(&mut chunk, |_| 1.0);
    }
}

fn main() {}
