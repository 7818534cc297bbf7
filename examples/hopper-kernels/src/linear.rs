//! Safe `wgmma` products (`dlmd::kernel::warpgroup`): `y = x · wᵀ` with `x` row-major `m × k`
//! and the weight `w` row-major `n × k` (both K-major), and `y = x · b` with `b` row-major
//! `k × n` (read MN-major), any `m`, `n`, `k` whose rows the copy engine can address (each
//! operand's rows a multiple of 16 bytes), the edges of the operands arriving as zero.
//! Blocks of 384 threads: a producer warpgroup, whose first thread fills four stages by the
//! bulk copy engine, and two consumer warpgroups of `64 × 256` accumulators each, one
//! `128 × 256` chunk of `y` a block. The consumers write their accumulators through a buffer
//! for each warp, copied to `y` by the bulk copy engine while they go on to the next chunk
//! (`Buffered`).

use dlmd::dtype::F8E4M3FN;
use dlmd::extents::Const;
use dlmd::half::{bf16, f16};
use dlmd::kernel::Block;
use dlmd::kernel::block::{Grouped, TileOf};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::kernel::warpgroup::{Buffered, Direct, KByN, Pipeline};
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {
    dlmd::dtype::DlElement,
    dlmd::kernel::block::ChunkShape,
    dlmd::kernel::math::{exp, mul_add, rcp, to_bf16, to_f16},
    dlmd::kernel::warpgroup::{Accumulators, Cols, MnMajor, MnMajorInput, OperandB, Product, Stores, Warpgroup},
};

/// A consumer warpgroup's part of a chunk of an output of `O`.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
type Part<'v, O> = dlmd::kernel::block::Chunk<'v, O, Dims<2>, dlmd::LayoutRight, dlmd::Device>;

/// A stage's rows of `x`: `128 × D` (`D` elements of 128 bytes).
pub type XTile<T, const D: usize> = TileOf<T, (Const<128>, Const<D>), Swizzle128>;
/// A stage's rows of `w`: `256 × D`.
pub type WTile<T, const D: usize> = TileOf<T, (Const<256>, Const<D>), Swizzle128>;
/// The tensor map of `x` for a product of depth `D` a stage.
pub type XMap<'a, T, const D: usize> = TensorMap<'a, T, (Const<128>, Const<D>), Swizzle128>;
/// The tensor map of `w`.
pub type WMap<'a, T, const D: usize> = TensorMap<'a, T, (Const<256>, Const<D>), Swizzle128>;
/// A stage's rows of a row-major `b` (`k × n`): `64 × 256`, four column panels of 64, read
/// MN-major.
pub type BTile<T> = KByN<TileOf<T, (Const<64>, Const<256>), Swizzle128>>;
/// The tensor map of a row-major `b`: tiles of `64 × 256`.
pub type BMap<'a, T> = TensorMap<'a, T, (Const<64>, Const<256>), Swizzle128>;
/// The chunks of a product: `128 × 256`, dealt in groups of 16 chunk rows, so that the blocks
/// running at once share their operands in L2.
pub type LinearChunk = Grouped<(Const<128>, Const<256>), 16>;
/// The block of a product: four stages, `128 × 256` chunks, the accumulators written through
/// the consumer warps' buffers by the bulk copy engine.
pub type LinearBlock<'k, T, const D: usize, C = LinearChunk, O = Buffered> =
    Block<'k, 384, Pipeline<4, XTile<T, D>, WTile<T, D>, O>, C>;
/// The block of a product with a row-major `b`: four stages of depth 64, `128 × 256` chunks.
pub type MatmulBlock<'k, T> = Block<'k, 384, Pipeline<4, XTile<T, 64>, BTile<T>, Buffered>, LinearChunk>;

/// The stages of a depth of `k` at `depth` a stage.
#[dlmd::device]
const fn steps(k: usize, depth: usize) -> usize {
    k.div_ceil(depth)
}

/// `y[i, j] = out([i, j], init([i, j]) + Σ x[i, ·] w[j, ·])`, the sum in `f32`; `y` left as it
/// is where the extents do not fit together.
#[dlmd::device]
#[inline(always)]
fn linear<T, O, C, S, const D: usize>(
    block: LinearBlock<'_, T, D, C, S>,
    x: XMap<'_, T, D>,
    w: WMap<'_, T, D>,
    y: DeviceMdspanMut<'_, O, Dims<2>>,
    init: impl Fn([usize; 2]) -> f32 + Sync,
    out: impl Fn([usize; 2], f32) -> O + Sync,
) where
    T: Product<Cols<256>>,
    O: DlElement,
    C: ChunkShape<[usize; 2]>,
    S: Stores,
{
    let [n, k] = w.extents();
    let from_w = |j0: usize, k0: usize| [j0, k0];
    product(block, x, &w, [k, n], from_w, y, init, |wg, part, acc| {
        wg.store(part, acc, &out)
    });
}

