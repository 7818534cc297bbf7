//! Attention's backward pass, safe (`dlmd::kernel::warpgroup`): from the forward pass's `q`,
//! `k`, `v`, output `o` and log-sum-exp `lse`, and the output's gradient `do`, the gradients
//! `dq`, `dk` and `dv`, recomputing the probabilities from `lse` as FlashAttention-2 and 3 do,
//! in three kernels, each element of each gradient written once by one thread (no atomics:
//! the result does not depend on the order in which blocks run, so it is deterministic):
//!
//! 1. `attention_delta`: `Δ = Σ do ∘ o` for each query row (`f32`, `b × h_q × s_q`);
//! 2. `attention_dq_*`: for each chunk of 128 query rows of a head, with `q` and `do` resident,
//!    the keys and values 64 at a time: `S = Q · Kᵀ`, `P = e^(S · scale − lse)`, `dP = dO ·
//!    Vᵀ`, `dS = P ∘ (dP − Δ)`, `dQ += dS · K` (the keys' tile read again, MN-major; each
//!    tile's issued behind the next tile's `S` and `dP`, `Warpgroup::behind`), and `dq =
//!    scale · dQ`;
//! 3. `attention_dkv_*`: for each chunk of 128 key rows of a key-value head, with `k` and `v`
//!    resident, the queries and the output's gradient 64 at a time, of every query head of
//!    the group (grouped-query attention sums them here): `Sᵀ = K · Qᵀ`, `Pᵀ` from `lse` by
//!    column, `dPᵀ = V · dOᵀ`, `dSᵀ = Pᵀ ∘ (dPᵀ − Δ)`, `dV += Pᵀ · dO`, `dK += dSᵀ · Q`, and
//!    `dk = scale · dK`, `dv = dV`, written together (`Chunks::with_twin`).
//!
//! Shapes and options are the forward pass's: `(b, h, s, d)` views of any strides a tensor map
//! takes, `h_kv` dividing `h_q`, any sequence lengths, causal (aligned to the bottom right)
//! or not. Rows and columns past a sequence's end arrive as zeros and are masked.

