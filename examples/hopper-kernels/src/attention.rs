//! Attention's forward pass, safe (`dlmd::kernel::warpgroup`): `o = softmax(q · kᵀ · scale) · v`
//! and each query row's log-sum-exp `lse = ln Σⱼ e^(q · kⱼ · scale)` (what a backward pass
//! recomputes the softmax from), for `bf16` or `f16` `q` (`b × h_q × s_q × d`), `k` and `v` (`b × h_kv × s_k × d`, `h_kv`
//! dividing `h_q`: grouped-query and multi-query attention), head dimension `d` 64 or 128,
//! causal (aligned to the bottom right) or not, with `f32` statistics, in the manner of
//! FlashAttention-3. Each tensor is a view of rank 4 with any strides that a tensor map takes
//! (a head's rows 16-byte aligned apart, its elements contiguous): `(b, h, s, d)` tensors,
//! torch's `(b, s, h, d)` ones seen as `(b, h, s, d)`, or one of `q`, `k`, `v` packed together.
//!
//! Each block is a producer warpgroup, whose first thread brings a chunk's query rows of one
//! head into shared memory once and the keys and values 128 rows at a time, in stages of their
//! own, by the bulk copy engine, and a consumer warpgroup for each 64 of the chunk's rows, which
//! computes the scores `S = Q · Kᵀ` (`wgmma`, both operands in shared memory), takes them into
//! the online softmax in registers (`RowStats`), and adds `P · V` to the output (`wgmma` with
//! `P` in registers). The chunks are of [`forward_chunk`]`(d).rows` rows: 192 (three consumers, 512
//! threads) at head dimension 64, where the softmax costs as much as the products and a third
//! warpgroup keeps the tensor cores busy through two others' softmax, and 128 (two, 384 threads)
//! at 128. Causal, a warpgroup releases unread the tiles of keys that only the chunk's later
//! rows see. Any sequence lengths: rows past a head's last arrive as zeros (the maps are of rank
//! 4: a box never reaches into the next head), and keys past it are masked. Each consumer
//! writes its rows of `o` and their log-sum-exp: the chunks of `o` carry those of `lse`
//! (`Chunks::with_rows`).

pub use crate::sequences::SeqOffsets;
use dlmd::extents::Const;
use dlmd::half::{bf16, f16};
use dlmd::kernel::Block;
use dlmd::kernel::block::{LastRowsFirst, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{KByN, Streams};
use dlmd::{DeviceMdspanMut, Dims, LayoutStride};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {
    crate::sequences::{Dense, Lengths, Sequence, packed},
    dlmd::kernel::math::{to_bf16, to_f16},
    dlmd::kernel::warpgroup::{Accumulators, Cols, KMajor, Keys, Product, ProductRs, RowStats, Width},
};

/// A tile of 128 rows of a head of `q`, `k` or `v`: `128 × D`, in panels of 64 columns.
pub type AttentionTile<T, const D: usize> = TileOf<T, (Const<128>, Const<D>), Swizzle128>;
/// The tensor map of `k` or `v` (`b × h × s × D`), or of `q` where its chunks are of 128 rows:
/// boxes of `128 × D` of one head.
pub type AttentionMap<'a, T, const D: usize> = TensorMap<'a, T, (Const<128>, Const<D>), Swizzle128, 4>;
/// The output `o`, `b × h_q × s_q × D`, strided (the heads' rows contiguous).
pub type AttentionOut<'a, T> = DeviceMdspanMut<'a, T, Dims<4>, LayoutStride>;
/// Each query row's log-sum-exp, `b × h_q × s_q` `f32`, strided; `+∞` for a row that sees no
/// key.
pub type AttentionLse<'a> = DeviceMdspanMut<'a, f32, Dims<3>, LayoutStride>;
/// The query rows of a chunk of the forward pass and the threads of its block (a producer
/// warpgroup and a consumer for each 64 rows): [`forward_chunk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForwardChunk {
    /// The query rows of a chunk of one head.
    pub rows: usize,
    /// The threads of a block: `128 · (rows / 64 + 1)`.
    pub threads: u32,
}

/// The chunk of the forward pass at head dimension `d`: at 64, three consumer warpgroups
/// (192 rows, 512 threads), as FlashAttention-3 runs it, so that one warpgroup's softmax has
/// two others' products to hide behind; at 128, two (128 rows, 384 threads), which the
/// accumulators' registers allow. The safe kernels and their raw twins alike.
pub const fn forward_chunk(d: usize) -> ForwardChunk {
    let rows = if d == 64 { 192 } else { 128 };
    ForwardChunk {
        rows,
        threads: (128 * (rows / 64 + 1)) as u32,
    }
}

