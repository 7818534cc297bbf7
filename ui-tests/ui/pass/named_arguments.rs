// A kernel with two parameters of one type, launched with its arguments by name: the launch
// type-checks (it runs only on a GPU), and the struct holds each argument under its name.
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
    thread.for_each_mut(&mut c, |i, x| *x = a[i] + b[i]);
}

fn run(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    a: DeviceMdspan<'_, f32, Dims<2>>,
    b: DeviceMdspan<'_, f32, Dims<2>>,
    mut c: DeviceMdspanMut<'_, f32, Dims<2>>,
) -> Result<(), CudaError> {
    let c = c.as_view_mut();
    cuda::scope(|s| add_rows(s.launch(stream, kernels, LaunchConfig::for_num_elems(1)), AddRowsArgs { b, a, c }))
}

fn main() {
    let _launch = run;
    let args = AddRowsArgs { c: 3, a: 1, b: 2 };
    assert_eq!((args.a, args.b, args.c), (1, 2, 3));
}
