//! The `sm_90` instructions under [`warpgroup`](super), one `unsafe` function each, written the
//! CUDA C++ way (inline PTX): barrier objects (`mbarrier`), bulk tensor copies (TMA),
//! `wgmma`'s fences and groups, and the shared-memory matrix descriptor. The safe pipeline is
//! built from these; kernels that lay out their own shared memory (the raw twins of the safe
//! kernels) use them directly. Each function's contract is the instruction's, as the PTX ISA
//! states it.
//!
//! Like [`mma::raw`](crate::kernel::mma::raw)'s, the warpgroup-collective blocks here are
//! declared with side effects, so that LLVM neither sinks nor hoists them into code that only
//! some threads run.

use core::arch::asm;

mod products;
pub use products::*;

/// The shared-memory matrix descriptor of a `wgmma` operand stored K-major in the 128-byte
/// swizzle: rows of 128 bytes one after another, each 8-row atom of 1024 bytes holding row
/// `r`'s 16-byte piece `p` at piece `p ^ (r % 8)`
/// ([`Swizzle128`](crate::kernel::swizzle::Swizzle128)).
///
/// - bits 0–13: the start address (shared state space), `>> 4`;
/// - bits 16–29: the leading byte offset `>> 4`, here 1 (unused by K-major swizzled layouts,
///   whose 32-byte step along `k` stays inside a 128-byte row);
/// - bits 32–45: the stride byte offset `>> 4`, here 64 (1024 bytes: from one 8-row atom to
///   the next along `m` or `n`);
/// - bits 49–51: the base offset, 0 (atoms 1024-aligned);
/// - bits 62–63: the swizzle, 1 (128 bytes).
///
/// `address` is the operand's first row, 1024-aligned, plus `32 · s` bytes for its `s`-th
/// 32-byte step along `k` (the hardware applies the swizzle to the whole address).
#[inline(always)]
pub const fn descriptor_128(address: u32) -> u64 {
    super::descriptor::k_major_128(address)
}

/// The shared-memory matrix descriptor of a `wgmma` `B` operand stored MN-major in the 128-byte
/// swizzle (`wgmma`'s `imm-trans-b` 1; `bf16` and `f16` only): `k × n` in column panels of 64
/// elements of `n` (128 bytes), each panel `k` rows of 128 bytes one after another in 8-row
/// atoms of 1024 bytes ([`Swizzle128`](crate::kernel::swizzle::Swizzle128)), the panels
/// `panel_bytes` apart, as the bulk copy engine lays out boxes of `k × 64` side by side.
///
/// - bits 0–13: the start address (shared state space), `>> 4`;
/// - bits 16–29: the leading byte offset `>> 4`: `panel_bytes`, from one 64-element panel to
///   the next along `n`;
/// - bits 32–45: the stride byte offset `>> 4`, here 64 (1024 bytes: from one 8-row atom to
///   the next along `k`);
/// - bits 49–51: the base offset, 0 (atoms 1024-aligned);
/// - bits 62–63: the swizzle, 1 (128 bytes).
///
/// `address` is the tile's first row, 1024-aligned, plus `2048 · s` bytes for the `s`-th step
/// of 16 along `k` (two atoms).
#[inline(always)]
pub const fn descriptor_128_mn(address: u32, panel_bytes: u32) -> u64 {
    super::descriptor::mn_major_128(address, panel_bytes)
}

/// `fence.proxy.async.shared::cta`: this thread's completed writes to the block's shared memory
/// become visible to the async proxy (which `wgmma` and the bulk copies use) for whatever a
/// following barrier orders after it.
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn fence_proxy_async() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// `stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [row], {r0, r1, r2, r3}`: four 8 × 8
/// matrices of 16-bit elements from the warp's registers to the block's shared memory,
/// transposed. Register `q` of lane `l` holds the two elements of row `l / 4`, columns `2 (l % 4)`
/// and `+ 1`, of matrix `q` (the low half the first: the layout of an `mma` accumulator's
/// 8 × 8 piece); lane `8 q + j` gives the 16-byte row `j` of matrix `q` as stored, which holds
/// the matrix's column `j`.
///
/// # Safety
///
/// Executed by all 32 threads of the warp together, converged, on `sm_90`; each lane's `row` is
/// a 16-aligned shared-state-space address of 16 bytes of the block's shared memory that no
/// other thread, and no asynchronous read (`wgmma`, a bulk copy), reads or writes meanwhile.
#[inline(always)]
pub unsafe fn stmatrix_x4_trans(row: u32, regs: [u32; 4]) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg32) row,
            a = in(reg32) regs[0],
            b = in(reg32) regs[1],
            c = in(reg32) regs[2],
            d = in(reg32) regs[3],
            options(nostack),
        )
    };
}

