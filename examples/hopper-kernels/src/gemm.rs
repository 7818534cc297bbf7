//! `y = x · wᵀ` on `bf16` by `wgmma`, raw: a row-major `m × k` `x` and a row-major `n × k`
//! weight `w` (both K-major, `wgmma`'s plainest case), into a row-major `m × n` `y`, each block
//! of 256 threads (two warpgroups, each `64 × BN`) computing one `128 × BN` chunk, 64 along `k`
//! a step. Each stage of block-shared memory holds one step: `x`'s `128 × 64` then `w`'s
//! `BN × 64`, rows of 128 bytes in the 128-byte swizzle (see [`wgmma::descriptor`]), filled by
//! `cp.async` from all 256 threads several steps ahead.
//!
//! [`wgmma::descriptor`]: crate::wgmma::descriptor

use dlmd::half::bf16;
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

/// Bytes of one stage of a product with `bn`-column chunks: `(128 + bn)` rows of 128 bytes.
pub(crate) const fn stage_bytes(bn: usize) -> usize {
    (128 + bn) * 128
}

/// The dynamic shared memory of a product of `bn`-column chunks and `stages` stages: the stages
/// and 1024 bytes to align them to 1024 (the swizzle's period).
pub const fn shared_bytes(bn: usize, stages: usize) -> u32 {
    (stages * stage_bytes(bn) + 1024) as u32
}

