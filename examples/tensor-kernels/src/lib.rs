//! Tensor-core kernels written in Rust over dlmd's typed tiles and fragments
//! ([`dlmd::kernel::mma`]): matrix products on `bf16` and `f16` with `f32` accumulators by
//! `mma.sync` (`sm_80` and later), their operands brought into block-shared tiles by
//! asynchronous copies (`cp.async`) one step ahead of the products, and a `Linear` layer's
//! bias and activation fused into the product's epilogue. Compiled for `nvptx64-nvidia-cuda`
//! each `#[dlmd::kernel]` is a PTX entry point; for the host, its typed launcher.
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(
        abi_ptx,
        asm_experimental_arch,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    ),
    allow(internal_features)
)]

use dlmd::half::{bf16, f16};
use dlmd::kernel::Block;
use dlmd::kernel::block::{Grouped, LeftSwizzled, RightSwizzled, TileOf};
use dlmd::kernel::mma::M16N8K16;
use dlmd::kernel::swizzle::{Swizzle64, Swizzle128};
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims, LayoutLeft};
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
use {dlmd::DlElement, dlmd::kernel::block::TileLayout, dlmd::kernel::mma::MmaInput, dlmd::layout::Layout};

mod raw;

pub use raw::{GEMM_RAW_SHARED, GemmBf16RawArgs, MATMUL_RAW_SHARED, MatmulBf16RawArgs, gemm_bf16_raw, matmul_bf16_raw};

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// The rows, columns and depth of one step of each block of the products: a `128 × 128` chunk
/// of the result, `64` along `k` a step.
pub const GEMM_TILE: [usize; 3] = [128, 128, 64];

/// The threads of each block of the products: 4 warps.
pub const GEMM_THREADS: u32 = 128;

/// The chunks of the result each block computes, `128 × 128`, dealt in groups of 8 chunk rows
/// (column by column within a group): the blocks running at once share rows of `a` and columns
/// of `b`, which they find in L2, as the raw twins order theirs.
pub type GemmChunk = Grouped<(Const<128>, Const<128>), 8>;

/// The tiling of the products: 4 warps, 2 × 2, each `64 × 64` (4 × 8 atoms of `m16n8k16`). On
/// the H100, a warp of `64 × 64` reads each fragment it loads from shared memory into twice as
/// many products as one of `64 × 32`, and the products run 1.2× faster than with 8 warps of
/// `64 × 32`, whose loads kept shared memory's bandwidth busy.
pub type GemmTiling<T> = dlmd::kernel::mma::Mma<M16N8K16<T>, 2, 2, 4, 8>;

/// A step of `A`: `128 × 64`, row-major, each row one 128-byte swizzled row (`ldmatrix` reads
/// them without bank conflicts, and `cp.async` fills them 16 bytes at a time, each 32-byte
/// sector of `a` into one of the tile's).
pub type TileA<T> = TileOf<T, (Const<128>, Const<64>), RightSwizzled<Swizzle128>>;

/// A step of a row-major `B` (`k × n`): `64 × 128`, two panels of 64 columns, swizzled.
pub type TileB<T> = TileOf<T, (Const<64>, Const<128>), RightSwizzled<Swizzle128>>;

/// A step of a column-major `B`, which is a row-major `n × k` weight (`x · wᵀ`): `64 × 128`,
/// each column one 128-byte swizzled line.
pub type TileBt<T> = TileOf<T, (Const<64>, Const<128>), LeftSwizzled<Swizzle128>>;

/// One stage of operand tiles: a step of `A` and one of `B`.
pub type Stage<T, LB> = (TileA<T>, TileOf<T, (Const<64>, Const<128>), LB>);

/// Three stages of operand tiles: while one is multiplied, the next two steps' are in flight
/// (96 KiB of shared memory a block, which the launcher opts in to: two blocks a
/// multiprocessor).
pub type Stages<T, LB> = (Stage<T, LB>, Stage<T, LB>, Stage<T, LB>);