/// The products of [`linear`] (or, with a [`KByN`] `B`, of `x · b`), each warpgroup's
/// accumulators handed to `finish` with its part of the chunk, which writes them. `b` is the
/// map of `B`'s operand, `[k, n]` its extents along the product's depth and `y`'s columns, and
/// `b_at(j0, k0)` the origin of its tile for `y`'s columns from `j0` at depth `k0`.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn product<'m, T, O, B, C, S, const D: usize>(
    block: Block<'_, 384, Pipeline<4, XTile<T, D>, B, S>, C>,
    x: XMap<'_, T, D>,
    b: &B::Map<'m, 2>,
    [kb, n]: [usize; 2],
    b_at: impl Fn(usize, usize) -> [usize; 2] + Sync,
    y: DeviceMdspanMut<'_, O, Dims<2>>,
    init: impl Fn([usize; 2]) -> f32 + Sync,
    finish: impl for<'c, 'v> Fn(&mut Warpgroup<'c, 384>, Part<'v, O>, Accumulators<T, Cols<256>>) + Sync,
) where
    T: Product<Cols<256>, B::Major>,
    B: OperandB<T, 256>,
    B::Map<'m, 2>: Sync,
    O: DlElement,
    C: ChunkShape<[usize; 2]>,
    S: Stores,
{
    let [m, k] = x.extents();
    if k != kb || y.extent(0) != m || y.extent(1) != n {
        return;
    }
    let steps = steps(k, D);
    let (mut block, mut stages) = block.split();
    let chunks = block.chunks(y);
    block.specialise(
        &mut stages,
        chunks,
        |producer, [i0, j0]| {
            for s in 0..steps {
                producer.load(&x, [i0, D * s], b, b_at(j0, D * s));
            }
        },
        |wg, consumer, part| {
            // The accumulators start from `init` of each element's index in `y`.
            let [i0, j0] = part.origin();
            let start = wg.accumulators::<T, Cols<256>>(|[i, j]| init([i0 + i, j0 + j]));
            // One group of products left running while the next stage's is issued.
            let mut acc = wg.mma(start, consumer.wait());
            for _ in 1..steps {
                let running = wg.mma(acc, consumer.wait());
                acc = wg.wait(running);
            }
            let acc = wg.wait(acc);
            finish(wg, part, acc);
        },
    );
}

/// `y = out(x · b)` with `b` row-major `k × n`, read MN-major: 64 along `k` a stage.
#[dlmd::device]
#[inline(always)]
fn matmul<T, O>(
    block: MatmulBlock<'_, T>,
    x: XMap<'_, T, 64>,
    b: BMap<'_, T>,
    y: DeviceMdspanMut<'_, O, Dims<2>>,
    out: impl Fn([usize; 2], f32) -> O + Sync,
) where
    T: Product<Cols<256>, MnMajor> + MnMajorInput,
    O: DlElement,
{
    let from_b = |j0: usize, k0: usize| [k0, j0];
    product(
        block,
        x,
        &b,
        b.extents(),
        from_b,
        y,
        |_| 0.0,
        |wg, part, acc| wg.store(part, acc, &out),
    );
}

/// `y = x · wᵀ` on `bf16`, `f32` accumulators, `bf16` out: 64 along `k` a stage. Launch
/// blocks of 384 threads (the launcher sizes the shared memory); any grid (blocks take chunks
/// `b`, `b + blocks`, …).
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_bf16(
    block: LinearBlock<'_, bf16, 64>,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    linear(block, x, w, y, |_| 0.0, |_, v| to_bf16(v));
}

/// For measurements: [`linear_bf16`] with its accumulators stored from registers
/// ([`Direct`]), not through shared memory and the bulk copy engine.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_bf16_direct(
    block: LinearBlock<'_, bf16, 64, LinearChunk, Direct>,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    linear(block, x, w, y, |_| 0.0, |_, v| to_bf16(v));
}

/// For measurements: [`linear_bf16`] without its epilogue (the accumulators are dropped, `y`
/// left as it is), to tell what the stores cost from what the products do.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_bf16_products(
    block: LinearBlock<'_, bf16, 64>,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let [n, k] = w.extents();
    product(block, x, &w, [k, n], |j0, k0| [j0, k0], y, |_| 0.0, |_, _, _| {});
}

