//! The twins' consumers: the queries' gradient and the keys' and values' gradients.

use super::pipeline::{Chunk, Layout, init, produce};
use crate::attention::{AttentionMap, AttentionOut};
use crate::attention_raw::device::{CONSUMER_REGS, PRODUCER_REGS, Pair};
use crate::backward::{HalfMap, RowStat, fits};
use core::arch::nvptx;
use dlmd::kernel::math::{exp2, mul_add};
use dlmd::kernel::warpgroup::raw::{
    descriptor_128, descriptor_128_mn, mbarrier_arrive_where, mbarrier_wait, pack, setmaxnreg_dec, setmaxnreg_inc,
    wgmma_rs_64, wgmma_ss, wgmma_wait_acc, wgmma_wait_rs_64,
};
use dlmd::kernel::warpgroup::{Cols, KMajor, Keys, Product, ProductRs, Queries, Visible, Width};
use dlmd::{DlElement, unroll};

/// Pairs of a row of `view` in one store: contiguous rows, each pair 4-aligned.
#[inline(always)]
fn pairs<T: DlElement>(view: &AttentionOut<'_, T>) -> bool {
    view.stride(3) == 1 && (0..3).all(|d| view.stride(d) % 2 == 0) && (view.data_handle() as usize).is_multiple_of(4)
}

/// Writes a warpgroup's `64 × D` accumulators to rows `row0 ..` of head `head` of batch
/// entry `b` of `view`, as `out(value)`, those below `rows`.
///
/// # Safety
///
/// `view`'s extents are `[> b, > head, rows, D]`; the 64 rows from `row0` of that head are
/// written by no other thread while the kernel runs (each element by the thread of this
/// warpgroup that holds it).
#[inline(always)]
unsafe fn store<T: DlElement, const D: usize, const R: usize>(
    view: &AttentionOut<'_, T>,
    [b, head, row0, rows]: [usize; 4],
    acc: &[f32; R],
    out: impl Fn(f32) -> T,
    thread: usize,
) {
    let (warp, lane) = (thread / 32, thread % 32);
    let (ptr, pairs) = (view.data_handle(), pairs(view));
    let st = [view.stride(0), view.stride(1), view.stride(2), view.stride(3)];
    unroll!(2, |half| {
        let row = row0 + 16 * warp + lane / 4 + 8 * half;
        if row < rows {
            let at_row = b as isize * st[0] + head as isize * st[1] + row as isize * st[2];
            unroll!(16, |j| {
                if j < D / 8 {
                    let col = 8 * j + 2 * (lane % 4);
                    let i = 4 * j + 2 * half;
                    let values = [out(acc[i]), out(acc[i + 1])];
                    let at = at_row + col as isize * st[3];
                    if pairs {
                        // SAFETY: `row` and `col + 1` inside the view (`row < rows`, `col + 1
                        // < D`, the caller's extents), the pair 4-aligned (the pointer, the
                        // strides and `col` even); this thread's alone (the caller).
                        unsafe { ptr.wrapping_offset(at).cast::<Pair<T>>().write(Pair(values)) };
                    } else {
                        // SAFETY: as above, element by element.
                        unsafe { ptr.wrapping_offset(at).write(values[0]) };
                        // SAFETY: as above.
                        unsafe { ptr.wrapping_offset(at + st[3]).write(values[1]) };
                    }
                }
            });
        }
    });
}

/// `stat[b, h, i]`, or `default` where `i` is past `rows`.
///
/// # Safety
///
/// `stat`'s extents are `[> b, > h, rows]`.
#[inline(always)]
unsafe fn stat(stat: &RowStat<'_>, [b, h, i, rows]: [usize; 4], default: f32) -> f32 {
    if i < rows {
        let at = b as isize * stat.stride(0) + h as isize * stat.stride(1) + i as isize * stat.stride(2);
        // SAFETY: inside the view (the caller's extents, `i < rows`); read only.
        unsafe { stat.data_handle().wrapping_offset(at).read() }
    } else {
        default
    }
}

