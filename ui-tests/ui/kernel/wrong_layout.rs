// A launch passes a column-major view to a kernel that takes a row-major one.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{DeviceMdspan, Dims, LayoutLeft};

#[dlmd::kernel]
pub fn read(_: dlmd::kernel::Thread, v: DeviceMdspan<'_, f32, Dims<2>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, v: DeviceMdspan<'_, f32, Dims<2>, LayoutLeft>) -> Result<(), CudaError> {
    cuda::scope(|s| read(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
