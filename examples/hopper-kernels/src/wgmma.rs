//! The `sm_90a` instructions of the products, one `unsafe` function each, written the CUDA C++
//! way (inline PTX): `wgmma` on `bf16` with `f32` accumulators and both operands in shared
//! memory, its fences and groups, the shared-memory matrix descriptor, and the proxy fence that
//! makes `cp.async`'s writes visible to it. Each function's contract is the instruction's, as the
//! PTX ISA states it.

use core::arch::asm;

/// The shared-memory matrix descriptor of a `wgmma` operand stored K-major in the 128-byte
/// swizzle: rows of 64 `bf16` (128 bytes) one after another, each 8-row atom of 1024 bytes
/// holding row `r`'s 16-byte piece `c` at piece `c ^ (r % 8)`.
///
/// - bits 0–13: the start address (shared state space), `>> 4`;
/// - bits 16–29: the leading byte offset `>> 4`, here 1 (16 bytes; unused by K-major swizzled
///   layouts, whose 16-element step along `k` stays inside a 128-byte row);
/// - bits 32–45: the stride byte offset `>> 4`, here 64 (1024 bytes: from one 8-row atom to
///   the next along `m` or `n`);
/// - bits 49–51: the base offset, 0 (atoms 1024-aligned);
/// - bits 62–63: the swizzle, 1 (128 bytes).
///
/// `address` is the operand's first row, 1024-aligned, plus `32 · s` bytes for its `s`-th
/// 16-element step along `k` (the hardware applies the swizzle to the whole address).
#[inline(always)]
pub const fn descriptor(address: u32) -> u64 {
    ((address as u64 & 0x3_ffff) >> 4) | (1 << 16) | (64 << 32) | (1 << 62)
}

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
    unsafe fn mma_k64(&mut self, a_desc: u64, b_desc: u64);

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
            unsafe fn mma_k64(&mut self, a_desc: u64, b_desc: u64) {
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
                            $(", {", $i, "}",)* "}}, {a0}, {b0}, p, 1, 1, 0, 0;"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a1}, {b1}, p, 1, 1, 0, 0;"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a2}, {b2}, p, 1, 1, 0, 0;"
                        ),
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.bf16.bf16 {{{", $first, "}",
                            $(", {", $i, "}",)* "}}, {a3}, {b3}, p, 1, 1, 0, 0;"
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
                        b1 = in(reg64) b_desc + 2,
                        b2 = in(reg64) b_desc + 4,
                        b3 = in(reg64) b_desc + 6,
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

/// `fence.proxy.async.shared::cta`: this thread's completed writes to the block's shared memory
/// (here `cp.async`'s, once waited for) become visible to the async proxy, which `wgmma` reads
/// shared memory through, for whatever a following barrier orders after it.
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn fence_proxy_async() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// `mbarrier.init.shared::cta.b64 [bar], count`: a barrier object whose phases complete after
/// `count` arrivals, in phase 0.
///
/// # Safety
///
/// `bar` is the shared-state-space address of 8 bytes, 8-aligned, of the block's shared memory
/// that nothing else uses until a barrier of the block orders this before their first use as a
/// barrier object; on `sm_80` or later.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) bar, n = in(reg32) count, options(nostack))
    };
}

/// `mbarrier.arrive.shared::cta.b64`: one arrival on the barrier object at `bar` (release: this
/// thread's earlier memory accesses are ordered before the phase's completion).
///
/// # Safety
///
/// `bar` is an initialised barrier object ([`mbarrier_init`]) of the block's shared memory,
/// whose current phase still expects this arrival; on `sm_80` or later.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) };
}

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

/// Waits until the phase of parity `parity` of the barrier object at `bar` has completed
/// (`mbarrier.try_wait.parity`, acquire: the memory accesses that the arrivals ordered before
/// its completion are visible after).
///
/// # Safety
///
/// `bar` is an initialised barrier object of the block's shared memory; on `sm_90` or later.
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        // SAFETY: as this function's contract.
        unsafe {
            asm!(
                "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}; selp.u32 {d}, 1, 0, p; }}",
                b = in(reg32) bar,
                ph = in(reg32) parity,
                d = out(reg32) done,
                options(nostack),
            )
        };
        if done != 0 {
            break;
        }
    }
}

/// `fence.mbarrier_init.release.cluster`: this thread's barrier-object initialisations become
/// visible to the async proxy (the bulk copy engine's arrivals) and the cluster.
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn fence_mbarrier_init() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64`: one arrival on the barrier object at `bar`,
/// and `bytes` more bytes for its current phase to wait for (the bulk copies' `complete_tx`).
///
/// # Safety
///
/// As [`mbarrier_arrive`], on `sm_90` or later.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
            b = in(reg32) bar,
            n = in(reg32) bytes,
            options(nostack),
        )
    };
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: the bulk
/// copy engine copies the box at coordinates `(inner, outer)` (elements along the innermost
/// dimension, then rows) of the tensor that the tensor map at `map` describes into shared memory
/// at `dst`, laid out (and swizzled) as the map says, and signals the bytes to the barrier
/// object at `bar` as they land.
///
/// # Safety
///
/// `map` is the generic address of a valid 64-aligned tensor map (`cuTensorMapEncodeTiled`) in
/// global memory that nothing writes during the kernel, of a tensor readable and not written
/// during the kernel; `dst` is the shared-state-space address of the box's bytes in the
/// block's shared memory, aligned as the map's swizzle needs (1024 for 128 bytes), that nothing
/// reads or writes until `bar`'s phase completes; `bar` is an initialised barrier object whose
/// current phase expects these bytes ([`mbarrier_arrive_expect_tx`]); on `sm_90` or later.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u64, inner: u32, outer: u32, bar: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{i}, {o}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) map,
            i = in(reg32) inner,
            o = in(reg32) outer,
            b = in(reg32) bar,
            options(nostack),
        )
    };
}
