//! The `sm_90a` instructions of the products, one `unsafe` function each, written the CUDA C++
//! way (inline PTX): `wgmma` on `bf16` with `f32` accumulators and both operands in shared
//! memory, its fences and groups, the shared-memory matrix descriptor, and the proxy fence that
//! makes `cp.async`'s writes visible to it. Each function's contract is the instruction's, as the
//! PTX ISA states it.

use core::arch::asm;

pub use dlmd::kernel::warpgroup::raw::{
    descriptor_128 as descriptor, descriptor_128_mn, fence_mbarrier_init, fence_proxy_async, mbarrier_arrive,
    mbarrier_arrive_expect_tx, mbarrier_arrive_where, mbarrier_init, mbarrier_wait, tma_load_2d,
};

/// Accumulators of one warpgroup's `wgmma` over `64 × N`, `N / 2` `f32` a thread. Thread `t`
/// of the warpgroup (warp `w = t / 32`, lane `l = t % 32`) holds, for each 8-column group `j`,
/// `[4j + 2h + e]` = element (`16 w + l / 4 + 8 h`, `8 j + 2 (l % 4) + e`) for `h, e` in `0..2`.
pub trait Accumulators: Sized {
    /// The columns, `N`.
    const N: usize;

    /// All zero.
    fn zero() -> Self;

    /// Element `i` of this thread's.
    fn get(&self, i: usize) -> f32;

    /// `wgmma.fence`, then four `wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16` (one
    /// step of 64 along `k`: `self += a · bᵀ` for the `64 × 64` `a` of `a_desc` and the
    /// `N × 64` `b` of `b_desc`, both K-major, the `s`-th with both descriptors advanced by
    /// `2 s` (32 bytes)), then `wgmma.commit_group`: the products run asynchronously until a
    /// [`wait`](Self::wait).
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of a warpgroup (4 consecutive warps from a warp index
    /// divisible by 4) together, in converged code, on an `sm_90a` GPU; the descriptors
    /// ([`descriptor`]) describe initialised shared memory of the running block, laid out as
    /// they say, that nothing writes until a [`wait`](Self::wait) says the group is done, and
    /// whose last writes by other proxies were fenced (`fence_proxy_async`) and ordered before
    /// this by a barrier. The accumulators are read or written by nothing else until then.
    #[inline(always)]
    unsafe fn mma_k64(&mut self, a_desc: u64, b_desc: u64) {
        // SAFETY: as this function's contract: `b` K-major, stepped by 32 bytes.
        unsafe { self.mma_k64_as::<0, 2>(a_desc, b_desc) }
    }

    /// [`mma_k64`](Self::mma_k64) with `b` MN-major (`k × n`, `n` contiguous:
    /// [`descriptor_128_mn`]'s layout), `wgmma`'s `imm-trans-b` set, the `s`-th product with
    /// `b_desc` advanced by `128 s` (2048 bytes: 16 rows of `k`).
    ///
    /// # Safety
    ///
    /// As [`mma_k64`](Self::mma_k64), `b_desc` describing an MN-major `b` of 64 rows of `k`.
    #[inline(always)]
    unsafe fn mma_k64_mn(&mut self, a_desc: u64, b_desc: u64) {
        // SAFETY: as this function's contract: `b` MN-major, stepped by 2048 bytes.
        unsafe { self.mma_k64_as::<1, 128>(a_desc, b_desc) }
    }

    /// [`mma_k64`](Self::mma_k64) with `wgmma`'s `imm-trans-b` `TRANS_B` and `b_desc` advanced
    /// by `B_STEP` a product.
    ///
    /// # Safety
    ///
    /// As [`mma_k64`](Self::mma_k64) (`TRANS_B` 0, `B_STEP` 2) or
    /// [`mma_k64_mn`](Self::mma_k64_mn) (`TRANS_B` 1, `B_STEP` 128).
    unsafe fn mma_k64_as<const TRANS_B: u32, const B_STEP: u64>(&mut self, a_desc: u64, b_desc: u64);

    /// `wgmma.wait_group.sync.aligned PENDING`: waits until at most `PENDING` of the
    /// warpgroup's committed groups are in flight; the accumulators are then this thread's to
    /// read once `PENDING` is 0.
    ///
    /// # Safety
    ///
    /// As [`mma_k64`](Self::mma_k64): all 128 threads of the warpgroup, `sm_90a`.
    unsafe fn wait<const PENDING: u32>(&mut self);
}

macro_rules! accumulators {
    ($n:literal, $regs:literal, $first:literal $($i:literal)*) => {
        impl Accumulators for [f32; $regs] {
            const N: usize = $n;

            #[inline(always)]
            fn zero() -> Self {
                // SAFETY: all-zero bits are `0.0` for `f32`. (A memset, which LLVM turns into
                // registers; `[0.0; N]` of this size is written as a loop that it does not,
                // leaving the array in local memory.)
                unsafe { core::mem::zeroed() }
            }

            #[inline(always)]
            fn get(&self, i: usize) -> f32 {
                self[i]
            }

            #[inline(always)]
            unsafe fn mma_k64_as<const TRANS_B: u32, const B_STEP: u64>(&mut self, a_desc: u64, b_desc: u64) {
                let acc = self;
                // SAFETY: as this function's contract.
                unsafe {
                    asm!(
                        "{{",
                        ".reg .pred p;",
                        "setp.ne.b32 p, {one}, 0;",
                        "wgmma.fence.sync.aligned;",
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a0}, {b0}, p, 1, 1, 0, {tb};"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a1}, {b1}, p, 1, 1, 0, {tb};"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a2}, {b2}, p, 1, 1, 0, {tb};"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a3}, {b3}, p, 1, 1, 0, {tb};"
                        ),
                        "wgmma.commit_group.sync.aligned;",
                        "}}",
                        inout(reg32) acc[$first],
                        $(inout(reg32) acc[$i],)*
                        one = in(reg32) 1u32,
                        a0 = in(reg64) a_desc,
                        a1 = in(reg64) a_desc + 2,
                        a2 = in(reg64) a_desc + 4,
                        a3 = in(reg64) a_desc + 6,
                        b0 = in(reg64) b_desc,
                        b1 = in(reg64) b_desc + B_STEP,
                        b2 = in(reg64) b_desc + 2 * B_STEP,
                        b3 = in(reg64) b_desc + 3 * B_STEP,
                        tb = const TRANS_B,
                        options(nostack),
                    )
                };
            }

            #[inline(always)]
            unsafe fn wait<const PENDING: u32>(&mut self) {
                let acc = self;
                // SAFETY: as this function's contract. The accumulators pass through (named in
                // a comment), so that no read of them moves above the wait.
                unsafe {
                    asm!(
                        concat!("wgmma.wait_group.sync.aligned {n}; // {", $first, "}", $(" {", $i, "}",)*),
                        inout(reg32) acc[$first],
                        $(inout(reg32) acc[$i],)*
                        n = const PENDING,
                        options(nostack),
                    )
                };
            }
        }
    };
}

accumulators!(128, 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
accumulators!(256, 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

/// `cp.async.mbarrier.arrive.noinc.shared::cta.b64`: one arrival on the barrier object at `bar`
/// once all of this thread's earlier `cp.async` copies are complete (counted among the
/// arrivals the barrier was initialised with).
///
/// # Safety
///
/// As [`mbarrier_arrive`].
#[inline(always)]
pub unsafe fn cp_async_mbarrier_arrive(bar: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack)) };
}
