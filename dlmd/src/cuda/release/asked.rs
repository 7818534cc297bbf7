//! What the queue of holds asks the driver: a stream's id, and whether an event is done.

use crate::cuda::CudaError;
use crate::cuda::event::{HoldEvent, names_a_capture};
use cudarc::driver::{CudaStream, DriverError, sys};

/// Whether `event` is complete, asked in relaxed capture mode: a query must neither break nor
/// be refused by a capture another thread has begun (in global mode, torch's). An answer that
/// names a capture, or a mode that could not be changed, is "not yet": only the kernel's own
/// failure (or a driver shut down) is an error.
pub(super) fn is_done(event: &HoldEvent) -> Result<bool, DriverError> {
    match crate::cuda::event::relaxed(|| Ok(event.is_complete())) {
        Ok(Err(DriverError(code))) if names_a_capture(code) => Ok(false),
        Ok(answer) => answer,
        // The driver is shut down: the process is exiting (the releasing thread ends).
        Err(CudaError::Driver(e @ DriverError(sys::CUresult::CUDA_ERROR_DEINITIALIZED))) => Err(e),
        Err(_) => Ok(false),
    }
}

/// The driver's id of `stream`, or `None` where it gives none.
pub(super) fn stream_id(stream: &CudaStream) -> Option<u64> {
    type GetId = unsafe extern "C" fn(sys::CUstream, *mut core::ffi::c_ulonglong) -> sys::CUresult;
    // Looked up once, from the driver cudarc uses (before CUDA 12.0 it has none).
    static ENTRY: std::sync::OnceLock<Option<GetId>> = std::sync::OnceLock::new();
    // SAFETY: `GetId` is `cuStreamGetId`'s C signature.
    let get =
        (*ENTRY.get_or_init(|| unsafe { crate::cuda::library::symbol(&["cuda", "nvcuda"], b"cuStreamGetId\0") }))?;
    let mut id: core::ffi::c_ulonglong = 0;
    // SAFETY: the driver's function, a live stream of the context bound to this thread
    // (`hold_until_done` bound it), and a place for the id.
    let status = unsafe { get(stream.cu_stream(), &mut id) };
    (status == sys::CUresult::CUDA_SUCCESS).then_some(id)
}