/// `c[i, j] = out([i, j], (a · b)[i, j], c[i, j])` for a row-major `m × k` `a` and a `k × n`
/// `b` (row-major, or column-major with `LB` a column-major tile), each block computing
/// `128 × 128` chunks of `c` (mismatched extents leave `c` as it is). Along `k` in steps of 64,
/// three stages in turn: the tiles of the next two steps are fetched (`cp.async`) while this
/// step's are multiplied, and one barrier a step makes this step's readable and the last
/// step's writable again. Past the edges of `a` and `b` the tiles are zero.
#[dlmd::device]
#[inline(always)]
#[allow(clippy::type_complexity)]
fn product<T, LB, L2, O>(
    block: Block<'_, 128, Stages<T, LB>, GemmChunk>,
    a: DeviceMdspan<'_, T, Dims<2>>,
    b: DeviceMdspan<'_, T, Dims<2>, L2>,
    c: DeviceMdspanMut<'_, O, Dims<2>>,
    out: impl Fn([usize; 2], f32, O) -> O + Sync,
) where
    T: MmaInput,
    LB: TileLayout,
    L2: Layout,
    O: DlElement,
{
    let [_, _, bk] = GEMM_TILE;
    let depth = a.extent(1);
    if b.extent(0) != depth || a.extent(0) != c.extent(0) || b.extent(1) != c.extent(1) {
        return;
    }
    let (mut block, (mut s0, mut s1, mut s2)) = block.split();
    for chunk in block.chunks(c) {
        let [i0, j0] = chunk.origin();
        let mut acc = block.accumulators::<M16N8K16<T>, 2, 2, 4, 8>();
        // Step `k0`'s tiles into a writable stage.
        macro_rules! fetch {
            ($block:expr, $stage:expr, $k0:expr) => {{
                let (ta, tb) = $stage;
                ($block.fetch(ta, &a, [i0, $k0]), $block.fetch(tb, &b, [$k0, j0]))
            }};
        }
        // The first two steps in flight, then the first step (its barrier makes the third
        // stage writable, as it was), then the loop's shape: the stage multiplied last
        // (`prev`, readable) and the next two in flight. A step's fetch goes out while the
        // first fragments of the step multiplied load (`mma_with`).
        let mut n1 = fetch!(block, s0, 0);
        let mut n2 = fetch!(block, s1, bk);
        let landed = block.landed(n1);
        let (r, free) = block.sync((landed, s2));
        n1 = n2;
        (acc, n2) = block.mma_with(acc, &r.0, &r.1, |block| fetch!(block, free, 2 * bk));
        let mut prev = r;
        let mut k0 = bk;
        // While there is a step two ahead to fetch.
        while k0 + 2 * bk < depth {
            // One barrier: this step's tiles readable, the last step's writable again.
            let landed = block.landed(n1);
            let (r, free) = block.sync((landed, prev));
            n1 = n2;
            (acc, n2) = block.mma_with(acc, &r.0, &r.1, |block| fetch!(block, free, k0 + 2 * bk));
            prev = r;
            k0 += bk;
        }
        // The last two steps (where they are inside `k`), with nothing left to fetch: past the
        // first steps (which, for a depth of two steps or less, fetch zeros past the end), no
        // copy goes past the end, and each barrier frees a stage for the next chunk.
        let landed = block.landed(n1);
        let (r, f1) = block.sync((landed, prev));
        if k0 < depth {
            acc = block.mma(acc, &r.0, &r.1);
        }
        let landed = block.landed(n2);
        let (last, f2) = block.sync((landed, r));
        if k0 + bk < depth {
            acc = block.mma(acc, &last.0, &last.1);
        }
        if !block.update_accumulators(chunk, acc, &out) {
            return;
        }
        // The last stage writable again for the next chunk.
        let f3 = block.sync(last);
        (s0, s1, s2) = (f1, f2, f3);
    }
}

/// `c = α · a · b + β · c` for row-major `bf16` matrices `a` (`m × k`) and `b` (`k × n`) into
/// row-major `f32` `c` (`m × n`; other extents leave it as it is), on tensor cores. Launch with
/// blocks of [`GEMM_THREADS`] threads, one per `128 × 128` chunk of `c` or fewer.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn gemm_bf16(
    block: Block<'_, 128, Stages<bf16, RightSwizzled<Swizzle128>>, GemmChunk>,
    alpha: f32,
    beta: f32,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    product(block, a, b, c, |_, x, old| {
        if beta == 0.0 { alpha * x } else { alpha * x + beta * old }
    });
}

/// [`gemm_bf16`] for `f16`.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn gemm_f16(
    block: Block<'_, 128, Stages<f16, RightSwizzled<Swizzle128>>, GemmChunk>,
    alpha: f32,
    beta: f32,
    a: DeviceMdspan<'_, f16, Dims<2>>,
    b: DeviceMdspan<'_, f16, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    product(block, a, b, c, |_, x, old| {
        if beta == 0.0 { alpha * x } else { alpha * x + beta * old }
    });
}

/// `c = a · b` for row-major `bf16` matrices into `bf16`, as `torch.matmul` computes it:
/// the products' loop of [`gemm_bf16`], each element rounded to `bf16` once. Launch as [`gemm_bf16`].
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn matmul_bf16(
    block: Block<'_, 128, Stages<bf16, RightSwizzled<Swizzle128>>, GemmChunk>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    product(block, a, b, c, |_, x, _| dlmd::kernel::math::to_bf16(x));
}

