// Every thread of a kernel holds the same mutable view, so writing an element it picked itself
// is a data race unless no other thread touches it: `element_mut` is `unsafe`. Safe code
// writes through `Thread::for_each_mut`, which gives each element to one thread.
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspanMut, Dims};

pub fn first(thread: &Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    if let Some(x) = thread.element_mut(&mut out, [0]) {
        *x = 1.0;
    }
}

fn main() {}
