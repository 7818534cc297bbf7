//! What a launch releases on its own thread before it records its hold: the holds already
//! done, once a few are pending (module docs of `release`).

use super::{CudaError, Pending, collect, queue, release};
use std::collections::VecDeque;

/// How many holds a launch leaves pending before it asks whether they are done.
const DEFER: usize = 4;

/// How many bytes of imported memory the pending holds may keep before a launch asks whether
/// they are done, however few they are.
const DEFER_BYTES: usize = 64 << 20;

/// Releases, on this thread, the holds at the front of the queue whose kernels are done: what a
/// launch does first (module docs). Fewer than [`DEFER`] holds keeping less than
/// [`DEFER_BYTES`] are left as they are (one lock, no query). Otherwise one query of the newest
/// hold of the front's stream ends, if it is done, every hold of that stream before it (events
/// of one stream complete in the order they were recorded); if it is not, the front's own
/// event is asked, and so on while the front is done.
pub(super) fn release_done_front() -> Result<(), CudaError> {
    let (stream, newest, event) = {
        let queue = queue();
        let Some(front) = queue.pending.front() else {
            return Ok(());
        };
        if queue.pending.len() < DEFER && queue.pending_bytes < DEFER_BYTES {
            return Ok(());
        }
        let newest = queue
            .pending
            .iter()
            .rev()
            .find(|p| p.stream == front.stream)
            .unwrap_or(front);
        (front.stream, newest.seq, newest.event.clone())
    };
    let done = event.is_complete();
    // Not the last reference while the hold is queued; if another thread released it
    // meanwhile, this drop destroys the event, outside the lock.
    drop(event);
    match done {
        Ok(true) => {
            let taken = {
                let mut queue = queue();
                let (taken, kept): (VecDeque<Pending>, VecDeque<Pending>) = core::mem::take(&mut queue.pending)
                    .into_iter()
                    .partition(|p| p.stream == stream && p.seq <= newest);
                queue.pending = kept;
                let bytes = taken.iter().fold(0usize, |sum, p| sum.saturating_add(p.bytes));
                queue.pending_bytes = queue.pending_bytes.saturating_sub(bytes);
                queue.releasing.extend(taken.iter().map(|p| p.seq));
                Vec::from(taken)
            };
            release(taken);
            Ok(())
        }
        Ok(false) => release_done_one_by_one(),
        // A failed kernel, or a driver shutting down: the full pass decides and reports.
        Err(_) => collect(None).map(drop),
    }
}

/// Releases the holds at the front of the queue while each one's event is complete. Where the
/// front's kernel still runs, that is one lock and one query, and nothing is allocated.
fn release_done_one_by_one() -> Result<(), CudaError> {
    loop {
        let (seq, event) = match queue().pending.front() {
            Some(p) => (p.seq, p.event.clone()),
            None => return Ok(()),
        };
        let done = event.is_complete();
        // As in `release_done_front`.
        drop(event);
        match done {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(_) => return collect(None).map(drop),
        }
        let taken = {
            let mut queue = queue();
            if queue.pending.front().is_none_or(|p| p.seq != seq) {
                // Another thread took it meanwhile.
                continue;
            }
            queue.releasing.push(seq);
            let taken = queue.pending.pop_front();
            let bytes = taken.as_ref().map_or(0, |p| p.bytes);
            queue.pending_bytes = queue.pending_bytes.saturating_sub(bytes);
            taken
        };
        release(taken.into_iter().collect());
    }
}
