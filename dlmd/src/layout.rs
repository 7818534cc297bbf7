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
    #[error("stride {stride} of dimension {dim} is not positive, as layout_stride needs")]
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
    /// Several indices map to one element where a view must not alias.
    #[error("the strides map several indices to one element, which a mutable view must not do")]
    Overlapping,
}

mod sealed {
    pub trait Sealed {}
}

/// A layout policy: a family of [`Mapping`]s, one per extents type.
pub trait Layout: Copy + Debug + Default + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The mapping of extents `E` under this layout.
    type Mapping<E: Extents>: Mapping<Extents = E, Layout = Self>;
    /// The name in C++ `mdspan` words, for messages.
    const NAME: &'static str;
    /// Whether every mapping of this layout is unique.
    const ALWAYS_UNIQUE: bool;
    /// Whether mappings carry an offset of index 0 (for negative strides).
    const HAS_OFFSET: bool;
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
    /// them against the layout. Strides of dimensions with extent 0 or 1 are not checked and
    /// replaced by the layout's own, as numpy and PyTorch emit arbitrary ones there.
    fn from_strides(
        extents: Self::Extents,
        strides: &<<Self::Extents as Extents>::Index as IndexArray>::Isize,
        offset: usize,
    ) -> Result<Self, LayoutError>;

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

/// A layout whose mapping follows from the extents alone.
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

/// The element count of `extents`, if it fits in `isize`. Zero when any extent is zero, however
/// large the others.
#[inline(always)]
fn checked_count(extents: &[usize]) -> Result<usize, LayoutError> {
    let mut count: u128 = 1;
    for &n in extents {
        count = count.saturating_mul(n as u128);
    }
    if count > isize::MAX as u128 {
        Err(LayoutError::SpanOverflow)
    } else {
        Ok(count as usize)
    }
}

/// Row-major strides of `extents`.
#[inline]
fn right_strides<I: IndexArray>(extents: &I) -> I::Isize {
    let mut strides = I::isize_zeros();
    let mut stride = 1isize;
    for (s, &e) in strides.as_mut().iter_mut().zip(extents.as_ref()).rev() {
        *s = stride;
        stride = stride.wrapping_mul(e as isize);
    }
    strides
}

/// Column-major strides of `extents`.
#[inline]
fn left_strides<I: IndexArray>(extents: &I) -> I::Isize {
    let mut strides = I::isize_zeros();
    let mut stride = 1isize;
    for (s, &e) in strides.as_mut().iter_mut().zip(extents.as_ref()) {
        *s = stride;
        stride = stride.wrapping_mul(e as isize);
    }
    strides
}

/// Bit widths `(e, s)` under which the unchecked arithmetic of a rank-`rank` strided mapping
/// cannot overflow: `rank` extents below 2^e multiply to below 2^62 (`e ≤ 62 / rank`), and
/// `rank` steps `(n - 1) × stride`, each below 2^(e + s), add up to below 2^62
/// (`e + s + ⌈log2 rank⌉ ≤ 62`). Extents are capped at 2^40 so that strides keep a useful range.
const fn unchecked_bits(rank: usize) -> (u32, u32) {
    if rank == 0 {
        return (62, 62);
    }
    let extent = if 62 / rank > 40 { 40 } else { (62 / rank) as u32 };
    let log2_rank = rank.next_power_of_two().trailing_zeros();
    (extent, 62 - extent - log2_rank)
}

