// A cooperative kernel's block size is its `Block`'s, whatever the `Block` is called here: a
// `Block` imported as `Thread` is still cooperative, and `block_threads` is for element-wise
// kernels.
use dlmd::kernel::Block as Thread;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel(block_threads = 128)]
pub fn fill(block: Thread<'_, 256>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = (block, out);
}

fn main() {}
