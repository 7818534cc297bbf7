//! The raw twins of [`matmul_bf16`](crate::matmul_bf16) and
//! [`matmul_bf16_two_stages`](crate::matmul_bf16_two_stages): the same tiles, tilings and
//! instructions written the CUDA C++ way, with a block-shared array of their own laid out by
//! hand, 32-bit shared addresses, copy addresses worked out once a chunk, raw pointers, bare
//! barriers and `dlmd::kernel::mma::raw`'s instructions, all `unsafe`. They take only shapes
//! that are whole tiles (others leave `c` as it is), as such hand-written kernels do, and exist
//! to measure what the safe kernels' checks cost (`examples/tensor_cores.rs --bench`).

use dlmd::half::bf16;
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

/// Bytes of one stage of a raw product whose chunks have `cols` columns, `bk` along `k` a
/// step: `A` (`128 × bk`), then `B` (`bk × cols`), both swizzled, no padding.
const fn stage_bytes(cols: usize, bk: usize) -> usize {
    (128 + cols) * bk * 2
}

/// The dynamic shared memory [`gemm_bf16_raw`] needs: two stages of steps of 32.
pub const GEMM_RAW_SHARED: u32 = (2 * stage_bytes(128, 32)) as u32;

/// The dynamic shared memory [`matmul_bf16_raw`] needs: three stages of steps of 64.
pub const MATMUL_RAW_SHARED: u32 = (3 * stage_bytes(128, 64)) as u32;

/// The byte offset of 16-byte piece `piece` of line `line` in a swizzled tile of `lines`
/// lines, in panels of `swizzle` bytes a line (`RightSwizzled`'s layout, written out): panel
/// `piece / (swizzle / 16)`, then the piece XORed with the line's place in the swizzle's
/// period of 1024 bytes (`line % 8` for 128 bytes).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
const fn swizzled(lines: usize, swizzle: usize, line: usize, piece: usize) -> u32 {
    let per = swizzle / 16;
    let within = (piece % per) ^ (line * swizzle / 128 % per);
    (piece / per * lines * swizzle + line * swizzle + within * 16) as u32
}

#[cfg(target_arch = "nvptx64")]
mod ops {
    use core::arch::{asm, nvptx};
    use dlmd::kernel::Thread;

    /// The launch's dynamic shared memory, 128-aligned, as CUDA C++'s `extern __shared__`
    /// array (its size: [`dynamic_bytes`]).
    #[inline(always)]
    pub fn shared() -> *mut u16 {
        #[repr(C, align(128))]
        struct Line([u8; 128]);
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Line>().cast::<u16>()
    }

    /// The bytes of the launch's dynamic shared memory.
    #[inline(always)]
    pub fn dynamic_bytes() -> usize {
        let size: u32;
        // SAFETY: reads a special register; no memory is read or written.
        unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack)) };
        size as usize
    }

    /// The thread's index in its block (of `x` alone, as the launcher checks the block of a
    /// kernel built for one size), its block's index and the number of blocks, where the grid
    /// is one row of blocks ([`Thread::block_in_row`]); `None` on any other grid.
    #[inline(always)]
    pub fn ids(thread: &Thread) -> Option<(usize, usize, usize)> {
        let (block, blocks) = thread.block_in_row()?;
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() };
        Some((t as usize, block, blocks))
    }

    /// Two `bf16` to `p` as one 32-bit store.
    ///
    /// # Safety
    ///
    /// `p` is 4-aligned global memory that no other thread reads or writes meanwhile.
    #[inline(always)]
    pub unsafe fn store2(p: *mut u16, lo: u16, hi: u16) {
        // SAFETY: as this function's contract.
        unsafe { p.cast::<u32>().write(u32::from(lo) | (u32::from(hi) << 16u32)) };
    }
}