/// The statistic of each of the thread's 16 columns of a `64 × 64` tile of accumulators
/// whose columns are `view[b, h, i0 ..]`: column `8 (j / 2) + 2 (l % 4) + j % 2` in place
/// `j`, `default` past `rows`. Where the 64 are inside and neighbours, from one address.
///
/// # Safety
///
/// `view`'s extents are `[> b, > h, rows]`.
#[inline(always)]
unsafe fn cols(view: &RowStat<'_>, [b, h, i0, rows]: [usize; 4], default: f32, lane: usize) -> [f32; 16] {
    let mut values = [default; 16];
    if i0 + 64 <= rows && view.stride(2) == 1 {
        let at = b as isize * view.stride(0) + h as isize * view.stride(1) + i0 as isize + 2 * (lane % 4) as isize;
        let first = view.data_handle().wrapping_offset(at);
        unroll!(16, |j| {
            // SAFETY: `[b, h, i0 + 8 (j / 2) + 2 (l % 4) + j % 2]`, inside the view (the
            // caller's extents, the column below `i0 + 64 ≤ rows`), its elements neighbours;
            // read only.
            values[j] = unsafe { first.wrapping_add(8 * (j / 2) + j % 2).read() };
        });
    } else {
        unroll!(16, |j| {
            let col = 8 * (j / 2) + 2 * (lane % 4) + j % 2;
            // SAFETY: the caller's extents.
            values[j] = unsafe { stat(view, [b, h, i0 + col, rows], default) };
        });
    }
    values
}

/// The blocks' chunks (`b · heads · ⌈rows / 128⌉`), the block's first and the blocks, and
/// the thread's index in the block.
#[inline(always)]
fn place(b: usize, heads: usize, rows: usize) -> Option<((usize, usize, usize), usize)> {
    // SAFETY: a special register, no precondition.
    let t = unsafe { nvptx::_thread_idx_x() };
    // SAFETY: as above.
    let block = unsafe { nvptx::_block_idx_x() };
    // SAFETY: as above.
    let blocks = unsafe { nvptx::_grid_dim_x() };
    let chunks = b.checked_mul(heads)?.checked_mul(rows.div_ceil(128))?;
    Some(((block as usize, chunks, blocks as usize), t as usize))
}

/// The packed `A` fragment of a `64 × 64` tile of the accumulators.
#[inline(always)]
fn fragment<T: ProductRs<Cols<128>>>(x: &[f32; 32]) -> [u32; 16] {
    let mut a = [0u32; 16];
    unroll!(8, |i| {
        a[2 * i] = pack::<T>(x[4 * i], x[4 * i + 1]);
        a[2 * i + 1] = pack::<T>(x[4 * i + 2], x[4 * i + 3]);
    });
    a
}

