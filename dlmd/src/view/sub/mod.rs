//! `submdspan`: a slice of a view by an index or a range per dimension.
//!
//! Each dimension takes a [`SliceSpec`]: an index (`usize`, the dimension is dropped), or a
//! range (`..`, `a..b`, `a..`, `..b`, `a..=b`, `..=b`, the dimension is kept). The result keeps
//! `layout_right` when, as in C++ `submdspan`, the kept dimensions after the first kept one take
//! their full range (`..`) and no index follows a kept dimension; `layout_left` likewise from the
//! other end; otherwise it is `layout_stride`. A relaxed layout stays relaxed. All of this is
//! decided from the types of the slices, so the result's layout is known at compile time.
//!
//! ```
//! use dlmd::{Dims, HostMdspan, LayoutRight, LayoutStride};
//!
//! let data: Vec<i32> = (0..24).collect();
//! let md = HostMdspan::<i32, Dims<3>>::from_slice(&data, Dims::new([2, 3, 4])).unwrap();
//!
//! // One matrix of the batch: still row-major.
//! let matrix: HostMdspan<i32, Dims<2>, LayoutRight> = md.submdspan((1, .., ..)).unwrap();
//! assert_eq!(matrix[[2, 3]], 23);
//!
//! // Every other column: strided.
//! let cols: HostMdspan<i32, Dims<2>, LayoutStride> = md.submdspan((0, 1..3, 1..4)).unwrap();
//! assert_eq!(cols[[1, 2]], 11);
//! ```

use super::{Access, CopyAccess, Mdspan, Unique};
use crate::dtype::DlElement;
use crate::extents::{Dims, Extents, IndexArray};
use crate::layout::{
    Layout, LayoutError, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mapping, negative_reach,
};
use crate::space::{MemorySpace, Reborrow};
use core::marker::PhantomData;
use core::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// Why a slice does not fit a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    /// An index or a range of dimension `dim` does not fit its extent.
    #[error("slice of dimension {dim} ({start}..{end}) does not fit its extent {extent}")]
    OutOfBounds {
        /// The dimension.
        dim: usize,
        /// The first index selected.
        start: usize,
        /// One past the last index selected.
        end: usize,
        /// The dimension's extent.
        extent: usize,
    },
    /// The sliced mapping could not be built.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

mod sealed {
    pub trait Sealed {}
}

/// A type-level boolean.
pub trait Bool: sealed::Sealed + 'static {
    /// The value.
    const VALUE: bool;
    /// `Self && B`.
    type And<B: Bool>: Bool;
    /// `X` if true, `Y` if false.
    type Pick<X: Layout, Y: Layout>: Layout;
    /// `D::Next` if true, `D` if false.
    type Push<D: DimsCount>: DimsCount;
}

/// Type-level true.
#[derive(Debug)]
pub enum True {}
/// Type-level false.
#[derive(Debug)]
pub enum False {}

impl sealed::Sealed for True {}
impl sealed::Sealed for False {}

impl Bool for True {
    const VALUE: bool = true;
    type And<B: Bool> = B;
    type Pick<X: Layout, Y: Layout> = X;
    type Push<D: DimsCount> = D::Next;
}
impl Bool for False {
    const VALUE: bool = false;
    type And<B: Bool> = False;
    type Pick<X: Layout, Y: Layout> = Y;
    type Push<D: DimsCount> = D;
}

/// `Dims<N>` as a counter of kept dimensions.
pub trait DimsCount: sealed::Sealed + 'static {
    /// `Dims<N + 1>`.
    type Next: DimsCount;
    /// `Dims<N>`.
    type Extents: Extents;
}

macro_rules! dims_count {
    ($($n:literal => $next:literal),*) => {$(
        impl sealed::Sealed for Dims<$n> {}
        impl DimsCount for Dims<$n> {
            type Next = Dims<$next>;
            type Extents = Dims<$n>;
        }
    )*};
}
// Rank 8 is the highest rank with tuple extents; its `Next` is never taken.
dims_count!(0 => 1, 1 => 2, 2 => 3, 3 => 4, 4 => 5, 5 => 6, 6 => 7, 7 => 8, 8 => 8);