/// `c = a · b` for row-major `bf16` matrices, into `bf16`, as [`matmul_bf16`](crate::matmul_bf16)
/// computes it, written raw: `STAGES` stages of swizzled block-shared arrays (`A`'s rows of `BK`
/// elements swizzled by their bytes, `B`'s in panels of 64 columns swizzled by 128) filled by `cp.async`
/// `STAGES - 1` steps ahead, `ldmatrix` and `mma.sync` by `THREADS / 32` warps (2 × `WN`) of
/// `64 × COLS / WN`, steps of `BK` along `k`, one barrier a step; chunks in groups of 8 rows.
/// Only shapes whose sides are multiples of 128 (`m`), `COLS` (`n`) and `BK` (`k`), with `a`
/// and `b` 16-aligned and `c` 4-aligned, on a grid of one row of blocks: others leave `c` as it
/// is.
///
/// # Safety
///
/// In a kernel launched with blocks of `THREADS` threads (`64 · WN`) and `STAGES ·
/// stage_bytes(COLS, BK)` bytes of dynamic shared memory; `FN = COLS / WN / 8`, even; `BK` 32
/// or 64, `COLS` a multiple of 64.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn raw_product<
    const THREADS: usize,
    const WN: usize,
    const COLS: usize,
    const FN: usize,
    const BK: usize,
    const STAGES: usize,
