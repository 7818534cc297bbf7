//! Asynchronous work over borrowed device views, and copies between devices.
//!
//! Work queued on a stream outlives the call that queued it, so it cannot borrow a view for
//! that call alone. A [`scope`] ties them together instead, as [`std::thread::scope`] does for
//! threads: the views given to work queued in it must outlive the scope, and the scope waits
//! for that work before it returns (also when its closure fails or panics). Inside, work is
//! queued without waiting, so copies and collectives run back to back.
//!
//! The scope records an event after each piece of work it queues (one event a stream,
//! recorded again after each, and once more at its end where the stream is not capturing), and
//! waits for those events, not for the streams: a stream that begins a CUDA graph capture later
//! cannot be synchronized, but an event recorded before can be waited for. It never returns while one of them is neither complete nor failed (a failed
//! event is a failed kernel, which poisons the context: nothing queued there runs any more).
//! Work is not queued in a scope on a stream that is capturing ([`CudaError::ScopeCapture`]):
//! it would run when the graph runs, after the scope has ended.
//!
//! Copies, collectives and launches wait, on the device, for launches over imports of the same
//! bytes in flight on other streams, and for other work in scopes on other streams (`order`),
//! and file their own bytes under the scope's event of their stream, until the scope has
//! waited for it, so that later work on other streams over the same bytes waits for them too
//! (an aliased or atomic view is `Copy`: a kernel and a copy on another stream may both take
//! it). NCCL
//! queues the calls made in a `nccl::group` when the outermost group ends, so
//! a collective's event is recorded, and its bytes filed, then; a collective in a scope that
//! began inside a group, which would end before NCCL queues it, is refused
//! ([`CudaError::ScopeGroup`]).

use super::event::{HoldEvent, relaxed};
use super::peer::{enable_peer_access, grant_pool_access};
use super::{CudaError, context};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::disjoint::check_disjoint;
use crate::kernel::{Footprint, Use};
use crate::layout::{CompactLayout, Mapping};
use crate::space::{Device, MemorySpace};
use crate::view::{Access, Mdspan, WriteAccess};
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Memory that CUDA copies and NCCL collectives work on: the memory of one CUDA device.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` view cannot take part in device-to-device work",
    label = "not CUDA device memory",
    note = "peer copies and NCCL collectives read and write CUDA device memory (`Device` views); \
            copy host data to a device first"
)]
pub trait DeviceMemory: MemorySpace + sealed::Sealed {
    /// The CUDA device ordinal.
    fn ordinal(&self) -> i32;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::space::Device {}
}

impl DeviceMemory for Device {
    #[inline]
    fn ordinal(&self) -> i32 {
        Device::ordinal(*self)
    }
}

/// Where asynchronous work over borrowed views is queued; see [`scope`].
///
/// `'scope` is the scope's own lifetime and `'env` that of what it borrows (outside the
/// closure), as in [`std::thread::Scope`]; both are invariant, so only views that outlive the
/// whole scope can be given to its work.
pub struct Scope<'scope, 'env: 'scope> {
    /// The streams work was queued on (by driver handle and device), each with the event
    /// recorded after the latest work queued there.
    streams: RefCell<Vec<(StreamHandle, Slot)>>,
    /// This scope's key among the [`QUEUED`] footprints.
    id: u64,
    /// How deep in NCCL groups this thread was when the scope began.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    group: usize,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl core::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scope")
            .field("streams", &self.streams.borrow().len())
            .finish()
    }
}

/// A stream as the driver knows it, within one thread: its handle and its context (kept alive
/// by the slot's stream).
type StreamHandle = (usize, usize);

/// Work about to be queued in a scope on one stream: the scope's event of that stream, which
/// [`Scope::queued`] records after the work. Taken before anything is queued, so that nothing
/// queued is left without an event for want of one.
pub(crate) struct Slot {
    stream: Arc<CudaStream>,
    event: Arc<HoldEvent>,
}

impl Slot {
    /// The scope's event of the slot's stream, under which its work there is filed.
    pub(crate) fn event(&self) -> &Arc<HoldEvent> {
        &self.event
    }
}

/// Collectives queued in an NCCL group that has not ended on this thread: their events are
/// recorded, and their bytes filed, once NCCL has queued them.
#[cfg_attr(not(feature = "nccl"), allow(dead_code))]
struct Group {
    depth: usize,
    deferred: Vec<(Slot, Vec<Footprint>)>,
}

