//! Releases in stream order: what a queued kernel reaches (imported tensors, its module) is kept
//! until the kernel is done, and let go then, without the host waiting for it and without
//! another call.
//!
//! A launch outside a [`scope`](super::scope) returns as soon as the kernel is queued. What the
//! kernel reaches must outlive it, so the launch hands it here ([`hold_until_done`]) with an
//! event recorded after the kernel on its stream, and goes on. Once a few holds are pending
//! (four, or imported spans adding up to 64 MiB), a launch first ends those at the front that
//! are done (`cuEventQuery`, which never blocks; a stream's events complete in the order they
//! were recorded, so one query of its newest hold stands for its earlier ones), on its own
//! thread: in a run of launches their deleters run where the producer's locks (a Python
//! producer's GIL) are already held, and no other thread competes for them or for the driver.
//! Once launches pause for a millisecond, a *releasing thread*, started on the first hold, takes
//! over: every millisecond it asks the pending events (`cuEventQuery` again: it never waits on
//! the device, and sleeps between looks) and drops every hold whose event is complete (an
//! imported tensor's deleter runs, a module may unload), until none is left, then sleeps until
//! a launch wakes it. So a hold ends a few launches after its kernel's end, or within a
//! millisecond of the last launch, with no further call; a hold behind a kernel that still
//! runs at the front waits for it, or for the releasing thread. [`wait_released`] waits until
//! every hold recorded so far has ended.
//!
//! A hold is never let go before its kernel is done: where no event can be recorded,
//! the launch waits for its stream, and where that fails too, the hold is kept for good.
//!
//! The releasing thread holds none of this module's locks while it waits or while a deleter
//! runs, so a deleter may take its producer's own locks (a Python producer's deleter takes the
//! GIL) and call back into this crate; a thread that holds such a lock while it waits on the
//! device never waits for the releasing thread, as the device finishes without it. The thread
//! runs in relaxed stream-capture mode, so that its driver calls never break a capture another
//! thread has begun, and a launching thread asks its queries in that mode too; an answer about
//! a capture is "not yet", never a failure. A failed kernel poisons its context: its events
//! then fail, and the holds end, since nothing queued there runs any more. When the process
//! exits, what is still held stays held: once the driver is shut down
//! (`CUDA_ERROR_DEINITIALIZED`) the thread ends without running a deleter. An extension of an
//! interpreter that shuts down before the process exits (Python) waits for its holds first
//! ([`wait_released`] from an exit handler, with the interpreter's lock released).
//!
//! A launch on a stream that is capturing a CUDA graph runs nothing then: its hold lives as long
//! as the graph (see `capture`).

use super::CudaError;
use super::event::HoldEvent;
use crate::kernel::Footprint;
use crate::managed::ManagedTensor;
use cudarc::driver::{CudaModule, CudaStream, DriverError, sys};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

mod asked;
mod front;
mod wait;
use asked::is_done;
use front::release_done_front;
pub use wait::wait_released;

/// What one launch keeps alive until its kernel is done.
#[derive(Default)]
pub(crate) struct Held {
    /// The imported tensors among its arguments.
    pub(crate) tensors: Vec<Arc<ManagedTensor>>,
    /// The module its kernel is in.
    pub(crate) module: Option<Arc<CudaModule>>,
    /// For a launch captured into a graph, its imported bytes filed until the graph is gone.
    pub(crate) filed: Option<super::order::Filed>,
}

impl Held {
    /// Whether it keeps nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.tensors.is_empty() && self.module.is_none()
    }
}

/// A hold and the event that ends it, recorded on the stream whose id is `stream`.
struct Pending {
    /// The hold's place among all holds recorded, from 1.
    seq: u64,
    event: Arc<HoldEvent>,
    /// Its stream's key (`order::StreamKey`, unique for the life of the process unless
    /// `Unknown`): holds of one stream end in `seq` order.
    stream: super::order::StreamKey,
    held: Held,
    /// The bytes of the imported memory it keeps.
    bytes: usize,
}

