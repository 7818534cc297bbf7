// A kernel with two parameters of one type is launched with its arguments in a row, as other
// kernels are: swapped, they would still compile and compute the wrong thing, so such a
// kernel's launcher takes them by parameter name (`AddRowsArgs { a, b, c }`) and refuses a row.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};
use std::sync::Arc;

#[dlmd::kernel]
pub fn add_rows(
    thread: Thread,
    a: DeviceMdspan<'_, f32, Dims<2>>,
    b: DeviceMdspan<'_, f32, Dims<2>>,
    mut c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
}

fn run(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    a: DeviceMdspan<'_, f32, Dims<2>>,
    b: DeviceMdspan<'_, f32, Dims<2>>,
    mut c: DeviceMdspanMut<'_, f32, Dims<2>>,
) -> Result<(), CudaError> {
    cuda::scope(|s| add_rows(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), b, a, c.as_view_mut()))
}

fn main() {}