/// Checks `given` against the compact strides of `extents` (row-major when `right`), skipping
/// dimensions of extent ≤ 1, and that the element count fits in `isize`: one pass.
#[inline(always)]
fn check_compact<I: IndexArray>(
    extents: &I,
    given: &I::Isize,
    offset: usize,
    right: bool,
    layout: &'static str,
) -> Result<(), LayoutError> {
    if offset != 0 {
        return Err(LayoutError::UnexpectedOffset { offset, layout });
    }
    // While every extent is small enough for the rank (`unchecked_bits`) the running product
    // cannot overflow, and a mismatch found is a mismatch; past that, the exact computation
    // decides.
    let (e, g) = (extents.as_ref(), given.as_ref());
    let extent_bits = const { unchecked_bits(I::RANK).0 };
    let mut expected = 1usize;
    let mut all_n = 0usize;
    let mut mismatch = None;
    for k in 0..e.len() {
        let dim = if right { e.len() - 1 - k } else { k };
        let (n, s) = (e[dim], g[dim]);
        if n > 1 && s as usize != expected {
            mismatch = Some((dim, s, expected));
            break;
        }
        all_n |= n;
        expected = expected.wrapping_mul(n);
    }
    if all_n >> extent_bits != 0 {
        return check_compact_exact(e, g, right, layout);
    }
    match mismatch {
        None => Ok(()),
        // The strides of a tensor without elements describe nothing (numpy gives
        // `np.zeros((2, 0, 5))` strides (0, 0, 0)).
        Some(_) if e.contains(&0) => Ok(()),
        Some((dim, stride, expected)) => Err(LayoutError::StrideMismatch {
            dim,
            stride: stride as i64,
            expected: expected as i64,
            layout,
        }),
    }
}

/// [`check_compact`] with every product checked for overflow.
#[cold]
fn check_compact_exact(e: &[usize], g: &[isize], right: bool, layout: &'static str) -> Result<(), LayoutError> {
    if e.contains(&0) {
        return Ok(());
    }
    // Once the running product overflows, later comparisons may fail spuriously; the overflow is
    // reported instead unless an extent of 0 makes the tensor empty.
    let mut expected = 1usize;
    let mut overflow = false;
    let mut empty = false;
    for k in 0..e.len() {
        let dim = if right { e.len() - 1 - k } else { k };
        let (n, s) = (e[dim], g[dim]);
        if n > 1 && (overflow || s as usize != expected) {
            if overflow {
                break;
            }
            return Err(LayoutError::StrideMismatch {
                dim,
                stride: s as i64,
                expected: expected as i64,
                layout,
            });
        }
        let (product, o) = expected.overflowing_mul(n);
        expected = product;
        overflow |= o;
        empty |= n == 0;
    }
    if empty || (!overflow && expected <= isize::MAX as usize) {
        return Ok(());
    }
    // An empty dimension later in the scan order still makes the tensor empty.
    if e.contains(&0) {
        Ok(())
    } else {
        Err(LayoutError::SpanOverflow)
    }
}

macro_rules! compact_mapping {
    ($(#[$meta:meta])* $name:ident, $layout:ident, $strides:ident, $right:literal, |$m:ident, $index:ident| $offset:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name<E: Extents> {
            extents: E,
        }

        impl<E: Extents> sealed::Sealed for $name<E> {}

        impl<E: Extents> $name<E> {
            /// The mapping of `extents`, or [`LayoutError::SpanOverflow`] when they hold more
            /// elements than `isize` can count.
            #[inline]
            pub fn new(extents: E) -> Result<Self, LayoutError> {
                checked_count(extents.to_array().as_ref())?;
                Ok(Self { extents })
            }
        }

        impl<E: Extents> Mapping for $name<E> {
            type Extents = E;
            type Layout = $layout;

            #[inline(always)]
            fn from_strides(
                extents: E,
                strides: &<E::Index as IndexArray>::Isize,
                offset: usize,
            ) -> Result<Self, LayoutError> {
                check_compact(&extents.to_array(), strides, offset, $right, $layout::NAME)?;
                Ok(Self { extents })
            }

            #[inline(always)]
            fn extents(&self) -> &E {
                &self.extents
            }
            #[inline]
            fn stride(&self, dim: usize) -> isize {
                self.strides().as_ref()[dim]
            }
            #[inline]
            fn strides(&self) -> <E::Index as IndexArray>::Isize {
                $strides(&self.extents.to_array())
            }
            #[inline(always)]
            fn offset(&self) -> usize {
                0
            }
            #[inline]
            fn required_span_size(&self) -> usize {
                self.size()
            }
            #[inline(always)]
            fn is_unique(&self) -> bool {
                true
            }
            #[inline(always)]
            fn is_exhaustive(&self) -> bool {
                true
            }
            #[inline(always)]
            fn offset_of(&self, $index: &E::Index) -> usize {
                let $m = self;
                $offset
            }
        }
    };
}

