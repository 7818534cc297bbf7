//! Layouts: how an index maps to an element offset, as in C++ `mdspan`.
//!
//! | layout | strides | offset | unique |
//! |---|---|---|---|
//! | [`LayoutRight`] | row-major (C order), implied by the extents | 0 | always |
//! | [`LayoutLeft`] | column-major (Fortran order), implied by the extents | 0 | always |
//! | [`LayoutStride`] | any, each `> 0` | 0 | checked where it matters |
//! | [`LayoutStrideRelaxed`] | any, zero and negative too | ≥ 0, covers the negative strides | checked where it matters |
//!
//! Every mapping is built through a constructor that checks it: the span it needs fits in
//! `isize`, and every index inside the extents maps inside that span. Uniqueness (no two indices
//! share an element) is checked by [`Mapping::is_unique`] with a sufficient test: strides sorted
//! by size must each step over everything the smaller ones reach. Every layout numpy, PyTorch or
//! a slicing of a compact array produces passes it.
//!
//! All index arithmetic of the crate lives here: the compact mappings and their default
//! strides (`compact.rs`), the strided ones (`strided.rs`), spans, the reach of negative strides
//! and the elements a mapping reaches (`span.rs`), and DLPack's `int64_t` shape and stride form,
//! written on export and read in one pass on import (`dlpack.rs`).
//!
//! ```
//! use dlmd::extents::Dims;
//! use dlmd::layout::{Mapping, RightMapping, StrideMapping};
//!
//! let right = RightMapping::new(Dims::new([2, 3])).unwrap();
//! assert_eq!(right.stride(0), 3);
//! assert_eq!(right.offset_of(&[1, 2]), 5);
//! let columns = StrideMapping::new(Dims::new([2, 3]), [1, 2]).unwrap();
//! assert_eq!(columns.offset_of(&[1, 2]), 5);
//! assert!(columns.is_exhaustive());
//! ```

mod compact;
mod dlpack;
mod span;
mod strided;
#[cfg(test)]
mod tests;

pub use compact::{LeftMapping, RightMapping};
pub use strided::{RelaxedMapping, StrideMapping};

pub(crate) use compact::compact_strides;
pub(crate) use dlpack::{ReadI64, to_i64};
pub(crate) use span::{for_each_reached, negative_reach};

use crate::extents::{Extents, IndexArray};
use core::fmt::Debug;
use core::hash::Hash;

/// Why extents and strides do not make a mapping of some layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A stride differs from the one the layout implies.
    #[error("stride {stride} of dimension {dim} does not match {layout}, which needs {expected}")]
    StrideMismatch {
        /// The dimension.
        dim: usize,
        /// The stride given.
        stride: i64,
        /// The stride the layout implies.
        expected: i64,
        /// The layout's name.
        layout: &'static str,
    },
    /// A stride of `layout_stride` is zero or negative.
    #[error(
        "stride {stride} of dimension {dim} is not positive, as layout_stride needs (a view of LayoutStrideRelaxed takes zero and negative strides)"
    )]
    NonPositiveStride {
        /// The dimension.
        dim: usize,
        /// The stride given.
        stride: i64,
    },
    /// The offset does not reach back as far as the negative strides go.
    #[error("offset {offset} does not cover the negative strides, which reach {needed} elements back")]
    OffsetTooSmall {
        /// The offset given.
        offset: usize,
        /// How far back the negative strides reach.
        needed: usize,
    },
    /// A layout without an offset was given one.
    #[error("{layout} has no offset, but offset {offset} was given")]
    UnexpectedOffset {
        /// The offset given.
        offset: usize,
        /// The layout's name.
        layout: &'static str,
    },
    /// The number of elements or the span overflows `isize`.
    #[error("the extents and strides span more elements than isize can count")]
    SpanOverflow,
    /// A stride reaches further than `isize` counts: `(extent - 1) × |stride|` elements, with
    /// the other dimensions' reach, do not fit.
    #[error(
        "stride {stride} of dimension {dim} (extent {extent}) reaches further than isize can count{}",
        StrideHint(*stride)
    )]
    StrideReach {
        /// The dimension that reaches furthest.
        dim: usize,
        /// Its extent.
        extent: usize,
        /// Its stride, in elements.
        stride: i64,
    },
    /// Several indices map to one element where a view must not alias.
    #[error("the strides map several indices to one element, which a mutable view must not do")]
    Overlapping,
}

