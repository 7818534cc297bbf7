//! What the queue of holds asks the driver: whether an event is done.

use crate::cuda::CudaError;
use crate::cuda::event::{HoldEvent, names_a_capture};
use cudarc::driver::{DriverError, sys};

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
