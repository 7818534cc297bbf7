//! The DLPack form of a mapping: `shape` and `strides` as `int64_t` arrays, written for export
//! and read for import.

use super::span::unchecked_bits;
use super::{
    LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, LeftMapping, Mapping, RelaxedMapping, RightMapping,
    StrideMapping,
};
use crate::extents::{Extents, IndexArray};

/// `[i64; RANK]` for the extents of mapping `M`.
pub(crate) type I64s<M> = <<<M as Mapping>::Extents as Extents>::Index as IndexArray>::I64;

/// The shape and strides of `mapping` as DLPack writes them. Every value fits: a mapping's
/// extents and strides are bounded by its span, which fits in `isize`.
#[inline(always)]
pub(crate) fn to_i64<M: Mapping>(mapping: &M) -> (I64s<M>, I64s<M>) {
    let extents = mapping.extents().to_array();
    let strides = mapping.strides();
    let mut shape = <<M::Extents as Extents>::Index as IndexArray>::i64_zeros();
    let mut out = <<M::Extents as Extents>::Index as IndexArray>::i64_zeros();
    for d in 0..<M::Extents as Extents>::RANK {
        shape.as_mut()[d] = extents.as_ref()[d] as i64;
        out.as_mut()[d] = strides.as_ref()[d] as i64;
    }
    (shape, out)
}

/// A mapping read straight from a DLTensor's `shape` and `strides`, in the common case only.
///
/// The importer's general path reads the arrays, reports each problem as its own error, and
/// handles empty tensors, very large extents and strides, and anything a layout must adjust. This
/// is the one pass taken first: it returns the mapping and its span (in elements) only when that
/// path would return the same mapping, and `None` whenever there is anything to report or adjust
/// (a negative, zero or static-mismatched extent, a stride the layout refuses, a value too large
/// to add up unchecked), so that the general path decides.
pub trait ReadI64: Sized {
    /// See the trait docs.
    ///
    /// # Safety
    ///
    /// `shape` and `strides` each point to `E::RANK` readable `i64`s (unaligned allowed).
    unsafe fn read_i64<E: Extents>(shape: *const i64, strides: *const i64) -> Option<(Self::Mapping<E>, usize)>
    where
        Self: super::Layout;
}

/// Reads dimension `dim` of both arrays.
///
/// # Safety
///
/// As for [`ReadI64::read_i64`], with `dim < E::RANK`.
#[inline(always)]
unsafe fn dim(shape: *const i64, strides: *const i64, dim: usize) -> (i64, i64) {
    // SAFETY: the caller promises `RANK` readable values in each array and `dim < RANK`.
    let n = unsafe { shape.wrapping_add(dim).read_unaligned() };
    // SAFETY: as above.
    let s = unsafe { strides.wrapping_add(dim).read_unaligned() };
    (n, s)
}

/// The compact layouts: the strides must be exactly the ones the extents imply, row-major when
/// `RIGHT`.
///
/// # Safety
///
/// As for [`ReadI64::read_i64`].
#[inline(always)]
unsafe fn read_compact<E: Extents, const RIGHT: bool>(shape: *const i64, strides: *const i64) -> Option<(E, usize)> {
    let rank = E::RANK;
    let mut extents = E::Index::zeros();
    // Flags are gathered as bits of integers and tested once, rather than branched on one by one.
    let (mut expected, mut all, mut mismatch) = (1usize, 0usize, 0usize);
    for k in 0..rank {
        let d = if RIGHT { rank - 1 - k } else { k };
        // SAFETY: `d < RANK`; forwarded from the caller.
        let (n, s) = unsafe { dim(shape, strides, d) };
        let n = n as usize;
        // Exact strides only: a dimension of extent 1 with another stride (which the layout
        // ignores) is the general path's.
        mismatch |= s as usize ^ expected;
        all |= n;
        expected = expected.wrapping_mul(n);
        extents.as_mut()[d] = n;
    }
    // A negative extent sets the top bit of `all`; below `unchecked_bits` the product is exact
    // and under 2^62; 0 elements is the general path's case.
    let extent_bits = const { unchecked_bits(E::RANK).0 };
    if mismatch | (all >> extent_bits) | usize::from(expected == 0) != 0 {
        return None;
    }
    Some((E::from_array(extents).ok()?, expected))
}

