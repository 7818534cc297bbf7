//! Attention's forward pass, safe (`dlmd::kernel::warpgroup`): `o = softmax(q · kᵀ · scale) · v`
//! for `bf16` or `f16` `q` (`b × h_q × s_q × d`), `k` and `v` (`b × h_kv × s_k × d`, `h_kv`
//! dividing `h_q`: grouped-query and multi-query attention), head dimension `d` 64 or 128,
//! causal (aligned to the bottom right) or not, with `f32` statistics, in the manner of
//! FlashAttention-3. Each tensor is passed as its rows (`b · h · s × d`, contiguous).
//!
//! Blocks of 384 threads: a producer warpgroup, whose first thread brings a chunk's 128 query
//! rows into shared memory once and the keys and values 128 rows at a time, in stages of their
//! own, by the bulk copy engine; two consumer warpgroups of 64 query rows each, which compute
//! the scores `S = Q · Kᵀ` (`wgmma`, both operands in shared memory), take them into the online
//! softmax in registers (`RowStats`), and add `P · V` to the output (`wgmma` with `P` in
//! registers). `s_q` is a multiple of 128; `s_k` any length (keys past it are masked).

use dlmd::extents::Const;
use dlmd::half::{bf16, f16};
use dlmd::kernel::Block;
use dlmd::kernel::block::TileOf;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{KByN, Streams};
use dlmd::{DeviceMdspanMut, Dims};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {
    dlmd::kernel::math::{to_bf16, to_f16},
    dlmd::kernel::warpgroup::{Accumulators, Cols, KMajor, Keys, Product, ProductRs, RowStats, Width},
};

/// A tile of 128 rows of `q`, `k` or `v`: `128 × D`, in panels of 64 columns.
pub type AttentionTile<T, const D: usize> = TileOf<T, (Const<128>, Const<D>), Swizzle128>;
/// The tensor map of `q`, `k` or `v`: boxes of `128 × D`.
pub type AttentionMap<'a, T, const D: usize> = TensorMap<'a, T, (Const<128>, Const<D>), Swizzle128>;
/// The tiles of the forward pass: `q` resident, `k` and `v` streamed (`v` read MN-major).
pub type AttentionTiles<T, const D: usize, const STAGES: usize> =
    Streams<STAGES, AttentionTile<T, D>, AttentionTile<T, D>, KByN<AttentionTile<T, D>>>;
/// The block of the forward pass: one chunk of 128 query rows (`128 × D` of `o`) at a time.
pub type AttentionBlock<'k, T, const D: usize, const STAGES: usize> =
    Block<'k, 384, AttentionTiles<T, D, STAGES>, (Const<128>, Const<D>)>;

/// The shape of an attention call: heads of `q` and of `k`/`v`, query and key sequence lengths,
/// the softmax scale, and whether the mask is causal.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
#[derive(Clone, Copy)]
struct Shape {
    heads_q: usize,
    heads_kv: usize,
    seq_q: usize,
    seq_k: usize,
    causal: bool,
}

#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
impl Shape {
    /// The first row of the keys and values that the query row `row` of `q` attends to.
    #[inline(always)]
    fn kv_first(self, row: usize) -> usize {
        let sequence = row / self.seq_q;
        let (b, h) = (sequence / self.heads_q, sequence % self.heads_q);
        (b * self.heads_kv + h / (self.heads_q / self.heads_kv)) * self.seq_k
    }
}