compact_mapping!(
    /// The mapping of [`LayoutRight`]: stores only the extents.
    RightMapping, LayoutRight, right_strides, true,
    |m, index| {
        let extents = m.extents.to_array();
        let mut offset = 0usize;
        for (&i, &e) in index.as_ref().iter().zip(extents.as_ref()) {
            offset = offset * e + i;
        }
        offset
    }
);

compact_mapping!(
    /// The mapping of [`LayoutLeft`]: stores only the extents.
    LeftMapping, LayoutLeft, left_strides, false,
    |m, index| {
        let extents = m.extents.to_array();
        let mut offset = 0usize;
        for (&i, &e) in index.as_ref().iter().zip(extents.as_ref()).rev() {
            offset = offset * e + i;
        }
        offset
    }
);

/// The extents, each paired with the magnitude of its stride, for the uniqueness test.
/// Dimensions of extent 1 never step and are left out; any extent 0 makes the view empty.
fn is_unique_strided(extents: &[usize], strides: impl Iterator<Item = usize>) -> bool {
    if extents.contains(&0) {
        return true;
    }
    // Insertion sort over at most a few dozen dimensions, without allocating.
    let mut dims = [(0usize, 0usize); 64];
    let mut n = 0;
    for (&e, s) in extents.iter().zip(strides) {
        if e > 1 {
            if n == dims.len() {
                return false;
            }
            let mut k = n;
            while k > 0 && dims[k - 1].1 > s {
                dims[k] = dims[k - 1];
                k -= 1;
            }
            dims[k] = (e, s);
            n += 1;
        }
    }
    // Each stride must step past everything the smaller strides reach.
    let mut reach = 0usize;
    for &(e, s) in &dims[..n] {
        if s <= reach {
            return false;
        }
        // Cannot overflow: the span was checked to fit in isize.
        reach += (e - 1) * s;
    }
    true
}

/// Calls `f` with the offset, from the start of the span, of every element `mapping` reaches (in
/// no particular order; an element several indices reach may come more than once, but with
/// `std` there are never more calls than elements in the span), stopping at the first error.
///
/// The work is bounded by the span, not by the number of indices: dimensions that never step
/// (extent 1, stride 0) are dropped, dimensions whose strides tile one another (a contiguous
/// tensor, a sliding window) merge into one, and what still overlaps is marked in a bitmap of
/// the span (with `std`; without it, the remaining indices are walked). A broadcast tensor of
/// 2^61 indices over one element is one call.
pub(crate) fn for_each_reached<M: Mapping, X>(mapping: &M, mut f: impl FnMut(usize) -> Result<(), X>) -> Result<(), X> {
    let extents = mapping.extents().to_array();
    let strides = mapping.strides();
    if extents.as_ref().contains(&0) {
        return Ok(());
    }
    // (extent, |stride|) of the dimensions that step, sorted by stride. Offsets from the span's
    // start are `Σ j·|s|` with `0 ≤ j < n` whatever the signs: negative strides only shift the
    // start, which the mapping's offset already covers.
    let mut dims = [(0usize, 0usize); 64];
    let mut count = 0;
    for (&n, &s) in extents.as_ref().iter().zip(strides.as_ref()) {
        let s = s.unsigned_abs();
        if n > 1 && s > 0 {
            // More than 62 stepping dimensions would hold over 2^62 indices, which no mapping
            // allows.
            let Some(slot) = dims.get_mut(count) else { break };
            *slot = (n, s);
            count += 1;
        }
    }
    let dims = &mut dims[..count];
    dims.sort_unstable_by_key(|&(_, s)| s);
    // Merge each dimension into the previous one where its stride is a multiple `q` of it with
    // `q ≤ n`: `{a·s + b·q·s}` is then `{k·s : k ≤ (n - 1) + (m - 1)·q}`, with no gap.
    let mut merged = 0;
    for k in 0..dims.len() {
        let (m, t) = dims[k];
        if merged > 0 {
            let (n, s) = dims[merged - 1];
            if t % s == 0 && t / s <= n {
                dims[merged - 1].0 = n + (m - 1) * (t / s);
                continue;
            }
        }
        dims[merged] = (m, t);
        merged += 1;
    }
    let dims = &dims[..merged];
    // The indices of the merged dimensions are no more than the span unless they overlap.
    #[cfg(feature = "std")]
    {
        let span = mapping.required_span_size();
        if dims.iter().fold(1usize, |c, &(n, _)| c.saturating_mul(n)) > span {
            return for_each_marked(dims, span, f);
        }
    }
    let mut index = [0usize; 64];
    let index = &mut index[..dims.len()];
    let mut offset = 0usize;
    loop {
        f(offset)?;
        // Odometer over the merged dimensions, keeping the offset as a running sum.
        let mut d = 0;
        loop {
            let Some(&(n, s)) = dims.get(d) else {
                return Ok(());
            };
            if index[d] + 1 < n {
                index[d] += 1;
                offset += s;
                break;
            }
            offset -= (n - 1) * s;
            index[d] = 0;
            d += 1;
        }
    }
}