/// The releasing thread's state.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Releaser {
    /// No hold yet.
    NotStarted,
    /// Holds are pending, and it waits for launches to pause ([`LINGER`] without one) before
    /// it waits for their events: launches meanwhile release on their own thread, and wake
    /// nobody.
    Lingering,
    /// Waiting for a hold until told ([`WORK`]).
    Idle,
    /// Waiting for an event, or releasing.
    Busy,
    /// Not running (it could not start, or the driver shut down): launches and
    /// [`wait_released`] release on their own threads.
    Stopped,
}

/// Holds not yet known done, oldest first, and what the releasing thread needs.
struct Queue {
    pending: VecDeque<Pending>,
    /// The bytes the pending holds keep, summed.
    pending_bytes: usize,
    /// Events free for reuse.
    free: Vec<HoldEvent>,
    /// How many holds were recorded: the last `seq`.
    recorded: u64,
    /// How many times [`wait_released`] asked the releasing thread not to wait for a pause.
    asked: u64,
    /// How many threads wait on [`RELEASED`]: a release with none tells nobody, and makes no
    /// system call (a launch's latency).
    waiters: usize,
    /// The holds taken out of `pending` and being dropped now, by any thread.
    releasing: Vec<u64>,
    /// Holds of graphs that are gone, for the releasing thread to drop.
    retired: Vec<Held>,
    releaser: Releaser,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    pending: VecDeque::new(),
    pending_bytes: 0,
    free: Vec::new(),
    recorded: 0,
    asked: 0,
    waiters: 0,
    releasing: Vec::new(),
    retired: Vec::new(),
    releaser: Releaser::NotStarted,
});

/// Signalled for the releasing thread when it is idle and a hold arrives.
static WORK: Condvar = Condvar::new();

/// Signalled when holds have been dropped.
static RELEASED: Condvar = Condvar::new();

/// How long launches must pause before the releasing thread waits for the pending holds' events
/// and runs their deleters. Launches in quick succession then release on their own thread and
/// make no system call to wake another (a launch's latency), and no other thread takes the
/// producers' locks meanwhile; a hold ends at most this much after the last launch.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// How many finished events are kept for reuse.
const FREE_EVENTS: usize = 64;

