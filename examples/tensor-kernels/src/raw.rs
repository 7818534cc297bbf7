//! The raw twin of [`matmul_bf16`](crate::matmul_bf16): the same tiles, tiling and instructions
//! written the CUDA C++ way, with a block-shared array of its own laid out by hand, raw pointers,
//! bare barriers and `dlmd::kernel::mma::raw`'s instructions, all `unsafe`. It takes only
//! shapes that are whole tiles (others leave `c` as it is), as such hand-written kernels do, and
//! exists to measure what the safe kernel's checks cost (`examples/tensor_cores.rs --bench`).

use dlmd::half::bf16;
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

/// Elements between the starts of two rows of a stage's `A` (`128 × 32`, padded by 8).
const A_PITCH: usize = 40;

/// Elements of one stage of a raw product whose chunks have `cols` columns: `A` (`128 × 32`),
/// then `B` (`32 × cols`, rows padded by 8).
const fn stage(cols: usize) -> usize {
    128 * A_PITCH + 32 * (cols + 8)
}

/// The dynamic shared memory [`gemm_bf16_raw`] needs: two stages of `128 × 128` chunks.
pub const GEMM_RAW_SHARED: u32 = (2 * stage(128) * 2) as u32;

/// The dynamic shared memory [`gemm_bf16_raw_s4`] needs: four stages of `128 × 128` chunks.
pub const GEMM_RAW_S4_SHARED: u32 = (4 * stage(128) * 2) as u32;

/// The dynamic shared memory [`gemm_bf16_raw_wide`] needs: three stages of `128 × 256` chunks.
pub const GEMM_RAW_WIDE_SHARED: u32 = (3 * stage(256) * 2) as u32;

#[cfg(target_arch = "nvptx64")]
mod ops {
    use core::arch::{asm, nvptx};
    use dlmd::kernel::mma::raw::{cp_async_16, shared_address};

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

    /// The thread's index in its block, its block's index, and the number of blocks (`x` only).
    #[inline(always)]
    pub fn ids() -> (usize, usize, usize) {
        // SAFETY: a special register, no precondition.
        let thread = unsafe { nvptx::_thread_idx_x() };
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() };
        // SAFETY: as above.
        let blocks = unsafe { nvptx::_grid_dim_x() };
        (thread as usize, block as usize, blocks as usize)
    }

    /// Whether the launch's grid is `(n, 1, 1)`.
    #[inline(always)]
    pub fn grid_is_x_only() -> bool {
        // SAFETY: a special register, no precondition.
        let y = unsafe { nvptx::_grid_dim_y() };
        // SAFETY: as above.
        let z = unsafe { nvptx::_grid_dim_z() };
        y == 1 && z == 1
    }

    /// Starts copying `rows × (8 · pieces)` elements of the row-major matrix at `src` (rows
    /// `src_pitch` apart) to `dst` (rows `dst_pitch` apart), 16 bytes a copy, piece `p` by
    /// thread `p % 256`.
    ///
    /// # Safety
    ///
    /// Every element is inside the source (readable, not written during the kernel) and the
    /// destination (this block's shared memory, not read until the copies are waited for and a
    /// barrier passed); both are 16-aligned, and so are their pitches in bytes.
    #[inline(always)]
    pub unsafe fn copy(
        t: usize,
        src: *const u16,
        src_pitch: usize,
        dst: *mut u16,
        dst_pitch: usize,
        rows: usize,
        pieces: usize,
    ) {
        let mut p = t;
        while p < rows * pieces {
            let (r, c) = (p / pieces, p % pieces * 8);
            // SAFETY: in this block's shared memory (caller).
            let to = unsafe { shared_address(dst.wrapping_add(r * dst_pitch + c)) };
            // SAFETY: 16 bytes inside both, 16-aligned (caller).
            unsafe { cp_async_16(to, src.wrapping_add(r * src_pitch + c).cast(), 16) };
            p += 256;
        }
    }

    /// Two `bf16` to `p` as one 32-bit store.
    ///
    /// # Safety
    ///
    /// `p` is 4-aligned global memory that no other thread reads or writes meanwhile.
    #[inline(always)]
    pub unsafe fn store2(p: *mut u16, lo: u16, hi: u16) {
        // SAFETY: as this function's contract.
        unsafe { p.cast::<u32>().write(u32::from(lo) | (u32::from(hi) << 16)) };
    }
}

