// A kernel's first parameter is its context (a `Thread` or a `Block`), which the entry point
// makes and the launcher does not pass; a kernel that starts with a view has none.
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn scale(out: DeviceMdspanMut<'_, f32, Dims<1>>, factor: f32) {
    let _ = (out, factor);
}

fn main() {}
