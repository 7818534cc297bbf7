// A launch passes an f64 for a kernel's f32 scalar parameter: elements cross as themselves, so
// the launcher names the parameter and its type rather than converting.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, factor: f32, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, mut v: DeviceMdspanMut<'_, f32, Dims<1>>) -> Result<(), CudaError> {
    let factor = 2.0f64;
    cuda::scope(|s| scale(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), factor, v.as_view_mut()))
}

fn main() {}
