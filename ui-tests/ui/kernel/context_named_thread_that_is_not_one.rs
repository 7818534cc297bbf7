// A type named `Thread` is not a kernel context for its name: the context is known by its type,
// and this one is the user's own.
use dlmd::{DeviceMdspanMut, Dims};

pub struct Thread;

#[dlmd::kernel]
pub fn scale(thread: Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = (thread, out);
}

fn main() {}
