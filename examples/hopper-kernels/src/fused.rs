//! Attention's backward pass in one kernel of five products, as FlashAttention-3 computes it:
//! for each chunk of 128 key rows of a key-value head, with `k` and `v` resident, the queries
//! and the output's gradient 64 at a time (of every query head of the group), each consumer
//! warpgroup holding 64 keys:
//!
//! - `Sᵀ = K · Qᵀ` and `dPᵀ = V · dOᵀ` together, `Pᵀ` from `lse`, `dSᵀ = Pᵀ ∘ (dPᵀ − Δ)`;
//! - `dV += Pᵀ · dO` and `dK += dSᵀ · Q`, as in [`attention_dkv_bf16_d128`](crate::attention_dkv_bf16_d128);
//! - `dSᵀ` handed to both consumers through shared memory ([`Exchange`]), and `dQ = dS · K`
//!   for the 64 queries and the block's 128 keys: at head dimension 128 each consumer computes
//!   64 of its columns over all 128 keys, at 64 each its own keys' share of all 64 columns;
//! - `dQ` added to an `f32` accumulator of the queries' gradient, atomically, a pair of
//!   neighbours a request ([`Warpgroup::add_to`](dlmd::kernel::warpgroup::Warpgroup::add_to),
//!   [`Pairs`](dlmd::kernel::warpgroup::Pairs): PTX ISA 8.1, which `build.rs` asks for),
//!   already scaled; the accumulator is zero before each launch, and
//!   `attention_dq_convert_*` converts it to `dq` after.
//!
//! The atomics make the sum's order, and so its last bits, depend on the order in which blocks
//! run: the three-kernel pass ([`backward`](crate::attention_dq_bf16_d128)) is the
//! deterministic one. Shapes and options are the three-kernel pass's.

use crate::attention::{AttentionMap, AttentionOut};
use crate::backward::{DkvTiles, HalfMap, RowStat};
use dlmd::extents::Const;
use dlmd::half::{bf16, f16};
use dlmd::kernel::warpgroup::Exchange;
use dlmd::kernel::{Block, Thread};
use dlmd::{DeviceMdspan, DeviceMdspanAtomic, Dims, LayoutStride};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {
    crate::attention::AttentionTile,
    crate::backward::fits,
    crate::sequences::{Dense, Lengths, Sequence},
    dlmd::kernel::math::{to_bf16, to_f16},
    dlmd::kernel::warpgroup::{Accumulators, Cols, Exchanged, Landed, Queries, Sums, Warpgroup},
};

/// The queries' gradient accumulated in `f32`, `b × h_q × s_q × d`: added to atomically by
/// the fused backward pass, from zero.
pub type DqAccum<'a> = DeviceMdspanAtomic<'a, f32, Dims<4>, LayoutStride>;
/// The same accumulator, read by the conversion once the fused pass is done.
pub type DqSum<'a> = DeviceMdspan<'a, f32, Dims<4>, LayoutStride>;

/// The block of the fused backward pass: the keys' and values' tiles and, beside them, the
/// exchange through which the two consumers hand each other `dSᵀ`.
pub type FusedBlock<'k, T, const D: usize, const STAGES: usize> =
    Block<'k, 384, (DkvTiles<T, D, STAGES>, Exchange<T, 128>), (Const<1>, Const<1>, Const<128>, Const<D>)>;

/// How the consumers share `dQ = dS · K` at head dimension `D`.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
pub(crate) trait DqShare<T: dlmd::DlElement, const D: usize> {
    /// The first column of this warpgroup's `64 × 64` of `dQ`.
    fn column(index: usize) -> usize;
    /// This warpgroup's `64 × 64` of `dQ` (waited for, with every product before it).
    fn product<'c>(
        wg: &mut Warpgroup<'c, 384>,
        ds: &Exchanged<'c, T, 128>,
        keys: &Landed<'c, AttentionTile<T, D>>,
    ) -> Accumulators<T, Cols<64>>;
}

/// The split of `dQ` by head dimension.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
pub(crate) struct Split;

#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
impl<T: dlmd::DlElement> DqShare<T, 128> for Split
where
    T: dlmd::kernel::warpgroup::Product<Cols<64>, dlmd::kernel::warpgroup::MnMajor>
        + dlmd::kernel::warpgroup::ProductRs<Cols<64>, Cols<64>>,
{
    #[inline(always)]
    fn column(index: usize) -> usize {
        64 * index
    }
    #[inline(always)]
    fn product<'c>(
        wg: &mut Warpgroup<'c, 384>,
        ds: &Exchanged<'c, T, 128>,
        keys: &Landed<'c, AttentionTile<T, 128>>,
    ) -> Accumulators<T, Cols<64>> {
        // 64 columns of the head dimension, over all 128 keys.
        let running = wg.mma_exchanged(Accumulators::zero(), ds, keys.by_n());
        wg.wait(running)
    }
}