/// The queries' gradient of [`attention_dq_bf16_d128`](crate::attention_dq_bf16_d128) and
/// the others, raw: `dq` left as it is where the extents do not fit together, the scale is
/// not positive and finite, the grid is not one row of blocks, the block is not of 384
/// threads, or its dynamic shared memory is less than
/// [`raw_backward_shared_bytes`](super::raw_backward_shared_bytes).
///
/// # Safety
///
/// Run by every thread of the block, on `sm_90a`; `dq` is written by no other block's rows
/// and by nothing else while the kernel runs, the maps' and views' tensors are not written
/// (kernel parameters of these types).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dq<T, const D: usize, const R: usize>(
    [q, d_o]: [&AttentionMap<'_, T, D>; 2],
    [k, v]: [&HalfMap<'_, T, D>; 2],
    [lse, delta]: [&RowStat<'_>; 2],
    dq: &AttentionOut<'_, T>,
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T,
) where
    T: DlElement + Product<Cols<64>, KMajor> + ProductRs<Cols<D>, Cols<64>> + ProductRs<Cols<128>>,
    Cols<D>: Width<Regs = [f32; R]>,
{
    let (qe, ke) = (q.extents(), k.extents());
    let stats = [
        [lse.extent(0), lse.extent(1), lse.extent(2)],
        [delta.extent(0), delta.extent(1), delta.extent(2)],
    ];
    let fits = fits::<D>(qe, ke, v.extents(), stats, scale)
        && (0..4).all(|d| dq.extent(d) == qe[d] && d_o.extents()[d] == qe[d]);
    let [batch, heads_q, s_q, _] = qe;
    let [_, heads_kv, s_k, _] = ke;
    let (Some(layout), Some(((first, chunks, blocks), t))) = (Layout::of::<D>(), place(batch, heads_q, s_q)) else {
        return;
    };
    // Uniform across the block: no thread goes on without the others.
    if !fits {
        return;
    }
    let group = heads_q / heads_kv;
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let m_tiles = s_q.div_ceil(128);
    // Each head's last rows first, as the safe kernel's chunks (`LastRowsFirst`).
    let chunk = |c: usize| {
        let (m, bh) = (m_tiles - 1 - c % m_tiles, c / m_tiles);
        let (b, h, m0) = (bh / heads_q, bh % heads_q, 128 * m);
        Chunk {
            b,
            head: h,
            row0: m0,
            heads: (h / group, h / group + 1),
            tiles: (0, Keys::tiles_of(64, m0, 128, s_q, s_k, causal)),
        }
    };
    // SAFETY: every thread of the block, in uniform code, once.
    unsafe { init(&layout, t) };
    let (role, thread) = (t / 128, t % 128);
    if role == 0 {
        // SAFETY: the producer warpgroup, converged, at its registers at launch (the entry
        // point declares 384 threads and one block a multiprocessor); it needs fewer.
        unsafe { setmaxnreg_dec::<PRODUCER_REGS>() };
        if thread == 0 {
            // SAFETY: the producer's first thread, after `init`; the maps are parameters of
            // tensors nothing writes; the consumers loop over the same chunks.
            unsafe { produce(&layout, [q, d_o], [k, v], (first, chunks, blocks), chunk) };
        }
        return;
    }
    // SAFETY: a consumer warpgroup, converged, at its registers at launch; the producer's
    // release leaves the pool enough for both consumers (40 + 2 · 232 ≤ 3 · 168).
    unsafe { setmaxnreg_inc::<CONSUMER_REGS>() };
    let (cw, warp, lane) = (role - 1, thread / 32, thread % 32);
    let (mut c, mut takes_res, mut takes) = (first, 0usize, 0usize);
    while c < chunks {
        let ch = chunk(c);
        let row0 = ch.row0 + 64 * cw;
        // SAFETY: an initialised barrier object; phase `takes_res` is this chunk's fill.
        unsafe { mbarrier_wait(layout.res_full(), (takes_res % 2) as u32) };
        takes_res += 1;
        let (mut lse_rows, mut delta_rows) = ([0.0f32; 2], [0.0f32; 2]);
        unroll!(2, |h| {
            let row = row0 + 16 * warp + lane / 4 + 8 * h;
            // SAFETY: `lse` and `Δ` of `q`'s extents but the last (checked); `ch.b` and
            // `ch.head` inside them.
            lse_rows[h] = unsafe { stat(lse, [ch.b, ch.head, row, s_q], f32::INFINITY) };
            // SAFETY: as above.
            delta_rows[h] = unsafe { stat(delta, [ch.b, ch.head, row, s_q], 0.0) };
        });
        let mut acc = <Cols<D> as Width>::zero();
        for n in ch.tiles.0..ch.tiles.1 {
            let (s, parity) = (takes % layout.stages, ((takes / layout.stages) % 2) as u32);
            // `S = Q · Kᵀ` and `dP = dO · Vᵀ`, issued together.
            let mut x = <Cols<64> as Width>::zero();
            let mut y = <Cols<64> as Width>::zero();
            // SAFETY: an initialised barrier object; this phase is the stage's fill `takes`.
            unsafe { mbarrier_wait(layout.full(0, s), parity) };
            for p in 0..D / 64 {
                let a = descriptor_128(layout.res(0) + (p * 128 * 128 + cw * 64 * 128) as u32);
                let b = descriptor_128(layout.tile(0, s) + (p * 64 * 128) as u32);
                // SAFETY: all 128 threads of the warpgroup, converged; `q`'s and `k`'s tiles
                // landed (their full phases, through the async proxy), K-major in the
                // 128-byte swizzle, this warpgroup's 64 rows of panel `p` and the 64 keys;
                // neither is refilled before this warpgroup releases it below.
                unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut x, a, b) };
            }
            // SAFETY: as above, for `v`'s tile.
            unsafe { mbarrier_wait(layout.full(1, s), parity) };
            for p in 0..D / 64 {
                let a = descriptor_128(layout.res(1) + (p * 128 * 128 + cw * 64 * 128) as u32);
                let b = descriptor_128(layout.tile(1, s) + (p * 64 * 128) as u32);
                // SAFETY: as above, `do`'s rows and `v`'s tile.
                unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut y, a, b) };
            }
            // SAFETY: the warpgroup's threads together.
            unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut x) };
            // `P`, 0 where the row does not see the key (`Keys`, as the safe kernels mask).
            let visible = Keys::new(row0, 64 * n, s_q, s_k, causal);
            let mut bounds = [(0u32, 0u32); 2];
            unroll!(2, |h| {
                bounds[h] = visible.columns(16 * warp + lane / 4 + 8 * h, 64);
            });
            unroll!(8, |ia| {
                unroll!(4, |ib| {
                    let i = 4 * ia + ib;
                    let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                    let (lo, hi) = bounds[(i / 2) % 2];
                    let base = lse_rows[(i / 2) % 2] * core::f32::consts::LOG2_E;
                    x[i] = if col >= lo && col < hi {
                        exp2(mul_add(x[i], scale_log2, -base))
                    } else {
                        0.0
                    };
                });
            });
            // SAFETY: as above (done already).
            unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut y) };
            // SAFETY: an initialised barrier object whose phase counts one arrival from each
            // consumer warp: this warp's first lane's; the products that read `v`'s tile
            // are done (above).
            unsafe { mbarrier_arrive_where(layout.empty(1, s), lane == 0) };
            // `dS = P ∘ (dP − Δ)`, then `dQ += dS · K` (`k`'s tile read MN-major).
            unroll!(8, |ia| {
                unroll!(4, |ib| {
                    let i = 4 * ia + ib;
                    y[i] = x[i] * (y[i] - delta_rows[(i / 2) % 2]);
                });
            });
            let mut a = fragment::<T>(&y);
            // SAFETY: the warpgroup's threads together; `k`'s tile landed (above), `64 × D`
            // read MN-major (panels of 64 rows of 128 bytes, 8 KiB apart); `a` and `acc`
            // are left alone until the wait below.
            unsafe { wgmma_rs_64::<T, Cols<D>>(&mut acc, &a, descriptor_128_mn(layout.tile(0, s), 64 * 128)) };
            // SAFETY: as above.
            unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc, &mut a) };
            // SAFETY: as for `v`'s release: the products that read `k`'s tile are done.
            unsafe { mbarrier_arrive_where(layout.empty(0, s), lane == 0) };
            takes += 1;
        }
        // SAFETY: as above: the products that read the resident tiles are done.
        unsafe { mbarrier_arrive_where(layout.res_empty(), lane == 0) };
        // SAFETY: `dq` of `q`'s extents (checked), the chunk's batch entry and head inside
        // them; the warpgroup's 64 rows of the chunk are its own (each chunk one block's).
        unsafe { store::<T, D, R>(dq, [ch.b, ch.head, row0, s_q], &acc, |x| out(x * scale), thread) };
        c += blocks;
    }
}

