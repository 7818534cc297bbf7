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
/// Elements between the starts of two rows of a stage's `B` (`32 × 128`, padded by 8).
const B_PITCH: usize = 136;
/// Elements of one stage: `A` then `B`.
const STAGE: usize = 128 * A_PITCH + 32 * B_PITCH;

/// The dynamic shared memory [`gemm_bf16_raw`] needs: two stages of `bf16`.
pub const GEMM_RAW_SHARED: u32 = (2 * STAGE * 2) as u32;

#[cfg(target_arch = "nvptx64")]
mod ops {
    use core::arch::{asm, nvptx};
    use dlmd::kernel::mma::raw::{cp_async_16, shared_address};

    /// The launch's dynamic shared memory, 128-aligned, as CUDA C++'s `extern __shared__`
    /// array; the kernel traps where the launch gave fewer than `BYTES` bytes.
    #[inline(always)]
    pub fn shared<const BYTES: usize>() -> *mut u16 {
        #[repr(C, align(128))]
        struct Line([u8; 128]);
        let size: u32;
        // SAFETY: reads a special register; no memory is read or written.
        unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack)) };
        if (size as usize) < BYTES {
            // SAFETY: ends the kernel; no precondition.
            unsafe { nvptx::trap() };
        }
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Line>().cast::<u16>()
    }

    /// The thread's index in its block, its block's index, and the number of blocks (`x` only).
    #[inline(always)]
    pub fn ids() -> (usize, usize, usize) {
        // SAFETY: special registers, no precondition.
        unsafe {
            (
                nvptx::_thread_idx_x() as usize,
                nvptx::_block_idx_x() as usize,
                nvptx::_grid_dim_x() as usize,
            )
        }
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
            // SAFETY: 16 bytes inside both, 16-aligned (caller).
            unsafe {
                cp_async_16(
                    shared_address(dst.wrapping_add(r * dst_pitch + c)),
                    src.wrapping_add(r * src_pitch + c).cast(),
                    16,
                )
            };
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
/// computes it, written raw: two stages of padded block-shared arrays filled by `cp.async` one
/// step ahead, `ldmatrix` and `mma.sync` by 8 warps of `64 × 32`, two barriers a step. Only
/// shapes whose sides are multiples of 128 (`m`, `n`) and 32 (`k`): others leave `c` as it is.
/// Launch with blocks of 256 threads and [`GEMM_RAW_SHARED`] bytes of dynamic shared memory.
#[dlmd::kernel(block_threads = 256)]
pub fn gemm_bf16_raw(
    thread: Thread,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    {
        use dlmd::kernel::mma::raw::{cp_async_commit, cp_async_wait, ldmatrix_x4, mma_m16n8k16, shared_address};
        let (rows, depth, cols) = (a.extent(0), a.extent(1), b.extent(1));
        if b.extent(0) != depth || c.extent(0) != rows || c.extent(1) != cols {
            return;
        }
        if !rows.is_multiple_of(128) || !cols.is_multiple_of(128) || !depth.is_multiple_of(32) || depth == 0 {
            return;
        }
        let (pa, pb, pc) = (
            a.data_handle().cast::<u16>(),
            b.data_handle().cast::<u16>(),
            c.data_handle().cast::<u16>(),
        );
        let (t, block, blocks) = ops::ids();
        let (warp, lane) = (t / 32, t % 32);
        let (wm, wn) = (warp / 4, warp % 4);
        let (q, r) = (lane / 8, lane % 8);
        let smem = ops::shared::<{ GEMM_RAW_SHARED as usize }>();
        let (chunk_rows, chunk_cols) = (rows / 128, cols / 128);
        let steps = depth / 32;
        let mut chunk = block;
        while chunk < chunk_rows * chunk_cols {
            let (i0, j0) = (chunk / chunk_cols * 128, chunk % chunk_cols * 128);
            let load = |stage: usize, k0: usize| {
                let sa = smem.wrapping_add(stage * STAGE);
                let sb = sa.wrapping_add(128 * A_PITCH);
                // SAFETY: the chunk's rows of `a` and columns of `b` from `k0`, inside them (the
                // shapes are whole tiles), 16-aligned (cudarc's allocations are, and the row
                // lengths are multiples of 8 elements); the stage's arrays, which no thread reads
                // until the copies are waited for and a barrier passed.
                unsafe {
                    ops::copy(t, pa.wrapping_add(i0 * depth + k0), depth, sa, A_PITCH, 128, 4);
                    ops::copy(t, pb.wrapping_add(k0 * cols + j0), cols, sb, B_PITCH, 32, 16);
                    cp_async_commit();
                }
            };
            let mut acc = [[[0.0f32; 4]; 4]; 4];
            load(0, 0);
            for step in 0..steps {
                if step + 1 < steps {
                    load((step + 1) % 2, (step + 1) * 32);
                    // SAFETY: sm_80 (this crate's target).
                    unsafe { cp_async_wait::<1>() };
                } else {
                    // SAFETY: as above.
                    unsafe { cp_async_wait::<0>() };
                }
                // SAFETY: reached by every thread of the block (uniform loop).
                unsafe { core::arch::nvptx::_syncthreads() };
                let sa = smem.wrapping_add(step % 2 * STAGE);
                let sb = sa.wrapping_add(128 * A_PITCH);
                for ks in 0..2 {
                    let fa: [[u32; 4]; 4] = core::array::from_fn(|fm| {
                        let row = wm * 64 + fm * 16 + lane % 16;
                        let col = ks * 16 + lane / 16 * 8;
                        // SAFETY: every lane; 16 bytes of the landed stage, 16-aligned (rows 80
                        // bytes apart, `col` a multiple of 8).
                        unsafe { ldmatrix_x4::<false>(shared_address(sa.wrapping_add(row * A_PITCH + col))) }
                    });
                    let mut fb = [[0u32; 2]; 4];
                    for pair in 0..2 {
                        let row = ks * 16 + q % 2 * 8 + r;
                        let col = wn * 32 + pair * 16 + q / 2 * 8;
                        // SAFETY: as above, rows 272 bytes apart.
                        let [b0, b1, b2, b3] =
                            unsafe { ldmatrix_x4::<true>(shared_address(sb.wrapping_add(row * B_PITCH + col))) };
                        fb[2 * pair] = [b0, b1];
                        fb[2 * pair + 1] = [b2, b3];
                    }
                    for fm in 0..4 {
                        for fn_ in 0..4 {
                            // SAFETY: every lane of the warp, sm_80.
                            acc[fm][fn_] = unsafe { mma_m16n8k16::<true>(fa[fm], fb[fn_], acc[fm][fn_]) };
                        }
                    }
                }
                // SAFETY: as above; the stage is refilled only after every warp has read it.
                unsafe { core::arch::nvptx::_syncthreads() };
            }
            // Written out: a loop the compiler kept would put `acc` in local memory.
            dlmd::unroll!(4, |fm| {
                dlmd::unroll!(4, |fn_| {
                    dlmd::unroll!(2, |h| {
                        let i = i0 + wm * 64 + fm * 16 + h * 8 + lane / 4;
                        let j = j0 + wn * 32 + fn_ * 8 + 2 * (lane % 4);
                        let [lo, hi] =
                            [acc[fm][fn_][2 * h], acc[fm][fn_][2 * h + 1]].map(|x| bf16::from_f32(x).to_bits());
                        // SAFETY: `[i, j]` and `[i, j + 1]` are inside `c` (whole tiles), 4-aligned
                        // (`j` even, rows of a multiple of 128), this thread's alone.
                        unsafe { ops::store2(pc.wrapping_add(i * cols + j), lo, hi) };
                    });
                });
            });
            chunk += blocks;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}
