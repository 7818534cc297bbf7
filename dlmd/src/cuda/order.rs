//! Stream order for device views: work queued on a view's memory before the view was made runs
//! before any launch, copy or collective that takes the view, on whichever stream.
//!
//! A view carries a pointer, not its memory's history, so the history is kept here: when a
//! view is made of memory whose owner queues work on a stream (a cudarc allocation on its
//! stream, a [`MirroredArray`](super::MirroredArray)'s device copy, a candle tensor on candle's
//! stream), that stream is filed under the memory's byte range ([`after_queued`]). Work over a
//! view on another stream first waits, on the device, for an event recorded on the owner's
//! stream of every range it overlaps ([`order_after`]): `cuStreamWaitEvent`, no host wait.
//! Work on the owner's own stream is ordered by the stream already and pays nothing, and
//! making a view costs no driver call.
//!
//! The event is recorded when the work is queued, not when the view was made: it may also
//! cover work the owner queued in between, which only reads the memory (the view borrows it),
//! so waiting for it is never wrong. A filed stream is held weakly: once its owner (the
//! allocation, the array, candle's device) is gone, so is the entry.
//!
//! A stream is known by a [`StreamKey`], not by its handle alone: a handle names another stream
//! once its stream is destroyed and the handle reused, and the default handles name another
//! stream on every context (and `0x2` on every thread). The per-thread default stream (handle
//! `0x2`) is another stream on every thread, and an event recorded on it from one thread records
//! that thread's: so memory whose owner's stream is `0x2` is filed with an event recorded when
//! the view is made, on the thread that makes it (after the work that thread queued on the
//! memory; the view's borrow keeps the owner from writing it after).
//!
//! The work such a view takes part in is queued in a [`scope`](super::scope), which waits for
//! its streams before the view's borrow of the memory ends: whatever the memory's owner queues
//! next runs after the view's work.
//!
//! Imported tensors have no owner here: each import names the stream its producer made the
//! data ready on, and two imports of one tensor may name two streams. So a launch over imports
//! files their byte ranges, with how it uses them and the event recorded after the kernel (the
//! event that ends its hold, `release`), and a later launch on another stream over overlapping
//! bytes waits for that event on the device ([`order_after_queued`]), unless both only read.
//! The entries go when their hold is released, which is when their event is complete
//! ([`forget_queued`]). Copies, collectives and launches queued in a [`scope`](super::scope)
//! wait for such launches in the same way, and file their own bytes (a launch: those of its
//! arguments no hold files) under the scope's event of their stream, recorded after them, until
//! the scope has waited for it: an aliased or atomic view is `Copy`, so a kernel and a copy on
//! another stream may both take it. A stream that is capturing
//! a CUDA graph cannot wait for work queued outside the capture: there a launch over bytes such
//! work still uses is refused ([`LaunchError::CaptureOrder`](super::LaunchError::CaptureOrder)).
//! A captured launch over imports captures, after its kernel, a node that records an event each
//! time the graph runs, and files its bytes under that event, for no stream (a graph may run on
//! any), for as long as the graph lives ([`Filed`]): a later launch waits for the latest run.

use super::event::{HoldEvent, relaxed};
use super::{CudaError, LaunchError};
use crate::kernel::{Footprint, Use};
use cudarc::driver::{CudaStream, DriverError, sys};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

/// A byte range and the stream its owner queues work on.
struct Owner {
    start: usize,
    end: usize,
    stream: Weak<CudaStream>,
    key: StreamKey,
    /// For the per-thread default stream, the event recorded on the filing thread's when the
    /// view was made: another thread cannot record one on that stream later.
    recorded: Option<Arc<HoldEvent>>,
}

/// The per-thread default stream's handle, which names another stream on every thread.
const PER_THREAD: usize = 0x2;

/// A stream as the driver knows it: what tells whether two pieces of work were queued on one
/// stream, and so are ordered already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKey {
    /// A stream the driver made (a handle above 2), by the driver's id for it
    /// (`cuStreamGetId`), unique for the life of the process: a handle reused after its stream
    /// was destroyed has another id. For entries that may outlive their stream.
    Id(u64),
    /// A stream the driver made, by its handle and context, which name it only while it lives:
    /// for comparing streams alive at once (an owner's, kept by its `Arc`, and a launch's).
    Live(usize, usize),
    /// The legacy default stream (handle 0 or 1) of a context.
    Legacy(usize),
    /// The per-thread default stream (handle 2) of a context, on a thread.
    PerThread(usize, ThreadId),
    /// A stream whose id was not asked (it was capturing, and the question would invalidate the
    /// capture) or not given (a driver before CUDA 12.0 has none): the same stream as none
    /// other.
    Unknown,
}

