// A kernel declares a managed-memory parameter, and a launch passes device memory: the launcher
// names the parameter and the two memory spaces.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspan, Dims, ManagedMdspan};

#[dlmd::kernel]
pub fn sum(_: dlmd::kernel::Thread, values: ManagedMdspan<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, v: DeviceMdspan<'_, f32, Dims<1>>) -> Result<(), CudaError> {
    cuda::scope(|s| sum(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
