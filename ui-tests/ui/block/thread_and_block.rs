// A kernel's context is a `Thread` (element-wise) or a `Block` (cooperative), not both: a
// `Thread` would show the uniform code which thread runs it.
use dlmd::kernel::{Block, Thread};
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn both(thread: Thread, block: Block<'_, 256>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = block;
    thread.for_each_mut(&mut out, |_, x| *x = 0.0);
}

fn main() {}