#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
impl<T: dlmd::DlElement> DqShare<T, 64> for Split
where
    T: dlmd::kernel::warpgroup::Product<Cols<64>, dlmd::kernel::warpgroup::MnMajor>
        + dlmd::kernel::warpgroup::ProductRs<Cols<64>, Cols<64>>,
{
    #[inline(always)]
    fn column(_: usize) -> usize {
        0
    }
    #[inline(always)]
    fn product<'c>(
        wg: &mut Warpgroup<'c, 384>,
        ds: &Exchanged<'c, T, 128>,
        keys: &Landed<'c, AttentionTile<T, 64>>,
    ) -> Accumulators<T, Cols<64>> {
        // Every column, over this warpgroup's own 64 keys.
        let running = wg.mma_exchanged_own(Accumulators::zero(), ds, keys.by_n());
        wg.wait(running)
    }
}

/// The three gradients in one pass: `dk` and `dv` written as `out(value)`, `dQ · scale` added
/// to `dq`.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fused<T, const D: usize, const STAGES: usize>(
    block: FusedBlock<'_, T, D, STAGES>,
    [k, v]: [AttentionMap<'_, T, D>; 2],
    [q, d_o]: [HalfMap<'_, T, D>; 2],
    [lse, delta]: [RowStat<'_>; 2],
    (dk, dv, dq): (AttentionOut<'_, T>, AttentionOut<'_, T>, DqAccum<'_>),
    lengths: impl Lengths,
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T + Sync,
) where
    T: dlmd::kernel::warpgroup::Product<Cols<64>> + dlmd::kernel::warpgroup::ProductRs<Cols<D>, Cols<64>>,
    T: dlmd::kernel::warpgroup::ProductRs<Cols<64>, Cols<64>>,
    Cols<D>: dlmd::kernel::warpgroup::Width,
    Split: DqShare<T, D>,
{
    let (qe, ke) = (q.extents(), k.extents());
    if !fits::<D>(qe, ke, v.extents(), [lse.extents().0, delta.extents().0], scale)
        || (0..4).any(|d| dk.extents().0[d] != ke[d] || d_o.extents()[d] != qe[d] || dq.extents().0[d] != qe[d])
    {
        return;
    }
    let group = qe[1] / ke[1];
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let tiles = |n0: usize, s: Sequence| Queries::tiles(n0, 64, s.other_len, s.own_len, causal);
    // Each chunk of keys takes its query tiles from its own place in the turn, so that the
    // blocks of one head add to different rows of `dq` at once, not all to the same.
    let turned = |n0: usize, first: usize, all: usize, step: usize| first + (step + n0 / 128) % (all - first);
    let dq = Sums::pairs(dq);
    let (mut block, (mut set, exchange)) = block.split();
    let Some(chunks) = lengths.cut(block.chunks(dk)).and_then(|chunks| chunks.with_twin(dv)) else {
        return;
    };
    block.specialise_streams(
        &mut set,
        chunks,
        |producer, [b, hk, row, _]| {
            let s = lengths.at(row);
            producer.load_residents(&k, [b, hk, row, 0], &v, [b, hk, row, 0]);
            let n0 = row.saturating_sub(s.own0) / 128 * 128;
            let (first, all) = tiles(n0, s);
            for h in hk * group..(hk + 1) * group {
                for step in 0..all - first {
                    let m = turned(n0, first, all, step);
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
            let column = <Split as DqShare<T, D>>::column(wg.index());
            let (part_k, part_v) = part.split_twin();
            let (k_rows, v_rows) = consumer.residents();
            let mut acc_k = Accumulators::<T, Cols<D>>::zero();
            let mut acc_v = Accumulators::<T, Cols<D>>::zero();
            let (first, all) = tiles(n0, seq);
            for h in hk * group..(hk + 1) * group {
                for step in 0..all - first {
                    let m = turned(n0, first, all, step);
                    let q0 = 64 * m;
                    let at = seq.other0 + q0;
                    // `Sᵀ` and `dPᵀ` run together: the first wait sees both done.
                    let queries = consumer.first();
                    let st = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &k_rows, queries.borrow());
                    let grads = consumer.second();
                    let dpt = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &v_rows, grads.borrow());
                    let st = wg.wait(st);
                    let ours = seq.other0 + seq.other_len;
                    let lse = wg.cols_from::<64, _, _, _, _>(&lse, [b, h, at], ours, f32::INFINITY);
                    let visible = Queries::new(key0, q0, seq.other_len, seq.own_len, causal);
                    let pt = wg.recompute_probs(st, &lse, scale_log2, &visible);
                    let dpt = wg.wait(dpt);
                    let delta = wg.cols_from::<64, _, _, _, _>(&delta, [b, h, at], ours, 0.0);
                    let dst = wg.softmax_grad(&pt, dpt, &delta);
                    let ds = wg.exchange(&exchange, &dst);
                    let running_v = wg.mma_acc::<T, _, 64, D, _>(acc_v, pt, grads.by_n());
                    let running_k = wg.mma_acc::<T, _, 64, D, _>(acc_k, dst, queries.by_n());
                    // `dV` and `dK` done (their fragments free) before `dQ`'s registers.
                    acc_v = wg.wait(running_v);
                    acc_k = wg.wait(running_k);
                    let dq_part = <Split as DqShare<T, D>>::product(wg, &ds, &k_rows);
                    // Rows past the sequence are another's (or none's): not added.
                    let rows = ours.saturating_sub(at);
                    wg.add_to(&dq, [b, h, at, column], dq_part, |[i, _], x| {
                        (i < rows).then_some(x * scale)
                    });
                }
            }
            drop((k_rows, v_rows));
            wg.store(part_k, acc_k, |_, x| out(x * scale));
            wg.store(part_v, acc_v, |_, x| out(x));
        },
    );
}

/// `dq = sum` converted to the input type, element by element (`sum` the fused pass's
/// accumulator, scaled already); left as it is where the extents differ.
#[dlmd::device]
#[inline(always)]
fn convert<T: dlmd::DlElement>(thread: Thread, sum: DqSum<'_>, mut dq: AttentionOut<'_, T>, out: impl Fn(f32) -> T) {
    if (0..4).any(|d| sum.extents().0[d] != dq.extents().0[d]) {
        return;
    }
    thread.for_each_mut(&mut dq, |index, x| {
        if let Some(s) = sum.get(index) {
            *x = out(*s);
        }
    });
}

/// `dq` (`bf16`) from the fused backward pass's `f32` accumulator of the same extents; left
/// as it is where they differ. Any launch shape: a thread an element at a time.
#[dlmd::kernel]
pub fn attention_dq_convert_bf16(thread: Thread, sum: DqSum<'_>, dq: AttentionOut<'_, bf16>) {
    #[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
    convert(thread, sum, dq, to_bf16);
    #[cfg(not(any(target_arch = "nvptx64", dlmd_kernel_check)))]
    let _ = (thread, sum, dq);
}

/// `dq` (`f16`) from the fused backward pass's accumulator, as [`attention_dq_convert_bf16`].
#[dlmd::kernel]
pub fn attention_dq_convert_f16(thread: Thread, sum: DqSum<'_>, dq: AttentionOut<'_, f16>) {
    #[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
    convert(thread, sum, dq, to_f16);
    #[cfg(not(any(target_arch = "nvptx64", dlmd_kernel_check)))]
    let _ = (thread, sum, dq);
}

macro_rules! fused_kernels {
    ($name:ident, $t:ty, $d:literal, $stages:literal, $out:ident) => {
        /// The three gradients of attention in one pass, for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": `dk` and `dv` (`b × h_kv × s_k × ", $d, "`) from `k` and `v` (maps of 128-row boxes), `q` and `do` (`b × h_q × s_q × ", $d, "`, maps of 64-row boxes),")]
        /// `lse` and `Δ` (`b × h_q × s_q`), written; `dQ · scale` added to `dq_sum` (`f32`, of
        /// `q`'s extents, zero before each launch), which
        #[doc = concat!("`attention_dq_convert_", stringify!($t), "`")]
        /// converts to `dq` after. Nothing is written or added where the extents do not fit
        /// together. Launch with blocks of 384 threads, at most one per chunk of 128 key rows
        /// of a key-value head.
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            block: FusedBlock<'_, $t, $d, $stages>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            q: HalfMap<'_, $t, $d>,
            d_o: HalfMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dk_out: AttentionOut<'_, $t>,
            dv_out: AttentionOut<'_, $t>,
            dq_sum: DqAccum<'_>,
            scale: f32,
            causal: bool,
        ) {
            let lengths = Dense {
                own: k.extents()[2],
                other: q.extents()[2],
            };
            fused(block, [k, v], [q, d_o], [lse, delta], (dk_out, dv_out, dq_sum), lengths, scale, causal, $out);
        }
    };
}

fused_kernels!(attention_fused_bf16_d64, bf16, 64, 4, to_bf16);
fused_kernels!(attention_fused_bf16_d128, bf16, 128, 3, to_bf16);
fused_kernels!(attention_fused_f16_d64, f16, 64, 4, to_f16);
fused_kernels!(attention_fused_f16_d128, f16, 128, 3, to_f16);
