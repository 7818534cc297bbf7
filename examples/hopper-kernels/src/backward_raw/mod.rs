//! The raw twins of attention's backward kernels ([`attention_delta_bf16`](crate::attention_delta_bf16),
//! [`attention_dq_bf16_d128`](crate::attention_dq_bf16_d128),
//! [`attention_dkv_bf16_d128`](crate::attention_dkv_bf16_d128) and the others): the same work,
//! block for block and product for product, written the CUDA C++ way over
//! `dlmd::kernel::warpgroup::raw`, as [the forward pass's twins](crate::attention_raw_bf16_d128)
//! are. Every precondition of their `unsafe` code is checked at run time (the views' extents,
//! the launch's grid, threads and shared memory), so they are safe to launch, but one: the
//! register split's, 168 registers a thread at launch, rests on the entry points' launch
//! bounds (`block_threads = 384`, `min_blocks_per_sm = 1`, written into the PTX by
//! `dlmd-build`); without them `ptxas` drops the split, which is slower, not unsound.
//!
//! Shared memory of the gradients' twins, from the first 1024-aligned address: the two resident
//! tiles (`q` and `do` for the queries' gradient, `k` and `v` for the keys' and values'), each
//! `128 × D`, then for each stage the two streamed tiles (`k` and `v`, or `q` and `do`), each `64
//! × D`, all in panels of 64 columns in the 128-byte swizzle; then the barrier objects: the
//! residents' full and empty, each stage's two full and two empty.

use crate::attention::{AttentionLse, AttentionMap, AttentionOut};
use crate::backward::{AttentionRead, HalfMap, RowStat};
use dlmd::half::{bf16, f16};
use dlmd::kernel::Thread;

/// The stages of the streamed tiles at head dimension `d`: the safe kernels' at 64; three at
/// 128, where the safe kernels take four.
const fn stages(d: usize) -> usize {
    if d == 64 { 4 } else { 3 }
}

/// The dynamic shared memory of a raw twin of the queries', keys' and values' gradients of head
/// dimension `d` (64 or 128): the slack to align the tiles, the resident tiles, the stages and
/// the barrier objects.
pub const fn raw_backward_shared_bytes(d: usize) -> u32 {
    let stages = stages(d);
    let bytes = 1024 + 2 * 128 * d * 2 + stages * 2 * 64 * d * 2 + 8 * (2 + 4 * stages);
    bytes.next_multiple_of(128) as u32
}

#[cfg(target_arch = "nvptx64")]
mod device;
#[cfg(target_arch = "nvptx64")]
mod pipeline;

/// Eight neighbours of a row, read with one 16-byte load.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[repr(C, align(16))]
struct Run<T>([T; 8]);