/// [`linear_bf16`] on `f16`, `f16` out.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_f16(
    block: LinearBlock<'_, f16, 64>,
    x: XMap<'_, f16, 64>,
    w: WMap<'_, f16, 64>,
    y: DeviceMdspanMut<'_, f16, Dims<2>>,
) {
    linear(block, x, w, y, |_| 0.0, |_, v| to_f16(v));
}

/// `y = (scale_x · scale_w) · x · wᵀ` on FP8 E4M3 inputs with per-tensor scales, `bf16` out:
/// 128 along `k` a stage (rows of 128 bytes).
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_fp8(
    block: LinearBlock<'_, F8E4M3FN, 128>,
    scale_x: f32,
    scale_w: f32,
    x: XMap<'_, F8E4M3FN, 128>,
    w: WMap<'_, F8E4M3FN, 128>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let scale = scale_x * scale_w;
    linear(block, x, w, y, |_| 0.0, |_, v| to_bf16(scale * v));
}

/// The activation of [`linear_bias_bf16`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, dlmd::DlElement)]
#[repr(transparent)]
pub struct Activation(pub u32);

impl Activation {
    /// None: `y = x · wᵀ + bias`.
    pub const NONE: Self = Self(0);
    /// GELU, tanh approximation (torch's `gelu(approximate="tanh")`).
    pub const GELU_TANH: Self = Self(1);
    /// SiLU (`x · sigmoid(x)`).
    pub const SILU: Self = Self(2);

    /// The activation of `v`.
    #[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
    #[inline(always)]
    fn of(self, v: f32) -> f32 {
        match self {
            // ½ x (1 + tanh(√(2/π)(x + 0.044715 x³))) = x · sigmoid(2 · √(2/π) · (x + 0.044715 x³)),
            // the inner sum as `x · (c + c · 0.044715 · x²)`: one multiply-add.
            Activation::GELU_TANH => v * rcp(1.0 + exp(v * mul_add(v * v, -1.595_769 * 0.044_715, -1.595_769))),
            Activation::SILU => v * rcp(1.0 + exp(-v)),
            _ => v,
        }
    }
}

/// A `Linear` layer's forward pass with its epilogue fused: `y = act(x · wᵀ + bias)` on
/// `bf16` (`bias` of `n`, [`Activation`]), `f32` until the one rounding to `bf16`.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn linear_bias_bf16(
    block: LinearBlock<'_, bf16, 64>,
    activation: Activation,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    bias: DeviceMdspan<'_, bf16, Dims<1>>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    if bias.extent(0) != w.extents()[0] {
        return;
    }
    // The bias is where the accumulators start: loaded while the first stage lands.
    let start = |[_, j]: [usize; 2]| bias.get_or([j], bf16::ZERO).to_f32();
    // One body for each activation, chosen once: a choice made for each element would put a
    // branch between the elements of the epilogue, which runs while the tensor cores wait.
    match activation {
        Activation::GELU_TANH => linear(block, x, w, y, start, |_, v| to_bf16(Activation::GELU_TANH.of(v))),
        Activation::SILU => linear(block, x, w, y, start, |_, v| to_bf16(Activation::SILU.of(v))),
        _ => linear(block, x, w, y, start, |_, v| to_bf16(v)),
    }
}

/// `c = α · x · wᵀ + β · c` on `bf16` inputs, `f32` `c`.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn gemm_bf16(
    block: LinearBlock<'_, bf16, 64>,
    alpha: f32,
    beta: f32,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let [n, k] = w.extents();
    product(
        block,
        x,
        &w,
        [k, n],
        |j0, k0| [j0, k0],
        c,
        |_| 0.0,
        |wg, part, acc| {
            wg.update(
                part,
                acc,
                |_, v, old| {
                    if beta == 0.0 { alpha * v } else { alpha * v + beta * old }
                },
            )
        },
    );
}

/// `y = x · b` on `bf16` with `b` row-major (`k × n`: `a @ b` of two row-major matrices, `wgmma`
/// reading `b` MN-major), `f32` accumulators, `bf16` out: 64 along `k` a stage. Launch as
/// [`linear_bf16`]; `n` a multiple of 8 (the rows of `b` a multiple of 16 bytes).
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn matmul_bf16(
    block: MatmulBlock<'_, bf16>,
    x: XMap<'_, bf16, 64>,
    b: BMap<'_, bf16>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    matmul(block, x, b, y, |_, v| to_bf16(v));
}

/// [`matmul_bf16`] on `f16`, `f16` out.
#[dlmd::kernel(min_blocks_per_sm = 1)]
pub fn matmul_f16(
    block: MatmulBlock<'_, f16>,
    x: XMap<'_, f16, 64>,
    b: BMap<'_, f16>,
    y: DeviceMdspanMut<'_, f16, Dims<2>>,
) {
    matmul(block, x, b, y, |_, v| to_f16(v));
}
