//! The strided layouts: [`LayoutStride`] (positive strides) and [`LayoutStrideRelaxed`] (any
//! strides, with the offset of index 0).

use super::span::{strided_span, unchecked_bits};
use super::{Layout, LayoutError, LayoutStride, LayoutStrideRelaxed, Mapping, sealed};
use crate::extents::{Extents, IndexArray};

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

/// The mapping of [`LayoutStride`]: extents and a positive stride per dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StrideMapping<E: Extents> {
    pub(super) extents: E,
    pub(super) strides: E::Index,
    pub(super) span: usize,
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
    unsafe fn from_parts_unchecked(
        extents: E,
        strides: &<E::Index as IndexArray>::Isize,
        _: usize,
        span: usize,
    ) -> Self {
        let mut positive = E::Index::zeros();
        for (p, &s) in positive.as_mut().iter_mut().zip(strides.as_ref()) {
            // The parts of a stride mapping: every stride is positive (caller).
            *p = s as usize;
        }
        Self {
            extents,
            strides: positive,
            span,
        }
    }

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
    pub(super) extents: E,
    pub(super) strides: <E::Index as IndexArray>::Isize,
    pub(super) offset: usize,
    pub(super) span: usize,
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
    unsafe fn from_parts_unchecked(
        extents: E,
        strides: &<E::Index as IndexArray>::Isize,
        offset: usize,
        span: usize,
    ) -> Self {
        Self {
            extents,
            strides: *strides,
            offset,
            span,
        }
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