use crate::attention::{AttentionLse, AttentionMap, AttentionOut, AttentionTile};
use crate::sequences::SeqOffsets;
use dlmd::extents::Const;
use dlmd::half::{bf16, f16};
use dlmd::kernel::block::{LastRowsFirst, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::Streams;
use dlmd::kernel::{Block, Thread};
use dlmd::{DeviceMdspan, Dims, DlElement, LayoutStride};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {
    crate::sequences::{Dense, Lengths, Sequence, packed},
    dlmd::kernel::math::{to_bf16, to_f16},
    dlmd::kernel::warpgroup::{Accumulators, Cols, Keys, Queries},
};

/// A tile of 64 rows of a head of `q`, `k`, `v` or `do`: `64 × D`, in panels of 64 columns.
pub type HalfTile<T, const D: usize> = TileOf<T, (Const<64>, Const<D>), Swizzle128>;
/// The tensor map of a tensor (`b × h × s × D`) with boxes of `64 × D` of one head.
pub type HalfMap<'a, T, const D: usize> = TensorMap<'a, T, (Const<64>, Const<D>), Swizzle128, 4>;
/// A tensor the backward pass reads (`o`, `do`), `b × h × s × d`, strided.
pub type AttentionRead<'a, T> = DeviceMdspan<'a, T, Dims<4>, LayoutStride>;
/// A statistic of each query row the backward pass reads (`lse`, `Δ`), `b × h_q × s_q` `f32`.
pub type RowStat<'a> = DeviceMdspan<'a, f32, Dims<3>, LayoutStride>;

/// The tiles of the queries' gradient: `q` and `do` resident, `k` and `v` streamed.
pub type DqTiles<T, const D: usize, const STAGES: usize> =
    Streams<STAGES, AttentionTile<T, D>, HalfTile<T, D>, HalfTile<T, D>, AttentionTile<T, D>>;
/// The block of the queries' gradient: one chunk of 128 query rows of one head at a time,
/// each head's last rows first (as the forward pass's, [`AttentionBlock`](crate::AttentionBlock)).
pub type DqBlock<'k, T, const D: usize, const STAGES: usize> =
    Block<'k, 384, DqTiles<T, D, STAGES>, LastRowsFirst<(Const<1>, Const<1>, Const<128>, Const<D>)>>;
/// The tiles of the keys' and values' gradients: `k` and `v` resident, `q` and `do` streamed.
pub type DkvTiles<T, const D: usize, const STAGES: usize> =
    Streams<STAGES, AttentionTile<T, D>, HalfTile<T, D>, HalfTile<T, D>, AttentionTile<T, D>>;
/// The block of the keys' and values' gradients: one chunk of 128 key rows of one key-value
/// head at a time, in order (under the causal mask the first keys are seen by the most
/// queries: the grid starts on its longest chunks already).
pub type DkvBlock<'k, T, const D: usize, const STAGES: usize> =
    Block<'k, 384, DkvTiles<T, D, STAGES>, (Const<1>, Const<1>, Const<128>, Const<D>)>;

/// An element of `o` or `do` as `f32`.
pub trait Widen: DlElement {
    /// The value as `f32`, exactly.
    fn widen(self) -> f32;
}

impl Widen for bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

impl Widen for f16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// `Δ[b, h, i] = Σ_d do[b, h, i, d] · o[b, h, i, d]`, for `delta` of `o`'s extents but the
/// last; left as it is where the extents do not fit together.
#[dlmd::device]
#[inline(always)]
fn delta<T: Widen>(thread: Thread, o: AttentionRead<'_, T>, d_o: AttentionRead<'_, T>, mut delta: AttentionLse<'_>) {
    let [b, h, s, d] = o.extents().0;
    let [db, dh, ds] = delta.extents().0;
    let same = (0..4).all(|i| o.extents().0[i] == d_o.extents().0[i]);
    if !same || db != b || dh != h || ds != s {
        return;
    }
    thread.for_each_mut(&mut delta, |[b, h, i], x| {
        // Eight elements of each at a time (one 16-byte load where a row's are neighbours and
        // aligned), the rest one by one, summed in order.
        let mut sum = 0.0f32;
        let mut j = 0;
        while j + 8 <= d {
            if let (Some(a), Some(g)) = (o.get_run::<8>([b, h, i, j]), d_o.get_run::<8>([b, h, i, j])) {
                for k in 0..8 {
                    sum += a[k].widen() * g[k].widen();
                }
            }
            j += 8;
        }
        for j in j..d {
            if let (Some(a), Some(g)) = (o.get([b, h, i, j]), d_o.get([b, h, i, j])) {
                sum += a.widen() * g.widen();
            }
        }
        *x = sum;
    });
}

/// `Δ = Σ do ∘ o` for each query row of `bf16` tensors: `delta` (`b × h × s`) from `o` and
/// `do` (`b × h × s × d`); left as it is where the extents do not fit together. Any launch
/// shape: a thread a row at a time.
#[dlmd::kernel]
pub fn attention_delta_bf16(
    thread: Thread,
    o: AttentionRead<'_, bf16>,
    d_o: AttentionRead<'_, bf16>,
    delta_out: AttentionLse<'_>,
) {
    delta(thread, o, d_o, delta_out);
}

/// `Δ = Σ do ∘ o` for each query row of `f16` tensors, as [`attention_delta_bf16`].
#[dlmd::kernel]
pub fn attention_delta_f16(
    thread: Thread,
    o: AttentionRead<'_, f16>,
    d_o: AttentionRead<'_, f16>,
    delta_out: AttentionLse<'_>,
) {
    delta(thread, o, d_o, delta_out);
}

#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
/// The shapes of the backward pass fit together: `q` (as `dq`), `k` and `v` (`b × h_kv × s_k
/// × D`, `h_kv` dividing `h_q`), `lse` and `Δ` (`q`'s but the last), a positive finite scale.
#[inline(always)]
pub(crate) fn fits<const D: usize>(
    q: [usize; 4],
    k: [usize; 4],
    v: [usize; 4],
    stats: [[usize; 3]; 2],
    scale: f32,
) -> bool {
    let same = |a: &[usize], b: &[usize]| a.len() == b.len() && (0..a.len()).all(|d| a[d] == b[d]);
    k[1] > 0
        && q[1].is_multiple_of(k[1])
        && q[3] == D
        && k[3] == D
        && k[0] == q[0]
        && same(&v, &k)
        && same(&stats[0], &q[..3])
        && same(&stats[1], &q[..3])
        && scale > 0.0
        && scale.is_finite()
}

/// The queries' gradient, each element of `dq` written as `out(value)`.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dq<T, const D: usize, const STAGES: usize>(
    block: DqBlock<'_, T, D, STAGES>,
    [q, d_o]: [AttentionMap<'_, T, D>; 2],
    [k, v]: [HalfMap<'_, T, D>; 2],
    [lse, delta]: [RowStat<'_>; 2],
    dq: AttentionOut<'_, T>,
    lengths: impl Lengths,
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T + Sync,
) where
    T: dlmd::kernel::warpgroup::Product<Cols<64>> + dlmd::kernel::warpgroup::ProductRs<Cols<D>, Cols<64>>,
    Cols<D>: dlmd::kernel::warpgroup::Width,
{
    const {
        assert!(
            STAGES >= 2,
            "a tile of keys is held while the next lands: dQ's product runs behind the next tile's"
        );
    };
    let (qe, ke) = (q.extents(), k.extents());
    if !fits::<D>(qe, ke, v.extents(), [lse.extents().0, delta.extents().0], scale)
        || (0..4).any(|d| dq.extents().0[d] != qe[d] || d_o.extents()[d] != qe[d])
    {
        return;
    }
    let group = qe[1] / ke[1];
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let tiles = |m0: usize, s: Sequence| Keys::tiles_of(64, m0, 128, s.own_len, s.other_len, causal);
    let (mut block, mut set) = block.split();
    let Some(chunks) = lengths.cut(block.chunks(dq)) else {
        return;
    };
    block.specialise_streams(
        &mut set,
        chunks,
        |producer, [b, h, row, _]| {
            let s = lengths.at(row);
            producer.load_residents(&q, [b, h, row, 0], &d_o, [b, h, row, 0]);
            for n in 0..tiles(row.saturating_sub(s.own0), s) {
                producer.load_first(&k, [b, h / group, s.other0 + 64 * n, 0]);
                producer.load_second(&v, [b, h / group, s.other0 + 64 * n, 0]);
            }
        },
        |wg, consumer, part| {
            let [b, h, first, _] = part.origin();
            let seq = lengths.of(first, part.segment());
            let m0 = first.saturating_sub(seq.own0) / 128 * 128;
            let row0 = m0 + 64 * wg.index();
            // Rows in the tensors: the sequence's own rows start at `own0`.
            let at = seq.own0 + row0;
            let (q_rows, do_rows) = consumer.residents();
            let lse = wg.rows(|r| lse.get([b, h, at + r]).copied().unwrap_or(f32::INFINITY));
            let delta = wg.rows(|r| delta.get([b, h, at + r]).copied().unwrap_or(0.0));
            let mut acc = Accumulators::<T, Cols<D>>::zero();
            let visible = |n: usize| Keys::new(row0, 64 * n, seq.own_len, seq.other_len, causal);
            let n_tiles = tiles(m0, seq);
            if n_tiles > 0 {
                // `S` and `dP` run together: the first wait sees both done.
                let mut keys = consumer.first();
                let s = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &q_rows, keys.borrow());
                let dp = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &do_rows, consumer.second());
                let s = wg.wait(s);
                let p = wg.recompute_probs(s, &lse, scale_log2, &visible(0));
                let dp = wg.wait(dp);
                let mut ds = wg.softmax_grad(&p, dp, &delta);
                for n in 1..n_tiles {
                    // The next tile's `S` and `dP` first, this one's `dQ += dS · K` behind
                    // them: the next tile's softmax runs while the tensor cores add this one.
                    let next = consumer.first();
                    let s = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &q_rows, next.borrow());
                    let dp = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &do_rows, consumer.second());
                    let both = wg.behind((s, dp)).mma_acc::<T, _, 64, D, _>(acc, ds, keys.by_n());
                    let ((s, dp), running) = wg.wait(both);
                    let p = wg.recompute_probs(s, &lse, scale_log2, &visible(n));
                    ds = wg.softmax_grad(&p, dp, &delta);
                    acc = wg.wait(running);
                    keys = next;
                }
                let running = wg.mma_acc::<T, _, 64, D, _>(acc, ds, keys.by_n());
                acc = wg.wait(running);
            }
            drop((q_rows, do_rows));
            wg.store(part, acc, |_, x| out(x * scale));
        },
    );
}