/// The forward pass over `o`'s chunks, each element written as `out(value)`; `o` left as it is
/// where the extents do not fit together.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward<T, const D: usize, const STAGES: usize>(
    block: AttentionBlock<'_, T, D, STAGES>,
    q: AttentionMap<'_, T, D>,
    k: AttentionMap<'_, T, D>,
    v: AttentionMap<'_, T, D>,
    o: DeviceMdspanMut<'_, T, Dims<2>>,
    [heads_q, heads_kv, seq_q, seq_k]: [u32; 4],
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T + Sync,
) where
    T: Product<Cols<128>, KMajor> + ProductRs<Cols<D>>,
    Cols<D>: Width,
{
    let shape = Shape {
        heads_q: heads_q as usize,
        heads_kv: heads_kv as usize,
        seq_q: seq_q as usize,
        seq_k: seq_k as usize,
        causal,
    };
    let rows = o.extent(0);
    let sequences = shape.heads_q * shape.seq_q;
    let fits = shape.heads_kv > 0
        && shape.heads_q.is_multiple_of(shape.heads_kv)
        && shape.seq_q > 0
        && shape.seq_q.is_multiple_of(128)
        && rows.is_multiple_of(sequences)
        && o.extent(1) == D
        && q.extents() == [rows, D]
        && k.extents() == [rows / sequences * shape.heads_kv * shape.seq_k, D]
        && v.extents() == k.extents();
    if !fits {
        return;
    }
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let tiles = |m0: usize| Keys::tiles(m0, 128, shape.seq_q, shape.seq_k, causal);
    let (mut block, mut set) = block.split();
    let chunks = block.chunks(o);
    block.specialise_streams(
        &mut set,
        chunks,
        |producer, [i0, _]| {
            let kv0 = shape.kv_first(i0);
            producer.load_resident(&q, [i0, 0]);
            for n in 0..tiles(i0 % shape.seq_q) {
                producer.load_first(&k, [kv0 + 128 * n, 0]);
                producer.load_second(&v, [kv0 + 128 * n, 0]);
            }
        },
        |wg, consumer, part| {
            // The chunk's first row, and this warpgroup's first query in its sequence.
            let i0 = part.origin()[0] - 64 * wg.index();
            let m0 = i0 % shape.seq_q;
            let row0 = m0 + 64 * wg.index();
            let q_rows = consumer.resident();
            let mut stats = RowStats::new(wg);
            let mut acc = Accumulators::<T, Cols<D>>::zero();
            for n in 0..tiles(m0) {
                let scores = wg.mma_resident::<T, _, _, 128>(Accumulators::zero(), &q_rows, consumer.first());
                let scores = wg.wait(scores);
                let keys = Keys::new(row0, 128 * n, shape.seq_q, shape.seq_k, shape.causal);
                let probs = stats.update(scores, scale_log2, keys);
                let running = wg.mma_pv::<T, _, D>(acc, probs, consumer.second());
                acc = wg.wait(running);
            }
            drop(q_rows);
            let acc = stats.finish(acc);
            wg.store(part, acc, |_, x| out(x));
        },
    );
}

macro_rules! forward_kernel {
    ($name:ident, $t:ty, $d:literal, $stages:literal, $out:ident) => {
        /// The forward pass for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": `o` (`b · h_q · s_q × ", $d, "`) from `q` (the same), `k` and `v` (`b · h_kv · s_k × ", $d, "`) by their tensor maps;")]
        /// `shape` is `[h_q, h_kv, s_q, s_k]`, `scale` the softmax scale (positive; `1/√d` as
        /// torch's default), `causal` whether query `i` sees only keys `j ≤ i + s_k − s_q`.
        /// `o` is left as it is where the extents do not fit together (`s_q` a multiple of
        /// 128). Launch with blocks of 384 threads, at most one per chunk of 128 query rows.
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            block: AttentionBlock<'_, $t, $d, $stages>,
            q: AttentionMap<'_, $t, $d>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            o: DeviceMdspanMut<'_, $t, Dims<2>>,
            heads_q: u32,
            heads_kv: u32,
            seq_q: u32,
            seq_k: u32,
            scale: f32,
            causal: bool,
        ) {
            forward(block, q, k, v, o, [heads_q, heads_kv, seq_q, seq_k], scale, causal, $out);
        }
    };
}

forward_kernel!(attention_bf16_d64, bf16, 64, 4, to_bf16);
forward_kernel!(attention_bf16_d128, bf16, 128, 2, to_bf16);
forward_kernel!(attention_f16_d64, f16, 64, 4, to_f16);
forward_kernel!(attention_f16_d128, f16, 128, 2, to_f16);
