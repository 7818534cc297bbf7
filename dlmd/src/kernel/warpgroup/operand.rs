//! The stage tiles that `wgmma` reads, and how it reads them: the `A` tile K-major
//! ([`OperandA`]), the `B` tile K-major (`n × k`, a plain `TileOf`) or MN-major (`k × n`,
//! [`KByN`]), each through the shared-memory descriptor of its layout ([`OperandB`]).

use super::pipeline::Operand;
use crate::dtype::DlElement;
use crate::extents::Const;
use crate::kernel::block::{TileOf, TileSealed};
use crate::kernel::swizzle::Swizzle128;
use core::marker::PhantomData;

/// How a `wgmma` reads its `B` tile: `n × k` (each of the `N` rows holds the products' depth,
/// contiguous: K-major), the plain case and the only one for FP8 inputs; a plain
/// `TileOf` `B` tile is read so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KMajor;

/// How a `wgmma` reads its `B` tile: `k × n` (each of the stage's `k` rows holds `n`
/// contiguous: MN-major), for `bf16` and `f16` inputs; a [`KByN`] `B` tile is read so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MnMajor;

/// A stage tile that `wgmma` reads as an operand of input `T`: `TileOf<T, (Const<ROWS>,
/// Const<COLS>), Swizzle128>`, K-major rows of one 128-byte swizzled row (the stage's depth,
/// `COLS`, is 64 for 16-bit inputs and 128 for FP8). `B` tiles also have the accumulators' `N`
/// columns ([`OperandB`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `wgmma` operand tile of `{T}`",
    label = "the stage's tiles hold the accumulators' input type in the 128-byte swizzle",
    note = "`wgmma` reads `TileOf<{T}, (Const<ROWS>, Const<COLS>), Swizzle128>`: the accumulators' input type, rows of \
            one 128-byte swizzled row"
)]
pub trait OperandA<T>: Operand {}

/// The `B` tile of a stage that `wgmma` reads into accumulators of `N` columns, either
///
/// - `TileOf<T, (Const<N>, Const<D>), Swizzle128>`: `n × k`, K-major, one 128-byte swizzled
///   row a row (the weight `w` of `x · wᵀ`, whose rows are `k` long), read as
///   [`KMajor`]; or
/// - [`KByN`]`<TileOf<T, (Const<D>, Const<N>), Swizzle128>>`: `k × n`, MN-major (a
///   row-major `b` of `x · b`), read as [`MnMajor`], for `bf16` and `f16`;
///
/// with the stage's depth `D` the `A` tile's columns.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `wgmma` `B` tile of `{T}` for accumulators of {N} columns",
    label = "the `B` tile holds the accumulators' input type in the 128-byte swizzle, with `N` rows (`n × k`) or, as \
             `KByN`, `N` columns (`k × n`)",
    note = "accumulators of `Cols<{N}>` read `TileOf<{T}, (Const<{N}>, Const<D>), Swizzle128>` or \
            `KByN<TileOf<{T}, (Const<D>, Const<{N}>), Swizzle128>>`"
)]
pub trait OperandB<T, const N: usize>: Operand {
    /// How `wgmma` reads the tile: [`KMajor`] or [`MnMajor`].
    #[doc(hidden)]
    type Major;
    /// The stage's depth the tile holds: its `k`.
    #[doc(hidden)]
    const DEPTH: usize;
    /// The shared-memory descriptor of the tile at shared address `address`.
    #[doc(hidden)]
    fn descriptor(address: u32) -> u64;
}

impl<T: DlElement, const ROWS: usize, const COLS: usize> OperandA<T>
    for TileOf<T, (Const<ROWS>, Const<COLS>), Swizzle128>
{
}

impl<T: DlElement, const N: usize, const COLS: usize> OperandB<T, N>
    for TileOf<T, (Const<N>, Const<COLS>), Swizzle128>
{
    type Major = KMajor;
    const DEPTH: usize = COLS;
    #[inline(always)]
    fn descriptor(address: u32) -> u64 {
        super::descriptor::k_major_128(address)
    }
}

/// A `B` operand tile `k × n` (each of the stage's `k` rows holds `n` elements, contiguous):
/// `KByN<TileOf<T, (Const<D>, Const<N>), Swizzle128>>`, filled from a map of a row-major `b`
/// of `x · b` (`k × n`) with the inner tile's boxes, and read by `wgmma` MN-major. The tile
/// is `N / 64` column panels of `D` swizzled rows each (see [`Operand`]); `wgmma` reads
/// MN-major `bf16` and `f16` only.
///
/// ```ignore
/// type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;        // m × k
/// type B = KByN<TileOf<bf16, (Const<64>, Const<256>), Swizzle128>>;  // k × n
/// // b: TensorMap<'_, bf16, (Const<64>, Const<256>), Swizzle128>, of the `k × n` matrix
/// producer.load(&x, [i0, 64 * s], &b, [64 * s, j0]);
/// ```
pub struct KByN<Tile>(PhantomData<Tile>);

impl<Tile> TileSealed for KByN<Tile> {}

impl<Tile: Operand> Operand for KByN<Tile> {
    type Element = Tile::Element;
    type Swizzle = Tile::Swizzle;
    type Map<'a, const RANK: usize> = Tile::Map<'a, RANK>;
    const ROWS: usize = Tile::ROWS;
    const COLS: usize = Tile::COLS;
    const BYTES: usize = Tile::BYTES;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn copy<const RANK: usize>(dst: u32, map: &Self::Map<'_, RANK>, origin: [usize; RANK], bar: u32) {
        // SAFETY: as this function's contract, the inner tile's.
        unsafe { Tile::copy(dst, map, origin, bar) }
    }
}

/// The inputs that `wgmma` reads from an MN-major tile ([`KByN`]): `bf16` and `f16`. FP8
/// operands are K-major only.
#[diagnostic::on_unimplemented(
    message = "`wgmma` reads `{Self}` K-major only: a `KByN` (`k × n`) tile of it cannot be an operand",
    label = "MN-major operands are `bf16` or `f16`",
    note = "load a row-major FP8 `b` transposed, as an `n × k` tile (`TileOf<{Self}, (Const<N>, Const<D>), Swizzle128>`)"
)]
pub trait MnMajorInput: super::WgmmaInput {}

impl MnMajorInput for half::bf16 {}
impl MnMajorInput for half::f16 {}

impl<T: MnMajorInput, const D: usize, const N: usize> OperandB<T, N>
    for KByN<TileOf<T, (Const<D>, Const<N>), Swizzle128>>
{
    type Major = MnMajor;
    const DEPTH: usize = D;
    #[inline(always)]
    fn descriptor(address: u32) -> u64 {
        // Panels of `D` rows of 128 bytes.
        super::descriptor::mn_major_128(address, (D * 128) as u32)
    }
}
