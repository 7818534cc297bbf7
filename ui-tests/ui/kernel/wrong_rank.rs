// A launch passes a 2-D view to a kernel that takes a 1-D one.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, mut v: DeviceMdspanMut<'_, f32, Dims<2>>) -> Result<(), CudaError> {
    cuda::scope(|s| scale(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v.as_view_mut()))
}

fn main() {}
