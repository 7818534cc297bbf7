// A copy is queued, not finished, when it returns: its destination stays borrowed until the
// scope has waited for it. A second copy into it on another stream, in the same scope, would
// write it while the first still does.
use cudarc::driver::{CudaSlice, CudaStream};
use dlmd::cuda::{self, CudaError, device_view, device_view_mut};
use dlmd::{Dims, LayoutRight};
use std::sync::Arc;

fn copy_twice(
    a: &Arc<CudaStream>,
    b: &Arc<CudaStream>,
    src: &CudaSlice<f32>,
    dst: &mut CudaSlice<f32>,
) -> Result<(), CudaError> {
    let src = device_view::<_, Dims<1>, LayoutRight>(src, Dims::new([4]))?;
    let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(dst, Dims::new([4]))?;
    cuda::scope(|s| {
        s.copy(a, &src, &mut dst)?;
        s.copy(b, &src, &mut dst)
    })
}

fn main() {}