/// What [`LayoutError::StrideReach`] adds where its stride looks like a negative one written as
/// unsigned.
struct StrideHint(i64);

impl core::fmt::Display for StrideHint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match span::unsigned_negative(self.0) {
            Some((meant, size)) => write!(
                f,
                ": it looks like a stride of {meant} elements whose byte stride ({}) was written as an unsigned \
                 number and divided by the item size ({size} bytes); the producer exports negative strides wrongly",
                meant * i64::from(size)
            ),
            None => Ok(()),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A layout policy: a family of [`Mapping`]s, one per extents type.
pub trait Layout: Copy + Debug + Default + Eq + Hash + Send + Sync + 'static + sealed::Sealed + ReadI64 {
    /// The mapping of extents `E` under this layout.
    type Mapping<E: Extents>: Mapping<Extents = E, Layout = Self>;
    /// The name in C++ `mdspan` words, for messages.
    const NAME: &'static str;
    /// Whether every mapping of this layout is unique.
    const ALWAYS_UNIQUE: bool;
    /// Whether mappings carry an offset of index 0 (for negative strides).
    const HAS_OFFSET: bool;
    /// Whether the first index varies fastest in memory (column-major): the dimension that
    /// [`Thread`](crate::kernel::Thread)'s partitions put on a kernel's `x` threads, so that
    /// neighbouring threads touch neighbouring elements. Otherwise the last index does.
    const FIRST_FASTEST: bool = false;
}

/// Maps each index inside the extents to an element offset.
///
/// Every value of a mapping type upholds, by construction: each index inside the extents maps to
/// an offset below [`required_span_size`](Self::required_span_size), and that span, counted in
/// elements, fits in `isize`. Views rely on this to stay in bounds.
pub trait Mapping: Copy + Debug + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The extents type.
    type Extents: Extents;
    /// The layout this is a mapping of.
    type Layout: Layout;

    /// Builds the mapping from strides (counted in elements) and the offset of index 0, checking
    /// them against the layout. A stride that is never stepped along (its dimension has one
    /// element, or the view none) may be anything, as numpy and PyTorch emit arbitrary ones
    /// there: the compact layouts do not check it and keep their own, [`LayoutStride`] replaces
    /// a non-positive one by 1 and keeps a positive one, and [`LayoutStrideRelaxed`] keeps
    /// every stride as given.
    fn from_strides(
        extents: Self::Extents,
        strides: &<<Self::Extents as Extents>::Index as IndexArray>::Isize,
        offset: usize,
    ) -> Result<Self, LayoutError>;

    /// The mapping of these parts, unchecked: how a kernel rebuilds the mapping the host
    /// checked ([`KernelParam`](crate::kernel::KernelParam)).
    ///
    /// # Safety
    ///
    /// The parts are those of a mapping of this type: `extents`, `strides()`, `offset()` and
    /// `required_span_size()` (`span`) of one.
    #[doc(hidden)]
    unsafe fn from_parts_unchecked(
        extents: Self::Extents,
        strides: &<<Self::Extents as Extents>::Index as IndexArray>::Isize,
        offset: usize,
        span: usize,
    ) -> Self;

    /// The mapping of `extents` alone, unchecked, where this mapping follows from its extents
    /// (`layout_right`, `layout_left`); `None` for the strided ones. How a slice whose layout
    /// stays compact by its type builds its mapping without checking strides it knows.
    ///
    /// # Safety
    ///
    /// `extents` hold no more elements than `isize` can count, or none.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn compact_unchecked(extents: Self::Extents) -> Option<Self> {
        let _ = extents;
        None
    }

    /// The extents.
    fn extents(&self) -> &Self::Extents;
    /// The stride of dimension `dim`, in elements.
    ///
    /// # Panics
    ///
    /// If `dim` is not below the rank.
    fn stride(&self, dim: usize) -> isize;
    /// Every stride, in elements.
    fn strides(&self) -> <<Self::Extents as Extents>::Index as IndexArray>::Isize;
    /// The offset of index `[0, …]`: 0 except for [`LayoutStrideRelaxed`] with negative strides.
    fn offset(&self) -> usize;
    /// The number of elements from the start of the span to one past its last element: every
    /// index maps below it. 0 for an empty view.
    fn required_span_size(&self) -> usize;
    /// Whether no two indices map to the same element (sufficient test; see the module docs).
    fn is_unique(&self) -> bool;
    /// Whether every element of the span is reached by an index.
    fn is_exhaustive(&self) -> bool;
    /// Whether the mapping is described by one stride per dimension (true for every layout here).
    fn is_strided(&self) -> bool {
        true
    }
    /// The offset of `index`, which must be inside the extents (otherwise the result is
    /// meaningless, though never undefined behaviour by itself).
    fn offset_of(&self, index: &<Self::Extents as Extents>::Index) -> usize;

    /// Whether `index` is inside the extents.
    #[inline]
    fn contains(&self, index: &<Self::Extents as Extents>::Index) -> bool {
        let extents = self.extents().to_array();
        index.as_ref().iter().zip(extents.as_ref()).all(|(i, e)| i < e)
    }

    /// The number of elements the extents hold.
    #[inline]
    fn size(&self) -> usize {
        let extents = self.extents().to_array();
        let extents = extents.as_ref();
        // Cannot overflow: construction checked that the count fits in isize, and a product with
        // a zero extent is not formed.
        if extents.contains(&0) {
            0
        } else {
            extents.iter().product()
        }
    }
}

