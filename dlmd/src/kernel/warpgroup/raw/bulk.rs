//! The bulk copy engine's copies and reductions from the block's shared memory to global
//! memory (`cp.async.bulk`, `cp.reduce.async.bulk`), and the groups that track them.

use core::arch::asm;

/// `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], bytes`: the bulk copy engine
/// copies `bytes` from the block's shared memory at `src` to global memory at `dst` (a generic
/// address, converted), asynchronously, as part of this thread's next bulk group
/// ([`bulk_commit`]).
///
/// # Safety
///
/// `bytes` is a multiple of 16; `src` and `dst` are 16-aligned; `dst` is the generic address
/// of `bytes` of global memory that no other thread reads or writes during the kernel;
/// `src`'s bytes were written before and made visible to the async proxy: each writer ran
/// [`fence_proxy_async`] after its writes, then a barrier that holds every writer and this
/// thread ([`syncwarp`] where they are one warp's). Nothing writes them until this thread's
/// [`bulk_wait_read`] has seen the group's reads done and a barrier that holds it and the
/// next writers has followed; this thread waits for the group ([`bulk_wait`]) before the
/// block exits. On `sm_90` or later.
#[inline(always)]
pub unsafe fn bulk_store(dst: *mut u8, src: u32, bytes: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {d}; cp.async.bulk.global.shared::cta.bulk_group [g], [{s}], {n}; }}",
            d = in(reg64) dst,
            s = in(reg32) src,
            n = in(reg32) bytes,
            options(nostack),
        )
    };
}

/// `cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [dst], [src], bytes`: the bulk
/// copy engine adds the `bytes / 4` `f32`s at `src` in the block's shared memory to those at
/// `dst` in global memory (a generic address, converted), each addition atomic,
/// asynchronously, as part of this thread's next bulk group ([`bulk_commit`]).
///
/// # Safety
///
/// `bytes` is a multiple of 16; `src` and `dst` are 16-aligned; `dst` is the generic address
/// of `bytes` of global memory that the kernel reaches and that is updated only by atomic
/// additions during the kernel; `src`'s bytes were written and made visible to the async proxy
/// as for [`bulk_store`], and are not written again until this thread's [`bulk_wait_read`]
/// has seen the group's reads done and a barrier that holds it and the next writers has
/// followed; this thread waits for the group ([`bulk_wait`]) before the block exits. On
/// `sm_90` or later.
#[inline(always)]
pub unsafe fn bulk_reduce_add_f32(dst: *mut f32, src: u32, bytes: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {d}; cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [g], [{s}], {n}; }}",
            d = in(reg64) dst,
            s = in(reg32) src,
            n = in(reg32) bytes,
            options(nostack),
        )
    };
}

/// `cp.async.bulk.commit_group`: this thread's bulk copies issued since its last commit form
/// one bulk group.
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn bulk_commit() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) };
}

/// `cp.async.bulk.wait_group.read PENDING`: waits until at most `PENDING` of this thread's
/// bulk groups still read their sources: their shared memory may be written again.
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn bulk_wait_read<const PENDING: u32>() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const PENDING, options(nostack)) };
}

/// `cp.async.bulk.wait_group PENDING`: waits until at most `PENDING` of this thread's bulk
/// groups are not complete (their writes done).
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn bulk_wait<const PENDING: u32>() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("cp.async.bulk.wait_group {n};", n = const PENDING, options(nostack)) };
}