std::thread_local! {
    static GROUP: RefCell<Group> = const { RefCell::new(Group { depth: 0, deferred: Vec::new() }) };
}

/// An NCCL group began on this thread (`ncclGroupStart`).
#[cfg(feature = "nccl")]
pub(crate) fn group_started() {
    GROUP.with_borrow_mut(|g| g.depth += 1);
}

/// An NCCL group ended on this thread (`ncclGroupEnd`): once the outermost has, the
/// collectives queued in it are, and their scopes' events are recorded after them.
#[cfg(feature = "nccl")]
pub(crate) fn group_ended() -> Result<(), CudaError> {
    let deferred = GROUP.with_borrow_mut(|g| {
        g.depth = g.depth.saturating_sub(1);
        if g.depth == 0 {
            core::mem::take(&mut g.deferred)
        } else {
            Vec::new()
        }
    });
    let mut first = Ok(());
    for (slot, footprints) in deferred {
        first = first.and(record(slot, &footprints));
    }
    first
}

/// Records `slot`'s event after the work just queued on its stream, and files `footprints`
/// under it. Where the record fails, the stream is waited for here instead.
fn record(slot: Slot, footprints: &[Footprint]) -> Result<(), CudaError> {
    let recorded = {
        // Recorded and filed in one step (`order::recording`).
        let _recording = super::order::recording();
        // Bound first: at a group's end, the thread's context may be another device's.
        let recorded = (slot.stream.context().bind_to_thread()).and_then(|()| slot.event.record(&slot.stream));
        if recorded.is_ok() {
            let key = super::order::StreamKey::of(&slot.stream);
            super::order::file_queued(&slot.stream, key, footprints, &slot.event);
        }
        recorded
    };
    if let Err(e) = recorded {
        // Outside any capture mode's refusal; a failure here is a failed kernel, after which
        // the context runs nothing.
        let _ = relaxed(|| Ok(slot.stream.synchronize()?));
        return Err(e.into());
    }
    Ok(())
}