/// `bar.sync id, threads`: the executing warps wait at named barrier `id` until `threads`
/// threads (whole warps) have arrived, and their memory operations before it are ordered before
/// those after it among them.
///
/// # Safety
///
/// `id` is 1 to 15 and no other use of barrier `id` is under way with another count; `threads`
/// is a multiple of 32, at most the block's; every warp that arrives does so converged, and
/// `threads` of them arrive (or the block waits forever).
#[inline(always)]
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("bar.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `red.global.add.f32 [at], v`: adds `v` to the `f32` at `at` atomically (relaxed, at GPU
/// scope), `at` converted to the global state space (`cvta.to.global`).
///
/// # Safety
///
/// `at` is a 4-aligned generic address of an `f32` of global memory that the kernel reaches
/// and that is updated only atomically meanwhile.
#[inline(always)]
pub unsafe fn red_global_add_f32(at: *mut f32, v: f32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; red.global.add.f32 [g], {v}; }}",
            p = in(reg64) at,
            v = in(reg32) v,
            options(nostack),
        )
    };
}

/// `red.global.add.v2.f32 [at], {a, b}`: adds the two to the two neighbouring `f32`s at `at`
/// atomically (each relaxed, at GPU scope), in one request. PTX ISA 8.1 or later: `ptxas`
/// refuses it in a module of an older version.
///
/// # Safety
///
/// `at` is an 8-aligned generic address of two `f32`s of global memory that the kernel reaches
/// and that are updated only atomically meanwhile; on `sm_90`.
#[inline(always)]
pub unsafe fn red_global_add_v2_f32(at: *mut f32, [a, b]: [f32; 2]) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; red.global.add.v2.f32 [g], {{{a}, {b}}}; }}",
            p = in(reg64) at,
            a = in(reg32) a,
            b = in(reg32) b,
            options(nostack),
        )
    };
}

/// `st.shared.b32 [at], bits`: four bytes to the block's shared memory.
///
/// # Safety
///
/// `at` is a 4-aligned shared-state-space address of 4 bytes of the block's shared memory that
/// nothing else reads or writes meanwhile.
#[inline(always)]
pub unsafe fn st_shared_u32(at: u32, bits: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("st.shared.b32 [{a}], {v};", a = in(reg32) at, v = in(reg32) bits, options(nostack)) };
}

/// `bar.warp.sync 0xffffffff`: the warp's 32 threads wait for each other, and their memory
/// operations before it are ordered before those after it among them (CUDA's `__syncwarp`).
///
/// # Safety
///
/// Reached by all 32 threads of the warp.
#[inline(always)]
pub unsafe fn syncwarp() {
    // SAFETY: every thread of the warp (caller).
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}

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

/// `mbarrier.init.shared::cta.b64 [bar], count`: a barrier object whose phases complete after
/// `count` arrivals (and the transaction bytes they expect), in phase 0.
///
/// # Safety
///
/// `bar` is the shared-state-space address of 8 bytes, 8-aligned, of the block's shared memory
/// that is no barrier object now (never initialised, or [invalidated](mbarrier_inval)) and that
/// nothing else uses until a barrier of the block orders this before their first use as a
/// barrier object; `count` is in `1..2^20`; on `sm_80` or later.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) bar, n = in(reg32) count, options(nostack))
    };
}

/// `mbarrier.inval.shared::cta.b64 [bar]`: the barrier object at `bar` is one no more; its bytes
/// may be initialised again or used as other memory.
///
/// # Safety
///
/// `bar` is an initialised barrier object of the block's shared memory that no thread and no
/// copy uses any more (a barrier of the block orders their last uses before this); on `sm_80`
/// or later.
#[inline(always)]
pub unsafe fn mbarrier_inval(bar: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("mbarrier.inval.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// `fence.mbarrier_init.release.cluster`: this thread's barrier-object initialisations become
/// visible to the async proxy (the bulk copy engine's arrivals).
///
/// # Safety
///
/// On `sm_90` or later.
#[inline(always)]
pub unsafe fn fence_mbarrier_init() {
    // SAFETY: on sm_90 (caller).
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// `mbarrier.arrive.shared::cta.b64`: one arrival on the barrier object at `bar` (release: this
/// thread's earlier memory accesses are ordered before the phase's completion).
///
/// # Safety
///
/// `bar` is an initialised barrier object of the block's shared memory whose current phase
/// still expects this arrival; on `sm_80` or later.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    // SAFETY: as this function's contract.
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) };
}

