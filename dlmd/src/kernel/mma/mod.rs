//! Tensor cores from a cooperative kernel: matrix products on `f16` and `bf16` tiles with `f32`
//! accumulators, by the warps' `mma.sync` instructions (`sm_80` and later), where the shapes,
//! element types and layouts of the tiles and fragments are types, so that a product whose
//! parts do not fit together does not compile.
//!
//! The pieces, each a type:
//!
//! - an **atom** ([`M16N8K16`]): one warp-wide instruction, here `16 × 8 += 16 × 16 · 16 × 8`,
//!   and its input element type;
//! - a **tiling** ([`Mma`]): the block's warps arranged `WM × WN`, each computing `FM × FN`
//!   atoms, so that a block of `32 · WM · WN` threads computes a `ROWS × COLS` chunk
//!   (`16 · WM · FM` by `8 · WN · FN`);
//! - **operand tiles**: block-shared [`Tile`](crate::kernel::block::Tile)s of the input type,
//!   `A` of `ROWS × K` and `B` of `K × COLS` (with `K` a multiple of 16), in any of the
//!   layouts `ldmatrix` can read from: the product reads `k`-contiguous tiles as they are and
//!   the others transposed (`ldmatrix.trans`), so `B` laid out column-major
//!   (`LeftSwizzled`, `LeftPadded`) is a row-major `n × k` weight, `x · wᵀ` of a `Linear`
//!   layer. The rows (or columns) of a tile must start 16 bytes apart or a multiple thereof.
//!   The fastest layouts are swizzled
//!   ([`RightSwizzled<Swizzle128>`](crate::kernel::block::RightSwizzled), rows of 64 `bf16`):
//!   `ldmatrix` meets no bank conflict, and `cp.async` moves each 32-byte sector of global
//!   memory into one of the tile's. Padding (`RightPadded<8>` on a `bf16` tile of 32 columns:
//!   rows of 80 bytes) avoids the bank conflicts too, but its odd rows straddle the sectors;
//! - **fragments** ([`FragmentsA`], [`FragmentsB`]): one step of 16 along `k` of a warp's
//!   operands, in registers, as the instruction spreads them over the lanes; and
//!   **accumulators** ([`Accumulators`]), the warp's `f32` results.
//!
//! A block loads fragments from *readable* tiles only ([`Block::load_a`](crate::kernel::Block::load_a), [`Block::mma`](crate::kernel::Block::mma)), and
//! writes its accumulators to a chunk it owns, each element by the one thread that holds it
//! ([`Block::store_accumulators`](crate::kernel::Block::store_accumulators)).
//! [`Block::mma_with`](crate::kernel::Block::mma_with) is `mma` that runs the block's next
//! work (the fetch of a later step into another stage) while the first fragments load, where a
//! hand-written main loop puts it; the operand tiles stay borrowed readable meanwhile.
//!
//! # Why safe code cannot race on the tensor cores
//!
//! The rules of [`block`](crate::kernel::block) hold unchanged; the tensor cores add no new
//! way to share memory:
//!
//! 1. **Fragments and accumulators are per-thread values in uniform code.** Like a
//!    [`Varying`](crate::kernel::Varying), they have no accessor: uniform code hands them
//!    only to block operations that every thread runs together. `ldmatrix` and `mma.sync` are
//!    warp-wide (`.sync.aligned`): they are issued from the kernel's uniform body, so every lane
//!    of every warp reaches them together, never one side of a per-thread branch.
//! 2. **Fragments come from readable tiles.** `ldmatrix` reads a tile borrowed
//!    [`Readable`](crate::kernel::block::Readable): written by the block and a barrier passed,
//!    and no thread writes it until the next barrier, which takes it by value. Once loaded, a
//!    fragment is in registers and the tile may go on to its next phase.
//! 3. **Asynchronous copies land before they are read.** [`Block::fetch`](crate::kernel::Block::fetch) (`cp.async`) takes a
//!    [`Writable`](crate::kernel::block::Writable) tile and returns it [`Fetching`](crate::kernel::block::Fetching), which
//!    nothing reads nor writes; only [`Block::landed`](crate::kernel::Block::landed) (which waits for its copies) gives it
//!    back, [`Written`](crate::kernel::block::Written), and only the barrier after that makes it
//!    readable. A tile that an MMA still reads is `Readable`: it is refilled only after a
//!    barrier has made it `Writable` again, so no copy overwrites a stage that a warp still
//!    loads from.
//! 4. **Each element of a chunk has one writer.** The tiling deals the `ROWS × COLS` chunk
//!    over its warps, fragments and lanes one to one ([`Mma::element`], tested over every
//!    tiling of the crate's tests), the chunk is the block's alone
//!    ([`Block::chunks`](crate::kernel::Block::chunks)), and its box must be the tiling's.
//!
//! What cannot be checked this way (shared memory laid out by hand, another warp's registers)
//! is in [`raw`], whose functions are `unsafe` under the PTX ISA's own rules.

#[cfg(any(target_arch = "nvptx64", doc))]
pub mod raw;

use crate::dtype::DlElement;
use core::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// The input element types of the tensor cores' `f16`/`bf16` instructions.
pub trait MmaInput: DlElement + sealed::Sealed {
    /// `bf16` (else `f16`), for the instruction's name.
    #[doc(hidden)]
    const BF16: bool;
}