impl<'scope> Scope<'scope, '_> {
    /// The slot for `operation`'s work on `stream`, refused where the stream is capturing a CUDA
    /// graph (the work would run when the graph does, after the scope ends).
    pub(crate) fn slot(&self, operation: &'static str, stream: &Arc<CudaStream>) -> Result<Slot, CudaError> {
        if stream.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(CudaError::ScopeCapture {
                operation,
                stream: stream.cu_stream() as usize,
            });
        }
        // By context, not device: two contexts of one device have streams of the same default
        // handles, which are other streams, and a slot's event records only in its own context.
        let key = (stream.cu_stream() as usize, stream.context().cu_ctx() as usize);
        let mut streams = self.streams.borrow_mut();
        let event = match streams.iter().find(|(k, _)| *k == key) {
            Some((_, slot)) => slot.event.clone(),
            None => {
                let event = Arc::new(HoldEvent::new(stream.context())?);
                let stream = stream.clone();
                streams.push((
                    key,
                    Slot {
                        stream,
                        event: event.clone(),
                    },
                ));
                event
            }
        };
        Ok(Slot {
            stream: stream.clone(),
            event,
        })
    }

    /// [`slot`](Self::slot) for a collective, refused in a scope that began inside an NCCL
    /// group: NCCL queues the collective when the group ends, after this scope.
    #[cfg(feature = "nccl")]
    pub(crate) fn collective_slot(&self, operation: &'static str, stream: &Arc<CudaStream>) -> Result<Slot, CudaError> {
        if self.group > 0 && GROUP.with_borrow(|g| g.depth) > 0 {
            return Err(CudaError::ScopeGroup { operation });
        }
        self.slot(operation, stream)
    }

    /// Records `slot`'s event after the work just queued on its stream, which the scope waits
    /// for before it ends, and files `footprints` (a launch's, a copy's or a collective's views)
    /// under it until then, for work on other streams to wait for.
    pub(crate) fn queued(&self, slot: Slot, footprints: &[Footprint]) -> Result<(), CudaError> {
        record(slot, footprints)
    }

    /// [`queued`](Self::queued) for a collective: inside an NCCL group, once the outermost
    /// group has ended (which is before this scope ends: `collective_slot`).
    #[cfg(feature = "nccl")]
    pub(crate) fn queued_collective(&self, slot: Slot, footprints: &[Footprint]) -> Result<(), CudaError> {
        let slot = GROUP.with_borrow_mut(|g| {
            if g.depth == 0 {
                return Some(slot);
            }
            g.deferred.push((slot, footprints.to_vec()));
            None
        });
        slot.map_or(Ok(()), |slot| record(slot, footprints))
    }

    /// Files what one copy or collective, `operation`, reaches (`footprints`) as queued in this
    /// scope until it ends, after checking that none of them writes memory another reaches, or
    /// that work queued in any scope not yet ended reaches (and none reads memory such work
    /// writes). A `Unique` view's `&mut` borrow already excludes that; an aliased one
    /// (`AliasedMut`, an import's) is `Copy`, so only this check does.
    pub(crate) fn claim(&self, operation: &'static str, footprints: &[Footprint]) -> Result<(), CudaError> {
        let own: Vec<Option<Footprint>> = footprints.iter().copied().map(Some).collect();
        if check_disjoint(&own).is_err() {
            return Err(CudaError::ScopeOverlap {
                operation,
                with_queued: false,
            });
        }
        let mut queued = queued();
        let clash = footprints.iter().any(|new| {
            queued
                .iter()
                .any(|(_, old)| !new.may_share_with(old) && new.overlaps(old))
        });
        if clash {
            return Err(CudaError::ScopeOverlap {
                operation,
                with_queued: true,
            });
        }
        queued.extend(footprints.iter().filter(|f| f.bytes > 0).map(|&f| (self.id, f)));
        Ok(())
    }

    /// Waits for the event recorded after the latest work on each stream work was queued on,
    /// until each is complete or failed, then lets go of what that work reached; the first
    /// error is returned.
    fn wait(&self) -> Result<(), CudaError> {
        let slots: Vec<(StreamHandle, Slot)> = self.streams.borrow_mut().drain(..).collect();
        for (_, Slot { stream, event }) in &slots {
            // Once more where the stream is not capturing, after what was queued there since
            // (as by NCCL for a group begun outside `nccl::group`); a failure leaves the last.
            if matches!(
                stream.capture_status(),
                Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
            ) {
                let _ = event.record(stream);
            }
        }
        let events: Vec<Arc<HoldEvent>> = slots.into_iter().map(|(_, slot)| slot.event).collect();
        let mut first = Ok(());
        for event in &events {
            if let Err(e) = event.wait_done() {
                first = first.and(Err(e.into()));
            }
        }
        super::order::forget_queued(&events);
        queued().retain(|(id, _)| *id != self.id);
        first
    }

    /// Queues on `stream` a copy of `src` into `dst`, between devices (or on one): the same
    /// element type and layout, and the same extents (checked), on a stream that is not
    /// capturing a CUDA graph ([`CudaError::ScopeCapture`]). Peer access between the two
    /// devices is enabled the first time they meet, and each device is given access to the
    /// stream-ordered memory pool the other's view came from (cudarc allocates from one), so the
    /// copy goes over NVLink or PCIe directly where the hardware allows it.
    ///
    /// `dst`'s `&mut` borrow keeps other work away from a [`Unique`](crate::Unique) view; an
    /// aliased one (`AliasedMut`, an import's) is `Copy`, so a copy of it could be the source,
    /// or another copy's: a copy whose destination shares memory with its source, or with work
    /// queued in a scope that has not ended (or whose source another such copy writes), is
    /// refused ([`CudaError::ScopeOverlap`]). `bool` elements of an aliased (imported) source
    /// are bytes no one has checked, and are not copied into a `Unique` view
    /// ([`ImportError::UncheckedBool`](crate::import::ImportError::UncheckedBool)): copy them
    /// as `u8`. Host views and other layouts do not compile;
    /// non-contiguous layouts neither (copy those with a kernel). `stream` may belong to either device. The copy runs after the work
    /// queued on either view's memory before the view was made, on whichever stream, and after
    /// launches over imports of the same memory in flight on other streams, and launches over
    /// views of it in scopes not yet ended (where either writes it); later launches over imports
    /// of it, or over views of it in scopes, wait for the copy. The scope keeps both
    /// views borrowed until it has waited for the copy.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), dlmd::cuda::CudaError> {
    /// use dlmd::cuda::{self, device_view, device_view_mut};
    /// use dlmd::{Dims, LayoutRight};
    ///
    /// let (gpu0, gpu1) = (cuda::context(0)?, cuda::context(1)?);
    /// let (s0, s1) = (gpu0.default_stream(), gpu1.default_stream());
    /// let a = s0.clone_htod(&[1.0f32; 6])?;
    /// let mut b = s1.alloc_zeros::<f32>(6)?;
    /// let src = device_view::<_, Dims<2>, LayoutRight>(&a, Dims::new([2, 3]))?;
    /// let mut dst = device_view_mut::<_, Dims<2>, LayoutRight>(&mut b, Dims::new([2, 3]))?;
    /// cuda::scope(|s| s.copy(&s1, &src, &mut dst))?;
    /// assert_eq!(s1.clone_dtoh(&b)?, [1.0; 6]);
    /// # Ok(()) }
    /// ```
    pub fn copy<'v, 'w, T, E, E2, L, S, A, W>(
        &self,
        stream: &Arc<CudaStream>,
        src: &'scope Mdspan<'v, T, E, L, S, A>,
        dst: &'scope mut Mdspan<'w, T, E2, L, S, W>,
    ) -> Result<(), CudaError>
    where
        'v: 'scope,
        'w: 'scope,
        T: DlElement,
        E: Extents,
        E2: Extents<Index = E::Index>,
        L: CompactLayout,
        S: DeviceMemory,
        W: WriteAccess,
        A: Access,
    {
        // Device `bool`s that came from outside are bytes no one has checked: copied into memory
        // Rust owns, they would be read as `bool` there. (Between two imports they stay bytes.)
        if T::DTYPE.code == crate::dlpack::DLDataTypeCode::BOOL.0 && A::ALIASED && !W::ALIASED {
            return Err(CudaError::Import(crate::import::ImportError::UncheckedBool {
                dtype: T::DTYPE,
            }));
        }
        let (from, to) = (src.extents().to_array(), dst.extents().to_array());
        if from.as_ref() != to.as_ref() {
            return Err(CudaError::CopyExtents {
                src: from.as_ref().to_vec(),
                dst: to.as_ref().to_vec(),
            });
        }
        // A view's span is memory that exists, so its size in bytes fits `usize`.
        let bytes = src.mapping().required_span_size() * size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let slot = self.slot("copy", stream)?;
        let (src_ctx, dst_ctx) = (primary(src.space().ordinal())?, primary(dst.space().ordinal())?);
        enable_peer_access(&src_ctx, &dst_ctx)?;
        // Memory from a stream-ordered pool (cudarc's allocations) is reached by other devices
        // only once its pool grants them access; contexts' peer access does not cover it.
        grant_pool_access(src.data_handle() as sys::CUdeviceptr, &dst_ctx)?;
        grant_pool_access(dst.data_handle() as sys::CUdeviceptr, &src_ctx)?;
        let footprints = [
            Footprint {
                start: src.data_handle() as usize,
                bytes,
                used: Use::Read,
            },
            Footprint {
                start: dst.data_handle() as usize,
                bytes,
                used: Use::Write,
            },
        ];
        self.claim("copy", &footprints)?;
        stream.context().bind_to_thread()?;
        for f in &footprints {
            super::order::order_after(stream, f.start, f.bytes, "copy")?;
            super::order::order_after_queued(stream, f, Some(slot.event()), "copy")?;
        }
        // SAFETY: both views are compact (contiguous) spans of `bytes` bytes on their devices,
        // alive until the scope ends, which waits for the event that `queued` records after the
        // copy on `stream` (`slot` above: a stream that is not capturing; where the record
        // fails, `stream` is waited for at once); `dst` is writable and borrowed exclusively
        // here; the contexts are the devices' primary contexts, which the views' memory belongs
        // to, and `stream` is a live stream of its bound context. Where the devices cannot
        // reach each other the driver stages the copy.
        unsafe {
            result::memcpy_peer_async(
                dst_ctx.cu_ctx(),
                dst.data_handle() as sys::CUdeviceptr,
                src_ctx.cu_ctx(),
                src.data_handle() as sys::CUdeviceptr,
                bytes,
                stream.cu_stream(),
            )
        }?;
        self.queued(slot, &footprints)
    }
}