/// [`for_each_reached`] for dimensions that overlap: each dimension widens a bitmap of the
/// reachable offsets along chains of its stride, in one pass over the span.
#[cfg(feature = "std")]
#[cold]
fn for_each_marked<X>(
    dims: &[(usize, usize)],
    span: usize,
    mut f: impl FnMut(usize) -> Result<(), X>,
) -> Result<(), X> {
    let mut bits = std::vec![0u64; span.div_ceil(64)];
    let get = |bits: &[u64], x: usize| bits[x / 64] >> (x % 64) & 1 != 0;
    bits[0] = 1;
    for &(n, s) in dims {
        // An offset x is reached after this dimension if some x - j·s (j < n) was reached
        // before it: walk each residue class of s upwards, remembering the last one reached.
        for r in 0..s.min(span) {
            let mut last: Option<usize> = None;
            let mut x = r;
            while x < span {
                if get(&bits, x) {
                    last = Some(x);
                } else if last.is_some_and(|l| (x - l) / s < n) {
                    bits[x / 64] |= 1 << (x % 64);
                }
                x += s;
            }
        }
    }
    for x in 0..span {
        if get(&bits, x) {
            f(x)?;
        }
    }
    Ok(())
}

/// The span `1 + Σ (e - 1)·|s|` (0 when empty) and how far the negative strides reach back, with
/// the element count and the span checked to fit in `isize`: one pass.
#[inline(always)]
fn strided_span(extents: &[usize], strides: &[isize]) -> Result<(usize, usize), LayoutError> {
    let mut count = 1usize;
    let mut forward = 0usize;
    let mut back = 0usize;
    let mut overflow = false;
    let mut empty = false;
    for (&n, &s) in extents.iter().zip(strides) {
        let (c, o1) = count.overflowing_mul(n);
        let (reach, o2) = n.wrapping_sub(1).overflowing_mul(s.unsigned_abs());
        let side = if s < 0 { &mut back } else { &mut forward };
        let (sum, o3) = side.overflowing_add(reach);
        *side = sum;
        count = c;
        empty |= n == 0;
        overflow |= o1 | o2 | o3;
    }
    if empty {
        return Ok((0, 0));
    }
    let (span, o) = forward.overflowing_add(back);
    if overflow || o || count > isize::MAX as usize || span >= isize::MAX as usize {
        return Err(LayoutError::SpanOverflow);
    }
    Ok((span + 1, back))
}

/// The mapping of [`LayoutStride`]: extents and a positive stride per dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StrideMapping<E: Extents> {
    extents: E,
    strides: E::Index,
    span: usize,
}