impl StreamKey {
    /// The key of a default handle's stream, which is never destroyed; `None` for a stream the
    /// driver made.
    fn default_stream(stream: &CudaStream) -> Option<Self> {
        let ctx = stream.context().cu_ctx() as usize;
        match stream.cu_stream() as usize {
            0 | 1 => Some(Self::Legacy(ctx)),
            PER_THREAD => Some(Self::PerThread(ctx, std::thread::current().id())),
            _ => None,
        }
    }

    /// The key of `stream` while it lives, without asking the driver.
    fn live(stream: &CudaStream) -> Self {
        Self::default_stream(stream)
            .unwrap_or_else(|| Self::Live(stream.cu_stream() as usize, stream.context().cu_ctx() as usize))
    }

    /// The key of `stream` for the life of the process: what entries that may outlive it are
    /// filed under. [`Unknown`](Self::Unknown) where it is capturing.
    pub(crate) fn of(stream: &CudaStream) -> Self {
        match stream.capture_status() {
            Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE) => Self::not_capturing(stream),
            _ => Self::Unknown,
        }
    }

    /// [`of`](Self::of) for a stream the caller found is not capturing (asking the id of a
    /// capturing stream invalidates its capture).
    pub(crate) fn not_capturing(stream: &CudaStream) -> Self {
        Self::default_stream(stream).unwrap_or_else(|| stream_id(stream).map_or(Self::Unknown, Self::Id))
    }

    /// Whether `self` and `other` surely name one stream.
    pub(crate) fn same(self, other: Self) -> bool {
        self != Self::Unknown && self == other
    }
}

/// The driver's id of `stream` (`cuStreamGetId`), a stream the driver made: unique for the life
/// of the process. `None` where the driver gives none (before CUDA 12.0, or refused).
fn stream_id(stream: &CudaStream) -> Option<u64> {
    // Looked up once, from the driver cudarc uses.
    static ENTRY: std::sync::OnceLock<Option<GetId>> = std::sync::OnceLock::new();
    // SAFETY: `GetId` is `cuStreamGetId`'s C signature.
    let get = (*ENTRY.get_or_init(|| unsafe { super::library::symbol(&["cuda", "nvcuda"], b"cuStreamGetId\0") }))?;
    let mut id: core::ffi::c_ulonglong = 0;
    // SAFETY: the driver's function, a live stream (the `CudaStream` is borrowed) and a place for
    // the id.
    let status = unsafe { get(stream.cu_stream(), &mut id) };
    (status == sys::CUresult::CUDA_SUCCESS).then_some(id)
}

/// `cuStreamGetId`'s C signature.
type GetId = unsafe extern "C" fn(sys::CUstream, *mut core::ffi::c_ulonglong) -> sys::CUresult;

/// The ranges views were made of, with their owners' streams.
static OWNERS: Mutex<Vec<Owner>> = Mutex::new(Vec::new());

/// How many entries are kept before those whose owner is gone are dropped.
const PRUNE_AT: usize = 64;

