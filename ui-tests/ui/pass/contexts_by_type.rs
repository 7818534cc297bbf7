// A kernel's context is known by its type, not by how it is written: a `Block` through a
// renamed import, an alias or its full path is cooperative (its launcher reserves the block's
// shared memory and the digest carries it), a renamed `Thread` is element-wise, and an element
// type that happens to be called `Block` is a parameter like any other. Each launch type-checks
// (it runs only on a GPU).
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::kernel::{Block as Thread, Context, Thread as Lanes};
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims, DlElement};
use std::sync::Arc;

type Cooperative<'k> = dlmd::kernel::Block<'k, 128, (), (Const<128>,)>;

/// An element type of its own, called like the context.
#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
pub struct Block(f32);

#[dlmd::kernel]
pub fn renamed(block: Thread<'_, 64, (), (Const<64>,)>, x: DeviceMdspan<'_, f32, Dims<1>>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let mut block = block;
    for chunk in block.chunks(out) {
        block.store(chunk, |[i]| x[[i]]);
    }
}

#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn aliased(block: Cooperative<'_>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let mut block = block;
    for chunk in block.chunks(out) {
        block.store(chunk, |[i]| i as f32);
    }
}

#[dlmd::kernel]
pub fn by_path(block: dlmd::kernel::Block<'_, 32, (), (dlmd::Const<32>,)>, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let mut block = block;
    for chunk in block.chunks(out) {
        block.store(chunk, |_| 1.0);
    }
}

#[dlmd::kernel(block_threads = 256)]
pub fn element_wise(lanes: Lanes, factor: Block, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    lanes.for_each_mut(&mut out, |_, x| *x *= factor.0);
}

fn run(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    x: DeviceMdspan<'_, f32, Dims<1>>,
    mut out: DeviceMdspanMut<'_, f32, Dims<1>>,
) -> Result<(), CudaError> {
    let grid = LaunchConfig::for_num_elems(1);
    cuda::scope(|s| renamed(s.launch(stream, kernels, grid), x, out.as_view_mut()))?;
    cuda::scope(|s| aliased(s.launch(stream, kernels, grid), out.as_view_mut()))?;
    cuda::scope(|s| by_path(s.launch(stream, kernels, grid), out.as_view_mut()))?;
    cuda::scope(|s| element_wise(s.launch(stream, kernels, grid), Block(2.0), out.as_view_mut()))
}

fn main() {
    let _ = run;
    // What the launchers ask of the types: the renamed and aliased blocks are cooperative and
    // reserve their shared memory; the renamed thread is element-wise.
    const {
        assert!(<Thread<'static, 64, (), (Const<64>,)> as Context<'static>>::COOPERATIVE);
        assert!(<Cooperative<'static> as Context<'static>>::COOPERATIVE);
        assert!(<Cooperative<'static> as Context<'static>>::SHARED_BYTES > 0);
        assert!(!<Lanes as Context<'static>>::COOPERATIVE);
    }
}
