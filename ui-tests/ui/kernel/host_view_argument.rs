// A launch passes a host view: the GPU cannot reach host memory. Copy it to the device first.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspan, Dims, HostMdspan};

#[dlmd::kernel]
pub fn read(_: dlmd::kernel::Thread, v: DeviceMdspan<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, v: HostMdspan<'_, f32, Dims<1>>) -> Result<(), CudaError> {
    cuda::scope(|s| read(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