/// `Δ = Σ do ∘ o` over rows of `d` elements, raw: a row a thread, every thread of the grid
/// over the rows in turn; `delta` left as it is where the extents do not fit together.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
fn delta_raw<T: crate::Widen>(o: &AttentionRead<'_, T>, d_o: &AttentionRead<'_, T>, delta: &AttentionLse<'_>) {
    let oe = [o.extent(0), o.extent(1), o.extent(2), o.extent(3)];
    let fits = (0..4).all(|i| d_o.extent(i) == oe[i]) && (0..3).all(|i| delta.extent(i) == oe[i]);
    if !fits {
        return;
    }
    let [b, h, s, d] = oe;
    #[cfg(target_arch = "nvptx64")]
    {
        use core::arch::nvptx;
        // SAFETY: a special register, no precondition.
        let t0 = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let t1 = unsafe { nvptx::_thread_idx_y() } as usize;
        // SAFETY: as above.
        let t2 = unsafe { nvptx::_thread_idx_z() } as usize;
        // SAFETY: as above.
        let d0 = unsafe { nvptx::_block_dim_x() } as usize;
        // SAFETY: as above.
        let d1 = unsafe { nvptx::_block_dim_y() } as usize;
        // SAFETY: as above.
        let d2 = unsafe { nvptx::_block_dim_z() } as usize;
        // SAFETY: as above.
        let g0 = unsafe { nvptx::_grid_dim_x() } as usize;
        // SAFETY: as above.
        let g1 = unsafe { nvptx::_grid_dim_y() } as usize;
        // SAFETY: as above.
        let g2 = unsafe { nvptx::_grid_dim_z() } as usize;
        // SAFETY: as above.
        let bx = unsafe { nvptx::_block_idx_x() } as usize;
        // SAFETY: as above.
        let by = unsafe { nvptx::_block_idx_y() } as usize;
        // SAFETY: as above.
        let bz = unsafe { nvptx::_block_idx_z() } as usize;
        let (t, dims, grid) = ([t0, t1, t2], [d0, d1, d2], [g0, g1, g2]);
        // Below 2³² each, so the block's threads and the thread's index in the grid are below
        // 2⁶⁴; the grid's threads may not be, and saturate (a thread past the rows stops).
        let per_block = dims[0] * dims[1] * dims[2];
        let in_block = (t[2] * dims[1] + t[1]) * dims[0] + t[0];
        let block = (bz * grid[1] + by) * grid[0] + bx;
        let threads = per_block
            .saturating_mul(grid[0])
            .saturating_mul(grid[1])
            .saturating_mul(grid[2]);
        // Rows of no element (`d` 0) may be more than an index holds: nothing is written then.
        let Some(rows) = b.checked_mul(h).and_then(|bh| bh.checked_mul(s)) else {
            return;
        };
        let mut row = block.saturating_mul(per_block).saturating_add(in_block);
        let (po, pg, pd) = (o.data_handle(), d_o.data_handle(), delta.data_handle());
        while row < rows {
            let (bi, hi, i) = (row / (h * s), row / s % h, row % s);
            let at = |v: &AttentionRead<'_, T>| {
                bi as isize * v.stride(0) + hi as isize * v.stride(1) + i as isize * v.stride(2)
            };
            let (ao, ag) = (at(o), at(d_o));
            let mut sum = 0.0f32;
            // Eight elements of each at a time where a row's are neighbours and 16-byte aligned
            // (as the safe kernel reads them), the rest one by one, summed in order.
            let mut j = 0;
            if o.stride(3) == 1 && d_o.stride(3) == 1 {
                while j + 8 <= d {
                    let (a, g) = (po.wrapping_offset(ao + j as isize), pg.wrapping_offset(ag + j as isize));
                    if (a as usize).is_multiple_of(16) && (g as usize).is_multiple_of(16) {
                        // SAFETY: `[bi, hi, i, j .. j + 8]` inside `o` (`j + 8 ≤ d`), neighbours,
                        // 16-byte aligned (tested); read only.
                        let x = unsafe { a.cast::<Run<T>>().read() };
                        // SAFETY: as above, inside `do`.
                        let y = unsafe { g.cast::<Run<T>>().read() };
                        for k in 0..8 {
                            sum += x.0[k].widen() * y.0[k].widen();
                        }
                    } else {
                        for k in 0..8 {
                            // SAFETY: as above, one element at a time.
                            let x = unsafe { a.wrapping_add(k).read() };
                            // SAFETY: as above.
                            let y = unsafe { g.wrapping_add(k).read() };
                            sum += x.widen() * y.widen();
                        }
                    }
                    j += 8;
                }
            }
            for j in j..d {
                // SAFETY: `[bi, hi, i, j]` inside `o` (its extents, checked); read only.
                let x = unsafe { po.wrapping_offset(ao + j as isize * o.stride(3)).read() };
                // SAFETY: as above, inside `do` (of `o`'s extents).
                let g = unsafe { pg.wrapping_offset(ag + j as isize * d_o.stride(3)).read() };
                sum += x.widen() * g.widen();
            }
            let at = bi as isize * delta.stride(0) + hi as isize * delta.stride(1) + i as isize * delta.stride(2);
            // SAFETY: `[bi, hi, i]` inside `delta` (its extents, checked); each row one
            // thread's (`row` steps by the grid's threads), the view written by nothing else.
            unsafe { pd.wrapping_offset(at).write(sum) };
            row = row.saturating_add(threads);
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (b, h, s, d);
}

/// The raw twin of [`attention_delta_bf16`](crate::attention_delta_bf16), with its parameters
/// and results: any launch shape, a thread a row at a time.
#[dlmd::kernel]
pub fn attention_raw_delta_bf16(
    thread: Thread,
    o: AttentionRead<'_, bf16>,
    d_o: AttentionRead<'_, bf16>,
    delta_out: AttentionLse<'_>,
) {
    let _ = thread;
    delta_raw(&o, &d_o, &delta_out);
}

/// The raw twin of [`attention_delta_f16`](crate::attention_delta_f16), as
/// [`attention_raw_delta_bf16`].
#[dlmd::kernel]
pub fn attention_raw_delta_f16(
    thread: Thread,
    o: AttentionRead<'_, f16>,
    d_o: AttentionRead<'_, f16>,
    delta_out: AttentionLse<'_>,
) {
    let _ = thread;
    delta_raw(&o, &d_o, &delta_out);
}

macro_rules! raw_backward {
    ($dq:ident, $dkv:ident, $safe_dq:ident, $safe_dkv:ident, $t:ty, $d:literal, $out:ident) => {
        /// The raw twin of
        #[doc = concat!("[`", stringify!($safe_dq), "`](crate::", stringify!($safe_dq), "),")]
        /// with its parameters and results. Launch with blocks of 384 threads and
        #[doc = concat!("[`raw_backward_shared_bytes`]`(", $d, ")`")]
        /// bytes of dynamic shared memory (with fewer, or other blocks, `dq` is left as it is),
        /// at most one block a chunk of 128 query rows of a head.
        #[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dq(
            thread: Thread,
            q: AttentionMap<'_, $t, $d>,
            k: HalfMap<'_, $t, $d>,
            v: HalfMap<'_, $t, $d>,
            d_o: AttentionMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dq_out: AttentionOut<'_, $t>,
            scale: f32,
            causal: bool,
        ) {
            let _ = thread;
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: every thread of the block runs the kernel's body; its entry point is
            // compiled for sm_90a (the crate's target); `dq_out` is a writable kernel
            // parameter, which nothing else writes during the kernel, each chunk's rows one
            // block's (`c`, `c + blocks`, …); the maps and read views are parameters of tensors
            // the kernel only reads.
            unsafe {
                device::dq::<$t, $d, { $d / 2 }>(
                    [&q, &d_o],
                    [&k, &v],
                    [&lse, &delta],
                    &dq_out,
                    scale,
                    causal,
                    dlmd::kernel::math::$out,
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (q, k, v, d_o, lse, delta, dq_out, scale, causal);
        }

        /// The raw twin of
        #[doc = concat!("[`", stringify!($safe_dkv), "`](crate::", stringify!($safe_dkv), "),")]
        /// with its parameters and results. Launch with blocks of 384 threads and
        #[doc = concat!("[`raw_backward_shared_bytes`]`(", $d, ")`")]
        /// bytes of dynamic shared memory (with fewer, or other blocks, `dk` and `dv` are left
        /// as they are), at most one block a chunk of 128 key rows of a key-value head.
        #[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dkv(
            thread: Thread,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            q: HalfMap<'_, $t, $d>,
            d_o: HalfMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dk_out: AttentionOut<'_, $t>,
            dv_out: AttentionOut<'_, $t>,
            scale: f32,
            causal: bool,
        ) {
            let _ = thread;
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: as for the queries' gradient; `dk_out` and `dv_out` are writable kernel
            // parameters, which the launcher checked do not overlap.
            unsafe {
                device::dkv::<$t, $d, { $d / 2 }>(
                    [&k, &v],
                    [&q, &d_o],
                    [&lse, &delta],
                    [&dk_out, &dv_out],
                    scale,
                    causal,
                    dlmd::kernel::math::$out,
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (q, k, v, d_o, lse, delta, dk_out, dv_out, scale, causal);
        }
    };
}

raw_backward!(
    attention_raw_dq_bf16_d64,
    attention_raw_dkv_bf16_d64,
    attention_dq_bf16_d64,
    attention_dkv_bf16_d64,
    bf16,
    64,
    to_bf16
);
raw_backward!(
    attention_raw_dq_bf16_d128,
    attention_raw_dkv_bf16_d128,
    attention_dq_bf16_d128,
    attention_dkv_bf16_d128,
    bf16,
    128,
    to_bf16
);
raw_backward!(
    attention_raw_dq_f16_d64,
    attention_raw_dkv_f16_d64,
    attention_dq_f16_d64,
    attention_dkv_f16_d64,
    f16,
    64,
    to_f16
);
raw_backward!(
    attention_raw_dq_f16_d128,
    attention_raw_dkv_f16_d128,
    attention_dq_f16_d128,
    attention_dkv_f16_d128,
    f16,
    128,
    to_f16
);