/// Files `stream` as where the owner of the `bytes` bytes at device address `ptr` queues its
/// work: work over a view of them on another stream waits for it ([`order_after`]). On the
/// per-thread default stream, an event is recorded now, on this thread's; where that fails,
/// this thread's stream is waited for instead.
pub(crate) fn after_queued(stream: &Arc<CudaStream>, ptr: sys::CUdeviceptr, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let (start, key) = (ptr as usize, StreamKey::live(stream));
    let end = start.saturating_add(bytes);
    let recorded = if stream.cu_stream() as usize == PER_THREAD {
        let event = HoldEvent::new(stream.context()).and_then(|e| Ok(e.record(stream).map(|()| e)?));
        match event {
            Ok(event) => Some(Arc::new(event)),
            Err(_) => {
                // Then nothing this thread queued is left in flight to order after (a failed
                // wait is a failed kernel, after which the context runs nothing).
                let _ = stream.synchronize();
                return;
            }
        }
    } else {
        None
    };
    let stale = {
        let mut owners = OWNERS.lock().unwrap_or_else(|e| e.into_inner());
        let mut stale: Vec<Owner> = Vec::new();
        if owners.len() >= PRUNE_AT {
            stale.extend(owners.extract_if(.., |o| o.stream.strong_count() == 0));
        }
        // Filed before through the same `Arc` (the same key, so on `0x2` the same thread): an
        // entry kept through another `Arc` of the stream would be passed once that one is gone,
        // whatever this one's owner still queues.
        let known = owners.iter().position(|o| {
            (o.start, o.end) == (start, end)
                && o.key == key
                && o.stream.strong_count() > 0
                && core::ptr::eq(o.stream.as_ptr(), Arc::as_ptr(stream))
        });
        let owner = Owner {
            start,
            end,
            stream: Arc::downgrade(stream),
            key,
            recorded,
        };
        match known {
            // A later event of the same stream stands for the earlier one.
            Some(at) if owner.recorded.is_some() => stale.push(core::mem::replace(&mut owners[at], owner)),
            Some(_) => {}
            None => owners.push(owner),
        }
        stale
    };
    // Their events are destroyed (a driver call) outside the lock.
    drop(stale);
}

/// Makes `stream` wait, on the device, for the work queued so far on the owners' streams of
/// every range that the `bytes` bytes at `ptr` overlap, where that is another stream. A stream
/// that is capturing a CUDA graph cannot wait for work queued outside the capture: there the
/// owners' work must be done, or `kernel`'s launch is refused
/// ([`LaunchError::CaptureOrder`]).
pub(crate) fn order_after(
    stream: &CudaStream,
    ptr: usize,
    bytes: usize,
    kernel: &'static str,
) -> Result<(), CudaError> {
    if bytes == 0 {
        return Ok(());
    }
    let end = ptr.saturating_add(bytes);
    type Overlapping = (StreamKey, Weak<CudaStream>, Option<Arc<HoldEvent>>);
    let overlapping: Vec<Overlapping> = {
        let owners = OWNERS.lock().unwrap_or_else(|e| e.into_inner());
        owners
            .iter()
            .filter(|o| overlaps((o.start, o.end), (ptr, end)))
            .map(|o| (o.key, o.stream.clone(), o.recorded.clone()))
            .collect()
    };
    if overlapping.is_empty() {
        return Ok(());
    }
    // Owners' streams live while their entries count (`upgrade`), as the launch's does: their
    // handles name them. Work on the launch's own stream is ordered already, also for a graph it
    // captures, which cudarc replays there.
    let key = StreamKey::live(stream);
    let mut others: Vec<(StreamKey, Arc<CudaStream>)> = Vec::new();
    let mut recorded: Vec<Arc<HoldEvent>> = Vec::new();
    for (k, owner, event) in overlapping.into_iter().filter(|(k, ..)| !k.same(key)) {
        if let Some(event) = event {
            recorded.push(event);
        } else if let Some(owner) = owner.upgrade()
            && !others.iter().any(|(o, _)| o.same(k))
        {
            others.push((k, owner));
        }
    }
    if others.is_empty() && recorded.is_empty() {
        return Ok(());
    }
    if stream.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        // A capture cannot wait for work queued outside it: owners whose work is done (asked in
        // relaxed mode, so that the question does not break the capture) are passed, and an
        // owner's stream that joined the capture is waited for inside it, as below. Passing is
        // sound because a captured launch takes only views that borrow for `'static` (or
        // imports, ordered by `order_after_queued`): nothing safe writes their memory after.
        let (done, joined) = relaxed(|| {
            let mut joined = Vec::new();
            for (_, owner) in &others {
                if owner.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                    joined.push(owner.clone());
                    continue;
                }
                // SAFETY: `owner` is a live stream (held by the `Arc`).
                match unsafe { sys::cuStreamQuery(owner.cu_stream()) } {
                    sys::CUresult::CUDA_SUCCESS => {}
                    sys::CUresult::CUDA_ERROR_NOT_READY => return Ok((false, joined)),
                    e => return Err(DriverError(e).into()),
                }
            }
            for event in &recorded {
                if !event.is_complete()? {
                    return Ok((false, joined));
                }
            }
            Ok((true, joined))
        })?;
        if done {
            for owner in joined {
                let event = owner.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
                stream.wait(&event)?;
            }
        }
        return if done {
            Ok(())
        } else {
            Err(CudaError::Launch(LaunchError::CaptureOrder {
                kernel,
                stream: stream.cu_stream() as usize,
            }))
        };
    }
    for (_, owner) in others {
        let event = owner.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
        stream.wait(&event)?;
    }
    for event in &recorded {
        // SAFETY: `stream` is a live stream and `event` a live, recorded event (held by the
        // `Arc`); waiting for an event of another context is allowed.
        unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), event.handle(), 0) }.result()?;
    }
    Ok(())
}