/// `c = a · b` for row-major `bf16` matrices, into `bf16`, as [`matmul_bf16`](crate::matmul_bf16)
/// computes it, written raw: `STAGES` stages of padded block-shared arrays filled by `cp.async`
/// `STAGES - 1` steps ahead, `ldmatrix` and `mma.sync` by 8 warps (2 × 4) of `64 × COLS / 4`,
/// one barrier a step. Only shapes whose sides are multiples of 128 (`m`), `COLS` (`n`) and 32
/// (`k`): others leave `c` as it is.
///
/// # Safety
///
/// In a kernel launched with blocks of 256 threads and `STAGES · stage(COLS)` elements of
/// dynamic shared memory; `a`, `b` and `c` row-major and 16-aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn raw_product<const COLS: usize, const FN: usize, const STAGES: usize>(
    a: &DeviceMdspan<'_, bf16, Dims<2>>,
    b: &DeviceMdspan<'_, bf16, Dims<2>>,
    c: &DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    use dlmd::kernel::mma::raw::{
        cp_async_commit, cp_async_wait, cp_async_wait_at_most, ldmatrix_x4, mma_m16n8k16, shared_address,
    };
    let b_pitch = COLS + 8;
    let (rows, depth, cols) = (a.extent(0), a.extent(1), b.extent(1));
    if b.extent(0) != depth || c.extent(0) != rows || c.extent(1) != cols {
        return;
    }
    if !rows.is_multiple_of(128) || !cols.is_multiple_of(COLS) || !depth.is_multiple_of(32) || depth == 0 {
        return;
    }
    let (pa, pb, pc) = (
        a.data_handle().cast::<u16>(),
        b.data_handle().cast::<u16>(),
        c.data_handle().cast::<u16>(),
    );
    // Blocks numbered along `x` only: a grid with `y` or `z` would give two blocks one chunk.
    if !ops::grid_is_x_only() {
        return;
    }
    // 16-aligned rows and starts, as `cp.async` of 16 bytes asks.
    if ![pa as usize, pb as usize].iter().all(|p| p.is_multiple_of(16)) {
        return;
    }
    let (t, block, blocks) = ops::ids();
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / 4, warp % 4);
    let (q, r) = (lane / 8, lane % 8);
    let smem = ops::shared();
    let (chunk_rows, chunk_cols) = (rows / 128, cols / COLS);
    let steps = depth / 32;
    let mut chunk = block;
    while chunk < chunk_rows * chunk_cols {
        let (i0, j0) = (chunk / chunk_cols * 128, chunk % chunk_cols * COLS);
        // Starts the copies of step `step` into its stage, if there is such a step, and
        // commits a group either way (an empty one past the end), so that the groups count
        // steps.
        let load = |step: usize| {
            if step < steps {
                let (sa, k0) = (smem.wrapping_add(step % STAGES * stage(COLS)), step * 32);
                let sb = sa.wrapping_add(128 * A_PITCH);
                // SAFETY: the chunk's rows of `a` and columns of `b` from `k0`, inside them (the
                // shapes are whole tiles), 16-aligned (caller; row lengths multiples of 8
                // elements); the stage's arrays, read by no thread until the copies are waited
                // for and a barrier passed (the stage was last read a step ago, before this
                // step's barrier).
                unsafe { ops::copy(t, pa.wrapping_add(i0 * depth + k0), depth, sa, A_PITCH, 128, 4) };
                // SAFETY: as above, for `b`.
                unsafe { ops::copy(t, pb.wrapping_add(k0 * cols + j0), cols, sb, b_pitch, 32, COLS / 8) };
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
            load(step + STAGES - 1);
            let sa = smem.wrapping_add(step % STAGES * stage(COLS));
            let sb = sa.wrapping_add(128 * A_PITCH);
            for ks in 0..2 {
                let fa: [[u32; 4]; 4] = core::array::from_fn(|fm| {
                    let row = wm * 64 + fm * 16 + lane % 16;
                    let col = ks * 16 + lane / 16 * 8;
                    // SAFETY: in this block's shared memory.
                    let row = unsafe { shared_address(sa.wrapping_add(row * A_PITCH + col)) };
                    // SAFETY: every lane; 16 bytes of the landed stage, 16-aligned (rows 80
                    // bytes apart, `col` a multiple of 8).
                    unsafe { ldmatrix_x4::<false>(row) }
                });
                let mut fb = [[0u32; 2]; FN];
                dlmd::unroll!(FN / 2, |pair| {
                    let row = ks * 16 + q % 2 * 8 + r;
                    let col = wn * (COLS / 4) + pair * 16 + q / 2 * 8;
                    // SAFETY: in this block's shared memory.
                    let row = unsafe { shared_address(sb.wrapping_add(row * b_pitch + col)) };
                    // SAFETY: as above, rows a multiple of 16 bytes apart.
                    let [b0, b1, b2, b3] = unsafe { ldmatrix_x4::<true>(row) };
                    fb[2 * pair] = [b0, b1];
                    fb[2 * pair + 1] = [b2, b3];
                });
                dlmd::unroll!(4, |fm| {
                    dlmd::unroll!(FN, |fn_| {
                        // SAFETY: every lane of the warp, sm_80.
                        acc[fm][fn_] = unsafe { mma_m16n8k16::<true>(fa[fm], fb[fn_], acc[fm][fn_]) };
                    });
                });
            }
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
                    let j = j0 + wn * (COLS / 4) + fn_ * 8 + 2 * (lane % 4);
                    let [lo, hi] = [acc[fm][fn_][2 * h], acc[fm][fn_][2 * h + 1]].map(|x| bf16::from_f32(x).to_bits());
                    // SAFETY: `[i, j]` and `[i, j + 1]` are inside `c` (whole tiles), 4-aligned
                    // (`j` even, rows of a multiple of 128), this thread's alone.
                    unsafe { ops::store2(pc.wrapping_add(i * cols + j), lo, hi) };
                });
            });
        });
        chunk += blocks;
    }
}

