//! Asynchronous work over borrowed device views, and copies between devices.
//!
//! Work queued on a stream outlives the call that queued it, so it cannot borrow a view for
//! that call alone. A [`scope`] ties them together instead, as [`std::thread::scope`] does for
//! threads: the views given to work queued in it must outlive the scope, and the scope waits
//! for every stream it queued on before it returns (also when its closure fails or panics).
//! Inside, work is queued without waiting, so copies and collectives run back to back.

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
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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
    streams: RefCell<Vec<Arc<CudaStream>>>,
    /// This scope's key among the [`QUEUED`] footprints.
    id: u64,
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

impl<'scope> Scope<'scope, '_> {
    /// Records that work was queued on `stream`: the scope waits for it before it ends.
    pub(crate) fn queued_on(&self, stream: &Arc<CudaStream>) {
        let mut streams = self.streams.borrow_mut();
        if !streams.iter().any(|s| Arc::ptr_eq(s, stream)) {
            streams.push(stream.clone());
        }
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

    /// Waits for every stream work was queued on, then lets go of what that work reached; the
    /// first error is returned.
    fn wait(&self) -> Result<(), CudaError> {
        let mut first = Ok(());
        for stream in self.streams.borrow_mut().drain(..) {
            if let Err(e) = stream.synchronize() {
                first = first.and(Err(e.into()));
            }
        }
        queued().retain(|(id, _)| *id != self.id);
        first
    }

    /// Queues on `stream` a copy of `src` into `dst`, between devices (or on one): the same
    /// element type and layout, and the same extents (checked). Peer access between the two
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
    /// queued on either view's memory before the view was made, on whichever stream; the scope
    /// keeps both views borrowed until it has waited for the copy.
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
        let (src_ctx, dst_ctx) = (primary(src.space().ordinal())?, primary(dst.space().ordinal())?);
        enable_peer_access(&src_ctx, &dst_ctx)?;
        // Memory from a stream-ordered pool (cudarc's allocations) is reached by other devices
        // only once its pool grants them access; contexts' peer access does not cover it.
        grant_pool_access(src.data_handle() as sys::CUdeviceptr, &dst_ctx)?;
        grant_pool_access(dst.data_handle() as sys::CUdeviceptr, &src_ctx)?;
        self.claim(
            "copy",
            &[
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
            ],
        )?;
        stream.context().bind_to_thread()?;
        super::order::order_after(stream, src.data_handle() as usize, bytes)?;
        super::order::order_after(stream, dst.data_handle() as usize, bytes)?;
        self.queued_on(stream);
        // SAFETY: both views are compact (contiguous) spans of `bytes` bytes on their devices,
        // alive until the scope ends, which waits for `stream` first (`queued_on` above); `dst`
        // is writable and borrowed exclusively here; the contexts are the devices' primary
        // contexts, which the views' memory belongs to, and `stream` is a live stream of its
        // bound context. Where the devices cannot reach each other the driver stages the copy.
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
        Ok(())
    }
}

/// The memory that copies and collectives queued in scopes not yet ended reach, by scope.
static QUEUED: Mutex<Vec<(u64, Footprint)>> = Mutex::new(Vec::new());

/// The key of the next scope.
static NEXT_SCOPE: AtomicU64 = AtomicU64::new(0);

fn queued() -> std::sync::MutexGuard<'static, Vec<(u64, Footprint)>> {
    QUEUED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with a [`Scope`] to queue work over borrowed views in, then waits for every stream
