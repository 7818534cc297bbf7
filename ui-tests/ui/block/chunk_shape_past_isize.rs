// A chunk shape's constant sides multiply to at most `isize::MAX` elements: the element count
// of a larger box would overflow `usize` where the block deals the box among its threads, and
// part of each chunk would be left unwritten, silently.
use dlmd::kernel::Block;
use dlmd::{Const, DeviceMdspanMut, Dims};

type Huge = (Const<{ 1 << 32 }>, Const<{ 1 << 32 }>);

pub fn body(mut block: Block<'_, 256, (), Huge>, out: DeviceMdspanMut<'_, f32, Dims<2>>) {
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

fn main() {
    // Compiled, not only checked: the shape's checks run where a kernel that cuts by it is built.
    let _ = body as fn(Block<'static, 256, (), Huge>, DeviceMdspanMut<'static, f32, Dims<2>>);
}