/// The memory that copies and collectives queued in scopes not yet ended reach, by scope.
static QUEUED: Mutex<Vec<(u64, Footprint)>> = Mutex::new(Vec::new());

/// The key of the next scope.
static NEXT_SCOPE: AtomicU64 = AtomicU64::new(0);

fn queued() -> std::sync::MutexGuard<'static, Vec<(u64, Footprint)>> {
    QUEUED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with a [`Scope`] to queue work over borrowed views in, then waits for that work (the
/// events recorded after it), and returns `f`'s result (its error first, then a failed wait's).
///
/// The wait also happens when `f` panics, before the panic goes on: no view can be freed while
/// work queued on it still runs.
pub fn scope<'env, R, E, F>(f: F) -> Result<R, E>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R, E>,
    E: From<CudaError>,
{
    /// Waits for the scope's work when dropped without [`finish`](WaitOnDrop::finish): on a
    /// panic.
    struct WaitOnDrop<'a, 's, 'e>(Option<&'a Scope<'s, 'e>>);
    impl WaitOnDrop<'_, '_, '_> {
        fn finish(mut self) -> Result<(), CudaError> {
            self.0.take().map_or(Ok(()), Scope::wait)
        }
    }
    impl Drop for WaitOnDrop<'_, '_, '_> {
        fn drop(&mut self) {
            if let Some(scope) = self.0.take() {
                let _ = scope.wait();
            }
        }
    }
    let scope = Scope {
        streams: RefCell::new(Vec::new()),
        id: NEXT_SCOPE.fetch_add(1, Ordering::Relaxed),
        group: GROUP.with_borrow(|g| g.depth),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let guard = WaitOnDrop(Some(&scope));
    let out = f(&scope);
    let waited = guard.finish();
    let value = out?;
    waited?;
    Ok(value)
}