/// that work was queued on, and returns `f`'s result (its error first, then a failed wait's).
///
/// The wait also happens when `f` panics, before the panic goes on: no view can be freed while
/// work queued on it still runs.
pub fn scope<'env, R, E, F>(f: F) -> Result<R, E>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R, E>,
    E: From<CudaError>,
{
    /// Waits for the scope's streams when dropped without [`finish`](WaitOnDrop::finish): on
    /// a panic.
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

/// Lets each of two devices reach the other's memory, once per pair; a pair the hardware
/// cannot link is left alone (the driver then stages copies through the host).
fn enable_peer_access(a: &Arc<CudaContext>, b: &Arc<CudaContext>) -> Result<(), CudaError> {
    static DONE: OnceLock<Mutex<HashSet<(usize, usize)>>> = OnceLock::new();
    let (x, y) = (a.ordinal(), b.ordinal());
    if x == y {
        return Ok(());
    }
    let done = DONE.get_or_init(Default::default);
    let key = (x.min(y), x.max(y));
    let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(&key) {
        return Ok(());
    }
    for (from, to) in [(a, b), (b, a)] {
        let mut can = 0;
        // SAFETY: writes one `int` through a valid pointer; both are devices of this driver.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }.result()?;
        if can == 0 {
            continue;
        }
        from.bind_to_thread()?;
        // SAFETY: `from` is bound to this thread and `to` is a live primary context.
        match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            e => e.result()?,
        }
    }
    done.insert(key);
    Ok(())
}

/// Lets device `to` read and write the memory pool `ptr` was allocated from (where it came from
/// one: `cuMemAllocAsync`, as cudarc allocates), once per pool and device, where the two
/// devices can reach each other.
fn grant_pool_access(ptr: sys::CUdeviceptr, to: &Arc<CudaContext>) -> Result<(), CudaError> {
    static GRANTED: OnceLock<Mutex<HashSet<(usize, usize)>>> = OnceLock::new();
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    // SAFETY: writes one `CUmemoryPool` through a valid pointer; `ptr` is only looked up. Memory
    // from other allocators has no pool: the driver answers NULL.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut pool as *mut sys::CUmemoryPool).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            ptr,
        )
    }
    .result()?;
    if pool.is_null() {
        return Ok(());
    }
    let key = (pool as usize, to.ordinal());
    let mut granted = GRANTED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if granted.contains(&key) {
        return Ok(());
    }
    let mut location = device_location(to.cu_device());
    let mut flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
    // SAFETY: `pool` is a live pool (the allocation at `ptr` comes from it); both pointers are
    // valid for one value each.
    unsafe { sys::cuMemPoolGetAccess(&mut flags, pool, &mut location) }.result()?;
    if flags != sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
        let desc = sys::CUmemAccessDesc {
            location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one access descriptor, for a live pool.
        match unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) } {
            sys::CUresult::CUDA_SUCCESS => {}
            // Devices without a peer link: the copy is staged by the driver instead.
            sys::CUresult::CUDA_ERROR_INVALID_DEVICE | sys::CUresult::CUDA_ERROR_NOT_SUPPORTED => {}
            e => e.result()?,
        }
    }
    granted.insert(key);
    Ok(())
}

/// `CUmemLocation` as the driver API defines it: the location type, then the device ordinal. The
/// bindings of CUDA 13.2 and later spell the ordinal as a union (it gained other members), those
/// before as a plain `int`; this one layout builds against either.
#[repr(C)]
#[derive(Clone, Copy)]
struct MemLocation {
    type_: sys::CUmemLocationType,
    id: core::ffi::c_int,
}

const _: () = assert!(core::mem::size_of::<MemLocation>() == core::mem::size_of::<sys::CUmemLocation>());
const _: () = assert!(core::mem::align_of::<MemLocation>() == core::mem::align_of::<sys::CUmemLocation>());

/// The `CUmemLocation` of device `ordinal`, built the same way against the bindings of every
/// CUDA version cudarc may be configured for (the field is a union from CUDA 13.2 on).
pub fn device_location(ordinal: core::ffi::c_int) -> sys::CUmemLocation {
    let location = MemLocation {
        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: ordinal,
    };
    // SAFETY: both are `#[repr(C)]` with the location type first and, at offset 4, the `int`
    // ordinal (a plain field, or the `id` member of a union whose other members are no larger);
    // size and alignment are asserted equal above. Every bit pattern of the `int` is a valid
    // `id`, and the union's other members are only read for other location types.
    unsafe { core::mem::transmute::<MemLocation, sys::CUmemLocation>(location) }
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