std::thread_local! {
    /// Whether this thread is the releasing thread.
    static IS_RELEASER: Cell<bool> = const { Cell::new(false) };
    /// How deep this thread is in dropping holds (running their deleters): a deleter that
    /// waited for the holds being released, its own among them, would wait for itself.
    static DELETERS: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, which drops holds, counted in [`DELETERS`] (also if a deleter panics).
fn in_deleters(f: impl FnOnce()) {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            DELETERS.set(DELETERS.get().saturating_sub(1));
        }
    }
    DELETERS.set(DELETERS.get().saturating_add(1));
    let _depth = Depth;
    f();
}

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `held` until the work queued on `stream` so far is done, behind an event recorded on
/// `stream` now (not a capturing stream: see `capture`), and files the imported `footprints`
/// of the launch under that event in the stream-order registry (`order`).
///
/// The kernel is queued already: `held` is never dropped before it is done. Where no event
/// can say when that is, the stream is waited for; where that wait fails too, or a capture
/// another thread began took the kernel, `held` is kept for good (leaked), and the error
/// returned. Other holds' failures found on the way are not this launch's.
pub(crate) fn hold_until_done(
    stream: &Arc<CudaStream>,
    held: Held,
    footprints: &[Footprint],
    kernel: &'static str,
) -> Result<(), CudaError> {
    let ctx = stream.context();
    // What is done is released here first, on the launching thread (module docs). A failure
    // found there is another hold's (a failed kernel, whose context runs nothing more): this
    // launch is queued, and is not reported failed for it.
    let _ = release_done_front();
    let (stopped, reused) = {
        let mut queue = queue();
        let at = queue.free.iter().position(|e| Arc::ptr_eq(e.context(), ctx));
        (
            queue.releaser == Releaser::Stopped,
            at.map(|i| queue.free.swap_remove(i)),
        )
    };
    if stopped {
        // Nothing releases in the background: this launch releases all that is done.
        let _ = release_completed();
    }
    let event = match reused {
        Some(event) => Ok(event),
        None => HoldEvent::new(ctx),
    };
    let bytes = footprints.iter().fold(0usize, |sum, f| sum.saturating_add(f.bytes));
    let mut held = Some(held);
    let recorded = {
        // Recorded, filed and queued in one step (`order::recording`), so that holds of one
        // stream are numbered in the order their events were recorded there: what `front`
        // infers from.
        let _recording = super::order::recording();
        // Bound here: a deleter run above may have bound another context, and the default
        // handles name the bound context's streams.
        let recorded = ctx
            .bind_to_thread()
            .map_err(CudaError::from)
            .and(event)
            .and_then(|event| match event.record(stream) {
                Ok(()) => Ok(Arc::new(event)),
                Err(e) => Err(e.into()),
            });
        // A capture another thread began on the stream since `capture_graph` looked took the
        // kernel (and the record) into its graph, which may replay it at any time: what it
        // holds is never let go.
        if recorded.is_ok()
            && !matches!(
                stream.capture_status(),
                Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
            )
        {
            core::mem::forget(held.take());
            return Err(CudaError::Launch(super::LaunchError::CaptureBegun {
                kernel,
                stream: stream.cu_stream() as usize,
            }));
        }
        recorded.map(|event| {
            // Not capturing (asked above).
            let key = super::order::StreamKey::not_capturing(stream);
            // Filed before the hold is queued, so that its release, which forgets the
            // entries, follows.
            super::order::file_queued(stream, key, footprints, &event);
            let mut queue = queue();
            queue.recorded += 1;
            let seq = queue.recorded;
            queue.pending_bytes = queue.pending_bytes.saturating_add(bytes);
            queue.pending.push_back(Pending {
                seq,
                event,
                stream: key,
                held: held.take().unwrap_or_default(),
                bytes,
            });
            wake(&mut queue)
        })
    };
    match recorded {
        Ok(start) => {
            if start {
                spawn();
            }
            Ok(())
        }
        // Without an event nothing would say when the kernel is done: waited for instead,
        // with no lock held (a deleter may take its producer's locks).
        Err(e) => wait_instead(stream, held.take().unwrap_or_default(), e),
    }
}

/// Without an event, waits for `stream` before `held` is dropped (its kernel is queued there);
/// keeps `held` for good where the wait fails. Returns `error`, or the wait's.
fn wait_instead(stream: &CudaStream, held: Held, error: CudaError) -> Result<(), CudaError> {
    // Outside any capture mode's refusal (another thread's capture).
    match super::event::relaxed(|| Ok(stream.synchronize()?)) {
        Ok(()) => {
            in_deleters(|| drop(held));
            Err(error)
        }
        Err(e) => {
            // Whether the kernel still reaches the memory is unknown: it is never let go.
            core::mem::forget(held);
            Err(e)
        }
    }
}

/// Wakes the releasing thread for new work; whether it must be started.
fn wake(queue: &mut Queue) -> bool {
    match queue.releaser {
        Releaser::NotStarted => {
            queue.releaser = Releaser::Busy;
            true
        }
        Releaser::Idle => {
            queue.releaser = Releaser::Busy;
            WORK.notify_one();
            false
        }
        Releaser::Lingering | Releaser::Busy | Releaser::Stopped => false,
    }
}

/// Starts the releasing thread if it has not started.
pub(crate) fn start_releaser() {
    let start = {
        let mut queue = queue();
        let start = queue.releaser == Releaser::NotStarted;
        if start {
            queue.releaser = Releaser::Busy;
        }
        start
    };
    if start {
        spawn();
    }
}

fn spawn() {
    let spawned = std::thread::Builder::new()
        .name("dlmd-release".into())
        .spawn(run_releaser);
    if spawned.is_err() {
        queue().releaser = Releaser::Stopped;
        RELEASED.notify_all();
    }
}

