//! What a launch releases on its own thread before it records its hold: the holds already
//! done, once a few are pending (module docs of `release`).

use super::{CudaError, Pending, collect, is_done, queue, release};
use crate::cuda::event::HoldEvent;
use crate::cuda::order::StreamKey;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many holds a launch leaves pending before it asks whether they are done.
const DEFER: usize = 4;

/// How many bytes the pending holds' imported spans may add up to before a launch asks whether
/// they are done, however few the holds are.
const DEFER_BYTES: usize = 64 << 20;

/// Releases, on this thread, the holds at the front of the queue whose kernels are done: what a
/// launch does first (module docs). Fewer than [`DEFER`] holds whose spans add up to less than
/// [`DEFER_BYTES`] are left as they are (one lock, no query). Otherwise, while the front's
/// kernel is done: one query of the newest hold of the front's stream ends, if it is done,
/// every hold of that stream before it (a stream's events complete in the order they were
/// recorded, which is their holds' order: `hold_until_done`); if it is not, the front's own
/// event is asked.
pub(super) fn release_done_front() -> Result<(), CudaError> {
    {
        let queue = queue();
        if queue.pending.len() < DEFER && queue.pending_bytes < DEFER_BYTES {
            return Ok(());
        }
    }
    loop {
        let (front, newest) = {
            let queue = queue();
            let Some(front) = queue.pending.front() else {
                return Ok(());
            };
            // Only a stream known for certain (not `Unknown`), and only a later hold than the
            // front.
            let key = front.stream;
            let newest = queue.pending.iter().rev().find(|p| p.stream.same(key));
            let newest = newest
                .filter(|newest| newest.seq != front.seq)
                .map(|newest| (key, newest.seq, newest.event.clone()));
            ((front.seq, front.event.clone()), newest)
        };
        if let Some((key, seq, event)) = newest {
            match asked(event) {
                Ok(true) => {
                    release_stream_through(key, seq);
                    continue;
                }
                Ok(false) => {}
                // A failed kernel, or a driver shutting down: the full pass decides and reports.
                Err(()) => return collect(None).map(drop),
            }
        }
        match asked(front.1) {
            Ok(true) => release_front(front.0),
            Ok(false) => return Ok(()),
            Err(()) => return collect(None).map(drop),
        }
    }
}

/// Whether `event` is complete; `Err` where the query failed.
fn asked(event: Arc<HoldEvent>) -> Result<bool, ()> {
    let answer = is_done(&event).map_err(drop);
    // Not the last reference while its hold is queued; if another thread released it
    // meanwhile, this drop destroys the event, outside the lock.
    drop(event);
    answer
}

/// Releases the pending holds of the stream `key` names numbered up to `seq`.
fn release_stream_through(key: StreamKey, seq: u64) {
    let taken = {
        let mut queue = queue();
        let (taken, kept): (VecDeque<Pending>, VecDeque<Pending>) = core::mem::take(&mut queue.pending)
            .into_iter()
            .partition(|p| p.stream.same(key) && p.seq <= seq);
        queue.pending = kept;
        let bytes = taken.iter().fold(0usize, |sum, p| sum.saturating_add(p.bytes));
        queue.pending_bytes = queue.pending_bytes.saturating_sub(bytes);
        queue.releasing.extend(taken.iter().map(|p| p.seq));
        Vec::from(taken)
    };
    release(taken);
}

/// Releases the front hold if it is still the one numbered `seq` (another thread may have
/// taken it meanwhile).
fn release_front(seq: u64) {
    let taken = {
        let mut queue = queue();
        if queue.pending.front().is_none_or(|p| p.seq != seq) {
            return;
        }
        queue.releasing.push(seq);
        let taken = queue.pending.pop_front();
        let bytes = taken.as_ref().map_or(0, |p| p.bytes);
        queue.pending_bytes = queue.pending_bytes.saturating_sub(bytes);
        taken
    };
    release(taken.into_iter().collect());
}
