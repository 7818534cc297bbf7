// Parameters named like the locals `#[dlmd::kernel]` makes beside them (in the entry point and
// in the launcher) are each their own: the launcher builds and passes each argument for its
// own parameter. (The same kernel in `tests/kernels/other` is built for the GPU, where each
// parameter is read from its own `param_N`.)
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspanMut, Dims};
use std::sync::Arc;

#[dlmd::kernel]
#[allow(clippy::too_many_arguments)]
pub fn own_names(thread: Thread, infos: f32, params: u64, args: u32, launch: i16, __dlmd_kernel_body: u8,
    __dlmd_anchor: u16, __dlmd_param1: i64, __dlmd_param2: i32, mut __dlmd_param0: DeviceMdspanMut<'_, i32, Dims<1>>) {
    let sum = infos as i32 + params as i32 + args as i32 + launch as i32 + __dlmd_kernel_body as i32;
    let sum = sum + __dlmd_anchor as i32 + __dlmd_param1 as i32 + __dlmd_param2;
    thread.for_each_mut(&mut __dlmd_param0, |_, v| *v = sum);
}

/// Two parameters of one type: the launcher takes a struct, named by the macro `args`.
#[dlmd::kernel]
pub fn named(thread: Thread, mut args: DeviceMdspanMut<'_, i32, Dims<1>>, launch: i32, infos: i32) {
    thread.for_each_mut(&mut args, |_, v| *v = launch - infos);
}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels, mut out: DeviceMdspanMut<'_, i32, Dims<1>>) -> Result<(), CudaError> {
    let grid = LaunchConfig::for_num_elems(8);
    cuda::scope(|s| own_names(s.launch(stream, kernels, grid), 9.0f32, 8u64, 6u32, 5i16, 4u8, 3u16, 42i64, 7i32, out.as_view_mut()))?;
    let args = out.as_view_mut();
    cuda::scope(|s| named(s.launch(stream, kernels, grid), NamedArgs { args, launch: 1i32, infos: 2i32 }))
}

fn main() {
    let _ = run;
}
