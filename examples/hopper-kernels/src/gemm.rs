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
const fn stage_bytes(bn: usize) -> usize {
    (128 + bn) * 128
}

/// The dynamic shared memory of a product of `bn`-column chunks and `stages` stages: the stages
/// and 1024 bytes to align them to 1024 (the swizzle's period).
pub const fn shared_bytes(bn: usize, stages: usize) -> u32 {
    (stages * stage_bytes(bn) + 1024) as u32
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::stage_bytes;
    use crate::wgmma::{Accumulators, descriptor, fence_proxy_async};
    use core::arch::{asm, nvptx};
    use dlmd::half::bf16;
    use dlmd::kernel::mma::raw::{cp_async_16, cp_async_commit, cp_async_wait, shared_address};
    use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

    /// The chunk rows of each group of the blocks' order: blocks of one group take `GROUP`
    /// chunk rows in turn, column after column, so that the blocks that run together share
    /// operands in L2.
    const GROUP: usize = 16;

    /// The launch's dynamic shared memory as a shared-state-space address, and its bytes.
    #[inline(always)]
    fn shared() -> (u32, usize) {
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
    /// Piece `p` (row `p / 8`, piece `p % 8`) is thread `p % 256`'s.
    ///
    /// # Safety
    ///
    /// The rows are inside the source (readable, not written during the kernel), 16-aligned;
    /// `dst` is 1024-aligned shared memory of this block, `128 · rows` bytes, that no thread
    /// reads until the copies are waited for and a barrier passed.
    #[inline(always)]
    unsafe fn copy(t: usize, src: *const bf16, pitch: usize, dst: u32, rows: usize) {
        let mut p = t;
        while p < rows * 8 {
            let (r, c) = (p / 8, p % 8);
            let to = dst + (128 * r + 16 * (c ^ (r % 8))) as u32;
            // SAFETY: 16 bytes inside both, 16-aligned (caller).
            unsafe { cp_async_16(to, src.wrapping_add(r * pitch + 8 * c).cast(), 16) };
            p += 256;
        }
    }

    /// `y = x · wᵀ` as the module says, with `BN`-column chunks (`A`, the accumulators of
    /// `64 × BN`), `STAGES` stages and `IN_FLIGHT` (0 or 1) groups of `wgmma` left in flight a
    /// step: the copies run `STAGES - 1 - IN_FLIGHT` steps ahead. Shapes whose sides are not
    /// multiples of 128 (`m`), `BN` (`n`) and 64 (`k`) leave `y` as it is.
    ///
    /// # Safety
    ///
    /// In a kernel launched with blocks of 256 threads, one-dimensional, on an `sm_90a` GPU,
    /// with at least [`shared_bytes`](super::shared_bytes)`(BN, STAGES)` bytes of dynamic shared
    /// memory; `x`, `w`, `y` row-major, 16-aligned.
    #[inline(always)]
    pub unsafe fn product<A: Accumulators, const STAGES: usize, const IN_FLIGHT: usize>(
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
        // SAFETY: special registers, no precondition.
        let (t, block) = unsafe { (nvptx::_thread_idx_x() as usize, nvptx::_block_idx_x() as usize) };
        let (mt, nt) = (m / 128, n / bn);
        if block >= mt * nt {
            return;
        }
        let (group, local) = (block / (GROUP * nt), block % (GROUP * nt));
        let group_rows = (mt - group * GROUP).min(GROUP);
        let (i0, j0) = ((group * GROUP + local % group_rows) * 128, local / group_rows * bn);
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
                unsafe {
                    copy(t, px.wrapping_add(i0 * k + 64 * s), k, sa, 128);
                    copy(t, pw.wrapping_add(j0 * k + 64 * s), k, sa + 128 * 128, bn);
                }
            }
            // SAFETY: sm_80 and later.
            unsafe { cp_async_commit() };
        };
        if bytes < (base - start) as usize + STAGES * stage_bytes(bn) {
            return;
        }
        let mut acc = A::zero();
        for s in 0..ahead {
            load(s);
        }
        for s in 0..steps {
            // All but the `ahead - 1` most recent groups: step `s`'s copies are done.
            // SAFETY: sm_80 and later.
            unsafe {
                match ahead {
                    1 => cp_async_wait::<0>(),
                    2 => cp_async_wait::<1>(),
                    _ => cp_async_wait::<2>(),
                }
            };
            // SAFETY: sm_90; after this thread's copies of the stage completed.
            unsafe { fence_proxy_async() };
            // SAFETY: reached by every thread of the block (uniform loop).
            unsafe { nvptx::_syncthreads() };
            load(s + ahead);
            let sa = stage(s);
            // This warpgroup's 64 rows of `x` (8 atoms of 1024 bytes), all `bn` rows of `w`.
            let (da, db) = (descriptor(sa + (wg * 64 * 128) as u32), descriptor(sa + 128 * 128));
            // SAFETY: all 128 threads of warpgroup `wg` (uniform code); the stage landed,
            // fenced and behind the barrier above; it is refilled only after this group is
            // waited for (below, or a step later) and a barrier passed.
            unsafe { acc.mma_k64(da, db) };
            // SAFETY: the warpgroup's threads together.
            unsafe {
                if IN_FLIGHT == 0 {
                    acc.wait::<0>()
                } else {
                    acc.wait::<1>()
                }
            };
        }
        // SAFETY: the warpgroup's threads together; the last group done.
        unsafe { acc.wait::<0>() };
        // SAFETY: sm_80; only empty groups can be left.
        unsafe { cp_async_wait::<0>() };
        let (warp, lane) = (tw / 32, tw % 32);
        let row = i0 + wg * 64 + warp * 16 + lane / 4;
        let col = j0 + 2 * (lane % 4);
        // Written out: a loop the compiler kept would put `acc` in local memory.
        dlmd::unroll!(16, |ja| {
            dlmd::unroll!(2, |jb| {
                let j = 2 * ja + jb;
                if j < bn / 8 {
                    dlmd::unroll!(2, |h| {
                        let (i, jj) = (row + 8 * h, col + 8 * j);
                        let lo = bf16::from_f32(acc.get(4 * j + 2 * h)).to_bits();
                        let hi = bf16::from_f32(acc.get(4 * j + 2 * h + 1)).to_bits();
                        // SAFETY: `[i, jj]` and `[i, jj + 1]` are inside `y` (whole tiles),
                        // 4-aligned (`jj` even, rows of a multiple of 128), this thread's alone.
                        unsafe {
                            py.wrapping_add(i * n + jj)
                                .cast::<u32>()
                                .write(u32::from(lo) | (u32::from(hi) << 16))
                        };
                    });
                }
            });
        });
    }
}

macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident, $acc:literal, $bn:literal, $stages:literal, $in_flight:literal, $min:literal;)*) => {
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
                // SAFETY: launched as documented (shared memory checked by the product: it
                // leaves `y` as it is with less).
                unsafe {
                    device::product::<[f32; $acc], $stages, $in_flight>(&x, &w, &y)
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
    /// per chunk, with [`shared_bytes`]`(256, 4)` bytes of dynamic shared memory; `m`, `n`, `k`
    /// multiples of 128, 256 and 64 (others leave `y` as it is).
    wgmma_nt_256_s4, 128, 256, 4, 1, 1;
    /// [`wgmma_nt_256_s4`] waiting for each step's `wgmma` before the next (copies three steps
    /// ahead).
    wgmma_nt_256_s4_sync, 128, 256, 4, 0, 1;
    /// [`wgmma_nt_256_s4`] with `128 × 128` chunks (`m64n128k16`) and four stages.
    wgmma_nt_128_s4, 64, 128, 4, 1, 1;
    /// [`wgmma_nt_256_s4`] with `128 × 128` chunks and three stages, two blocks a multiprocessor.
    wgmma_nt_128_s3, 64, 128, 3, 1, 2;
}