/// The dynamic shared memory of a warp-specialised product ([`wgmma_nt_256_ws4`]): that of
/// [`shared_bytes`] and two barrier objects a stage.
pub const fn shared_bytes_ws(bn: usize, stages: usize) -> u32 {
    shared_bytes(bn, stages) + 16 * stages as u32
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device {
    use super::stage_bytes;
    use crate::wgmma::{
        Accumulators, cp_async_mbarrier_arrive, descriptor, fence_proxy_async, mbarrier_arrive_where, mbarrier_init,
        mbarrier_wait,
    };
    use core::arch::{asm, nvptx};
    use dlmd::half::bf16;
    use dlmd::kernel::mma::raw::{cp_async_16, cp_async_commit, cp_async_wait, shared_address};
    use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

    /// The chunk rows of each group of the blocks' order: blocks of one group take `GROUP`
    /// chunk rows in turn, column after column, so that the blocks that run together share
    /// operands in L2.
    const GROUP: usize = 16;

    /// [`product`]'s mode: each step's `wgmma` issued before the next copies start, not after.
    pub const MMA_FIRST: u32 = 1;
    /// [`product`]'s mode, for measurements: every stage filled once, then no copies.
    pub const NO_LOADS: u32 = 2;
    /// [`product`]'s mode, for measurements: no `wgmma`.
    pub const NO_MMA: u32 = 4;

    /// The launch's dynamic shared memory as a shared-state-space address, and its bytes.
    #[inline(always)]
    pub(crate) fn shared() -> (u32, usize) {
        #[repr(C, align(1024))]
        struct Atom([u8; 1024]);
        let size: u32;
        // SAFETY: reads a special register; no memory is read or written.
        unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack)) };
        let base = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Atom>();
        // SAFETY: the block's dynamic shared memory.
        (unsafe { shared_address(base) }, size as usize)
    }

    /// Starts this thread's copies of `rows` rows of 64 elements from the row-major matrix at
    /// `src` (rows `pitch` elements apart) into the rows of 128 bytes from shared address `dst`,
    /// in the 128-byte swizzle: row `r`'s 16-byte piece `c` to `dst + 128 r + 16 (c ^ r % 8)`.
    /// Piece `p` (row `p / 8`, piece `p % 8`) is thread `p % THREADS`'s.
    ///
    /// # Safety
    ///
    /// The rows are inside the source (readable, not written during the kernel), 16-aligned;
    /// `dst` is 1024-aligned shared memory of this block, `128 · rows` bytes, that no thread
    /// reads until the copies are waited for and a barrier passed.
    #[inline(always)]
    unsafe fn copy<const THREADS: usize>(t: usize, src: *const bf16, pitch: usize, dst: u32, rows: usize) {
        let mut p = t;
        while p < rows * 8 {
            let (r, c) = (p / 8, p % 8);
            let to = dst + (128 * r + 16 * (c ^ (r % 8))) as u32;
            // SAFETY: 16 bytes inside both, 16-aligned (caller).
            unsafe { cp_async_16(to, src.wrapping_add(r * pitch + 8 * c).cast(), 16) };
            p += THREADS;
        }
    }

    /// Writes this thread's accumulators of a warpgroup's `64 × A::N` to `y` (row-major, rows
    /// of `n`) at `[i0, j0]`, as `bf16` (the layout of [`Accumulators`]).
    ///
    /// # Safety
    ///
    /// `tw` is this thread's index in its warpgroup; the `64 × A::N` from `[i0, j0]` are inside
    /// `y`, `j0` even, `n` even, `y` 4-aligned, written by no other thread meanwhile.
    #[inline(always)]
    pub(crate) unsafe fn store<A: Accumulators>(acc: &A, tw: usize, py: *mut u16, n: usize, i0: usize, j0: usize) {
        let (warp, lane) = (tw / 32, tw % 32);
        let row = i0 + warp * 16 + lane / 4;
        let col = j0 + 2 * (lane % 4);
        // Written out: a loop the compiler kept would put `acc` in local memory.
        dlmd::unroll!(16, |ja| {
            dlmd::unroll!(2, |jb| {
                let j = 2 * ja + jb;
                if j < A::N / 8 {
                    dlmd::unroll!(2, |h| {
                        let (i, jj) = (row + 8 * h, col + 8 * j);
                        let lo = bf16::from_f32(acc.get(4 * j + 2 * h)).to_bits();
                        let hi = bf16::from_f32(acc.get(4 * j + 2 * h + 1)).to_bits();
                        // SAFETY: `[i, jj]` and `[i, jj + 1]` are inside `y`, 4-aligned, this
                        // thread's alone (caller).
                        unsafe {
                            py.wrapping_add(i * n + jj)
                                .cast::<u32>()
                                .write(u32::from(lo) | (u32::from(hi) << 16u32))
                        };
                    });
                }
            });
        });
    }

    /// The chunk `[i0, j0]` of block `block` for `m × n` in `bn`-column chunks (GROUP order),
    /// or `None` past the last.
    #[inline(always)]
    pub(crate) fn chunk(block: usize, m: usize, n: usize, bn: usize) -> Option<(usize, usize)> {
        let (mt, nt) = (m / 128, n / bn);
        if block >= mt * nt {
            return None;
        }
        let (group, local) = (block / (GROUP * nt), block % (GROUP * nt));
        let group_rows = (mt - group * GROUP).min(GROUP);
        Some(((group * GROUP + local % group_rows) * 128, local / group_rows * bn))
    }

    /// `y = x · wᵀ` as the module says, with `BN`-column chunks (`A`, the accumulators of
    /// `64 × BN`), `STAGES` stages and `IN_FLIGHT` (0 or 1) groups of `wgmma` left in flight a
    /// step: the copies run `STAGES - 1 - IN_FLIGHT` steps ahead; `MODE` holds [`MMA_FIRST`]
    /// and, to measure the parts apart (the result is then wrong), [`NO_LOADS`] or [`NO_MMA`].
    /// Shapes whose sides are not multiples of 128 (`m`), `BN` (`n`) and 64 (`k`), and views
    /// that do not start 16-aligned, leave `y` as it is.
    ///
    /// # Safety
    ///
    /// In a kernel launched with blocks of 256 threads, one-dimensional, on a grid of one row
    /// of blocks (blocks are numbered along `x` alone), on an `sm_90a` GPU, with at least
    /// [`shared_bytes`](super::shared_bytes)`(BN, STAGES)` bytes of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn product<A: Accumulators, const STAGES: usize, const IN_FLIGHT: usize, const MODE: u32>(
        x: &DeviceMdspan<'_, bf16, Dims<2>>,
        w: &DeviceMdspan<'_, bf16, Dims<2>>,
        y: &DeviceMdspanMut<'_, bf16, Dims<2>>,
    ) {
        let bn = A::N;
        let (m, k, n) = (x.extent(0), x.extent(1), w.extent(0));
        if w.extent(1) != k || y.extent(0) != m || y.extent(1) != n {
            return;
        }
        if !m.is_multiple_of(128) || !n.is_multiple_of(bn) || !k.is_multiple_of(64) || k == 0 {
            return;
        }
        let (px, pw, py) = (x.data_handle(), w.data_handle(), y.data_handle().cast::<u16>());
        // Every row starts 16-aligned where the views do (rows of whole steps of 64 elements),
        // as the 16-byte copies and the paired stores ask.
        if ![px as usize, pw as usize, py as usize]
            .iter()
            .all(|p| p.is_multiple_of(16))
        {
            return;
        }
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() } as usize;
        let Some((i0, j0)) = chunk(block, m, n, bn) else {
            return;
        };
        let (start, bytes) = shared();
        let base = start.next_multiple_of(1024);
        let steps = k / 64;
        let ahead = STAGES - 1 - IN_FLIGHT;
        let (wg, tw) = (t / 128, t % 128);
        let stage = |s: usize| base + (s % STAGES * stage_bytes(bn)) as u32;
        // Starts step `s`'s copies into its stage if there is such a step, and commits a group
        // either way (an empty one past the end), so that the groups count steps.
        let load = |s: usize| {
            if s < steps {
                let sa = stage(s);
                // SAFETY: the chunk's 128 rows of `x` and `bn` rows of `w`, 64 columns from
                // `64 s`, inside them (whole tiles), 16-aligned (rows of multiples of 64
                // elements); the stage is 1024-aligned and was last read by the `wgmma` of step
                // `s - STAGES`, which every warpgroup waited for before the barrier that
                // preceded this (`IN_FLIGHT` groups at most left in flight, `ahead` steps).
                unsafe { copy::<256>(t, px.wrapping_add(i0 * k + 64 * s), k, sa, 128) };
                // SAFETY: as above.
                unsafe { copy::<256>(t, pw.wrapping_add(j0 * k + 64 * s), k, sa + 128 * 128, bn) };
            }
            // SAFETY: sm_80 and later.
            unsafe { cp_async_commit() };
        };
        if bytes < (base - start) as usize + STAGES * stage_bytes(bn) {
            return;
        }
        let mut acc = A::zero();
        // Measurements without copies past the first stages fill every stage first, so that no
        // step reads a stage that nothing wrote: the products then read each stage again.
        let first = if MODE & NO_LOADS == 0 { ahead } else { STAGES };
        for s in 0..first {
            load(s);
        }
        // Measurements only: without `NO_LOADS`, the loop's copies.
        let refill = |s: usize| {
            if MODE & NO_LOADS == 0 {
                load(s)
            } else {
                // SAFETY: sm_80 and later.
                unsafe { cp_async_commit() }
            }
        };
        for s in 0..steps {
            // All but the `ahead - 1` most recent groups: step `s`'s copies are done.
            match ahead {
                // SAFETY: sm_80 and later.
                1 => unsafe { cp_async_wait::<0>() },
                // SAFETY: sm_80 and later.
                2 => unsafe { cp_async_wait::<1>() },
                // SAFETY: sm_80 and later.
                _ => unsafe { cp_async_wait::<2>() },
            }
            // SAFETY: sm_90; after this thread's copies of the stage completed.
            unsafe { fence_proxy_async() };
            // SAFETY: reached by every thread of the block (uniform loop).
            unsafe { nvptx::_syncthreads() };
            if MODE & MMA_FIRST == 0 {
                refill(s + ahead);
            }
            let sa = stage(s);
            // This warpgroup's 64 rows of `x` (8 atoms of 1024 bytes), all `bn` rows of `w`.
            let (da, db) = (descriptor(sa + (wg * 64 * 128) as u32), descriptor(sa + 128 * 128));
            if MODE & NO_MMA == 0 {
                // SAFETY: all 128 threads of warpgroup `wg` (uniform code); the stage landed,
                // fenced and behind the barrier above; it is refilled only after this group is
                // waited for (below, or a step later) and a barrier passed.
                unsafe { acc.mma_k64(da, db) };
            }
            if MODE & MMA_FIRST != 0 {
                refill(s + ahead);
            }
            if MODE & NO_MMA == 0 {
                if IN_FLIGHT == 0 {
                    // SAFETY: the warpgroup's threads together.
                    unsafe { acc.wait::<0>() }
                } else {
                    // SAFETY: the warpgroup's threads together.
                    unsafe { acc.wait::<1>() }
                }
            }
        }
        // SAFETY: the warpgroup's threads together; the last group done.
        unsafe { acc.wait::<0>() };
        // SAFETY: sm_80; only empty groups can be left.
        unsafe { cp_async_wait::<0>() };
        // SAFETY: this warpgroup's 64 rows of the chunk, inside `y` (whole tiles), `j0` and `n`
        // even (multiples of `bn`), `y` 16-aligned (checked above); each element one thread's.
        unsafe { store(&acc, tw, py, n, i0 + 64 * wg, j0) };
    }

    /// `y = x · wᵀ` as [`product`], warp-specialised: blocks of 384 threads, warpgroup 0 the
    /// producer (`cp.async` of each step into its stage, then `cp.async.mbarrier.arrive.noinc`
    /// on the stage's `full` barrier object, 128 arrivals a phase), warpgroups 1 and 2 the
    /// consumers (`64 × BN` each: wait on `full`, `wgmma`, keep one group in flight, and once a
    /// step's group is done, lane 0 of each of their 8 warps arrives on its stage's `empty`,
    /// which the producer waits on before refilling it). No block-wide barrier past the start.
    ///
    /// # Safety
    ///
    /// In a kernel launched with blocks of 384 threads, one-dimensional, on a grid of one row of
    /// blocks, on an `sm_90a` GPU, with at least
    /// [`shared_bytes_ws`](super::shared_bytes_ws)`(BN, STAGES)` bytes of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn product_ws<A: Accumulators, const STAGES: usize>(
        x: &DeviceMdspan<'_, bf16, Dims<2>>,
        w: &DeviceMdspan<'_, bf16, Dims<2>>,
        y: &DeviceMdspanMut<'_, bf16, Dims<2>>,
    ) {
        let bn = A::N;
        let (m, k, n) = (x.extent(0), x.extent(1), w.extent(0));
        if w.extent(1) != k || y.extent(0) != m || y.extent(1) != n {
            return;
        }
        if !m.is_multiple_of(128) || !n.is_multiple_of(bn) || !k.is_multiple_of(64) || k == 0 {
            return;
        }
        let (px, pw, py) = (x.data_handle(), w.data_handle(), y.data_handle().cast::<u16>());
        // Every row starts 16-aligned where the views do (rows of whole steps of 64 elements),
        // as the 16-byte copies and the paired stores ask.
        if ![px as usize, pw as usize, py as usize]
            .iter()
            .all(|p| p.is_multiple_of(16))
        {
            return;
        }
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() } as usize;
        let Some((i0, j0)) = chunk(block, m, n, bn) else {
            return;
        };
        let (start, bytes) = shared();
        let base = start.next_multiple_of(1024);
        if bytes < (base - start) as usize + STAGES * stage_bytes(bn) + 16 * STAGES {
            return;
        }
        let steps = k / 64;
        let stage = |s: usize| base + (s % STAGES * stage_bytes(bn)) as u32;
        let bars = base + (STAGES * stage_bytes(bn)) as u32;
        let full = |s: usize| bars + (8 * (s % STAGES)) as u32;
        let empty = |s: usize| bars + (8 * (STAGES + s % STAGES)) as u32;
        let parity = |s: usize| (s / STAGES % 2) as u32;
        if t < STAGES {
            // SAFETY: 8-aligned words past the stages, used as nothing else; the barrier below
            // orders this before every use.
            unsafe { mbarrier_init(full(t), 128) };
            // SAFETY: as above.
            unsafe { mbarrier_init(empty(t), 8) };
        }
        // SAFETY: every thread of the block, before any role diverges.
        unsafe { nvptx::_syncthreads() };
        let (wg, tw) = (t / 128, t % 128);
        if wg == 0 {
            for s in 0..steps {
                if s >= STAGES {
                    // The consumers are done with step `s - STAGES`, this stage's last.
                    // SAFETY: an initialised barrier object.
                    unsafe { mbarrier_wait(empty(s), parity(s - STAGES)) };
                }
                let sa = stage(s);
                // SAFETY: the chunk's rows of `x` and `w`, 64 columns from `64 s`, inside them
                // (whole tiles), 16-aligned; the stage is 1024-aligned, released by its readers
                // (above), and read next after its `full` phase completes, which these copies'
                // completion is part of (below).
                unsafe { copy::<128>(tw, px.wrapping_add(i0 * k + 64 * s), k, sa, 128) };
                // SAFETY: as above.
                unsafe { copy::<128>(tw, pw.wrapping_add(j0 * k + 64 * s), k, sa + 128 * 128, bn) };
                // SAFETY: an initialised barrier object whose phase expects this thread's
                // arrival (one a step from each of the 128 producer threads).
                unsafe { cp_async_mbarrier_arrive(full(s)) };
            }
            // SAFETY: sm_80; no copy is left in flight when the thread ends.
            unsafe { cp_async_wait::<0>() };
            return;
        }
        let cw = wg - 1;
        let mut acc = A::zero();
        for s in 0..steps {
            // SAFETY: an initialised barrier object.
            unsafe { mbarrier_wait(full(s), parity(s)) };
            // The copies' writes, visible to this thread since the wait, made visible to the
            // async proxy too.
            // SAFETY: sm_90.
            unsafe { fence_proxy_async() };
            let sa = stage(s);
            let (da, db) = (descriptor(sa + (cw * 64 * 128) as u32), descriptor(sa + 128 * 128));
            // SAFETY: all 128 threads of warpgroup `wg` (uniform code); the stage landed and was
            // fenced (above); it is refilled only after both warpgroups released it (below).
            unsafe { acc.mma_k64(da, db) };
            // SAFETY: the warpgroup's threads together.
            unsafe { acc.wait::<1>() };
            if s > 0 {
                // Step `s - 1`'s group is done: its stage can be refilled. (A predicated
                // arrival, not a branch on the lane beside `wgmma`'s aligned waits.)
                // SAFETY: an initialised barrier object whose phase expects one arrival from
                // each of the 8 consumer warps: their first lanes'.
                unsafe { mbarrier_arrive_where(empty(s - 1), tw % 32 == 0) };
            }
        }
        // SAFETY: the warpgroup's threads together; the last group done.
        unsafe { acc.wait::<0>() };
        // SAFETY: this warpgroup's 64 rows of the chunk, inside `y` (whole tiles), `j0` and `n`
        // even, `y` 16-aligned (checked above); each element one thread's.
        unsafe { store(&acc, tw, py, n, i0 + 64 * cw, j0) };
    }
}

macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident, $acc:literal, $bn:literal, $stages:literal, $in_flight:literal, $mode:expr, $min:literal;)*) => {
        $(
            $(#[$doc])*
            #[dlmd::kernel(block_threads = 256, min_blocks_per_sm = $min)]
            pub fn $name(
                thread: Thread,
                x: DeviceMdspan<'_, bf16, Dims<2>>,
                w: DeviceMdspan<'_, bf16, Dims<2>>,
                y: DeviceMdspanMut<'_, bf16, Dims<2>>,
            ) {
                let _ = thread;
                #[cfg(target_arch = "nvptx64")]
                if thread.block_in_row().is_some() {
                    // SAFETY: blocks of 256 threads along `x` (the launcher checks `block_threads`)
                    // on a grid of one row (checked here), built for `sm_90a`; the shared memory
                    // is checked by the product (it leaves `y` as it is with less), the rest are
                    // the views' types.
                    unsafe { device::product::<[f32; $acc], $stages, $in_flight, { $mode }>(&x, &w, &y) }
                }
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (x, w, y);
            }
        )*
    };
}

kernels! {
    /// `y = x · wᵀ` (`x` row-major `m × k`, `w` row-major `n × k`, `y` row-major `m × n`, all
    /// `bf16`, `f32` accumulators) by `wgmma` `m64n256k16`: `128 × 256` chunks, four stages, one
    /// group of `wgmma` left in flight a step. Launch one-dimensional blocks of 256 threads, one
    /// per chunk, on a grid of one row, with [`shared_bytes`]`(256, 4)` bytes of dynamic shared
    /// memory; `m`, `n`, `k` multiples of 128, 256 and 64, and `x`, `w`, `y` 16-aligned
    /// (others, and other grids, leave `y` as it is).
    wgmma_nt_256_s4, 128, 256, 4, 1, 0, 1;
    /// [`wgmma_nt_256_s4`] waiting for each step's `wgmma` before the next (copies three steps
    /// ahead).
    wgmma_nt_256_s4_sync, 128, 256, 4, 0, 0, 1;
    /// [`wgmma_nt_256_s4`] with `128 × 128` chunks (`m64n128k16`) and four stages.
    wgmma_nt_128_s4, 64, 128, 4, 1, 0, 1;
    /// [`wgmma_nt_256_s4`] with `128 × 128` chunks and three stages, two blocks a multiprocessor.
    wgmma_nt_128_s3, 64, 128, 3, 1, 0, 2;
    /// [`wgmma_nt_256_s4`] issuing each step's `wgmma` before its copies.
    wgmma_nt_256_s4_mma_first, 128, 256, 4, 1, device::MMA_FIRST, 1;
    /// For measurements: [`wgmma_nt_256_s4`] without the loop's copies (a wrong result).
    wgmma_nt_256_s4_no_loads, 128, 256, 4, 1, device::NO_LOADS, 1;
    /// For measurements: [`wgmma_nt_256_s4`] without `wgmma` (a wrong result).
    wgmma_nt_256_s4_no_mma, 128, 256, 4, 1, device::NO_MMA, 1;
}

/// [`wgmma_nt_256_s4`] warp-specialised: blocks of 384 threads (a producer warpgroup of
/// `cp.async` and two consumer warpgroups of `wgmma`, handing stages over through barrier
/// objects), four stages. Launch one-dimensional blocks of 384 threads, one per `128 × 256`
/// chunk on a grid of one row, with [`shared_bytes_ws`]`(256, 4)` bytes of dynamic shared memory;
/// `m`, `n`, `k` multiples of 128, 256 and 64, and `x`, `w`, `y` 16-aligned (others, and other
/// grids, leave `y` as it is).
#[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
pub fn wgmma_nt_256_ws4(
    thread: Thread,
    x: DeviceMdspan<'_, bf16, Dims<2>>,
    w: DeviceMdspan<'_, bf16, Dims<2>>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    if thread.block_in_row().is_some() {
        // SAFETY: as in `wgmma_nt_256_s4`, with blocks of 384 threads.
        unsafe { device::product_ws::<[f32; 128], 4>(&x, &w, &y) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, w, y);
}
