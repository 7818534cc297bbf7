// A launch passes a view with a static extent of 8 where the kernel's is 4: convert with
// `try_into_extents` (checked at run time) if the data really has that shape.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use dlmd::{Const, DeviceMdspan, Dyn};

#[dlmd::kernel]
pub fn rows(_: dlmd::kernel::Thread, v: DeviceMdspan<'_, f32, (Const<4>, Dyn)>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, v: DeviceMdspan<'_, f32, (Const<8>, Dyn)>) -> Result<(), CudaError> {
    cuda::scope(|s| rows(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), v))
}

fn main() {}