/// The walk deciding whether a compact layout survives slicing, one dimension at a time from
/// the end where the layout's stride 1 is not (the left for `layout_right`).
pub trait RuleState: sealed::Sealed + 'static {
    /// After an index.
    type OnIndex: RuleState;
    /// After a kept dimension, full (`..`) or not.
    type OnKept<Full: Bool>: RuleState;
    /// Whether the layout survives if the walk ends here.
    type Ok: Bool;
}

/// No dimension kept yet.
#[derive(Debug)]
pub enum Before {}
/// Dimensions kept, all after the first full while `B`.
#[derive(Debug)]
pub struct After<B>(PhantomData<B>);
/// An index after a kept dimension: the layout is lost.
#[derive(Debug)]
pub enum Broken {}

impl sealed::Sealed for Before {}
impl<B> sealed::Sealed for After<B> {}
impl sealed::Sealed for Broken {}

impl RuleState for Before {
    type OnIndex = Before;
    type OnKept<Full: Bool> = After<True>;
    type Ok = True;
}
impl<B: Bool> RuleState for After<B> {
    type OnIndex = Broken;
    type OnKept<Full: Bool> = After<B::And<Full>>;
    type Ok = B;
}
impl RuleState for Broken {
    type OnIndex = Broken;
    type OnKept<Full: Bool> = Broken;
    type Ok = False;
}

/// A slice of one dimension: an index, or a range.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot slice a dimension",
    label = "not an index or a range",
    note = "each dimension takes a `usize` index or a range: `..`, `a..b`, `a..`, `..b`, `a..=b`, `..=b`"
)]
pub trait SliceSpec: Clone + sealed::Sealed {
    /// Whether the dimension is kept (a range) or dropped (an index).
    type Kept: Bool;
    /// Whether it is the full range `..`.
    type Full: Bool;
    /// One step of the layout walk.
    type Step<St: RuleState>: RuleState;
    /// The first index and the number selected, or `None` if they do not fit `extent`.
    fn resolve(&self, extent: usize) -> Option<(usize, usize)>;
    /// The selection as written, for messages.
    fn bounds(&self) -> (usize, usize);
}

impl sealed::Sealed for usize {}
impl SliceSpec for usize {
    type Kept = False;
    type Full = False;
    type Step<St: RuleState> = St::OnIndex;
    #[inline]
    fn resolve(&self, extent: usize) -> Option<(usize, usize)> {
        (*self < extent).then_some((*self, 1))
    }
    fn bounds(&self) -> (usize, usize) {
        (*self, self.saturating_add(1))
    }
}

macro_rules! range_spec {
    ($ty:ty, $full:ty, |$r:ident, $e:ident| $range:expr, |$w:ident| $bounds:expr) => {
        impl sealed::Sealed for $ty {}
        impl SliceSpec for $ty {
            type Kept = True;
            type Full = $full;
            type Step<St: RuleState> = St::OnKept<$full>;
            #[inline]
            fn resolve(&self, extent: usize) -> Option<(usize, usize)> {
                let $r = self;
                let $e = extent;
                let (start, end): (usize, usize) = $range?;
                // Lazily: `end - start` underflows for a reversed range.
                (start <= end && end <= extent).then(|| (start, end - start))
            }
            fn bounds(&self) -> (usize, usize) {
                let $w = self;
                $bounds
            }
        }
    };
}

