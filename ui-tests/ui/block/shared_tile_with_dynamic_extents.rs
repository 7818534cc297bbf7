// A tile's size is known at compile time (the GPU reserves it as the kernel starts): its
// extents are all static.
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn dynamic(block: Block<'_, 256, TileOf<f32, Dims<2>>>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = (block, &mut out);
}

fn main() {}