/// Bytes a launch (over imports, or in a scope), a copy or a collective queued work on, until
/// the event recorded after it.
struct Queued {
    start: usize,
    end: usize,
    /// Whether the work writes them (plainly or atomically).
    writes: bool,
    /// The stream the event is recorded on; `None` for a graph's runs, which no stream orders.
    key: Option<StreamKey>,
    /// That stream's handle (0 for a graph's runs).
    handle: usize,
    event: Arc<HoldEvent>,
}

/// The imported bytes of launches whose holds are not yet released, the bytes of launches,
/// copies and collectives in scopes not yet ended, and the imported bytes of launches captured
/// into graphs that live.
static QUEUED: Mutex<Vec<Queued>> = Mutex::new(Vec::new());

/// Held while an event is recorded on a stream and entries are filed under it (and, for a
/// launch's hold, the hold is queued: `release`), so that a stream's entries and holds are in
/// the order their events were recorded there, which [`order_after_queued`] and the release of
/// holds infer from. Taken with no other lock of this crate held; nothing that waits on the
/// device or runs a deleter happens under it.
static RECORDING: Mutex<()> = Mutex::new(());

/// Takes [`RECORDING`].
pub(crate) fn recording() -> std::sync::MutexGuard<'static, ()> {
    RECORDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Files the `footprints` of work queued on `stream`, whose key is `key`
/// ([`StreamKey::of`]), (a launch's imported arguments, a scoped launch's other arguments, a
/// copy's or a collective's views) as work in flight until `event`, recorded after it.
pub(crate) fn file_queued(stream: &CudaStream, key: StreamKey, footprints: &[Footprint], event: &Arc<HoldEvent>) {
    file(Some(key), stream.cu_stream() as usize, footprints, event);
}

/// The entries of a launch captured into a graph, which go when it is dropped: with the
/// graph's hold (see `capture`).
pub(crate) struct Filed(Arc<HoldEvent>);

impl Drop for Filed {
    fn drop(&mut self) {
        forget_queued(core::slice::from_ref(&self.0));
    }
}

/// Files the `footprints` of a launch captured into a graph as work in flight until `event`,
/// which a node captured after the kernel records each time the graph runs, for as long as
/// the [`Filed`] returned lives.
pub(crate) fn file_captured(footprints: &[Footprint], event: &Arc<HoldEvent>) -> Filed {
    file(None, 0, footprints, event);
    Filed(event.clone())
}

fn file(key: Option<StreamKey>, handle: usize, footprints: &[Footprint], event: &Arc<HoldEvent>) {
    if footprints.iter().all(|f| f.bytes == 0) {
        return;
    }
    let mut queued = QUEUED.lock().unwrap_or_else(|e| e.into_inner());
    for f in footprints.iter().filter(|f| f.bytes > 0) {
        let (start, end) = (f.start, f.start.saturating_add(f.bytes));
        let mut writes = !matches!(f.used, Use::Read);
        // The same bytes filed under the same event before (a scope's event of a stream, under
        // which each launch or copy of the scope on that stream files): one entry, moved last,
        // where the latest entry of each stream is looked for, so that a loop of launches over
        // the same views in one scope files them once.
        if let Some(at) = queued
            .iter()
            .position(|q| (q.start, q.end) == (start, end) && Arc::ptr_eq(&q.event, event))
        {
            writes |= queued.remove(at).writes;
        }
        queued.push(Queued {
            start,
            end,
            writes,
            key,
            handle,
            event: event.clone(),
        });
    }
}

