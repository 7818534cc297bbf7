// A block is whole warps (a multiple of 32 threads, up to 1024): its warp operations take
// every lane.
use dlmd::kernel::Block;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn uneven(block: Block<'_, 100>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = (block, &mut out);
}

fn main() {}