/// [`mbarrier_arrive`] by the threads where `arrive` holds, predicated inside one instruction
/// rather than branched around: code that reaches it stays converged. A branch on a
/// per-thread value next to `.sync.aligned` instructions (`wgmma`'s waits) lets the compiler
/// duplicate those instructions into both sides of the branch, where a warp's threads reach
/// them apart and wait for each other forever.
///
/// # Safety
///
/// As [`mbarrier_arrive`], for each thread where `arrive` holds.
#[inline(always)]
pub unsafe fn mbarrier_arrive_where(bar: u32, arrive: bool) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {a}, 0; @p mbarrier.arrive.shared::cta.b64 _, [{b}]; }}",
            a = in(reg32) arrive as u32,
            b = in(reg32) bar,
            options(nostack),
        )
    };
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64`: one arrival on the barrier object at `bar`,
/// and `bytes` more bytes for its current phase to wait for (the bulk copies' `complete_tx`).
///
/// # Safety
///
/// As [`mbarrier_arrive`], on `sm_90` or later; `bytes` is below `2^20`.
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

/// Waits until the phase of parity `parity` of the barrier object at `bar` has completed
/// (`mbarrier.try_wait.parity`, acquire: the memory accesses that the arrivals, and the copies
/// whose bytes it counted, ordered before its completion are visible after). The phase of
/// parity `parity` is the current phase's if that parity differs from the current one's, else
/// the one before: waiting for a phase two or more ahead of the current returns at once.
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

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: the bulk
/// copy engine copies the box at coordinates `(inner, outer)` (elements along the innermost
/// dimension, then rows; zero where the box passes the tensor's edge) of the tensor that the
/// tensor map at `map` describes into shared memory at `dst`, laid out (and swizzled) as the
/// map says, and signals the box's bytes to the barrier object at `bar` as they land.
///
/// # Safety
///
/// `map` is the generic address of a valid 64-aligned tensor map (`cuTensorMapEncodeTiled`) in
/// the kernel's parameter space (a parameter read in place), constant or global memory, that
/// nothing writes during the kernel, of a tensor readable and not written
/// during the kernel; `dst` is the shared-state-space address of the box's bytes in the
/// block's shared memory, aligned as the map's swizzle needs (1024 for 128 bytes), that nothing
/// reads or writes until `bar`'s phase completes; `bar` is an initialised barrier object whose
/// current phase expects these bytes ([`mbarrier_arrive_expect_tx`]); on `sm_90` or later.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u64, inner: i32, outer: i32, bar: u32) {
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

/// [`tma_load_2d`] for a tensor map of rank 3: `at` is the box's coordinates, innermost first
/// (element, row, matrix).
///
/// # Safety
///
/// As [`tma_load_2d`], for a map of rank 3.
#[inline(always)]
pub unsafe fn tma_load_3d(dst: u32, map: *const u64, at: [i32; 3], bar: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{a0}, {a1}, {a2}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) map,
            a0 = in(reg32) at[0],
            a1 = in(reg32) at[1],
            a2 = in(reg32) at[2],
            b = in(reg32) bar,
            options(nostack),
        )
    };
}

/// [`tma_load_2d`] for a tensor map of rank 4: `at` is the box's coordinates, innermost first.
///
/// # Safety
///
/// As [`tma_load_2d`], for a map of rank 4.
#[inline(always)]
pub unsafe fn tma_load_4d(dst: u32, map: *const u64, at: [i32; 4], bar: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{a0}, {a1}, {a2}, {a3}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) map,
            a0 = in(reg32) at[0],
            a1 = in(reg32) at[1],
            a2 = in(reg32) at[2],
            a3 = in(reg32) at[3],
            b = in(reg32) bar,
            options(nostack),
        )
    };
}

/// [`tma_load_2d`] for a tensor map of rank 5: `at` is the box's coordinates, innermost first.
///
/// # Safety
///
/// As [`tma_load_2d`], for a map of rank 5.
#[inline(always)]
pub unsafe fn tma_load_5d(dst: u32, map: *const u64, at: [i32; 5], bar: u32) {
    // SAFETY: as this function's contract.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{a0}, {a1}, {a2}, {a3}, {a4}}}], [{b}];",
            d = in(reg32) dst,
            m = in(reg64) map,
            a0 = in(reg32) at[0],
            a1 = in(reg32) at[1],
            a2 = in(reg32) at[2],
            a3 = in(reg32) at[3],
            a4 = in(reg32) at[4],
            b = in(reg32) bar,
            options(nostack),
        )
    };
}

/// The load of [`tma_load_2d`] to [`tma_load_5d`] for a map of rank `RANK`, with the box's
/// coordinates `at`, innermost first.
///
/// # Safety
///
/// As [`tma_load_2d`], for a map of rank `RANK`, which is 2 to 5.
#[doc(hidden)]
#[inline(always)]
pub unsafe fn tma_load<const RANK: usize>(dst: u32, map: *const u64, at: [i32; RANK], bar: u32) {
    let c = |d: usize| at.get(d).copied().unwrap_or(0);
    // `RANK` is a constant: one arm remains.
    match RANK {
        // SAFETY: as this function's contract, for a map of rank 2.
        2 => unsafe { tma_load_2d(dst, map, c(0), c(1), bar) },
        // SAFETY: as this function's contract, for a map of rank 3.
        3 => unsafe { tma_load_3d(dst, map, [c(0), c(1), c(2)], bar) },
        // SAFETY: as this function's contract, for a map of rank 4.
        4 => unsafe { tma_load_4d(dst, map, [c(0), c(1), c(2), c(3)], bar) },
        // SAFETY: as this function's contract, for a map of rank 5 (the contract's last).
        _ => unsafe { tma_load_5d(dst, map, [c(0), c(1), c(2), c(3), c(4)], bar) },
    }
}

/// `prefetch.tensormap`: brings the tensor map at `map` into the copy engine's cache ahead of
/// its first copy.
///
/// # Safety
///
/// `map` is the generic address of a valid tensor map in the kernel's parameter space,
/// constant or global memory; on `sm_90` or later.
#[inline(always)]
pub unsafe fn prefetch_tensor_map(map: *const u64) {
    // SAFETY: as this function's contract.
    unsafe { asm!("prefetch.tensormap [{m}];", m = in(reg64) map, options(nostack)) };
}

/// `wgmma.commit_group.sync.aligned`: the warpgroup's `wgmma` operations issued since the last
/// commit form one group, which [`wgmma_wait`] waits for.
///
/// # Safety
///
/// Called by all 128 threads of a warpgroup together, in converged code; on `sm_90a`.
#[inline(always)]
pub unsafe fn wgmma_commit() {
    // SAFETY: as this function's contract.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// `wgmma.wait_group.sync.aligned PENDING`: waits until at most `PENDING` of the warpgroup's
/// committed groups are in flight (the older ones complete: their accumulators written, their
/// shared-memory operands read).
///
/// # Safety
///
/// Called by all 128 threads of a warpgroup together, in converged code; on `sm_90a`. The
/// accumulators of the groups still in flight are not read or written until a later wait
/// covers them (this wait names none of them: pass them through an `asm!` that names them to
/// keep the compiler from moving their reads above it).
#[inline(always)]
pub unsafe fn wgmma_wait<const PENDING: u32>() {
    // SAFETY: as this function's contract.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const PENDING, options(nostack)) };
}

/// `setmaxnreg.dec.sync.aligned.u32 N`: the executing warpgroup's threads give registers back
/// to the block's pool, down to `N` each.
///
/// # Safety
///
/// Executed by all four warps of a warpgroup together (converged), which have synchronized
/// since their last `setmaxnreg`; `N` a multiple of 8 in `24..=256`, at most the registers
/// each thread holds now; the code that follows needs no more than `N` (the kernel's entry
/// point declares its launch bounds, `.reqntid` and `.minnctapersm`, so that `ptxas` sizes
/// each region by the instructions before it); on `sm_90a`.
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    // SAFETY: as this function's contract.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// `setmaxnreg.inc.sync.aligned.u32 N`: the executing warpgroup's threads take registers from
/// the block's pool, up to `N` each, waiting until the pool has them.
///
/// # Safety
///
/// As [`setmaxnreg_dec`], `N` at least the registers each thread holds now; the block's pool
/// (its threads' registers at launch, less what other warpgroups hold) will have the
/// registers, or this waits forever.
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    // SAFETY: as this function's contract.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// `shfl.sync.bfly.b32` over the whole warp: `value` of lane `lane ^ mask` (as CUDA's
/// `__shfl_xor_sync(0xffffffff, value, mask)`), for a reduction over lanes that hold one row of
/// a `wgmma`'s accumulators.
///
/// # Safety
///
/// Every lane of the warp runs it, converged.
#[inline(always)]
pub unsafe fn shuffle_xor(value: f32, mask: u32) -> f32 {
    let out: f32;
    // SAFETY: every lane of the warp runs it (the caller), with the full mask; registers only.
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {out}, {v}, {m}, 0x1f, 0xffffffff;",
            out = out(reg32) out,
            v = in(reg32) value,
            m = in(reg32) mask,
            options(nomem, nostack),
        )
    };
    out
}
