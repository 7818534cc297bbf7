//! The events that end holds (`release`), order launches over imports (`order`) and end scopes
//! (`scope`), and the relaxed stream-capture mode in which a thread may ask about them while
//! another captures.

use super::CudaError;
use cudarc::driver::{CudaContext, CudaStream, DriverError, sys};
use std::sync::Arc;

/// An event recorded after a launch, without timing (the cheapest to record: a launch records
/// one each time).
pub(crate) struct HoldEvent {
    event: sys::CUevent,
    ctx: Arc<CudaContext>,
}

// SAFETY: a driver event may be used from any thread (the driver synchronises its own
// objects), and the context it belongs to is kept alive by `ctx`.
unsafe impl Send for HoldEvent {}
// SAFETY: as above; every method only passes the handle to the driver.
unsafe impl Sync for HoldEvent {}

impl HoldEvent {
    /// A new event of `ctx`, with nothing recorded.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Self, CudaError> {
        ctx.bind_to_thread()?;
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as core::ffi::c_uint;
        let mut event: sys::CUevent = core::ptr::null_mut();
        // SAFETY: writes one handle through a valid pointer, in the context bound above; the
        // flags are the driver's.
        unsafe { sys::cuEventCreate(&mut event, flags) }.result()?;
        Ok(Self {
            event,
            ctx: ctx.clone(),
        })
    }

    /// Records the work queued on `stream` so far, a stream of this event's context.
    pub(crate) fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        // SAFETY: a live event and a live stream of the same context (events are taken for
        // their stream's context only).
        unsafe { sys::cuEventRecord(self.event, stream.cu_stream()) }.result()
    }

    /// Records, into the graph that `stream` (of this event's context) is capturing, a node that
    /// records this event each time the graph runs (`CU_EVENT_RECORD_EXTERNAL`): a stream that
    /// waits for the event then waits for the graph's latest run, and while the graph has
    /// never run the event is complete.
    pub(crate) fn record_in_capture(&self, stream: &CudaStream) -> Result<(), DriverError> {
        let external = sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as core::ffi::c_uint;
        // SAFETY: a live event and a live stream of the same context; the flag is the driver's,
        // for a stream that captures (one that does not refuses it with an error).
        unsafe { sys::cuEventRecordWithFlags(self.event, stream.cu_stream(), external) }.result()
    }

    /// Whether the recorded work is done, without waiting; a failed kernel is an error.
    pub(crate) fn is_complete(&self) -> Result<bool, DriverError> {
        // SAFETY: a live event.
        match unsafe { sys::cuEventQuery(self.event) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            e => Err(DriverError(e)),
        }
    }

    /// Waits until the recorded work is done.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event, of the context bound above.
        unsafe { sys::cuEventSynchronize(self.event) }.result()
    }

    /// Waits until the recorded work is done, or has failed (an error: a failed kernel poisons
    /// its context, which runs nothing more), in relaxed stream-capture mode, so that a capture
    /// begun elsewhere (on the event's own stream, too) neither breaks nor ends the wait. Where
    /// the driver refuses to wait, it asks until the event is done or failed: it never returns
    /// while the work may still run.
    pub(crate) fn wait_done(&self) -> Result<(), DriverError> {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: exchanges this thread's mode through a valid pointer.
        let exchanged = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
            .result()
            .is_ok();
        let waited = match self.synchronize() {
            Ok(()) => Ok(()),
            Err(_) => self.spin(),
        };
        if exchanged {
            // SAFETY: as above, putting the previous mode back.
            let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
        }
        waited
    }

    /// Asks until the recorded work is done or has failed. A refusal that concerns a graph
    /// capture says neither, and is asked again.
    fn spin(&self) -> Result<(), DriverError> {
        loop {
            match self.is_complete() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(DriverError(code)) if names_a_capture(code) => {}
                Err(e) => return Err(e),
            }
            std::thread::yield_now();
        }
    }

    /// The context the event belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The driver's handle, for `cuStreamWaitEvent`.
    pub(crate) fn handle(&self) -> sys::CUevent {
        self.event
    }
}

impl Drop for HoldEvent {
    fn drop(&mut self) {
        // Destroyed in its context, which the thread's current one is put back after: the last
        // reference may go on a thread in the middle of a launch on another device.
        let mut current: sys::CUcontext = core::ptr::null_mut();
        // SAFETY: writes one handle through a valid pointer.
        let _ = unsafe { sys::cuCtxGetCurrent(&mut current) };
        let _ = self.ctx.bind_to_thread();
        // SAFETY: the event is live and destroyed once, here; the driver lets work that waits
        // for it go on after.
        let _ = unsafe { sys::cuEventDestroy_v2(self.event) };
        if !current.is_null() && current != self.ctx.cu_ctx() {
            // SAFETY: `current` is the handle this thread had current a moment ago: putting it
            // back leaves the thread as it was before the drop.
            let _ = unsafe { sys::cuCtxSetCurrent(current) };
        }
    }
}

/// Runs `f` with this thread in relaxed stream-capture mode, where calls that a capture in
/// progress elsewhere would otherwise forbid are allowed, restoring the mode after.
pub(crate) fn relaxed<T>(f: impl FnOnce() -> Result<T, CudaError>) -> Result<T, CudaError> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: exchanges this thread's mode through a valid pointer.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }.result()?;
    let result = f();
    // SAFETY: as above, putting the previous mode back.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }.result()?;
    result
}

/// Whether the driver's `code` is about a stream capture, not a kernel's failure.
pub(crate) fn names_a_capture(code: sys::CUresult) -> bool {
    use sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
            | CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
            | CUDA_ERROR_STREAM_CAPTURE_MERGE
            | CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
            | CUDA_ERROR_STREAM_CAPTURE_UNJOINED
            | CUDA_ERROR_STREAM_CAPTURE_ISOLATION
            | CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
            | CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
            | CUDA_ERROR_CAPTURED_EVENT
    )
}