/// The keys' and values' gradients, each element of `dk` and `dv` written as `out(value)`.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dkv<T, const D: usize, const STAGES: usize>(
    block: DkvBlock<'_, T, D, STAGES>,
    [k, v]: [AttentionMap<'_, T, D>; 2],
    [q, d_o]: [HalfMap<'_, T, D>; 2],
    [lse, delta]: [RowStat<'_>; 2],
    (dk, dv): (AttentionOut<'_, T>, AttentionOut<'_, T>),
    lengths: impl Lengths,
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T + Sync,
) where
    T: dlmd::kernel::warpgroup::Product<Cols<64>> + dlmd::kernel::warpgroup::ProductRs<Cols<D>, Cols<64>>,
    Cols<D>: dlmd::kernel::warpgroup::Width,
{
    let (qe, ke) = (q.extents(), k.extents());
    if !fits::<D>(qe, ke, v.extents(), [lse.extents().0, delta.extents().0], scale)
        || (0..4).any(|d| dk.extents().0[d] != ke[d] || d_o.extents()[d] != qe[d])
    {
        return;
    }
    let group = qe[1] / ke[1];
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    // The keys are the chunks' own rows, the queries the other.
    let tiles = |n0: usize, s: Sequence| Queries::tiles(n0, 64, s.other_len, s.own_len, causal);
    let (mut block, mut set) = block.split();
    // `dv`'s extents are `dk`'s, and the sequences fit them, or nothing is written.
    let Some(chunks) = lengths.cut(block.chunks(dk)).and_then(|chunks| chunks.with_twin(dv)) else {
        return;
    };
    block.specialise_streams(
        &mut set,
        chunks,
        |producer, [b, hk, row, _]| {
            let s = lengths.at(row);
            producer.load_residents(&k, [b, hk, row, 0], &v, [b, hk, row, 0]);
            let (first, all) = tiles(row.saturating_sub(s.own0), s);
            for h in hk * group..(hk + 1) * group {
                for m in first..all {
                    producer.load_first(&q, [b, h, s.other0 + 64 * m, 0]);
                    producer.load_second(&d_o, [b, h, s.other0 + 64 * m, 0]);
                }
            }
        },
        |wg, consumer, part| {
            let [b, hk, start, _] = part.origin();
            let seq = lengths.of(start, part.segment());
            let n0 = start.saturating_sub(seq.own0) / 128 * 128;
            let key0 = n0 + 64 * wg.index();
            let (part_k, part_v) = part.split_twin();
            let (k_rows, v_rows) = consumer.residents();
            let mut acc_k = Accumulators::<T, Cols<D>>::zero();
            let mut acc_v = Accumulators::<T, Cols<D>>::zero();
            let (first, all) = tiles(n0, seq);
            for h in hk * group..(hk + 1) * group {
                for m in first..all {
                    let q0 = 64 * m;
                    // The tile's first query in the tensors.
                    let at = seq.other0 + q0;
                    let queries = consumer.first();
                    let st = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &k_rows, queries.borrow());
                    // The columns' statistics load while `Sᵀ` runs. Columns past the sequence
                    // are another's, or no sequence's (what a masked probability of 0 meets
                    // must be finite): read as a row with no key.
                    let ours = seq.other0 + seq.other_len;
                    let lse = wg.cols_from::<64, _, _, _, _>(&lse, [b, h, at], ours, f32::INFINITY);
                    let delta = wg.cols_from::<64, _, _, _, _>(&delta, [b, h, at], ours, 0.0);
                    let st = wg.wait(st);
                    // `dPᵀ` runs while the probabilities are recomputed.
                    let grads = consumer.second();
                    let dpt = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &v_rows, grads.borrow());
                    let visible = Queries::new(key0, q0, seq.other_len, seq.own_len, causal);
                    let pt = wg.recompute_probs(st, &lse, scale_log2, &visible);
                    if D == 64 {
                        // `dV += Pᵀ · dO` behind `dPᵀ`: it runs while `dSᵀ` is computed. (At
                        // head dimension 128 its accumulators, live beside `dK`'s, spill, and
                        // the kernel ran slower: benchmarks/2026-11-30-overlap.md.)
                        let both = wg.behind(dpt).mma_acc_kept::<T, _, 64, D, _>(acc_v, &pt, grads.by_n());
                        let (dpt, running_v) = wg.wait(both);
                        let dst = wg.softmax_grad(&pt, dpt, &delta);
                        let running_k = wg.mma_acc::<T, _, 64, D, _>(acc_k, dst, queries.by_n());
                        acc_v = wg.wait(running_v);
                        acc_k = wg.wait(running_k);
                    } else {
                        let dpt = wg.wait(dpt);
                        let dst = wg.softmax_grad(&pt, dpt, &delta);
                        let running = wg.mma_acc::<T, _, 64, D, _>(acc_v, pt, grads.by_n());
                        acc_v = wg.wait(running);
                        let running = wg.mma_acc::<T, _, 64, D, _>(acc_k, dst, queries.by_n());
                        acc_k = wg.wait(running);
                    }
                }
            }
            drop((k_rows, v_rows));
            wg.store(part_k, acc_k, |_, x| out(x * scale));
            wg.store(part_v, acc_v, |_, x| out(x));
        },
    );
}