>(
    thread: &Thread,
    a: &DeviceMdspan<'_, bf16, Dims<2>>,
    b: &DeviceMdspan<'_, bf16, Dims<2>>,
    c: &DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    use dlmd::kernel::mma::raw::{
        cp_async_16, cp_async_commit, cp_async_wait, cp_async_wait_at_most, ldmatrix_x4, mma_m16n8k16, shared_address,
    };
    // `A`'s lines are `BK` elements, one swizzled line of as many bytes; `B`'s `COLS`, panels
    // of 64 (128 bytes).
    let (a_swizzle, b_swizzle, b_base) = (BK * 2, 128, (128 * BK * 2) as u32);
    let (rows, depth, cols) = (a.extent(0), a.extent(1), b.extent(1));
    if b.extent(0) != depth || c.extent(0) != rows || c.extent(1) != cols {
        return;
    }
    if !rows.is_multiple_of(128) || !cols.is_multiple_of(COLS) || !depth.is_multiple_of(BK) || depth == 0 {
        return;
    }
    let (pa, pb, pc) = (
        a.data_handle().cast::<u16>(),
        b.data_handle().cast::<u16>(),
        c.data_handle().cast::<u16>(),
    );
    // Blocks numbered along `x` only: a grid with `y` or `z` would give two blocks one chunk.
    let Some((t, block, blocks)) = ops::ids(thread) else {
        return;
    };
    // 16-aligned rows and starts, as `cp.async` of 16 bytes asks.
    if ![pa as usize, pb as usize].iter().all(|p| p.is_multiple_of(16)) {
        return;
    }
    // `c`'s pairs of neighbours stored as one 4-byte word each.
    if !(pc as usize).is_multiple_of(4) {
        return;
    }
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / WN, warp % WN);
    let (q, r) = (lane / 8, lane % 8);
    // SAFETY: the launch's dynamic shared memory.
    let smem = unsafe { shared_address(ops::shared()) };
    let (chunk_rows, chunk_cols) = (rows / 128, cols / COLS);
    let steps = depth / BK;
    let mut chunk = block;
    while chunk < chunk_rows * chunk_cols {
        // Chunks in groups of 8 rows, column by column within a group: blocks that run together
        // share rows of `a` and columns of `b` in L2.
        let (group, within) = (chunk / (8 * chunk_cols), chunk % (8 * chunk_cols));
        let height = (chunk_rows - group * 8).min(8);
        let (i0, j0) = ((group * 8 + within % height) * 128, within / height * COLS);
        // This thread's pieces: `A`'s rows `t / (BK / 8) + i · THREADS / (BK / 8)`, `B`'s rows
        // `t / (COLS / 8) + i · THREADS / (COLS / 8)`, each 8 elements from column
        // `t % pieces · 8`: one source pointer a matrix, moved along `k` a step at a time, and
        // fixed offsets into the stage.
        let (a_per_row, b_per_row) = (BK / 8, COLS / 8);
        let (a_rows_turn, b_rows_turn) = (THREADS / a_per_row, THREADS / b_per_row);
        let a_src = pa.wrapping_add((i0 + t / a_per_row) * depth + t % a_per_row * 8);
        let b_src = pb.wrapping_add(t / b_per_row * cols + j0 + t % b_per_row * 8);
        // A thread's lines move by whole periods of the swizzle (8 lines), so its pieces keep
        // their place in the line: one offset, and a line's bytes a turn.
        let a_dst = swizzled(128, a_swizzle, t / a_per_row, t % a_per_row);
        let b_dst = b_base + swizzled(BK, b_swizzle, t / b_per_row, t % b_per_row);
        // Starts the copies of step `step` into its stage, if there is such a step, and
        // commits a group either way (an empty one past the end), so that the groups count
        // steps.
        let load = |step: usize| {
            if step < steps {
                let stage = smem + (step % STAGES * stage_bytes(COLS, BK)) as u32;
                let (a_src, b_src) = (a_src.wrapping_add(step * BK), b_src.wrapping_add(step * BK * cols));
                dlmd::unroll!(128 / (THREADS / (BK / 8)), |i| {
                    let to = stage + a_dst + (i * a_rows_turn * a_swizzle) as u32;
                    // SAFETY: 16 bytes of the chunk's rows of `a` from this step's `k`, inside
                    // it (whole tiles), 16-aligned (checked above; rows multiples of 8 elements), to
                    // the stage, which no thread reads until the copies are waited for and a
                    // barrier passed (it was last read a step ago, before this step's
                    // barrier); sm_80.
                    unsafe { cp_async_16(to, a_src.wrapping_add(i * a_rows_turn * depth).cast(), 16) };
                });
                dlmd::unroll!(BK / (THREADS / (COLS / 8)), |i| {
                    let to = stage + b_dst + (i * b_rows_turn * b_swizzle) as u32;
                    // SAFETY: as above, for `b`.
                    unsafe { cp_async_16(to, b_src.wrapping_add(i * b_rows_turn * cols).cast(), 16) };
                });
            }
            // SAFETY: sm_80 (this crate's target).
            unsafe { cp_async_commit() };
        };
        let mut acc = [[[0.0f32; 4]; FN]; 4];
        for step in 0..STAGES - 1 {
            load(step);
        }
        for step in 0..steps {
            // All but the `STAGES - 2` most recent groups: this step's copies are done.
            // SAFETY: sm_80.
            unsafe { cp_async_wait_at_most(STAGES.min(4) as u32 - 2) };
            // SAFETY: reached by every thread of the block (uniform loop).
            unsafe { core::arch::nvptx::_syncthreads() };
            let sa = smem + (step % STAGES * stage_bytes(COLS, BK)) as u32;
            let sb = sa + b_base;
            // Step `ks`'s fragments (16 along `k`) of this stage.
            let fragments = |ks: usize| {
                let fa: [[u32; 4]; 4] = core::array::from_fn(|fm| {
                    let row = wm * 64 + fm * 16 + lane % 16;
                    let row = sa + swizzled(128, a_swizzle, row, ks * 2 + lane / 16);
                    // SAFETY: every lane; 16 bytes of the landed stage, 16-aligned (a whole
                    // piece of the swizzled tile).
                    unsafe { ldmatrix_x4::<false>(row) }
                });
                let mut fb = [[0u32; 2]; FN];
                dlmd::unroll!(FN / 2, |pair| {
                    let row = ks * 16 + q % 2 * 8 + r;
                    let col = wn * (COLS / WN) + pair * 16 + q / 2 * 8;
                    let row = sb + swizzled(BK, b_swizzle, row, col / 8);
                    // SAFETY: as above.
                    let [b0, b1, b2, b3] = unsafe { ldmatrix_x4::<true>(row) };
                    fb[2 * pair] = [b0, b1];
                    fb[2 * pair + 1] = [b2, b3];
                });
                (fa, fb)
            };
            // The first fragments on their way, then the copies of a later step, then each
            // step's products while the next step's fragments load.
            let mut now = fragments(0);
            load(step + STAGES - 1);
            dlmd::unroll!(BK / 16, |ks| {
                let next = if ks + 1 < BK / 16 { fragments(ks + 1) } else { now };
                let (fa, fb) = now;
                dlmd::unroll!(4, |fm| {
                    dlmd::unroll!(FN, |fn_| {
                        // SAFETY: every lane of the warp, sm_80.
                        acc[fm][fn_] = unsafe { mma_m16n8k16::<true>(fa[fm], fb[fn_], acc[fm][fn_]) };
                    });
                });
                now = next;
            });
        }
        // SAFETY: sm_80; no copy is left in flight past the chunk (the last groups are empty).
        unsafe { cp_async_wait::<0>() };
        // SAFETY: every thread; the stages are refilled for the next chunk only after all have
        // been read.
        unsafe { core::arch::nvptx::_syncthreads() };
        // Written out: a loop the compiler kept would put `acc` in local memory.
        dlmd::unroll!(4, |fm| {
            dlmd::unroll!(FN, |fn_| {
                dlmd::unroll!(2, |h| {
                    let i = i0 + wm * 64 + fm * 16 + h * 8 + lane / 4;
                    let j = j0 + wn * (COLS / WN) + fn_ * 8 + 2 * (lane % 4);
                    let [lo, hi] = [acc[fm][fn_][2 * h], acc[fm][fn_][2 * h + 1]]
                        .map(|x| dlmd::kernel::math::to_bf16(x).to_bits());
                    // SAFETY: `[i, j]` and `[i, j + 1]` are inside `c` (whole tiles), 4-aligned
                    // (`c` is, checked above; `j` even, rows of a multiple of 128), this
                    // thread's alone.
                    unsafe { ops::store2(pc.wrapping_add(i * cols + j), lo, hi) };
                });
            });
        });
        chunk += blocks;
    }
}

