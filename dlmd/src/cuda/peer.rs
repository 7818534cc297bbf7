//! Peer access between devices: each device of a copy given access to the other's memory,
//! and to the stream-ordered memory pool the other's allocation came from.

use super::CudaError;
use cudarc::driver::{CudaContext, sys};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

/// Lets each of two devices reach the other's memory, once per pair; a pair the hardware
/// cannot link is left alone (the driver then stages copies through the host).
pub(crate) fn enable_peer_access(a: &Arc<CudaContext>, b: &Arc<CudaContext>) -> Result<(), CudaError> {
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
pub(crate) fn grant_pool_access(ptr: sys::CUdeviceptr, to: &Arc<CudaContext>) -> Result<(), CudaError> {
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
