// A copy writes its destination: a read-only (`Shared`) device view cannot be one.
use dlmd::cuda::{CudaError, scope};
use dlmd::{DeviceMdspan, Dims};
use std::sync::Arc;

fn copy(
    stream: &Arc<cudarc::driver::CudaStream>,
    src: &DeviceMdspan<'_, f32, Dims<1>>,
    mut dst: DeviceMdspan<'_, f32, Dims<1>>,
) -> Result<(), CudaError> {
    scope(|s| s.copy(stream, src, &mut dst))
}

fn main() {}