range_spec!(RangeFull, True, |_r, e| Some((0, e)), |_r| (0, usize::MAX));
range_spec!(Range<usize>, False, |r, _e| Some((r.start, r.end)), |r| (
    r.start, r.end
));
range_spec!(RangeFrom<usize>, False, |r, e| Some((r.start, e)), |r| (
    r.start,
    usize::MAX
));
range_spec!(RangeTo<usize>, False, |r, _e| Some((0, r.end)), |r| (0, r.end));
// An inclusive range ending at `usize::MAX` selects past any extent; one an iterator used up
// selects nothing (as slicing a Rust slice with it does).
range_spec!(
    RangeInclusive<usize>,
    False,
    |r, _e| if r.is_empty() && r.start() <= r.end() {
        r.end().checked_add(1).map(|end| (end, end))
    } else {
        r.end().checked_add(1).map(|end| (*r.start(), end))
    },
    |r| (*r.start(), r.end().saturating_add(1))
);
range_spec!(
    RangeToInclusive<usize>,
    False,
    |r, _e| r.end.checked_add(1).map(|end| (0, end)),
    |r| (0, r.end.saturating_add(1))
);

/// A layout a view can be sliced in, and what it becomes.
pub trait SubLayout: Layout {
    /// The layout of a slice, given whether `layout_right` and `layout_left` survive.
    type Out<RightOk: Bool, LeftOk: Bool>: Layout;
}

impl SubLayout for LayoutRight {
    type Out<RightOk: Bool, LeftOk: Bool> = RightOk::Pick<LayoutRight, LayoutStride>;
}
impl SubLayout for LayoutLeft {
    type Out<RightOk: Bool, LeftOk: Bool> = LeftOk::Pick<LayoutLeft, LayoutStride>;
}
impl SubLayout for LayoutStride {
    type Out<RightOk: Bool, LeftOk: Bool> = LayoutStride;
}
impl SubLayout for LayoutStrideRelaxed {
    type Out<RightOk: Bool, LeftOk: Bool> = LayoutStrideRelaxed;
}

/// One [`SliceSpec`] per dimension of a view whose index is `I`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not slice a view indexed by `{I}`",
    label = "needs one index or range per dimension",
    note = "`submdspan` takes a tuple with one `usize` or range for each dimension of the view"
)]
pub trait SliceSpecs<I: IndexArray>: sealed::Sealed {
    /// The extents of the slice: one dynamic extent per kept dimension.
    type Extents: Extents;
    /// Whether `layout_right` survives.
    type RightOk: Bool;
    /// Whether `layout_left` survives.
    type LeftOk: Bool;
    /// For each dimension, the first index and, for kept dimensions, the number selected.
    fn resolve(&self, extents: &I) -> Result<([usize; 8], [Option<usize>; 8]), SliceError>;
}

macro_rules! slice_specs {
    ($rank:literal; $($s:ident $i:tt),*; rev $($r:ident),*) => {
        impl<$($s: SliceSpec),*> sealed::Sealed for ($($s,)*) {}
        impl<$($s: SliceSpec),*> SliceSpecs<[usize; $rank]> for ($($s,)*) {
            type Extents = <slice_specs!(@count Dims<0>; $($s)*) as DimsCount>::Extents;
            type RightOk = <slice_specs!(@walk Before; $($s)*) as RuleState>::Ok;
            type LeftOk = <slice_specs!(@walk Before; $($r)*) as RuleState>::Ok;

            #[allow(unused_variables, unused_mut)]
            fn resolve(&self, extents: &[usize; $rank]) -> Result<([usize; 8], [Option<usize>; 8]), SliceError> {
                let mut starts = [0usize; 8];
                let mut kept = [None; 8];
                $(
                    let extent = extents[$i];
                    let (start, len) = self.$i.resolve(extent).ok_or_else(|| {
                        let (start, end) = self.$i.bounds();
                        SliceError::OutOfBounds { dim: $i, start, end, extent }
                    })?;
                    starts[$i] = start;
                    if <$s::Kept as Bool>::VALUE {
                        kept[$i] = Some(len);
                    }
                )*
                Ok((starts, kept))
            }
        }
    };
    (@count $acc:ty;) => { $acc };
    (@count $acc:ty; $head:ident $($tail:ident)*) => {
        slice_specs!(@count <<$head as SliceSpec>::Kept as Bool>::Push<$acc>; $($tail)*)
    };
    (@walk $acc:ty;) => { $acc };
    (@walk $acc:ty; $head:ident $($tail:ident)*) => {
        slice_specs!(@walk <$head as SliceSpec>::Step<$acc>; $($tail)*)
    };
}