/// One step of `a` for [`matmul_bf16_two_stages`]: `128 × 32`, each row one 64-byte swizzled
/// row.
pub type StepA = TileOf<bf16, (Const<128>, Const<32>), RightSwizzled<Swizzle64>>;
/// One step of `b` for [`matmul_bf16_two_stages`]: `32 × 128`, two panels of 64 columns.
pub type StepB = TileOf<bf16, (Const<32>, Const<128>), RightSwizzled<Swizzle128>>;
/// The instruction: `mma.sync.m16n8k16` on `bf16`, with `f32` accumulators.
pub type Bf16Atom = M16N8K16<bf16>;
/// Two stages: one multiplied while the other is filled.
pub type TwoSteps = ((StepA, StepB), (StepA, StepB));

/// [`matmul_bf16`] with two stages and nothing shared with the other kernels: the product as a
/// user writes it first (the guide's tensor-core kernel), by 8 warps of `64 × 32`. Launch
/// with blocks of 256 threads, one per `128 × 128` chunk of `c` or fewer.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn matmul_bf16_two_stages(
    block: Block<'_, 256, TwoSteps, (Const<128>, Const<128>)>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let depth = a.extent(1);
    if b.extent(0) != depth || a.extent(0) != c.extent(0) || b.extent(1) != c.extent(1) {
        return;
    }
    let (mut block, (mut s0, mut s1)) = block.split();
    for chunk in block.chunks(c) {
        let [i0, j0] = chunk.origin();
        // 8 warps (2 × 4), each 4 × 4 atoms of 16 × 8: the 128 × 128 chunk.
        let mut acc = block.accumulators::<Bf16Atom, 2, 4, 4, 4>();
        // The first step: fetched, landed, and readable after a barrier (which leaves the
        // other stage writable); the second fetched while the first is multiplied.
        let first = (block.fetch(s0.0, &a, [i0, 0]), block.fetch(s0.1, &b, [0, j0]));
        let landed = block.landed(first);
        let (mut ready, (fa, fb)) = block.sync((landed, s1));
        let mut next = (block.fetch(fa, &a, [i0, 32]), block.fetch(fb, &b, [32, j0]));
        acc = block.mma(acc, &ready.0, &ready.1);
        let mut k0 = 32;
        // While there is a step after this one to fetch.
        while k0 + 32 < depth {
            let landed = block.landed(next);
            // One barrier: this step's tiles readable, the last step's writable again.
            let (now, (fa, fb)) = block.sync((landed, ready));
            next = (block.fetch(fa, &a, [i0, k0 + 32]), block.fetch(fb, &b, [k0 + 32, j0]));
            acc = block.mma(acc, &now.0, &now.1);
            ready = now;
            k0 += 32;
        }
        // The last step (where `k` has more than one step of 32), with nothing left to fetch.
        let landed = block.landed(next);
        let (last, done) = block.sync((landed, ready));
        if k0 < depth {
            acc = block.mma(acc, &last.0, &last.1);
        }
        if !block.store_accumulators(chunk, acc, |_, x| bf16::from_f32(x)) {
            return;
        }
        // Both stages writable again for the next chunk.
        (s0, s1) = (done, block.sync(last));
    }
}

/// `c = a · b` into `bf16`, with `b` column-major: `x · wᵀ` for a row-major `n × k` weight `w`
/// (`b` is `w` seen as `k × n`).
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn gemm_bf16_nt(
    block: Block<'_, 128, Stages<bf16, LeftSwizzled<Swizzle128>>, GemmChunk>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>, LayoutLeft>,
    c: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    product(block, a, b, c, |_, x, _| dlmd::kernel::math::to_bf16(x));
}

/// The activation of [`linear_bf16`].
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
}

/// `y = act(x · wᵀ + bias)` into `bf16`: a `Linear` layer (`x` row-major `m × k`, `w` row-major
/// `n × k`, passed as the column-major `k × n` view of it, `bias` of `n`) with its bias and
/// activation ([`Activation`]) fused into the product's epilogue, each element rounded to
/// `bf16` once. Launch as [`gemm_bf16`].
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn linear_bf16(
    block: Block<'_, 128, Stages<bf16, LeftSwizzled<Swizzle128>>, GemmChunk>,
    activation: Activation,
    x: DeviceMdspan<'_, bf16, Dims<2>>,
    w: DeviceMdspan<'_, bf16, Dims<2>, LayoutLeft>,
    bias: DeviceMdspan<'_, bf16, Dims<1>>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    if bias.extent(0) != w.extent(1) {
        return;
    }
    product(block, x, w, y, |[_, j], v, _| {
        let v = v + bias.get_or([j], bf16::ZERO).to_f32();
        let v = match activation {
            Activation::GELU_TANH => {
                // x · sigmoid(2 · √(2/π) · (x + 0.044715 x³)) = ½ x (1 + tanh(√(2/π)(x + 0.044715 x³))).
                let inner = 1.595_769 * (v + 0.044_715 * v * v * v);
                v / (1.0 + dlmd::kernel::math::exp(-inner))
            }
            Activation::SILU => v / (1.0 + dlmd::kernel::math::exp(-v)),
            _ => v,
        };
        dlmd::kernel::math::to_bf16(v)
    });
}

