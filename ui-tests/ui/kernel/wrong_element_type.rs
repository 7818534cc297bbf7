// A launch passes a view whose element type is not the kernel's: f64 where it takes f32.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, mut v: DeviceMdspanMut<'_, f64, Dims<1>>) -> Result<(), CudaError> {
    cuda::scope(|s| scale(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v.as_view_mut()))
}

fn main() {}
