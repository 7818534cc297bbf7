//! How a tile lays out its elements ([`TileLayout`]): compact, or with its rows (or columns)
//! padded so that a warp reading across them meets every bank of shared memory once.

use super::sealed;
use crate::extents::{Extents, IndexArray};
use crate::layout::{CompactLayout, Layout, LayoutLeft, LayoutRight, LayoutStride, Mapping};

/// How a tile lays out its elements: [`LayoutRight`] and [`LayoutLeft`] (compact), or
/// [`RightPadded`] and [`LeftPadded`] (a [`LayoutStride`] view whose rows, or columns, are
/// `PAD` elements longer than the tile).
pub trait TileLayout: sealed::Sealed + 'static {
    /// The layout of the tile's view.
    type Layout: Layout;
    /// Elements added to the fastest dimension's stride (0 for compact layouts).
    #[doc(hidden)]
    const PAD: usize;
    /// Whether the first dimension is the fastest (column-major).
    #[doc(hidden)]
    const FIRST_FASTEST: bool;
    /// The mapping of static extents `extents`, whose span is `span` elements.
    ///
    /// # Safety
    ///
    /// Every extent of `E` is static, `span` is [`span`] of `E` for this layout, and the
    /// tile's span fits in a block's shared memory (`MAX_SHARED_BYTES`).
    #[doc(hidden)]
    unsafe fn mapping<E: Extents>(extents: E, span: usize) -> <Self::Layout as Layout>::Mapping<E>;
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

impl sealed::Sealed for LayoutRight {}
impl sealed::Sealed for LayoutLeft {}
impl<const PAD: usize> sealed::Sealed for RightPadded<PAD> {}
impl<const PAD: usize> sealed::Sealed for LeftPadded<PAD> {}

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