impl<E: Extents> sealed::Sealed for StrideMapping<E> {}

impl<E: Extents> StrideMapping<E> {
    /// The mapping of `extents` with `strides`, each positive (any stride for extents without
    /// elements, where 0 becomes 1); the span must fit in `isize`.
    pub fn new(extents: E, mut strides: E::Index) -> Result<Self, LayoutError> {
        let e = extents.to_array();
        if e.as_ref().contains(&0) {
            for s in strides.as_mut().iter_mut().filter(|s| **s == 0) {
                *s = 1;
            }
        }
        let mut signed = <E::Index as IndexArray>::isize_zeros();
        for (dim, (s, &given)) in signed.as_mut().iter_mut().zip(strides.as_ref()).enumerate() {
            if given == 0 || given > isize::MAX as usize {
                return Err(LayoutError::NonPositiveStride {
                    dim,
                    stride: given as i64,
                });
            }
            *s = given as isize;
        }
        let (span, _) = strided_span(e.as_ref(), signed.as_ref())?;
        Ok(Self { extents, strides, span })
    }
}

impl<E: Extents> Mapping for StrideMapping<E> {
    type Extents = E;
    type Layout = LayoutStride;

    #[inline(always)]
    fn from_strides(extents: E, strides: &<E::Index as IndexArray>::Isize, offset: usize) -> Result<Self, LayoutError> {
        if offset != 0 {
            return Err(LayoutError::UnexpectedOffset {
                offset,
                layout: LayoutStride::NAME,
            });
        }
        // One pass: positivity, element count and forward reach, unchecked. While every extent
        // and stride is small enough for the rank (`unchecked_bits`), no product or sum can
        // reach 2^62; beyond that the exact, checked computation decides.
        let e = extents.to_array();
        let mut positive = E::Index::zeros();
        let (mut count, mut reach, mut all_n, mut all_s) = (1usize, 0usize, 0usize, 0usize);
        for dim in 0..E::RANK {
            let (n, s) = (e.as_ref()[dim], strides.as_ref()[dim]);
            let s = match s {
                s if s > 0 => s as usize,
                // Never stepped along, or no element at all: any positive stride describes it.
                _ if n <= 1 || e.as_ref().contains(&0) => 1,
                s => return Err(LayoutError::NonPositiveStride { dim, stride: s as i64 }),
            };
            positive.as_mut()[dim] = s;
            (all_n, all_s) = (all_n | n, all_s | s);
            count = count.wrapping_mul(n);
            reach = reach.wrapping_add(n.wrapping_sub(1).wrapping_mul(s));
        }
        let (extent_bits, stride_bits) = const { unchecked_bits(E::RANK) };
        let span = if all_n >> extent_bits == 0 && all_s >> stride_bits == 0 {
            if count == 0 { 0 } else { reach + 1 }
        } else {
            let mut signed = <E::Index as IndexArray>::isize_zeros();
            for (t, &s) in signed.as_mut().iter_mut().zip(positive.as_ref()) {
                *t = s as isize;
            }
            strided_span(e.as_ref(), signed.as_ref())?.0
        };
        Ok(Self {
            extents,
            strides: positive,
            span,
        })
    }

    #[inline(always)]
    fn extents(&self) -> &E {
        &self.extents
    }
    #[inline]
    fn stride(&self, dim: usize) -> isize {
        self.strides.as_ref()[dim] as isize
    }
    #[inline]
    fn strides(&self) -> <E::Index as IndexArray>::Isize {
        let mut out = <E::Index as IndexArray>::isize_zeros();
        for (o, &s) in out.as_mut().iter_mut().zip(self.strides.as_ref()) {
            *o = s as isize;
        }
        out
    }
    #[inline(always)]
    fn offset(&self) -> usize {
        0
    }
    #[inline(always)]
    fn required_span_size(&self) -> usize {
        self.span
    }
    fn is_unique(&self) -> bool {
        is_unique_strided(self.extents.to_array().as_ref(), self.strides.as_ref().iter().copied())
    }
    fn is_exhaustive(&self) -> bool {
        self.span == self.size() && self.is_unique()
    }
    #[inline(always)]
    fn offset_of(&self, index: &E::Index) -> usize {
        let mut offset = 0usize;
        for (&i, &s) in index.as_ref().iter().zip(self.strides.as_ref()) {
            offset += i * s;
        }
        offset
    }
}

