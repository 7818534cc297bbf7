//! How a tile lays out its elements ([`TileLayout`]): compact, with its rows (or columns)
//! padded, or swizzled, so that a warp reading across them meets every bank of shared memory
//! once.

use super::sealed;
use crate::extents::{Extents, IndexArray};
use crate::kernel::swizzle::Swizzle;
use crate::layout::{CompactLayout, Layout, LayoutLeft, LayoutRight, LayoutStride, Mapping};
use core::marker::PhantomData;

/// How a tile lays out its elements: [`LayoutRight`] and [`LayoutLeft`] (compact),
/// [`RightPadded`] and [`LeftPadded`] (a [`LayoutStride`] view whose rows, or columns, are
/// `PAD` elements longer than the tile), or [`RightSwizzled`] and [`LeftSwizzled`] (16-byte
/// pieces permuted line by line, which no strided view describes).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a layout of a block's tiles",
    note = "a block's tiles are laid out by `LayoutRight`, `LayoutLeft`, `RightPadded<PAD>`, `LeftPadded<PAD>`, `RightSwizzled<S>` or `LeftSwizzled<S>`; a bare `Swizzle` lays out the tiles of a warpgroup `Pipeline`, which the copy engine fills"
)]
pub trait TileLayout: sealed::Sealed + 'static {
    /// The layout of the tile's storage: its view, where the layout is strided; for a
    /// swizzled one, the compact layout its elements are permuted within.
    type Layout: Layout;
    /// Elements added to the fastest dimension's stride (0 for compact layouts).
    #[doc(hidden)]
    const PAD: usize;
    /// Whether the first dimension is the fastest (column-major).
    #[doc(hidden)]
    const FIRST_FASTEST: bool;
    /// The bytes of a swizzled line ([`Swizzle::BYTES`]), 0 where the layout is strided: a
    /// swizzled tile has no strided view, and is written and read only element by element,
    /// by the asynchronous copies and by `ldmatrix`.
    #[doc(hidden)]
    const SWIZZLE: usize = 0;
    /// The mapping of static extents `extents`, whose span is `span` elements.
    ///
    /// # Safety
    ///
    /// Every extent of `E` is static, `span` is [`span`] of `E` for this layout, and the
    /// tile's span fits in a block's shared memory (`MAX_SHARED_BYTES`).
    #[doc(hidden)]
    unsafe fn mapping<E: Extents>(extents: E, span: usize) -> <Self::Layout as Layout>::Mapping<E>;

    /// The offset, in elements of `T` from the tile's first, of the element at `index` of a
    /// tile of `T` whose storage is `mapping`: the mapping's own, where the layout is strided.
    /// Inside the tile's span for every `index` inside its extents.
    #[doc(hidden)]
    #[inline(always)]
    fn offset_of<T, E: Extents>(mapping: &<Self::Layout as Layout>::Mapping<E>, index: &E::Index) -> usize {
        mapping.offset_of(index)
    }

    /// [`offset_of`](Self::offset_of) of `index` moved `lines` on along dimension `slow` of a
    /// rank-2 tile (its lines): for a strided layout the moved index's offset, which the
    /// compiler sees is `index`'s plus a constant; for a swizzled one, `index`'s plus `lines`
    /// whole lines where `lines` is a whole number of the swizzle's periods (8 lines), whose
    /// pattern is then the same. Kernels address many elements this way from one offset held in
    /// a register. The moved index is inside the extents (the caller's).
    #[doc(hidden)]
    #[inline(always)]
    fn offset_of_moved<T, E: Extents<Index = [usize; 2]>>(
        mapping: &<Self::Layout as Layout>::Mapping<E>,
        index: &[usize; 2],
        slow: usize,
        lines: usize,
    ) -> usize {
        let mut moved = *index;
        moved[slow] = moved[slow].wrapping_add(lines);
        Self::offset_of::<T, E>(mapping, &moved)
    }
}

/// Row-major, with `PAD` more elements between the starts of consecutive rows than a row
/// holds: a 32 × 32 tile of `f32` with `RightPadded<1>` has rows 33 apart, so a warp reading a
/// column touches 32 different banks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RightPadded<const PAD: usize>;

/// Column-major, with `PAD` more elements between the starts of consecutive columns than a
/// column holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeftPadded<const PAD: usize>;

/// Row-major and swizzled by `S` ([`Swizzle32`](crate::kernel::swizzle::Swizzle32),
/// [`Swizzle64`](crate::kernel::swizzle::Swizzle64),
/// [`Swizzle128`](crate::kernel::swizzle::Swizzle128)): a rank-2 tile whose rows are whole
/// swizzled rows (`S::BYTES` bytes, or a multiple), of elements whose size divides 16. It is
/// its column panels one after another, each `S::BYTES` wide and every row of the tile
/// high, in which row `r`'s 16-byte piece `p` is stored at piece `p ^ (r % 8)` (for 128 bytes;
/// [`Swizzle::offset`]). The pattern is counted from each panel's first byte (with rows a
/// multiple of 8, as operand tiles have, that is the tile's first byte and the pattern's
/// period).
///
/// A warp reading 8 rows' pieces of one column (`ldmatrix`) meets every bank once, as with
/// [`RightPadded`], and no byte is padding: every 32-byte sector of a row of global memory
/// lands in one 32-byte sector of the tile, where a padded row's start moves the copy's
/// sectors across the tile's (on the H100, `cp.async` then moves 1.5× the sectors, and shared
/// memory takes 2.6× the wavefronts). A swizzled tile has no strided view: it is filled by
/// [`Block::fetch`](crate::kernel::Block::fetch) or [`Block::write`](crate::kernel::Block::write),
/// and read by the block's `mma` loads and by [`Tile::get`](crate::kernel::block::Tile::get).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RightSwizzled<S>(PhantomData<S>);