/// The raw twin of [`matmul_bf16`](crate::matmul_bf16): [`raw_product`] with its tiles (`128 ×
/// 128` chunks, two stages). Launch with blocks of 256 threads and [`GEMM_RAW_SHARED`] bytes of
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
            raw_product::<128, 4, 2>(&a, &b, &c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}

/// [`gemm_bf16_raw`] with four stages. Launch with [`GEMM_RAW_S4_SHARED`] bytes.
#[dlmd::kernel(block_threads = 256, min_blocks_per_sm = 2)]
pub fn gemm_bf16_raw_s4(
    thread: Thread,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `gemm_bf16_raw`.
    unsafe {
        if ops::dynamic_bytes() >= GEMM_RAW_S4_SHARED as usize {
            raw_product::<128, 4, 4>(&a, &b, &c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}

/// [`gemm_bf16_raw`] with `128 × 256` chunks (warps of `64 × 64`) and three stages. Launch with
/// [`GEMM_RAW_WIDE_SHARED`] bytes; `n` a multiple of 256.
#[dlmd::kernel(block_threads = 256)]
pub fn gemm_bf16_raw_wide(
    thread: Thread,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `gemm_bf16_raw`.
    unsafe {
        if ops::dynamic_bytes() >= GEMM_RAW_WIDE_SHARED as usize {
            raw_product::<256, 8, 3>(&a, &b, &c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}
