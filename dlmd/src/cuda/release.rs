//! Releases in stream order: what a queued kernel reaches (imported tensors, its module) is kept
//! until the kernel is done, without the host waiting for it.
//!
//! A launch outside a [`scope`](super::scope) returns as soon as the kernel is queued. What the
//! kernel reaches must outlive it, so the launch hands it here ([`hold_until_done`]) with an
//! event recorded after the kernel on its stream; it is dropped (an imported tensor's deleter
//! runs, a module may unload) by the first later hold or [`release_completed`] call that finds
//! the event complete. Finding out is `cuEventQuery`, which never blocks: the host waits for
//! nothing on this path.
//!
//! A stream that is capturing a CUDA graph runs nothing while it captures, and its graph may be
//! replayed any number of times after: no event can say when the memory is last used. There
//! the hold ends at once, and the memory's lifetime is the capturer's contract, as for every
//! other operation in its graph (PyTorch keeps the memory of a graph's tensors in the graph's
//! private pool while the graph lives; its documentation asks that captured inputs be kept).

use super::CudaError;
use crate::managed::ManagedTensor;
use cudarc::driver::{CudaEvent, CudaModule, CudaStream, sys};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What one launch keeps alive until its kernel is done.
#[derive(Default)]
pub(crate) struct Held {
    /// The imported tensors among its arguments.
    pub(crate) tensors: Vec<Arc<ManagedTensor>>,
    /// The module its kernel is in.
    pub(crate) module: Option<Arc<CudaModule>>,
}

/// A hold and the event that ends it, recorded on the stream whose driver handle and device
/// are `stream`.
struct Pending {
    event: CudaEvent,
    stream: (usize, usize),
    held: Held,
}

/// Holds not yet known done, oldest first, and events free for reuse.
struct Queue {
    pending: VecDeque<Pending>,
    free: Vec<CudaEvent>,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    pending: VecDeque::new(),
    free: Vec::new(),
});

/// How many finished events are kept for reuse.
const FREE_EVENTS: usize = 64;

fn queue() -> std::sync::MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `held` until the work queued on `stream` so far is done: behind an event recorded on
/// `stream` now, or not at all while `stream` captures a graph (see the [module
/// docs](self)). Holds found done meanwhile are released first.
pub(crate) fn hold_until_done(stream: &Arc<CudaStream>, held: Held) -> Result<(), CudaError> {
    if capturing(stream)? {
        // A capture records no work to wait for; the hold ends here (module docs).
        drop(held);
        return Ok(());
    }
    release_completed()?;
    let ctx = stream.context();
    let reused = {
        let mut queue = queue();
        let at = queue.free.iter().position(|e| Arc::ptr_eq(e.context(), ctx));
        at.map(|i| queue.free.swap_remove(i))
    };
    let event = match reused {
        Some(event) => event,
        None => ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?,
    };
    if let Err(e) = event.record(stream) {
        // Without an event nothing would say when the kernel is done: wait for it instead.
        stream.synchronize()?;
        drop(held);
        return Err(e.into());
    }
    let stream = (stream.cu_stream() as usize, ctx.ordinal());
    queue().pending.push_back(Pending { event, stream, held });
    Ok(())
}

/// Releases every hold whose kernel is done, without waiting for the others; returns how many
/// holds are still pending. Launches call it; call it yourself to let imported tensors go
/// sooner where no further launch comes.
pub fn release_completed() -> Result<usize, CudaError> {
    let mut done = Vec::new();
    let mut failed = None;
    let left = {
        let mut queue = queue();
        // Events of one stream complete in the order they were recorded: past the first that
        // has not, none of that stream's later ones is asked, so a deep queue costs one query
        // a stream.
        let mut busy: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < queue.pending.len() {
            let stream = queue.pending[i].stream;
            if busy.contains(&stream) {
                i += 1;
                continue;
            }
            let complete = queue.pending[i].event.try_is_complete();
            if let Ok(false) = complete {
                busy.push(stream);
                i += 1;
                continue;
            }
            // A failed query is a failed kernel, which poisons its context: nothing queued
            // there runs any more, so its hold ends too.
            if let Err(e) = complete {
                failed.get_or_insert(e);
            }
            if let Some(Pending { event, held, .. }) = queue.pending.remove(i) {
                if queue.free.len() < FREE_EVENTS {
                    queue.free.push(event);
                }
                done.push(held);
            }
        }
        queue.pending.len()
    };
    // Deleters run outside the lock: a producer's may call back into this crate.
    drop(done);
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(left),
    }
}

/// Whether `stream` is capturing a CUDA graph (or was, and the capture failed).
pub(crate) fn capturing(stream: &CudaStream) -> Result<bool, CudaError> {
    Ok(stream.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}