/// A tile of `ROWS` query rows of a head of `q`: `ROWS × D`, in panels of 64 columns.
pub type QueryTile<T, const ROWS: usize, const D: usize> = TileOf<T, (Const<ROWS>, Const<D>), Swizzle128>;
/// The tensor map of `q` (`b × h × s × D`) with boxes of `ROWS × D` of one head.
pub type QueryMap<'a, T, const ROWS: usize, const D: usize> = TensorMap<'a, T, (Const<ROWS>, Const<D>), Swizzle128, 4>;
/// The tiles of the forward pass: `ROWS` rows of `q` resident, `k` and `v` streamed 128 rows
/// at a time (`v` read MN-major).
pub type AttentionTiles<T, const ROWS: usize, const D: usize, const STAGES: usize> =
    Streams<STAGES, QueryTile<T, ROWS, D>, AttentionTile<T, D>, KByN<AttentionTile<T, D>>>;
/// The block of the forward pass: a producer warpgroup and one consumer warpgroup for each 64
/// of the `ROWS` query rows of a chunk (`1 × 1 × ROWS × D` of `o`), one chunk at a time, each
/// head's last rows first (under the causal mask they see the most keys: the blocks started
/// first take the longest chunks, the grid ends on short ones; packed sequences, the last
/// sequence first).
pub type AttentionBlock<'k, T, const THREADS: usize, const ROWS: usize, const D: usize, const STAGES: usize> =
    Block<'k, THREADS, AttentionTiles<T, ROWS, D, STAGES>, LastRowsFirst<(Const<1>, Const<1>, Const<ROWS>, Const<D>)>>;