/// Hands the hold of a graph that is gone to the releasing thread: from the driver's thread,
/// which must not call CUDA (and does not: nothing here does).
pub(crate) fn retire(held: Held) {
    let start = {
        let mut queue = queue();
        queue.retired.push(held);
        wake(&mut queue)
    };
    if start {
        spawn();
    }
}

/// The releasing thread: waits for the oldest pending hold's event, then drops every hold found
/// done, and the holds of graphs that are gone; sleeps while there are none.
fn run_releaser() {
    IS_RELEASER.set(true);
    // Should the loop ever panic, launches and waits release on their own threads from then on.
    let _ = std::panic::catch_unwind(release_loop);
    queue().releaser = Releaser::Stopped;
    RELEASED.notify_all();
}

fn release_loop() {
    if super::driver_available() {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: exchanges this thread's capture mode through a valid pointer; the thread
        // keeps the relaxed mode for its whole life.
        let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
    loop {
        let retired = {
            let mut queue = queue();
            let retired = loop {
                if !queue.retired.is_empty() {
                    break core::mem::take(&mut queue.retired);
                }
                if queue.pending.is_empty() {
                    // Nothing to release: sleep until a hold wakes it.
                    queue.releaser = Releaser::Idle;
                    queue = WORK.wait(queue).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                // Launches in progress release on their own thread: wait for them to pause (no
                // launch for `LINGER`), or for `wait_released` to ask; then look again.
                let (seen, asked) = (queue.recorded, queue.asked);
                queue.releaser = Releaser::Lingering;
                queue = WORK.wait_timeout(queue, LINGER).unwrap_or_else(|e| e.into_inner()).0;
                if queue.recorded == seen || queue.asked != asked {
                    break Vec::new();
                }
            };
            queue.releaser = Releaser::Busy;
            retired
        };
        if !retired.is_empty() {
            // Deleters run with no lock of this module held; waiters are told under the lock,
            // so that none misses it.
            drop(retired);
            released(&queue());
        }
        // The holds done by now end; the others are looked at again a `LINGER` later. A query
        // never blocks: this thread waits on the device for nothing, and a kernel's end is
        // noticed within a `LINGER` of it.
        if let Err(CudaError::Driver(DriverError(sys::CUresult::CUDA_ERROR_DEINITIALIZED))) = collect(None) {
            // The driver is shut down: the process is exiting. What is held stays held.
            return;
        }
    }
}

/// Releases every hold whose kernel is done, without waiting for the others; returns how many
/// holds are still pending. Holds end by themselves once their kernel is done (a thread of
/// this crate waits for them); call this to end those already done on this thread at once,
/// or to count the holds still pending.
pub fn release_completed() -> Result<usize, CudaError> {
    collect(None)
}

/// Tells the threads waiting on [`RELEASED`], if any, that holds have ended (under the lock, so
/// that none misses it).
fn released(queue: &Queue) {
    if queue.waiters > 0 {
        RELEASED.notify_all();
    }
}

/// A pending hold as seen outside the lock: its number, its event and its stream.
type Watched = (u64, Arc<HoldEvent>, super::order::StreamKey);

/// Releases the holds whose events are complete (and the one numbered `forced`, whose wait
/// failed), and the holds of graphs that are gone; returns how many holds are still pending.
/// No driver call is made and no deleter runs with the queue locked: a driver callback
/// ([`retire`]) takes the lock.
fn collect(forced: Option<u64>) -> Result<usize, CudaError> {
    let (snapshot, retired): (Vec<Watched>, Vec<Held>) = {
        let mut queue = queue();
        let snapshot = queue
            .pending
            .iter()
            .map(|p| (p.seq, p.event.clone(), p.stream))
            .collect();
        (snapshot, core::mem::take(&mut queue.retired))
    };
    if !retired.is_empty() {
        in_deleters(|| drop(retired));
        // Waiters are told under the lock, so that none misses it.
        released(&queue());
    }
    // Events of one stream complete in the order they were recorded: past the first that has
    // not, none of that stream's later ones is asked, so a deep queue costs one query a stream.
    let mut busy: Vec<super::order::StreamKey> = Vec::new();
    let mut done: Vec<u64> = Vec::new();
    let mut failed = None;
    for (seq, event, stream) in &snapshot {
        if busy.iter().any(|b| b.same(*stream)) {
            continue;
        }
        if forced == Some(*seq) {
            done.push(*seq);
            continue;
        }
        match is_done(event) {
            Ok(true) => done.push(*seq),
            Ok(false) => busy.push(*stream),
            // The driver is shut down: the process is exiting, and nothing is released.
            Err(e @ DriverError(sys::CUresult::CUDA_ERROR_DEINITIALIZED)) => {
                failed.get_or_insert(e);
                busy.push(*stream);
            }
            // A failed query is a failed kernel, which poisons its context: nothing queued
            // there runs any more, so its hold ends too.
            Err(e) => {
                failed.get_or_insert(e);
                done.push(*seq);
            }
        }
    }
    drop(snapshot);
    let (taken, left) = {
        let mut queue = queue();
        let mut taken = Vec::new();
        let mut kept = VecDeque::with_capacity(queue.pending.len());
        for p in queue.pending.drain(..) {
            if done.contains(&p.seq) {
                taken.push(p);
            } else {
                kept.push_back(p);
            }
        }
        queue.pending = kept;
        queue.pending_bytes = queue.pending.iter().fold(0usize, |sum, p| sum.saturating_add(p.bytes));
        let seqs: Vec<u64> = taken.iter().map(|p| p.seq).collect();
        queue.releasing.extend(seqs);
        (taken, queue.pending.len())
    };
    if !taken.is_empty() {
        release(taken);
    }
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(left),
    }
}

/// Drops the holds `taken` out of the queue, with no lock held, and keeps their events for
/// reuse.
fn release(taken: Vec<Pending>) {
    if taken.is_empty() {
        return;
    }
    let (seqs, events): (Vec<u64>, Vec<Arc<HoldEvent>>) = taken.iter().map(|p| (p.seq, p.event.clone())).unzip();
    super::order::forget_queued(&events);
    // Deleters run here, with no lock of this crate held.
    let held: Vec<Held> = taken.into_iter().map(|p| p.held).collect();
    in_deleters(|| drop(held));
    let left: Vec<Result<HoldEvent, Arc<HoldEvent>>> = {
        let mut queue = queue();
        queue.releasing.retain(|s| !seqs.contains(s));
        let mut left = Vec::new();
        for event in events {
            match Arc::try_unwrap(event) {
                Ok(event) if queue.free.len() < FREE_EVENTS => queue.free.push(event),
                Ok(event) => left.push(Ok(event)),
                // A waiter still holds it: the last of them destroys it.
                Err(event) => left.push(Err(event)),
            }
        }
        released(&queue);
        left
    };
    // Destroyed (a driver call) outside the lock.
    drop(left);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed::{ManagedTensor, export};
    use crate::{Dims, dlpack::DLManagedTensorVersioned};

    /// Held by the tests that file graphs' holds in the queue, which each look at what is
    /// retired: one at a time.
    pub(super) static RETIRING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the releasing thread outlives the test, which Miri reports as a leak"
    )]
    fn the_hold_of_a_graph_that_is_gone_is_dropped_by_the_releasing_thread() {
        let _alone = RETIRING.lock().unwrap_or_else(|e| e.into_inner());
        let data: Arc<[f32]> = Arc::from(vec![0.0f32; 4]);
        let raw = export::<DLManagedTensorVersioned>(data.clone(), Dims::new([4])).unwrap();
        // SAFETY: a fresh export, handed over once.
        let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
        assert_eq!(Arc::strong_count(&data), 2);
        // As the driver's thread does when a graph is destroyed: no CUDA call is needed.
        retire(Held {
            tensors: vec![Arc::new(tensor)],
            module: None,
            filed: None,
        });
        let mut queue = queue();
        while Arc::strong_count(&data) > 1 {
            queue = wait::wait_for_release(queue);
        }
        assert!(queue.retired.is_empty());
    }
}