/// Column-major and swizzled by `S`: [`RightSwizzled`] with the first dimension fastest. A
/// `k × n` tile of a `B` whose columns are contiguous in `k` (`x · wᵀ`'s weight).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeftSwizzled<S>(PhantomData<S>);

impl sealed::Sealed for LayoutRight {}
impl sealed::Sealed for LayoutLeft {}
impl<const PAD: usize> sealed::Sealed for RightPadded<PAD> {}
impl<const PAD: usize> sealed::Sealed for LeftPadded<PAD> {}
impl<S: Swizzle> sealed::Sealed for RightSwizzled<S> {}
impl<S: Swizzle> sealed::Sealed for LeftSwizzled<S> {}

/// The mapping of a compact layout for `extents`.
///
/// # Safety
///
/// As for [`TileLayout::mapping`].
#[inline(always)]
unsafe fn compact<L: CompactLayout, E: Extents>(extents: E) -> L::Mapping<E> {
    match L::mapping(extents) {
        Ok(mapping) => mapping,
        // SAFETY: the extents are static and their span fits in `MAX_SHARED_BYTES` (caller), so the
        // layout's size check cannot fail.
        Err(_) => unsafe { core::hint::unreachable_unchecked() },
    }
}

impl TileLayout for LayoutRight {
    type Layout = LayoutRight;
    const PAD: usize = 0;
    const FIRST_FASTEST: bool = false;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, _: usize) -> <LayoutRight as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { compact::<LayoutRight, E>(extents) }
    }
}

impl TileLayout for LayoutLeft {
    type Layout = LayoutLeft;
    const PAD: usize = 0;
    const FIRST_FASTEST: bool = true;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, _: usize) -> <LayoutLeft as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { compact::<LayoutLeft, E>(extents) }
    }
}

/// The mapping of `extents` with the fastest dimension (the first with `first_fastest`, else
/// the last) padded by `pad` elements.
///
/// # Safety
///
/// As for [`TileLayout::mapping`]; `span` is the padded span of `extents` ([`span`]).
#[inline(always)]
unsafe fn padded<E: Extents>(
    extents: E,
    pad: usize,
    first_fastest: bool,
    span: usize,
) -> <LayoutStride as Layout>::Mapping<E> {
    let e = extents.to_array();
    let rank = E::RANK;
    let mut strides = <E::Index as IndexArray>::isize_zeros();
    let mut stride = 1usize;
    for step in 0..rank {
        let d = if first_fastest { step } else { rank - 1 - step };
        strides.as_mut()[d] = stride as isize;
        stride *= e.as_ref()[d] + if step == 0 && rank > 1 { pad } else { 0 };
    }
    // SAFETY: positive strides, each dimension's above the span of the faster ones (a padded
    // row-major or column-major layout), so unique, with offset 0 and this span (caller): the
    // parts of a `LayoutStride` mapping.
    unsafe { <LayoutStride as Layout>::Mapping::<E>::from_parts_unchecked(extents, &strides, 0, span) }
}

impl<const PAD: usize> TileLayout for RightPadded<PAD> {
    type Layout = LayoutStride;
    const PAD: usize = PAD;
    const FIRST_FASTEST: bool = false;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, span: usize) -> <LayoutStride as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { padded(extents, PAD, false, span) }
    }
}

impl<const PAD: usize> TileLayout for LeftPadded<PAD> {
    type Layout = LayoutStride;
    const PAD: usize = PAD;
    const FIRST_FASTEST: bool = true;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, span: usize) -> <LayoutStride as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { padded(extents, PAD, true, span) }
    }
}

/// The element offset of `index` in a swizzled rank-2 tile of `T` whose extents are
/// `extents`, lines along dimension `fast` ([`RightSwizzled`]): panel `x / P` of `P = BYTES /
/// size_of::<T>()` elements a line, `lines · BYTES` bytes each, then [`Swizzle::offset`] of
/// line `line`, byte `(x % P) · size_of::<T>()` in it. In 32 bits: a tile's bytes fit in the
/// shared memory (`TileOf`'s bound), so do the offsets of its elements, and a kernel then holds
/// each in one register (the offsets of a swizzled tile's `ldmatrix` rows are not a constant
/// apart, so the compiler keeps several).
#[inline(always)]
fn swizzled<T, S: Swizzle, E: Extents>(extents: &E, index: &E::Index, fast: usize) -> usize {
    // A zero-sized element never reaches here (a swizzled tile's element divides 16 bytes:
    // `TileOf::SPAN`); `max(1)` keeps the divisions defined anyway.
    let size = size_of::<T>().max(1) as u32;
    let bytes = S::BYTES as u32;
    let per_line = bytes / size;
    let (slow, index) = (1 - fast, index.as_ref());
    // Inside the extents (the caller's), so below the tile's bytes: 32 bits hold them.
    let (lines, line, x) = (extents.extent(slow) as u32, index[slow] as u32, index[fast] as u32);
    let linear = line * bytes + x % per_line * size;
    // `Swizzle::offset`, in 32 bits: the line's bits 7.. XORed into its piece's bits 4...
    let swizzled = linear ^ ((linear >> 3) & (bytes - 16));
    ((x / per_line * lines * bytes + swizzled) / size) as usize
}