/// A step of `a` for [`edge_store`]: `16 × 16`.
pub type EdgeA = TileOf<bf16, (Const<16>, Const<16>), dlmd::LayoutRight>;
/// A step of `b` for [`edge_store`]: `16 × 16`, column-major.
pub type EdgeB = TileOf<bf16, (Const<16>, Const<16>), dlmd::LayoutLeft>;

/// `c = a · b` for `16 × 16` `a` and `b`, one warp, one step, into chunks of `16 × 16` of which
/// only the even columns of the first 8 rows of each keep their product (0 elsewhere): each
/// `mma.sync`'s first result is used in one per-thread branch only, where the compiler would
/// sink an `mma.sync` it took for free of side effects, leaving some lanes of the warp without
/// it. Launch with one block of 32 threads.
#[dlmd::kernel]
pub fn edge_store(
    block: Block<'_, 32, (EdgeA, EdgeB), (Const<16>, Const<16>)>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, (ta, tb)) = block.split();
    let wa = block.write(ta, |[i, k]| a.get_or([i, k], bf16::ZERO));
    let wb = block.write(tb, |[k, j]| b.get_or([k, j], bf16::ZERO));
    let (ra, rb) = block.sync((wa, wb));
    for chunk in block.chunks(c) {
        let acc = block.accumulators::<M16N8K16<bf16>, 1, 1, 1, 2>();
        let acc = block.mma(acc, &ra, &rb);
        let kept = block.store_accumulators(chunk, acc, |[i, j], v| if i % 16 < 8 && j % 2 == 0 { v } else { 0.0 });
        if !kept {
            return;
        }
    }
}

/// A row-major swizzled tile of [`swizzled_copy`]: `32 × 64`, rows of one 128-byte swizzled row.
pub type SwizzledRows = TileOf<bf16, (Const<32>, Const<64>), RightSwizzled<Swizzle128>>;
/// A column-major swizzled tile of [`swizzled_copy`]: `64 × 32`, columns of 128 bytes.
pub type SwizzledColumns = TileOf<bf16, (Const<64>, Const<32>), LeftSwizzled<Swizzle128>>;

/// `c[i, j] = a[i, j] + b[j, i]` through two swizzled tiles a `32 × 64` chunk of `c` (`a` is
/// `m × n`, `b` `n × m`; mismatched extents leave `c` as it is): `a`'s chunk fetched into a
/// row-major tile (`cp.async` where `a` allows it), `b`'s written into a column-major one
/// element by element, both read back by [`Tile::get_or`](dlmd::kernel::block::Tile::get_or).
/// Each path of a swizzled tile's element placement, against the CPU. Launch with blocks of 64
/// threads.
#[dlmd::kernel]
pub fn swizzled_copy(
    block: Block<'_, 64, (SwizzledRows, SwizzledColumns), (Const<32>, Const<64>)>,
    a: DeviceMdspan<'_, bf16, Dims<2>>,
    b: DeviceMdspan<'_, bf16, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    if a.extents() != c.extents() || b.extent(0) != a.extent(1) || b.extent(1) != a.extent(0) {
        return;
    }
    let (mut block, (mut rows, mut columns)) = block.split();
    for chunk in block.chunks(c) {
        let [i0, j0] = chunk.origin();
        let fetching = block.fetch(rows, &a, [i0, j0]);
        // `b`'s `64 × 32` box from `[j0, i0]`: element `[p, q]` is `b[j0 + p, i0 + q]`.
        let written = block.write(columns, |[p, q]| b.get_or([j0 + p, i0 + q], bf16::ZERO));
        let landed = block.landed(fetching);
        let (r, t) = block.sync((landed, written));
        block.store(chunk, |[i, j]| {
            let (p, q) = (i - i0, j - j0);
            r.get_or([p, q], bf16::ZERO).to_f32() + t.get_or([q, p], bf16::ZERO).to_f32()
        });
        (rows, columns) = block.sync((r, t));
    }
}
