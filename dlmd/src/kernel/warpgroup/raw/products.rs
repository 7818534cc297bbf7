//! The typed `wgmma` products for raw code: both operands in shared memory ([`wgmma_ss`]), or
//! `A` in registers ([`wgmma_rs`], [`wgmma_rs_64`]), the waits that name their registers, and
//! the packing of an `A` fragment (`pack`, in kernels). Each is the instruction sequence of
//! the safe products' trait for its types.

use crate::kernel::warpgroup::{Cols, Product, ProductRs, Width};

/// `wgmma.fence`, then `wgmma.mma_async` over one step of 128 bytes along `k` with both
/// operands in shared memory (64 elements of a 2-byte `T` in four products of `k = 16`, 128 of
/// an FP8 `T` in four of `k = 32`: `acc += a · b` for the warpgroup's 64 rows of the K-major `a`
/// and the `N`-column `b`, read as `Major` says), then
/// `wgmma.commit_group`: the products run until a wait ([`wgmma_wait_acc`]).
///
/// # Safety
///
/// Called by all 128 threads of a warpgroup together, in converged code, on `sm_90a`; the
/// descriptors ([`descriptor_128`](super::descriptor_128),
/// [`descriptor_128_mn`](super::descriptor_128_mn) for `b` read MN-major) describe initialised
/// shared memory of the running block laid out as they say, written last through the async proxy
/// (or fenced since, [`fence_proxy_async`](super::fence_proxy_async)) and ordered before this, that
/// nothing writes until a wait says the group is done; `acc` is read or written by nothing else
/// until then.
#[inline(always)]
pub unsafe fn wgmma_ss<T, W, Major>(acc: &mut W::Regs, a: u64, b: u64)
where
    T: Product<W, Major>,
    W: Width,
{
    // SAFETY: as this function's contract, which is `mma_row`'s.
    unsafe { T::mma_row(acc, a, b) }
}

/// `wgmma.fence`, then eight `wgmma.mma_async` of `k = 16` with the `64 × 128` `A` operand in
/// registers (`a`: the thread's fragment, packed pairs by `pack` (in kernels), in the order the
/// accumulators of a `64 × 128` product hold them) and `b` read MN-major (`128 × N`,
/// [`descriptor_128_mn`](super::descriptor_128_mn)), then `wgmma.commit_group`: attention's `P ·
/// V`.
///
/// # Safety
///
/// Called by all 128 threads of a warpgroup together, in converged code, on `sm_90a`; `b`
/// ([`descriptor_128_mn`](super::descriptor_128_mn)) describes 128 rows of `k` by `N` of
/// initialised shared memory of the running block, MN-major in the 128-byte swizzle, written last
/// through the async proxy (or fenced since) and ordered before this, that nothing writes until a
/// wait says the group is done; `acc` and `a` are read or written by nothing else until that wait
/// ([`wgmma_wait_rs`] on the same registers).
#[inline(always)]
pub unsafe fn wgmma_rs<T, W>(acc: &mut W::Regs, a: &[u32; 32], b: u64)
where
    T: ProductRs<W>,
    W: Width,
{
    // SAFETY: as this function's contract, which is `mma_rs`'s.
    unsafe { T::mma_rs(acc, a, b) }
}

/// [`wgmma_wait`](super::wgmma_wait) with `PENDING` of 0 that names `acc` and `a`, so that no read
/// or write of them moves above it: after it, the products of [`wgmma_rs`] into `acc` from `a` are
/// done.
///
/// # Safety
///
/// As [`wgmma_wait`](super::wgmma_wait). It waits for every group, but names only `acc` and
/// `a`: the registers of another group it completes are read only after a wait that names them.
#[inline(always)]
pub unsafe fn wgmma_wait_rs<T, W>(acc: &mut W::Regs, a: &mut [u32; 32])
where
    T: ProductRs<W>,
    W: Width,
{
    // SAFETY: as this function's contract, which is `wait_rs`'s.
    unsafe { T::wait_rs::<0>(acc, a) }
}

/// [`wgmma_rs`] of depth 64: `wgmma.fence`, four `wgmma.mma_async` of `k = 16` with the
/// `64 × 64` `A` operand in registers (`a`: the thread's fragment, packed pairs in the order
/// the accumulators of a `64 × 64` product hold them) and `b` read MN-major (`64 × N`), then
/// `wgmma.commit_group`: attention's backward products, `dS · K` and `Pᵀ · dO`.
///
/// # Safety
///
/// As [`wgmma_rs`], for `b` of 64 rows of `k`; wait with [`wgmma_wait_rs_64`] on the same
/// registers.
#[inline(always)]
pub unsafe fn wgmma_rs_64<T, W>(acc: &mut W::Regs, a: &[u32; 16], b: u64)
where
    T: ProductRs<W, Cols<64>>,
    W: Width,
{
    // SAFETY: as this function's contract, which is `mma_rs`'s.
    unsafe { T::mma_rs(acc, a, b) }
}

/// [`wgmma_wait_rs`] for [`wgmma_rs_64`]'s registers.
///
/// # Safety
///
/// As [`wgmma_wait`](super::wgmma_wait). It waits for every group, but names only `acc` and
/// `a`: the registers of another group it completes are read only after a wait that names them.
#[inline(always)]
pub unsafe fn wgmma_wait_rs_64<T, W>(acc: &mut W::Regs, a: &mut [u32; 16])
where
    T: ProductRs<W, Cols<64>>,
    W: Width,
{
    // SAFETY: as this function's contract, which is `wait_rs`'s.
    unsafe { T::wait_rs::<0>(acc, a) }
}

/// [`wgmma_wait`](super::wgmma_wait) that names the accumulators `acc`, so that no read of them
/// moves above it: after it, at most `PENDING` groups are in flight, and `acc` is the thread's to
/// read once none that writes it is.
///
/// # Safety
///
/// As [`wgmma_wait`](super::wgmma_wait).
#[inline(always)]
pub unsafe fn wgmma_wait_acc<W: Width, const PENDING: u32>(acc: &mut W::Regs) {
    // SAFETY: as this function's contract.
    unsafe { W::wait::<PENDING>(acc) }
}

/// `lo` and `hi` converted to `T` (`cvt.rn`, to nearest even) and packed into one register,
/// `lo` in the low half: two neighbours of a row of a [`wgmma_rs`] fragment.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn pack<T: ProductRs<Cols<128>>>(lo: f32, hi: f32) -> u32 {
    T::pack(lo, hi)
}
