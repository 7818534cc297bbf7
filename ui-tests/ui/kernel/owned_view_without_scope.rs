// A launch without a scope (on an imported tensor's stream, or `Kernels::launch_on`) returns
// before its kernel is done, and nothing waits for it: a view over memory Rust owns would let
// the memory be freed under the kernel. Such a launch takes imports (which it keeps until the
// kernel is done) or views that borrow for `'static`; launch Rust's views in a `cuda::scope`.
use cudarc::driver::{CudaSlice, LaunchConfig};
use dlmd::cuda::{self, CudaError, Imported, Kernels};
use dlmd::{DeviceMdspanMut, Dims, LayoutRight};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>, by: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(x: &Imported, kernels: &Kernels, data: &mut CudaSlice<f32>) -> Result<(), CudaError> {
    let mine = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(data, Dims::new([16]))?;
    scale(x.launch(kernels, LaunchConfig::for_num_elems(16))?, ScaleArgs { out: x.arg()?, by: mine })
}

fn main() {}
