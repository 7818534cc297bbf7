// Peer copies go between devices: a host view is not a source.
use dlmd::cuda::{CudaError, scope};
use dlmd::{DeviceMdspanMut, Dims, HostMdspan};
use std::sync::Arc;

fn copy(
    stream: &Arc<cudarc::driver::CudaStream>,
    src: &HostMdspan<'_, f32, Dims<1>>,
    dst: &mut DeviceMdspanMut<'_, f32, Dims<1>>,
) -> Result<(), CudaError> {
    scope(|s| s.copy(stream, src, dst))
}

fn main() {}