macro_rules! backward_kernels {
    ($dq:ident, $dkv:ident, $dq_varlen:ident, $dkv_varlen:ident, $t:ty, $d:literal, $stages:literal, $out:ident) => {
        /// The queries' gradient of attention for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": `dq` (`b × h_q × s_q × ", $d, "`) from `q` and `do` (as `dq`, maps of 128-row boxes), `k` and `v` (`b × h_kv × s_k × ", $d, "`, maps of 64-row boxes),")]
        /// the forward pass's `lse` and `Δ = Σ do ∘ o` (`b × h_q × s_q`), with the forward
        /// pass's `scale` and `causal`. `dq` is left as it is where the extents do not fit
        /// together or the scale is not positive and finite. Launch with blocks of 384
        /// threads, at most one per chunk of 128 query rows of a head.
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dq(
            block: DqBlock<'_, $t, $d, $stages>,
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
            let lengths = Dense {
                own: q.extents()[2],
                other: k.extents()[2],
            };
            dq(block, [q, d_o], [k, v], [lse, delta], dq_out, lengths, scale, causal, $out);
        }

        /// The keys' and values' gradients of attention for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": `dk` and `dv` (`b × h_kv × s_k × ", $d, "`) from `k` and `v` (maps of 128-row boxes), `q` and `do` (`b × h_q × s_q × ", $d, "`, maps of 64-row boxes),")]
        /// `lse` and `Δ` as for the queries' gradient; each key-value head's gradients sum
        /// those of its group of query heads. `dk` and `dv` are left as they are where the
        /// extents do not fit together. Launch with blocks of 384 threads, at most one per
        /// chunk of 128 key rows of a key-value head.
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dkv(
            block: DkvBlock<'_, $t, $d, $stages>,
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
            let lengths = Dense {
                own: k.extents()[2],
                other: q.extents()[2],
            };
            dkv(block, [k, v], [q, d_o], [lse, delta], (dk_out, dv_out), lengths, scale, causal, $out);
        }

        /// The queries' gradient of sequences packed together (`1 × h × total × d`, sequence
        /// `i` the rows `cu_q[i] .. cu_q[i + 1]` of `q`, `do`, `dq`, `lse` and `Δ`, and `cu_k[i]
        /// .. cu_k[i + 1]` of `k` and `v`), as
        #[doc = concat!("[`", stringify!($dq), "`]")]
        /// otherwise; `dq` is also left as it is where the offsets are not offsets of the
        /// tensors (as for the packed forward pass).
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dq_varlen(
            block: DqBlock<'_, $t, $d, $stages>,
            q: AttentionMap<'_, $t, $d>,
            k: HalfMap<'_, $t, $d>,
            v: HalfMap<'_, $t, $d>,
            d_o: AttentionMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dq_out: AttentionOut<'_, $t>,
            cu_q: SeqOffsets<'_>,
            cu_k: SeqOffsets<'_>,
            scale: f32,
            causal: bool,
        ) {
            if let Some(lengths) = packed(cu_q, cu_k, k.extents()[2]) {
                dq(block, [q, d_o], [k, v], [lse, delta], dq_out, lengths, scale, causal, $out);
            }
        }

        /// The keys' and values' gradients of sequences packed together, as
        #[doc = concat!("[`", stringify!($dq_varlen), "`]")]
        /// for the queries'.
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dkv_varlen(
            block: DkvBlock<'_, $t, $d, $stages>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            q: HalfMap<'_, $t, $d>,
            d_o: HalfMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dk_out: AttentionOut<'_, $t>,
            dv_out: AttentionOut<'_, $t>,
            cu_q: SeqOffsets<'_>,
            cu_k: SeqOffsets<'_>,
            scale: f32,
            causal: bool,
        ) {
            if let Some(lengths) = packed(cu_k, cu_q, q.extents()[2]) {
                dkv(block, [k, v], [q, d_o], [lse, delta], (dk_out, dv_out), lengths, scale, causal, $out);
            }
        }
    };
}

backward_kernels!(
    attention_dq_bf16_d64,
    attention_dkv_bf16_d64,
    attention_varlen_dq_bf16_d64,
    attention_varlen_dkv_bf16_d64,
    bf16,
    64,
    4,
    to_bf16
);
backward_kernels!(
    attention_dq_bf16_d128,
    attention_dkv_bf16_d128,
    attention_varlen_dq_bf16_d128,
    attention_varlen_dkv_bf16_d128,
    bf16,
    128,
    4,
    to_bf16
);
backward_kernels!(
    attention_dq_f16_d64,
    attention_dkv_f16_d64,
    attention_varlen_dq_f16_d64,
    attention_varlen_dkv_f16_d64,
    f16,
    64,
    4,
    to_f16
);
backward_kernels!(
    attention_dq_f16_d128,
    attention_dkv_f16_d128,
    attention_varlen_dq_f16_d128,
    attention_varlen_dkv_f16_d128,
    f16,
    128,
    4,
    to_f16
);