impl sealed::Sealed for half::f16 {}
impl sealed::Sealed for half::bf16 {}
impl MmaInput for half::f16 {
    const BF16: bool = false;
}
impl MmaInput for half::bf16 {
    const BF16: bool = true;
}

/// One warp-wide tensor-core instruction: its shape and its input type.
pub trait Atom: sealed::Sealed + 'static {
    /// The type of both operands' elements.
    type Input: MmaInput;
    /// Rows of `A` and of the result.
    const M: usize;
    /// Columns of `B` and of the result.
    const N: usize;
    /// Columns of `A`, rows of `B`: one step of the product.
    const K: usize;
}

/// `mma.sync.m16n8k16` with `f32` accumulators: a `16 × 16` slice of `A` (four registers a lane)
/// times a `16 × 8` slice of `B` (two) into `16 × 8` accumulators (four), `T` being `f16` or
/// `bf16`. On `sm_80` and later.
pub struct M16N8K16<T>(PhantomData<T>);

impl<T> sealed::Sealed for M16N8K16<T> {}
impl<T: MmaInput> Atom for M16N8K16<T> {
    type Input = T;
    const M: usize = 16;
    const N: usize = 8;
    const K: usize = 16;
}

/// A block's tiling of a matrix product by atom `A`: `WM × WN` warps (warp `w` at row `w / WN`,
/// column `w % WN` of the arrangement), each computing `FM × FN` atoms. See the
/// [module docs](self).
///
/// ```ignore
/// // 8 warps, 2 × 4, each 64 × 32 (4 × 4 atoms): a 128 × 128 chunk for 256 threads.
/// type Tiling = Mma<M16N8K16<bf16>, 2, 4, 4, 4>;
/// ```
pub struct Mma<A, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(PhantomData<A>);

impl<A, const WM: usize, const WN: usize, const FM: usize, const FN: usize> sealed::Sealed for Mma<A, WM, WN, FM, FN> {}

impl<A: Atom, const WM: usize, const WN: usize, const FM: usize, const FN: usize> Mma<A, WM, WN, FM, FN> {
    /// The threads of a block of this tiling: 32 per warp.
    pub const THREADS: usize = {
        assert!(
            WM > 0 && WN > 0 && FM > 0 && FN > 0,
            "a tiling has at least one warp and one atom each way"
        );
        assert!(
            FN.is_multiple_of(2),
            "a warp's atoms along `n` come in pairs (FN even): one `ldmatrix.x4` loads two"
        );
        assert!(WM * WN <= 32, "a block has at most 32 warps");
        assert!(FM <= 16 && FN <= 16, "a warp computes at most 16 × 16 atoms");
        WM * WN * 32
    };
    /// The rows of the block's chunk: `16 · WM · FM` for `M16N8K16`.
    pub const ROWS: usize = WM * FM * A::M;
    /// The columns of the block's chunk: `8 · WN · FN` for `M16N8K16`.
    pub const COLS: usize = WN * FN * A::N;

    /// The index in the block's `ROWS × COLS` chunk of accumulator `[fm][fn_][r]` of thread
    /// `thread`: the one element that thread holds there. Every element of the chunk is one
    /// thread's, once (tested for every index of several tilings).
    pub const fn element(thread: usize, fm: usize, fn_: usize, r: usize) -> [usize; 2] {
        let (warp, lane) = (thread / 32, thread % 32);
        let (wm, wn) = (warp / WN, warp % WN);
        let row = wm * FM * A::M + fm * A::M + (r / 2) * 8 + lane / 4;
        let col = wn * FN * A::N + fn_ * A::N + 2 * (lane % 4) + r % 2;
        [row, col]
    }
}

/// A warp's accumulators for the tiling `Mma<A, WM, WN, FM, FN>`: `FM × FN` atoms of four `f32`
/// a lane, each lane holding the elements [`Mma::element`] names. Made zero
/// ([`Block::accumulators`](crate::kernel::Block::accumulators)), added to ([`Block::mma`](crate::kernel::Block::mma), [`Block::mma_fragments`](crate::kernel::Block::mma_fragments)), and written
/// to a chunk ([`Block::store_accumulators`](crate::kernel::Block::store_accumulators)); uniform code cannot look into them.
pub struct Accumulators<A, const WM: usize, const WN: usize, const FM: usize, const FN: usize> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(crate) c: [[[f32; 4]; FN]; FM],
    pub(crate) tiling: PhantomData<(A, *mut u8)>,
}

/// A warp's fragments of `A` for one step of 16 along `k`, for the tiling `Mma<A, WM, WN, FM,
/// FN>`: `FM` atoms of four registers a lane ([`Block::load_a`](crate::kernel::Block::load_a)).
pub struct FragmentsA<A, const WM: usize, const WN: usize, const FM: usize, const FN: usize> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(crate) a: [[u32; 4]; FM],
    pub(crate) tiling: PhantomData<(A, *mut u8)>,
}

/// A warp's fragments of `B` for one step of 16 along `k`, for the tiling `Mma<A, WM, WN, FM,
/// FN>`: `FN` atoms of two registers a lane ([`Block::load_b`](crate::kernel::Block::load_b)).
pub struct FragmentsB<A, const WM: usize, const WN: usize, const FM: usize, const FN: usize> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(crate) b: [[u32; 2]; FN],
    pub(crate) tiling: PhantomData<(A, *mut u8)>,
}

#[cfg(test)]
mod tests;
