// A peer copy moves bytes as they lie: a row-major source cannot be copied into a column-major
// destination.
use dlmd::cuda::{CudaError, scope};
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims, LayoutLeft, LayoutRight};
use std::sync::Arc;

fn copy(
    stream: &Arc<cudarc::driver::CudaStream>,
    src: &DeviceMdspan<'_, f32, Dims<2>, LayoutRight>,
    dst: &mut DeviceMdspanMut<'_, f32, Dims<2>, LayoutLeft>,
) -> Result<(), CudaError> {
    scope(|s| s.copy(stream, src, dst))
}

fn main() {}