/// The keys' and values' gradients of [`attention_dkv_bf16_d128`](crate::attention_dkv_bf16_d128)
/// and the others, raw: `dk` and `dv` left as they are where the extents do not fit
/// together, or the launch does not, as for [`dq`].
///
/// # Safety
///
/// As [`dq`], for `dk` and `dv`, each written by nothing else (the launcher refuses two
/// written views that overlap).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dkv<T, const D: usize, const R: usize>(
    [k, v]: [&AttentionMap<'_, T, D>; 2],
    [q, d_o]: [&HalfMap<'_, T, D>; 2],
    [lse, delta]: [&RowStat<'_>; 2],
    [dk, dv]: [&AttentionOut<'_, T>; 2],
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T,
) where
    T: DlElement + Product<Cols<64>, KMajor> + ProductRs<Cols<D>, Cols<64>> + ProductRs<Cols<128>>,
    Cols<D>: Width<Regs = [f32; R]>,
{
    let (qe, ke) = (q.extents(), k.extents());
    let stats = [
        [lse.extent(0), lse.extent(1), lse.extent(2)],
        [delta.extent(0), delta.extent(1), delta.extent(2)],
    ];
    let fits = fits::<D>(qe, ke, v.extents(), stats, scale)
        && (0..4).all(|d| dk.extent(d) == ke[d] && dv.extent(d) == ke[d] && d_o.extents()[d] == qe[d]);
    let [batch, heads_q, s_q, _] = qe;
    let [_, heads_kv, s_k, _] = ke;
    let (Some(layout), Some(((first, chunks, blocks), t))) = (Layout::of::<D>(), place(batch, heads_kv, s_k)) else {
        return;
    };
    if !fits {
        return;
    }
    let group = heads_q / heads_kv;
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let n_tiles = s_k.div_ceil(128);
    let chunk = |c: usize| {
        let (n, bh) = (c % n_tiles, c / n_tiles);
        let (b, hk, n0) = (bh / heads_kv, bh % heads_kv, 128 * n);
        Chunk {
            b,
            head: hk,
            row0: n0,
            heads: (hk * group, (hk + 1) * group),
            tiles: Queries::tiles(n0, 64, s_q, s_k, causal),
        }
    };
    // SAFETY: every thread of the block, in uniform code, once.
    unsafe { init(&layout, t) };
    let (role, thread) = (t / 128, t % 128);
    if role == 0 {
        // SAFETY: as in `dq`.
        unsafe { setmaxnreg_dec::<PRODUCER_REGS>() };
        if thread == 0 {
            // SAFETY: as in `dq`.
            unsafe { produce(&layout, [k, v], [q, d_o], (first, chunks, blocks), chunk) };
        }
        return;
    }
    // SAFETY: as in `dq`.
    unsafe { setmaxnreg_inc::<CONSUMER_REGS>() };
    let (cw, warp, lane) = (role - 1, thread / 32, thread % 32);
    let (mut c, mut takes_res, mut takes) = (first, 0usize, 0usize);
    while c < chunks {
        let ch = chunk(c);
        let key0 = ch.row0 + 64 * cw;
        // SAFETY: an initialised barrier object; phase `takes_res` is this chunk's fill.
        unsafe { mbarrier_wait(layout.res_full(), (takes_res % 2) as u32) };
        takes_res += 1;
        let mut acc_k = <Cols<D> as Width>::zero();
        let mut acc_v = <Cols<D> as Width>::zero();
        for h in ch.heads.0..ch.heads.1 {
            for m in ch.tiles.0..ch.tiles.1 {
                let q0 = 64 * m;
                let (s, parity) = (takes % layout.stages, ((takes / layout.stages) % 2) as u32);
                // `Sᵀ = K · Qᵀ` and `dPᵀ = V · dOᵀ`, issued together.
                let mut x = <Cols<64> as Width>::zero();
                let mut y = <Cols<64> as Width>::zero();
                // SAFETY: an initialised barrier object; this phase is the stage's fill.
                unsafe { mbarrier_wait(layout.full(0, s), parity) };
                for p in 0..D / 64 {
                    let a = descriptor_128(layout.res(0) + (p * 128 * 128 + cw * 64 * 128) as u32);
                    let b = descriptor_128(layout.tile(0, s) + (p * 64 * 128) as u32);
                    // SAFETY: as in `dq`: `k`'s rows and `q`'s tile.
                    unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut x, a, b) };
                }
                // SAFETY: as above, `do`'s tile.
                unsafe { mbarrier_wait(layout.full(1, s), parity) };
                for p in 0..D / 64 {
                    let a = descriptor_128(layout.res(1) + (p * 128 * 128 + cw * 64 * 128) as u32);
                    let b = descriptor_128(layout.tile(1, s) + (p * 64 * 128) as u32);
                    // SAFETY: as above, `v`'s rows and `do`'s tile.
                    unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut y, a, b) };
                }
                // Each column's `lse` while the products run, its `Δ` while the
                // probabilities are computed; columns past the queries read as a query that
                // sees no key.
                // SAFETY: `lse` and `Δ` of `q`'s extents but the last (checked); `ch.b` and
                // `h` (a query head of the group) inside them.
                let lse_cols = unsafe { cols(lse, [ch.b, h, q0, s_q], f32::INFINITY, lane) };
                // SAFETY: the warpgroup's threads together.
                unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut x) };
                // SAFETY: as for `lse`.
                let delta_cols = unsafe { cols(delta, [ch.b, h, q0, s_q], 0.0, lane) };
                let visible = Queries::new(key0, q0, s_q, s_k, causal);
                let mut bounds = [(0u32, 0u32); 2];
                unroll!(2, |half| {
                    bounds[half] = visible.columns(16 * warp + lane / 4 + 8 * half, 64);
                });
                unroll!(8, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                        let (lo, hi) = bounds[(i / 2) % 2];
                        let base = lse_cols[2 * (i / 4) + i % 2] * core::f32::consts::LOG2_E;
                        x[i] = if col >= lo && col < hi {
                            exp2(mul_add(x[i], scale_log2, -base))
                        } else {
                            0.0
                        };
                    });
                });
                // SAFETY: as above (done already).
                unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut y) };
                unroll!(8, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        y[i] = x[i] * (y[i] - delta_cols[2 * (i / 4) + i % 2]);
                    });
                });
                // `dV += Pᵀ · dO` and `dK += dSᵀ · Q`, issued together (`do`'s and `q`'s
                // tiles read MN-major).
                let (mut a_p, mut a_ds) = (fragment::<T>(&x), fragment::<T>(&y));
                // SAFETY: the warpgroup's threads together; `do`'s and `q`'s tiles landed
                // (above), `64 × D` read MN-major (panels of 64 rows of 128 bytes); the
                // fragments and accumulators are left alone until the waits below.
                unsafe { wgmma_rs_64::<T, Cols<D>>(&mut acc_v, &a_p, descriptor_128_mn(layout.tile(1, s), 64 * 128)) };
                // SAFETY: as above.
                unsafe { wgmma_rs_64::<T, Cols<D>>(&mut acc_k, &a_ds, descriptor_128_mn(layout.tile(0, s), 64 * 128)) };
                // SAFETY: as above.
                unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc_v, &mut a_p) };
                // SAFETY: as above.
                unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc_k, &mut a_ds) };
                // SAFETY: initialised barrier objects counting one arrival from each
                // consumer warp; the products that read the stage's tiles are done.
                unsafe { mbarrier_arrive_where(layout.empty(1, s), lane == 0) };
                // SAFETY: as above.
                unsafe { mbarrier_arrive_where(layout.empty(0, s), lane == 0) };
                takes += 1;
            }
        }
        // SAFETY: as above: the products that read the resident tiles are done.
        unsafe { mbarrier_arrive_where(layout.res_empty(), lane == 0) };
        // SAFETY: `dk` and `dv` of `k`'s extents (checked), the chunk's batch entry and
        // key-value head inside them; the warpgroup's 64 rows of the chunk are its own.
        unsafe { store::<T, D, R>(dk, [ch.b, ch.head, key0, s_k], &acc_k, |x| out(x * scale), thread) };
        // SAFETY: as above.
        unsafe { store::<T, D, R>(dv, [ch.b, ch.head, key0, s_k], &acc_v, &out, thread) };
        c += blocks;
    }
}