/// [`TileLayout::offset_of_moved`] for a swizzled tile whose lines run along `fast`: whole
/// periods of 8 lines (`S::ALIGN / S::BYTES` for every swizzle) along the lines move every
/// element by the same bytes, so `index`'s offset plus theirs; other moves, the moved index's.
#[inline(always)]
fn moved_swizzled<T, S: Swizzle, E: Extents<Index = [usize; 2]>>(
    extents: &E,
    index: &[usize; 2],
    fast: usize,
    slow: usize,
    lines: usize,
) -> usize {
    let size = size_of::<T>().max(1);
    if slow != fast && lines.is_multiple_of(S::ALIGN / S::BYTES) {
        // A move of whole periods within the panel: the swizzle's bits, the line's bits 7..
        // below the period (`Swizzle::offset`), stay as they were.
        swizzled::<T, S, E>(extents, index, fast) + lines * S::BYTES / size
    } else {
        let mut moved = *index;
        moved[slow] = moved[slow].wrapping_add(lines);
        swizzled::<T, S, E>(extents, &moved, fast)
    }
}

impl<S: Swizzle> TileLayout for RightSwizzled<S> {
    type Layout = LayoutRight;
    const PAD: usize = 0;
    const FIRST_FASTEST: bool = false;
    const SWIZZLE: usize = S::BYTES;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, _: usize) -> <LayoutRight as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { compact::<LayoutRight, E>(extents) }
    }
    #[inline(always)]
    fn offset_of<T, E: Extents>(mapping: &<LayoutRight as Layout>::Mapping<E>, index: &E::Index) -> usize {
        swizzled::<T, S, E>(mapping.extents(), index, 1)
    }
    #[inline(always)]
    fn offset_of_moved<T, E: Extents<Index = [usize; 2]>>(
        mapping: &<LayoutRight as Layout>::Mapping<E>,
        index: &[usize; 2],
        slow: usize,
        lines: usize,
    ) -> usize {
        moved_swizzled::<T, S, E>(mapping.extents(), index, 1, slow, lines)
    }
}

impl<S: Swizzle> TileLayout for LeftSwizzled<S> {
    type Layout = LayoutLeft;
    const PAD: usize = 0;
    const FIRST_FASTEST: bool = true;
    const SWIZZLE: usize = S::BYTES;
    #[inline(always)]
    unsafe fn mapping<E: Extents>(extents: E, _: usize) -> <LayoutLeft as Layout>::Mapping<E> {
        // SAFETY: as this function's contract.
        unsafe { compact::<LayoutLeft, E>(extents) }
    }
    #[inline(always)]
    fn offset_of<T, E: Extents>(mapping: &<LayoutLeft as Layout>::Mapping<E>, index: &E::Index) -> usize {
        swizzled::<T, S, E>(mapping.extents(), index, 0)
    }
    #[inline(always)]
    fn offset_of_moved<T, E: Extents<Index = [usize; 2]>>(
        mapping: &<LayoutLeft as Layout>::Mapping<E>,
        index: &[usize; 2],
        slow: usize,
        lines: usize,
    ) -> usize {
        moved_swizzled::<T, S, E>(mapping.extents(), index, 0, slow, lines)
    }
}

/// The elements a tile of static extents `E` laid out by `L` spans: its size for a compact
/// layout; for a padded one, `lines - 1` padded lines and one unpadded, where a line is the
/// fastest dimension. A tile of one line or none (rank 0, whose one element is a tile too, and
/// rank 1) is not padded, and an empty one spans nothing. `None` if an extent is dynamic or the
/// span overflows `usize`.
pub(super) const fn span<E: Extents, L: TileLayout>() -> Option<usize> {
    let Some(size) = E::STATIC_SIZE else {
        return None;
    };
    if L::PAD == 0 || size == 0 || E::RANK < 2 {
        return Some(size);
    }
    let line = match E::STATIC_ENDS {
        (Some(first), Some(last)) => {
            if L::FIRST_FASTEST {
                first
            } else {
                last
            }
        }
        _ => return None,
    };
    // `line` divides `size`, which is not 0, so neither is `line`.
    match line.checked_add(L::PAD) {
        Some(padded) => match (size / line - 1).checked_mul(padded) {
            Some(lines) => lines.checked_add(line),
            None => None,
        },
        None => None,
    }
}
