//! Stream order for device views: work queued on a view's memory before the view was made runs
//! before any launch, copy or collective that takes the view, on whichever stream.
//!
//! A view carries a pointer, not its memory's history, so the history is kept here: when a
//! view is made of memory that has work queued on it (a cudarc allocation on its stream, a
//! [`MirroredArray`](super::MirroredArray)'s device copy, a candle tensor on candle's stream),
//! an event is recorded on that stream behind the work ([`after_queued`]), filed under the
//! memory's byte range. Work over a view waits for the events of every range it overlaps
//! ([`order_after`]), on the device, with `cuStreamWaitEvent`: no host wait. Events that have
//! completed are dropped as new ones are filed.
//!
//! The work such a view takes part in is queued in a [`scope`](super::scope), which waits for
//! its streams before the view's borrow of the memory ends: whatever the memory's owner queues
//! next runs after the view's work.

use super::CudaError;
use cudarc::driver::{CudaEvent, CudaStream, sys};
use std::sync::{Arc, Mutex};

/// Work queued on a byte range, up to an event.
struct Pending {
    start: usize,
    end: usize,
    event: CudaEvent,
}

/// The events of the ranges views were made of, not yet known to be complete.
static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// How many entries are kept before the completed ones are looked for.
const PRUNE_AT: usize = 64;

/// Records, on `stream`, an event behind the work queued there so far, for the `bytes` bytes
/// at device address `ptr`: work over a view of them waits for it ([`order_after`]).
pub(crate) fn after_queued(stream: &Arc<CudaStream>, ptr: sys::CUdeviceptr, bytes: usize) -> Result<(), CudaError> {
    if bytes == 0 {
        return Ok(());
    }
    let event = stream.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
    let start = ptr as usize;
    let end = start.saturating_add(bytes);
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    if pending.len() >= PRUNE_AT {
        // An event that completed (or cannot be asked) orders nothing still queued.
        pending.retain(|p| p.event.try_is_complete() == Ok(false));
    }
    pending.push(Pending { start, end, event });
    Ok(())
}

/// Makes `stream` wait, on the device, for the events recorded for every range that the `bytes`
/// bytes at `ptr` overlap.
pub(crate) fn order_after(stream: &CudaStream, ptr: usize, bytes: usize) -> Result<(), CudaError> {
    if bytes == 0 {
        return Ok(());
    }
    let end = ptr.saturating_add(bytes);
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for p in pending.iter().filter(|p| overlaps((p.start, p.end), (ptr, end))) {
        stream.wait(&p.event)?;
    }
    Ok(())
}

/// Whether two half-open byte ranges share a byte.
fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn ranges_overlap_when_they_share_a_byte() {
        assert!(overlaps((0, 8), (4, 12)));
        assert!(overlaps((4, 12), (0, 8)));
        assert!(overlaps((0, 8), (0, 8)));
        assert!(overlaps((0, 8), (2, 3)));
        assert!(!overlaps((0, 8), (8, 16)));
        assert!(!overlaps((8, 16), (0, 8)));
        assert!(!overlaps((0, 0), (0, 8)));
    }
}
