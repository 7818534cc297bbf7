// A launch is queued, not finished, when it returns: the module its kernel comes from must
// stay loaded until the scope has waited for it. Kernels dropped inside the scope would unload
// the module under the queued kernel.
use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::{DeviceMdspanMut, Dims, LayoutRight};
use std::sync::Arc;

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(ctx: &Arc<CudaContext>, ptx: &str, data: &mut CudaSlice<f32>) -> Result<(), CudaError> {
    let stream = ctx.default_stream();
    let mut v = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(data, Dims::new([16]))?;
    cuda::scope(|s| {
        let kernels = Kernels::load(ctx, ptx)?;
        scale(s.launch(&stream, &kernels, LaunchConfig::for_num_elems(16)), v.as_view_mut())
    })
}

fn main() {}