slice_specs!(1; A 0; rev A);
slice_specs!(2; A 0, B 1; rev B, A);
slice_specs!(3; A 0, B 1, C 2; rev C, B, A);
slice_specs!(4; A 0, B 1, C 2, D 3; rev D, C, B, A);
slice_specs!(5; A 0, B 1, C 2, D 3, E 4; rev E, D, C, B, A);
slice_specs!(6; A 0, B 1, C 2, D 3, E 4, F 5; rev F, E, D, C, B, A);
slice_specs!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6; rev G, F, E, D, C, B, A);
slice_specs!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7; rev H, G, F, E, D, C, B, A);

/// The layout of a slice of a view in layout `L` by `Sp`.
pub type SubLayoutOf<L, Sp, I> = <L as SubLayout>::Out<<Sp as SliceSpecs<I>>::RightOk, <Sp as SliceSpecs<I>>::LeftOk>;

/// The mapping of a slice of a view in layout `L` by `Sp`.
type SubMapping<L, Sp, I> = <SubLayoutOf<L, Sp, I> as Layout>::Mapping<<Sp as SliceSpecs<I>>::Extents>;

/// The span start and mapping of a slice.
type SliceParts<T, L, Sp, I> = Result<(*mut T, SubMapping<L, Sp, I>), SliceError>;

/// The view `submdspan` returns.
pub type Submdspan<'v, T, Sp, I, L, S, A> = Mdspan<'v, T, <Sp as SliceSpecs<I>>::Extents, SubLayoutOf<L, Sp, I>, S, A>;

/// What `submdspan` returns.
pub type SliceResult<'v, T, Sp, I, L, S, A> = Result<Submdspan<'v, T, Sp, I, L, S, A>, SliceError>;

impl<'a, T: DlElement, E: Extents, L: SubLayout, S: MemorySpace, A: Access> Mdspan<'a, T, E, L, S, A> {
    /// The pointer and mapping of a slice.
    fn slice_parts<Sp: SliceSpecs<E::Index>>(&self, specs: Sp) -> SliceParts<T, L, Sp, E::Index> {
        let extents = self.extents().to_array();
        let (starts, kept) = specs.resolve(&extents)?;
        let strides = self.mapping().strides();
        let mut out_extents = <<Sp::Extents as Extents>::Index as IndexArray>::zeros();
        let mut out_strides = <<Sp::Extents as Extents>::Index as IndexArray>::isize_zeros();
        // The offset of the first selected element. Wrapping: a view without elements may
        // carry any strides, and this is used only for a slice with elements, where every term
        // lies in the span.
        let mut first = self.mapping().offset() as isize;
        let mut k = 0;
        for dim in 0..E::RANK {
            let stride = strides.as_ref()[dim];
            first = first.wrapping_add((starts[dim] as isize).wrapping_mul(stride));
            if let Some(len) = kept[dim] {
                out_extents.as_mut()[k] = len;
                out_strides.as_mut()[k] = stride;
                k += 1;
            }
        }
        let empty = out_extents.as_ref().contains(&0) || extents.as_ref().contains(&0);
        let slice_extents = <Sp::Extents as Extents>::from_array(out_extents).map_err(|_| LayoutError::SpanOverflow)?;
        // SAFETY: the slice's extents hold no more elements than this view's, which fit in
        // `isize`: `SliceSpecs` is sealed, so `resolve` is one of this module's, which keeps
        // each start and length within its dimension's extent (and a slice of a view without
        // elements either keeps an empty dimension or selects nothing).
        if let Some(mapping) = unsafe { SubMapping::<L, Sp, E::Index>::compact_unchecked(slice_extents) } {
            // A compact layout survives only a slice whose kept dimensions are the compact
            // strides of its extents (the rules of `SubLayout`, decided from the types of the
            // specs, which only this module implements):
            // a view in `layout_right` keeps it only where every kept dimension after the first
            // takes its full range and no index follows a kept one, so each kept stride is the
            // product of the kept extents after it; `layout_left` likewise from the other end.
            // Such strides are never negative: the slice starts at its first selected element.
            debug_assert_eq!(
                Mapping::from_strides(slice_extents, &out_strides, 0).ok(),
                Some(mapping),
                "a compact slice's strides are its layout's own"
            );
            let ptr = if empty {
                self.data_handle()
            } else {
                // SAFETY: every selected index is inside the extents, so the first selected
                // element lies inside this view's span.
                unsafe { self.data_handle().offset(first) }
            };
            return Ok((ptr, mapping));
        }
        let (ptr, offset) = if empty {
            (self.data_handle(), 0)
        } else {
            // How far the kept negative strides reach back from the first selected element:
            // inside this view's span, so it cannot overflow.
            let back = negative_reach(out_extents.as_ref(), out_strides.as_ref())?;
            // SAFETY: every selected index is inside the extents, so the first selected element
            // and everything the kept strides reach from it lie inside this view's span; the
            // slice's span starts `back` elements before the first selected one.
            (unsafe { self.data_handle().offset(first - back as isize) }, back)
        };
        let mapping = Mapping::from_strides(slice_extents, &out_strides, offset)?;
        Ok((ptr, mapping))
    }