/// Forgets the entries filed under `events`, whose work is done.
pub(crate) fn forget_queued(events: &[Arc<HoldEvent>]) {
    let forgotten: Vec<Queued> = {
        let mut queued = QUEUED.lock().unwrap_or_else(|e| e.into_inner());
        if queued.is_empty() {
            return;
        }
        queued
            .extract_if(.., |q| events.iter().any(|e| Arc::ptr_eq(e, &q.event)))
            .collect()
    };
    // Their events are dropped outside the lock.
    drop(forgotten);
}

/// Makes `stream` wait, on the device, for the work filed on other streams (launches over
/// imports, work in scopes) whose bytes overlap `footprint`'s, where either writes them; `own`
/// is the caller's scope's event of `stream`, whose entries the stream orders already. Where
/// `stream` is capturing a graph, which cannot wait for work outside it, such work must be done
/// already; a launch of `kernel` over bytes it still uses is refused.
pub(crate) fn order_after_queued(
    stream: &CudaStream,
    footprint: &Footprint,
    own: Option<&Arc<HoldEvent>>,
    kernel: &'static str,
) -> Result<(), CudaError> {
    if footprint.bytes == 0 {
        return Ok(());
    }
    let (start, end) = (footprint.start, footprint.start.saturating_add(footprint.bytes));
    let writes = !matches!(footprint.used, Use::Read);
    let handle = stream.cu_stream() as usize;
    let overlapping: Vec<(Option<StreamKey>, usize, Arc<HoldEvent>)> = {
        let queued = QUEUED.lock().unwrap_or_else(|e| e.into_inner());
        queued
            .iter()
            // Entries under `own`, the scope's event of this very stream (which a scope refuses
            // to queue on while it captures), are ordered by the stream: passed without asking
            // the driver anything.
            .filter(|q| (writes || q.writes) && overlaps((q.start, q.end), (start, end)))
            .filter(|q| !own.is_some_and(|own| Arc::ptr_eq(own, &q.event)))
            .map(|q| (q.key, q.handle, q.event.clone()))
            .collect()
    };
    if overlapping.is_empty() {
        return Ok(());
    }
    // Asked once: a capture is what decides both this stream's key and how its work is ordered.
    let capturing = stream.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // A capturing stream's own earlier work is no part of its graph: it counts as another
    // stream's. Otherwise this stream's id is asked only where an entry's stream had its handle
    // (it may be this one): other handles are other streams.
    let key = if capturing {
        StreamKey::Unknown
    } else if let Some(key) = StreamKey::default_stream(stream) {
        key
    } else if overlapping
        .iter()
        .any(|(k, h, _)| *h == handle && matches!(k, Some(StreamKey::Id(_))))
    {
        StreamKey::not_capturing(stream)
    } else {
        StreamKey::Unknown
    };
    // Events of one stream complete in the order they were recorded, and entries are filed in
    // that order (an event filed again is recorded again only later): the last entry of a stream
    // stands for all its earlier ones. A graph's entries stand for themselves.
    let mut latest: Vec<(Option<StreamKey>, Arc<HoldEvent>)> = Vec::new();
    for (k, _, event) in overlapping
        .into_iter()
        .filter(|(k, ..)| !k.is_some_and(|k| k.same(key)))
    {
        match latest
            .iter_mut()
            .find(|(l, _)| matches!((l, k), (Some(a), Some(b)) if a.same(b)))
        {
            Some((_, last)) => *last = event,
            None => latest.push((k, event)),
        }
    }
    let events: Vec<Arc<HoldEvent>> = latest.into_iter().map(|(_, event)| event).collect();
    if events.is_empty() {
        return Ok(());
    }
    if capturing {
        for event in &events {
            // Asked in relaxed mode: the query itself must not break the capture.
            if !relaxed(|| Ok(event.is_complete()?))? {
                return Err(CudaError::Launch(LaunchError::CaptureOrder {
                    kernel,
                    stream: stream.cu_stream() as usize,
                }));
            }
        }
        return Ok(());
    }
    for event in &events {
        // SAFETY: `stream` is a live stream and `event` a live event (held by the `Arc`) that
        // was recorded; waiting for an event of another context is allowed.
        unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), event.handle(), 0) }.result()?;
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