/// The mapping of [`LayoutStrideRelaxed`]: extents, any stride per dimension, and the offset of
/// index 0, which covers the negative strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RelaxedMapping<E: Extents> {
    extents: E,
    strides: <E::Index as IndexArray>::Isize,
    offset: usize,
    span: usize,
}

impl<E: Extents> sealed::Sealed for RelaxedMapping<E> {}

impl<E: Extents> RelaxedMapping<E> {
    /// The mapping of `extents` with `strides` and index 0 at `offset`; `offset` must reach back
    /// as far as the negative strides do, and the span must fit in `isize`.
    #[inline(always)]
    pub fn new(extents: E, strides: <E::Index as IndexArray>::Isize, offset: usize) -> Result<Self, LayoutError> {
        let e = extents.to_array();
        let (reach, back) = strided_span(e.as_ref(), strides.as_ref())?;
        if offset < back {
            return Err(LayoutError::OffsetTooSmall { offset, needed: back });
        }
        let span = if reach == 0 {
            0
        } else {
            match (offset - back).checked_add(reach) {
                Some(span) if span <= isize::MAX as usize => span,
                _ => return Err(LayoutError::SpanOverflow),
            }
        };
        Ok(Self {
            extents,
            strides,
            offset,
            span,
        })
    }
}

impl<E: Extents> Mapping for RelaxedMapping<E> {
    type Extents = E;
    type Layout = LayoutStrideRelaxed;

    #[inline(always)]
    fn from_strides(extents: E, strides: &<E::Index as IndexArray>::Isize, offset: usize) -> Result<Self, LayoutError> {
        Self::new(extents, *strides, offset)
    }

