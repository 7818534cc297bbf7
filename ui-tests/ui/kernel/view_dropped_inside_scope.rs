// A kernel may still run when the closure of its scope returns, so its views must outlive the
// scope: a view made inside it does not.
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels};
use std::sync::Arc;
use cudarc::driver::CudaSlice;
use dlmd::{DeviceMdspanMut, Dims, LayoutRight};

#[dlmd::kernel]
pub fn scale(_: dlmd::kernel::Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {}

fn run(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), CudaError> {
    cuda::scope(|s| {
        let mut data: CudaSlice<f32> = stream.alloc_zeros(16)?;
        let v = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(&mut data, Dims::new([16]))?;
        scale(s.launch(stream, kernels, LaunchConfig::for_num_elems(16)), v)
    })
}

fn main() {}