impl ReadI64 for LayoutRight {
    #[inline(always)]
    unsafe fn read_i64<E: Extents>(shape: *const i64, strides: *const i64) -> Option<(RightMapping<E>, usize)> {
        // SAFETY: forwarded from the caller.
        let (extents, span) = unsafe { read_compact::<E, true>(shape, strides) }?;
        Some((RightMapping { extents }, span))
    }
}

impl ReadI64 for LayoutLeft {
    #[inline(always)]
    unsafe fn read_i64<E: Extents>(shape: *const i64, strides: *const i64) -> Option<(LeftMapping<E>, usize)> {
        // SAFETY: forwarded from the caller.
        let (extents, span) = unsafe { read_compact::<E, false>(shape, strides) }?;
        Some((LeftMapping { extents }, span))
    }
}

/// The strided layouts: returns the extents, the strides (as `usize`), and the span. A stride of
/// 0 or below is accepted only where the extent is 1 (replaced by 1, as the general path does)
/// when `POSITIVE`, and refused when negative otherwise.
///
/// # Safety
///
/// As for [`ReadI64::read_i64`].
#[inline(always)]
unsafe fn read_strided<E: Extents, const POSITIVE: bool>(
    shape: *const i64,
    strides: *const i64,
) -> Option<(E, E::Index, usize)> {
    let mut extents = E::Index::zeros();
    let mut steps = E::Index::zeros();
    // A refused stride sets the top bit of `all_s`, which the bound below then catches with the
    // rest, in one test.
    let (mut count, mut reach, mut all_n, mut all_s) = (1usize, 0usize, 0usize, 0usize);
    for d in 0..E::RANK {
        // SAFETY: `d < RANK`; forwarded from the caller.
        let (n, s) = unsafe { dim(shape, strides, d) };
        let s = if POSITIVE {
            // Not positive: replaced by 1 where the extent is 0 or 1, refused elsewhere.
            let refused = usize::from(s <= 0) & usize::from(n > 1);
            all_s |= refused << (usize::BITS - 1);
            if s > 0 { s as usize } else { 1 }
        } else {
            // A negative stride is refused by its own top bit.
            s as usize
        };
        let n = n as usize;
        (all_n, all_s) = (all_n | n, all_s | s);
        count = count.wrapping_mul(n);
        reach = reach.wrapping_add(n.wrapping_sub(1).wrapping_mul(s));
        extents.as_mut()[d] = n;
        steps.as_mut()[d] = s;
    }
    // Below `unchecked_bits` no product or sum reaches 2^62 (and a negative extent or stride
    // sets a top bit); 0 elements is the general path's case.
    let (extent_bits, stride_bits) = const { unchecked_bits(E::RANK) };
    if (all_n >> extent_bits) | (all_s >> stride_bits) | usize::from(count == 0) != 0 {
        return None;
    }
    Some((E::from_array(extents).ok()?, steps, reach + 1))
}

impl ReadI64 for LayoutStride {
    #[inline(always)]
    unsafe fn read_i64<E: Extents>(shape: *const i64, strides: *const i64) -> Option<(StrideMapping<E>, usize)> {
        // SAFETY: forwarded from the caller.
        let (extents, strides, span) = unsafe { read_strided::<E, true>(shape, strides) }?;
        Some((StrideMapping { extents, strides, span }, span))
    }
}

impl ReadI64 for LayoutStrideRelaxed {
    #[inline(always)]
    unsafe fn read_i64<E: Extents>(shape: *const i64, strides: *const i64) -> Option<(RelaxedMapping<E>, usize)> {
        // SAFETY: forwarded from the caller. Negative strides (an offset to compute) are the
        // general path's.
        let (extents, steps, span) = unsafe { read_strided::<E, false>(shape, strides) }?;
        let mut signed = <E::Index as IndexArray>::isize_zeros();
        for (t, &s) in signed.as_mut().iter_mut().zip(steps.as_ref()) {
            *t = s as isize;
        }
        Some((
            RelaxedMapping {
                extents,
                strides: signed,
                offset: 0,
                span,
            },
            span,
        ))
    }
}
