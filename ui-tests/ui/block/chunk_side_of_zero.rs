// A chunk's side is at least one element: `Const::<0>` would cut the view into chunks that hold
// nothing, and leave every element unwritten.
use dlmd::kernel::Block;
use dlmd::kernel::block::Whole;
use dlmd::{Const, DeviceMdspanMut, Dims};

type Empty = (Const<0>, Whole);

pub fn body(mut block: Block<'_, 256, (), Empty>, out: DeviceMdspanMut<'_, f32, Dims<2>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    // Compiled, not only checked: the shape's checks run where a kernel that cuts by it is built.
    let _ = body as fn(Block<'static, 256, (), Empty>, DeviceMdspanMut<'static, f32, Dims<2>>);
}
