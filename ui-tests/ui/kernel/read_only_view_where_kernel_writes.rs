// The kernel writes its view, so a read-only one does not do: pass a `DeviceMdspanMut`.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, v: DeviceMdspan<'_, f32, Dims<1>>) -> Result<(), CudaError> {
    cuda::scope(|s| scale(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