/// The raw twin of [`matmul_bf16_two_stages`](crate::matmul_bf16_two_stages): [`raw_product`]
/// with its tiles (`128 × 128` chunks, 8 warps of `64 × 32`, steps of 32, two stages; `A`
/// swizzled by 64 bytes). Launch
/// with blocks of 256 threads and [`GEMM_RAW_SHARED`] bytes of
/// dynamic shared memory; `a`, `b`, `c` row-major.
#[dlmd::kernel(block_threads = 256, min_blocks_per_sm = 2)]
pub fn gemm_bf16_raw(
    thread: Thread,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: launched as documented; with less shared memory than it needs, it does nothing.
    unsafe {
        if ops::dynamic_bytes() >= GEMM_RAW_SHARED as usize {
            raw_product::<256, 4, 128, 4, 32, 2>(&thread, &a, &b, &c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}

/// The raw twin of [`matmul_bf16`](crate::matmul_bf16): [`raw_product`] by 4 warps of `64 × 64`
/// (128 threads), three stages of steps of 64. Launch with blocks of 128 threads and
/// [`MATMUL_RAW_SHARED`] bytes of dynamic shared memory; `a`, `b`, `c` row-major.
#[dlmd::kernel(block_threads = 128, min_blocks_per_sm = 2)]
pub fn matmul_bf16_raw(
    thread: Thread,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `gemm_bf16_raw`.
    unsafe {
        if ops::dynamic_bytes() >= MATMUL_RAW_SHARED as usize {
            raw_product::<128, 2, 128, 8, 64, 3>(&thread, &a, &b, &c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}