    #[inline(always)]
    fn extents(&self) -> &E {
        &self.extents
    }
    #[inline]
    fn stride(&self, dim: usize) -> isize {
        self.strides.as_ref()[dim]
    }
    #[inline(always)]
    fn strides(&self) -> <E::Index as IndexArray>::Isize {
        self.strides
    }
    #[inline(always)]
    fn offset(&self) -> usize {
        self.offset
    }
    #[inline(always)]
    fn required_span_size(&self) -> usize {
        self.span
    }
    fn is_unique(&self) -> bool {
        let e = self.extents.to_array();
        if e.as_ref().contains(&0) {
            // No element, so none reached twice, whatever the strides.
            return true;
        }
        // A zero stride along a dimension that steps maps its indices to one element.
        let zero_step = e
            .as_ref()
            .iter()
            .zip(self.strides.as_ref())
            .any(|(&n, &s)| n > 1 && s == 0);
        !zero_step && is_unique_strided(e.as_ref(), self.strides.as_ref().iter().map(|s| s.unsigned_abs()))
    }
    fn is_exhaustive(&self) -> bool {
        self.span == self.size() && self.is_unique()
    }
    #[inline(always)]
    fn offset_of(&self, index: &E::Index) -> usize {
        let mut offset = self.offset as isize;
        for (&i, &s) in index.as_ref().iter().zip(self.strides.as_ref()) {
            offset += i as isize * s;
        }
        offset as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::{Const, Dims};

    #[test]
    fn compact_strides() {
        let right = RightMapping::new(Dims::new([2, 3, 4])).unwrap();
        assert_eq!(right.strides(), [12, 4, 1]);
        assert_eq!(right.offset_of(&[1, 2, 3]), 23);
        let left = LeftMapping::new((Const::<2>, Const::<3>, Const::<4>)).unwrap();
        assert_eq!(left.strides(), [1, 2, 6]);
        assert_eq!(left.offset_of(&[1, 2, 3]), 1 + 4 + 18);
        assert_eq!(left.required_span_size(), 24);
    }

    #[test]
    fn compact_from_strides_ignores_unit_dimensions() {
        let e = Dims::new([2, 1, 3]);
        assert!(RightMapping::from_strides(e, &[3, 99, 1], 0).is_ok());
        assert_eq!(
            RightMapping::from_strides(e, &[1, 1, 2], 0),
            Err(LayoutError::StrideMismatch {
                dim: 2,
                stride: 2,
                expected: 1,
                layout: "layout_right"
            })
        );
        assert!(LeftMapping::from_strides(e, &[1, 0, 2], 0).is_ok());
    }

    #[test]
    fn uniqueness() {
        let e = Dims::new([2, 3]);
        assert!(StrideMapping::new(e, [3, 1]).unwrap().is_unique());
        assert!(StrideMapping::new(e, [6, 2]).unwrap().is_unique());
        assert!(!StrideMapping::new(e, [1, 1]).unwrap().is_unique());
        assert!(!StrideMapping::new(e, [2, 1]).unwrap().is_unique());
        assert!(!RelaxedMapping::new(e, [0, 1], 0).unwrap().is_unique());
        assert!(RelaxedMapping::new(e, [-3, 1], 3).unwrap().is_unique());
        assert!(StrideMapping::new(Dims::new([0, 3]), [1, 1]).unwrap().is_unique());
        assert!(
            RelaxedMapping::new(Dims::new([2, 0, 5]), [0, 0, 0], 0)
                .unwrap()
                .is_unique()
        );
    }

    #[test]
    fn relaxed_offsets_cover_negative_strides() {
        let e = Dims::new([2, 3]);
        assert_eq!(
            RelaxedMapping::new(e, [-3, 1], 2),
            Err(LayoutError::OffsetTooSmall { offset: 2, needed: 3 })
        );
        let m = RelaxedMapping::new(e, [-3, -1], 5).unwrap();
        assert_eq!(m.offset_of(&[0, 0]), 5);
        assert_eq!(m.offset_of(&[1, 2]), 0);
        assert_eq!(m.required_span_size(), 6);
        let broadcast = RelaxedMapping::new(e, [0, 0], 0).unwrap();
        assert_eq!(broadcast.required_span_size(), 1);
    }

    #[test]
    fn empty_extents_never_overflow() {
        let huge = usize::MAX / 2;
        assert_eq!(
            RightMapping::new(Dims::new([huge, huge, 0]))
                .unwrap()
                .required_span_size(),
            0
        );
        assert!(RightMapping::from_strides(Dims::new([0, huge, huge]), &[7, huge as isize, 1], 0).is_ok());
        assert!(StrideMapping::new(Dims::new([huge, 0, huge]), [huge, 1, huge]).is_ok());
        assert!(RelaxedMapping::new(Dims::new([huge, 0]), [-(huge as isize), 1], 0).is_ok());
    }

    #[test]
    fn unchecked_bits_keep_products_and_sums_below_2_62() {
        for rank in 0..=70usize {
            let (e, s) = unchecked_bits(rank);
            let (max_n, max_s) = ((1u128 << e) - 1, (1u128 << s) - 1);
            let count = (0..rank).fold(1u128, |c, _| c.saturating_mul(max_n));
            let reach = rank as u128 * max_n.saturating_sub(1) * max_s;
            assert!(count < 1 << 62 && reach < 1 << 62, "rank {rank}: bits ({e}, {s})");
        }
        assert_eq!(unchecked_bits(4), (15, 45));
    }

    #[test]
    fn fast_and_exact_spans_agree_at_the_bounds() {
        let (e, s) = unchecked_bits(4);
        for n in [(1usize << e) - 1, 1 << e, (1 << e) + 1] {
            for stride in [(1usize << s) - 1, 1 << s, (1 << s) + 1] {
                let extents = [3, n, 2, n];
                let strides = [stride, 1, n, 2 * n];
                let signed = strides.map(|x| x as isize);
                let exact = strided_span(&extents, &signed).map(|(span, _)| span);
                let fast = StrideMapping::from_strides(Dims::new(extents), &signed, 0).map(|m| m.required_span_size());
                assert_eq!(fast, exact, "extent {n}, stride {stride}");
            }
        }
        // Compact layouts: past the bound the exact check decides, with the same answers.
        let big = 1usize << unchecked_bits(2).0;
        assert!(RightMapping::from_strides(Dims::new([big, 3]), &[3, 1], 0).is_ok());
        assert_eq!(
            RightMapping::from_strides(Dims::new([big, 3]), &[4, 1], 0),
            Err(LayoutError::StrideMismatch {
                dim: 0,
                stride: 4,
                expected: 3,
                layout: "layout_right"
            })
        );
        assert_eq!(
            RightMapping::from_strides(Dims::new([1 << 40, 1 << 40]), &[1 << 40, 1], 0),
            Err(LayoutError::SpanOverflow)
        );
    }

    /// The elements `for_each_reached` visits are exactly those the indices reach, for every
    /// rank-1 to rank-3 mapping of small extents and strides, signs and zeros included.
    #[test]
    fn reached_offsets_are_exactly_the_indexed_ones() {
        use std::collections::BTreeSet;
        // Miri interprets every step: a smaller set of strides there.
        let strides: &[isize] = if cfg!(miri) {
            &[-2, 0, 3]
        } else {
            &[-6, -3, -2, -1, 0, 1, 2, 3, 4, 6]
        };
        let mut checked = 0;
        for e0 in 0..4usize {
            for e1 in 1..4usize {
                for e2 in 1..5usize {
                    for &s0 in strides {
                        for &s1 in strides {
                            for &s2 in strides {
                                let e = Dims::new([e0, e1, e2]);
                                let back = [(e0, s0), (e1, s1), (e2, s2)]
                                    .iter()
                                    .filter(|(n, s)| *s < 0 && *n > 0)
                                    .map(|&(n, s)| (n - 1) * s.unsigned_abs())
                                    .sum();
                                let m = RelaxedMapping::new(e, [s0, s1, s2], back).unwrap();
                                let start = m.offset() as isize - back as isize;
                                let mut want = BTreeSet::new();
                                for i in 0..e0 {
                                    for j in 0..e1 {
                                        for k in 0..e2 {
                                            want.insert(m.offset_of(&[i, j, k]) as isize - start);
                                        }
                                    }
                                }
                                let mut got = BTreeSet::new();
                                let mut calls = 0;
                                for_each_reached::<_, ()>(&m, |x| {
                                    got.insert(x as isize);
                                    calls += 1;
                                    Ok(())
                                })
                                .unwrap();
                                assert_eq!(got, want, "extents {e:?} strides {:?}", [s0, s1, s2]);
                                if cfg!(feature = "std") {
                                    assert!(calls <= m.required_span_size().max(1));
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 4 * 3 * 4 * strides.len().pow(3));
    }

    #[test]
    fn reached_offsets_stop_at_the_first_error() {
        let m = RightMapping::new(Dims::new([3, 4])).unwrap();
        let mut seen = 0;
        let r = for_each_reached(&m, |x| {
            seen += 1;
            if x == 5 { Err(x) } else { Ok(()) }
        });
        assert_eq!(r, Err(5));
        assert!(seen <= 12);
    }

    #[test]
    fn overflow_is_an_error() {
        assert_eq!(
            RightMapping::new(Dims::new([usize::MAX / 2, 3])),
            Err(LayoutError::SpanOverflow)
        );
        assert_eq!(
            StrideMapping::new(Dims::new([3, 2]), [isize::MAX as usize, 1]),
            Err(LayoutError::SpanOverflow)
        );
        assert_eq!(
            StrideMapping::new(Dims::new([3]), [0]),
            Err(LayoutError::NonPositiveStride { dim: 0, stride: 0 })
        );
    }
}