/// The primary context of device `ordinal`, made once per device and kept.
pub(crate) fn primary(ordinal: i32) -> Result<Arc<CudaContext>, CudaError> {
    static CONTEXTS: Mutex<Vec<Option<Arc<CudaContext>>>> = Mutex::new(Vec::new());
    let index = usize::try_from(ordinal).map_err(|_| CudaError::NoSuchDevice { ordinal })?;
    let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Some(ctx)) = contexts.get(index) {
        return Ok(ctx.clone());
    }
    let ctx = context(index)?;
    if contexts.len() <= index {
        contexts.resize(index + 1, None);
    }
    contexts[index] = Some(ctx.clone());
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: usize, bytes: usize, used: Use) -> Footprint {
        Footprint { start, bytes, used }
    }

    #[test]
    fn work_queued_in_scopes_writes_nothing_other_work_reaches() {
        use Use::{Read, Write};
        // Addresses no other test's work reaches.
        let base = 0x7e00_0000_0000usize;
        scope(|s| -> Result<(), CudaError> {
            let own = s.claim("copy", &[at(base, 64, Read), at(base + 32, 64, Write)]);
            assert!(
                matches!(own, Err(CudaError::ScopeOverlap { with_queued: false, .. })),
                "{own:?}"
            );
            s.claim("copy", &[at(base, 64, Read), at(base + 0x100, 64, Write)])?;
            // Another reader of the source.
            s.claim("copy", &[at(base, 64, Read), at(base + 0x200, 64, Write)])?;
            // A writer of the source, of a destination, or a reader of a destination.
            for clash in [
                at(base + 8, 8, Write),
                at(base + 0x13f, 1, Write),
                at(base + 0x1c0, 0x48, Read),
            ] {
                let e = s.claim("all_reduce", &[clash]);
                assert!(
                    matches!(
                        e,
                        Err(CudaError::ScopeOverlap {
                            operation: "all_reduce",
                            with_queued: true
                        })
                    ),
                    "{e:?}"
                );
            }
            // A scope inside this one sees its work, which is not done before this one ends.
            scope(|inner| {
                assert!(inner.claim("copy", &[at(base + 0x100, 4, Read)]).is_err());
                inner.claim("copy", &[at(base + 0x300, 4, Write)])
            })?;
            // Its own work is done once it has ended.
            s.claim("copy", &[at(base + 0x300, 4, Write)])
        })
        .unwrap();
        // Once the scope has ended, all of it is.
        scope(|s| s.claim("copy", &[at(base, 0x400, Write)])).unwrap();
        assert!(queued().iter().all(|(_, f)| !f.overlaps(&at(base, 0x400, Write))));
    }
}