/// The forward pass over `o`'s chunks, each element written as `out(value)`, and `lse`; both
/// left as they are where the extents do not fit together or the scale is not positive. The
/// queries' sequences are found by `lengths` (`Dense`: `q`'s own; `Packed`: segments of its
/// rows, `k`'s alike).
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward<T, const THREADS: usize, const ROWS: usize, const D: usize, const STAGES: usize>(
    block: AttentionBlock<'_, T, THREADS, ROWS, D, STAGES>,
    q: QueryMap<'_, T, ROWS, D>,
    [k, v]: [AttentionMap<'_, T, D>; 2],
    (o, lse): (AttentionOut<'_, T>, AttentionLse<'_>),
    lengths: impl Lengths,
    scale: f32,
    causal: bool,
    out: impl Fn(f32) -> T + Sync,
) where
    T: Product<Cols<128>, KMajor> + ProductRs<Cols<D>>,
    Cols<D>: Width,
{
    let [batch, heads_q, _, depth] = q.extents();
    let [batch_kv, heads_kv, _, depth_kv] = k.extents();
    // Element by element: an array comparison would call `memcmp`, which kernels lack.
    let same = |a: [usize; 4], b: [usize; 4]| (0..4).all(|d| a[d] == b[d]);
    let fits = heads_kv > 0
        && heads_q.is_multiple_of(heads_kv)
        && depth == D
        && depth_kv == D
        && batch_kv == batch
        && same(v.extents(), k.extents())
        && same(o.extents().0, q.extents())
        // Positive and finite: the softmax takes each row's maximum before scaling.
        && scale > 0.0
        && scale.is_finite();
    if !fits {
        return;
    }
    let group = heads_q / heads_kv;
    let scale_log2 = scale * core::f32::consts::LOG2_E;
    let tiles = |m0: usize, s: Sequence| Keys::tiles(m0, ROWS, s.own_len, s.other_len, causal);
    let (mut block, mut set) = block.split();
    // `lse`'s extents are `o`'s but the last, and the sequences fit `o`, or nothing is written.
    let Some(chunks) = lengths.cut(block.chunks(o)).and_then(|chunks| chunks.with_rows(lse)) else {
        return;
    };
    block.specialise_streams(
        &mut set,
        chunks,
        |producer, [b, h, row, _]| {
            let s = lengths.at(row);
            producer.load_resident(&q, [b, h, row, 0]);
            for n in 0..tiles(row.saturating_sub(s.own0), s) {
                producer.load_first(&k, [b, h / group, s.other0 + 128 * n, 0]);
                producer.load_second(&v, [b, h / group, s.other0 + 128 * n, 0]);
            }
        },
        |wg, consumer, part| {
            // The chunk's first query in its sequence (its part starts 64 · index rows in, or
            // at the sequence's end where the chunk is shorter), and this warpgroup's first.
            let first = part.origin()[2];
            let s = lengths.of(first, part.segment());
            let m0 = first.saturating_sub(s.own0) / ROWS * ROWS;
            let (part, rows) = part.split_rows();
            let row0 = m0 + 64 * wg.index();
            let q_rows = consumer.resident();
            let mut stats = RowStats::new(wg);
            let mut acc = Accumulators::<T, Cols<D>>::zero();
            // The tiles of keys this warpgroup's rows see: none where its rows are all past the
            // sequence's end (a chunk cut short), and causal, fewer than the chunk's later rows
            // see. The rest it releases unread.
            let mine = if row0 < s.own_len {
                Keys::tiles(row0, 64, s.own_len, s.other_len, causal)
            } else {
                0
            };
            let all = tiles(m0, s);
            for n in 0..mine.min(all) {
                let scores = wg.mma_resident::<T, _, _, 128, _>(Accumulators::zero(), &q_rows, consumer.first());
                let scores = wg.wait(scores);
                let keys = Keys::new(row0, 128 * n, s.own_len, s.other_len, causal);
                let probs = stats.update(scores, scale_log2, keys);
                let running = wg.mma_pv::<T, _, D>(acc, probs, consumer.second());
                acc = wg.wait(running);
            }
            for _ in mine..all {
                drop((consumer.first(), consumer.second()));
            }
            drop(q_rows);
            let (acc, lse) = stats.finish_with_lse(acc);
            wg.store(part, acc, |_, x| out(x));
            wg.store_rows(rows, lse, |_, x| x);
        },
    );
}

macro_rules! forward_kernel {
    ($name:ident, $varlen:ident, $t:ty, $d:literal, $stages:literal, $out:ident) => {
        /// The forward pass for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": `o` (`b × h_q × s_q × ", $d, "`) and `lse` (`b × h_q × s_q`) from `q` (as `o`), `k` and `v` (`b × h_kv × s_k × ", $d, "`) by their tensor maps;")]
        /// `scale` the softmax scale (positive and finite; `1/√d` as torch's default),
        /// `causal` whether query `i` sees only keys `j ≤ i + s_k − s_q`. `o` and `lse` are
        /// left as they are where the extents do not fit together (`o`'s those of `q`,
        /// `lse`'s those of `o` but the last, `k`'s those of `v`, the same batch, `h_kv`
        /// dividing `h_q`) or the scale is not positive and finite. Launch with blocks of
        #[doc = concat!("[`forward_chunk`]`(", $d, ").threads` threads, at most one per chunk of `forward_chunk(", $d, ").rows` query rows of a head.")]
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            block: AttentionBlock<'_, $t, { forward_chunk($d).threads as usize }, { forward_chunk($d).rows }, $d, $stages>,
            q: QueryMap<'_, $t, { forward_chunk($d).rows }, $d>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            o: AttentionOut<'_, $t>,
            lse: AttentionLse<'_>,
            scale: f32,
            causal: bool,
        ) {
            let lengths = Dense {
                own: q.extents()[2],
                other: k.extents()[2],
            };
            forward(block, q, [k, v], (o, lse), lengths, scale, causal, $out);
        }

        /// The forward pass of sequences of different lengths packed together, for
        #[doc = concat!("`", stringify!($t), "`, head dimension ", $d, ": as [`", stringify!($name), "`] on `q`, `o` (`1 × h_q × total_q × ", $d, "`), `lse` (`1 × h_q × total_q`), `k` and `v` (`1 × h_kv × total_k × ", $d, "`),")]
        /// sequence `i` the rows `cu_q[i] .. cu_q[i + 1]` of `q` and `cu_k[i] .. cu_k[i +
        /// 1]` of `k` and `v` (`b + 1` offsets each, as `flash_attn_varlen_func` takes them);
        /// `causal` aligned to each sequence's bottom right. Also left as they are where the
        /// offsets are negative or decrease, count different numbers of sequences, or reach
        /// past their tensors' rows; rows of `o` past the last offset are not written. Launch
        #[doc = concat!("with blocks of [`forward_chunk`]`(", $d, ").threads` threads, as many as fit (at most one per chunk number: a head has `total_q / forward_chunk(", $d, ").rows`")]
        /// and one more for each sequence).
        #[dlmd::kernel(min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $varlen(
            block: AttentionBlock<'_, $t, { forward_chunk($d).threads as usize }, { forward_chunk($d).rows }, $d, $stages>,
            q: QueryMap<'_, $t, { forward_chunk($d).rows }, $d>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            o: AttentionOut<'_, $t>,
            lse: AttentionLse<'_>,
            cu_q: SeqOffsets<'_>,
            cu_k: SeqOffsets<'_>,
            scale: f32,
            causal: bool,
        ) {
            if let Some(lengths) = packed(cu_q, cu_k, k.extents()[2]) {
                forward(block, q, [k, v], (o, lse), lengths, scale, causal, $out);
            }
        }
    };
}

forward_kernel!(attention_bf16_d64, attention_varlen_bf16_d64, bf16, 64, 4, to_bf16);
forward_kernel!(attention_bf16_d128, attention_varlen_bf16_d128, bf16, 128, 2, to_bf16);
forward_kernel!(attention_f16_d64, attention_varlen_f16_d64, f16, 64, 4, to_f16);
forward_kernel!(attention_f16_d128, attention_varlen_f16_d128, f16, 128, 2, to_f16);