/// Row-major (C order): the last index varies fastest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LayoutRight;
/// Column-major (Fortran order): the first index varies fastest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LayoutLeft;
/// Any positive stride per dimension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LayoutStride;
/// Any stride per dimension, zero and negative included, with the offset of index 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LayoutStrideRelaxed;

impl sealed::Sealed for LayoutRight {}
impl sealed::Sealed for LayoutLeft {}
impl sealed::Sealed for LayoutStride {}
impl sealed::Sealed for LayoutStrideRelaxed {}

impl Layout for LayoutRight {
    type Mapping<E: Extents> = RightMapping<E>;
    const NAME: &'static str = "layout_right";
    const ALWAYS_UNIQUE: bool = true;
    const HAS_OFFSET: bool = false;
}
impl Layout for LayoutLeft {
    type Mapping<E: Extents> = LeftMapping<E>;
    const NAME: &'static str = "layout_left";
    const ALWAYS_UNIQUE: bool = true;
    const HAS_OFFSET: bool = false;
    const FIRST_FASTEST: bool = true;
}
impl Layout for LayoutStride {
    type Mapping<E: Extents> = StrideMapping<E>;
    const NAME: &'static str = "layout_stride";
    const ALWAYS_UNIQUE: bool = false;
    const HAS_OFFSET: bool = false;
}
impl Layout for LayoutStrideRelaxed {
    type Mapping<E: Extents> = RelaxedMapping<E>;
    const NAME: &'static str = "layout_stride_relaxed";
    const ALWAYS_UNIQUE: bool = false;
    const HAS_OFFSET: bool = true;
}

/// A layout whose mapping follows from the extents alone: one contiguous span, in row-major
/// ([`LayoutRight`]) or column-major ([`LayoutLeft`]) order.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a compact layout",
    label = "its mapping does not follow from the extents alone",
    note = "this needs one contiguous span (LayoutRight or LayoutLeft); copy strided data into such a view first"
)]
pub trait CompactLayout: Layout {
    /// The mapping of `extents`, or [`LayoutError::SpanOverflow`] when they hold more elements
    /// than `isize` can count.
    fn mapping<E: Extents>(extents: E) -> Result<Self::Mapping<E>, LayoutError>;
}

impl CompactLayout for LayoutRight {
    #[inline]
    fn mapping<E: Extents>(extents: E) -> Result<RightMapping<E>, LayoutError> {
        RightMapping::new(extents)
    }
}

impl CompactLayout for LayoutLeft {
    #[inline]
    fn mapping<E: Extents>(extents: E) -> Result<LeftMapping<E>, LayoutError> {
        LeftMapping::new(extents)
    }
}
