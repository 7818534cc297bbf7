//! The compact layouts, whose strides follow from the extents: [`LayoutRight`] and
//! [`LayoutLeft`].

use super::span::unchecked_bits;
use super::{Layout, LayoutError, LayoutLeft, LayoutRight, Mapping, sealed};
use crate::extents::{Extents, IndexArray};

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

/// Row-major (`right`) or column-major strides of `extents`, as DLPack implies them for NULL
/// `strides`: the default strides. A stride past `isize::MAX` saturates there (such extents are
/// refused by every mapping).
#[inline(always)]
pub(crate) fn compact_strides<I: IndexArray>(extents: &I, right: bool) -> I::Isize {
    let mut strides = I::isize_zeros();
    let mut stride = 1isize;
    let rank = I::RANK;
    for k in 0..rank {
        let dim = if right { rank - 1 - k } else { k };
        strides.as_mut()[dim] = stride;
        stride = stride.saturating_mul(isize::try_from(extents.as_ref()[dim]).unwrap_or(isize::MAX));
    }
    strides
}

/// Row-major strides of `extents`.
#[inline]
fn right_strides<I: IndexArray>(extents: &I) -> I::Isize {
    compact_strides(extents, true)
}

/// Column-major strides of `extents`.
#[inline]
fn left_strides<I: IndexArray>(extents: &I) -> I::Isize {
    compact_strides(extents, false)
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
            pub(super) extents: E,
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
            unsafe fn from_parts_unchecked(
                extents: E,
                _: &<E::Index as IndexArray>::Isize,
                _: usize,
                _: usize,
            ) -> Self {
                Self { extents }
            }

            #[inline(always)]
            unsafe fn compact_unchecked(extents: E) -> Option<Self> {
                Some(Self { extents })
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