    /// A read-only slice, borrowing this view. Each dimension takes a [`SliceSpec`]: an index
    /// (the dimension is dropped) or a range (it is kept); [`SubLayout`] gives the layout of the
    /// result, known at compile time.
    ///
    /// The slice is [`Shared`](super::Shared) for a reference view and
    /// [`Aliased`](super::Aliased) for an aliased one.
    ///
    /// In a kernel, a mutable device or managed view is not sliced ([`Reborrow`]).
    pub fn submdspan<Sp: SliceSpecs<E::Index>>(&self, specs: Sp) -> SliceResult<'_, T, Sp, E::Index, L, S, A::ReadOnly>
    where
        S: Reborrow<A>,
    {
        let (ptr, mapping) = self.slice_parts(specs)?;
        // SAFETY: the slice's mapping reaches a subset of this view's elements (checked by the
        // bounds of every dimension above), and it is read-only for the borrow of `self`, with
        // the read-only form of this view's access (never more than it promises).
        Ok(unsafe { Mdspan::from_raw_parts(ptr, mapping, self.space()) })
    }
}

impl<'a, T: DlElement, E: Extents, L: SubLayout, S: MemorySpace, A: CopyAccess> Mdspan<'a, T, E, L, S, A> {
    /// A slice of the same access keeping the data lifetime `'a` (such a view is `Copy`).
    pub fn into_submdspan<Sp: SliceSpecs<E::Index>>(self, specs: Sp) -> SliceResult<'a, T, Sp, E::Index, L, S, A> {
        let (ptr, mapping) = self.slice_parts(specs)?;
        // SAFETY: as in `submdspan`; a `Copy` view's access holds for any copy of it, so it
        // holds for a subset of its elements, for `'a`.
        Ok(unsafe { Mdspan::from_raw_parts(ptr, mapping, self.space()) })
    }
}

impl<'a, T: DlElement, E: Extents, L: SubLayout, S: MemorySpace> Mdspan<'a, T, E, L, S, Unique> {
    /// A read-write slice, borrowing this view mutably.
    ///
    /// Not in a kernel for device or managed memory: every thread holds the view, and a slice
    /// would be split among them again, differently ([`Reborrow`]).
    pub fn submdspan_mut<Sp: SliceSpecs<E::Index>>(
        &mut self,
        specs: Sp,
    ) -> SliceResult<'_, T, Sp, E::Index, L, S, Unique>
    where
        S: Reborrow<Unique>,
    {
        let (ptr, mapping) = self.slice_parts(specs)?;
        // SAFETY: a subset of a unique view's elements selected by distinct indices is unique;
        // `&mut self` is borrowed for the slice's lifetime, so nothing else reaches them.
        Ok(unsafe { Mdspan::from_raw_parts(ptr, mapping, self.space()) })
    }
}

#[cfg(test)]
mod tests;
