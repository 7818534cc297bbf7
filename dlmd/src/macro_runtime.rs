//! What `dlmd!` and `#[derive(DlElement)]` expand to: the run-time half of the macros (view
//! constructors that report a misfit with the macro's name) and the traits whose bounds make
//! compile errors name the fix. Not part of the public API.

pub use core;
/// The proc macro behind `dlmd!`, which passes it `$crate`.
#[cfg(feature = "derive")]
pub use dlmd_derive::dlmd as view;

/// cudarc's traits for values that cross to kernels, which `#[derive(DlElement)]` implements
/// (through [`__cuda_element`](crate::__cuda_element)) with the `cuda` feature.
#[cfg(feature = "cuda")]
pub use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

use crate::DlElement;
use crate::extents::Extents;
use crate::layout::{CompactLayout, LayoutStride, StrideMapping};
use crate::view::{HostMdspan, HostMdspanMut};

/// Holds when an array's length is `P`; slices and `Vec`s are checked at run time.
#[diagnostic::on_unimplemented(
    message = "`dlmd!` extents hold {P} elements, but the data is `{Self}`",
    label = "the product of the static extents must equal the array length",
    note = "change the extents, or use `_` for one extent to infer it from the length"
)]
pub trait StaticLen<const P: usize> {}
impl<T, const P: usize> StaticLen<P> for [T; P] {}
impl<T, const P: usize> StaticLen<P> for [T] {}
#[cfg(feature = "std")]
impl<T, const P: usize> StaticLen<P> for std::vec::Vec<T> {}

/// Compiles only when `data` can hold `P` elements.
#[inline(always)]
pub fn check_len<S: ?Sized + StaticLen<P>, const P: usize>(_: &S) {}

#[cold]
#[track_caller]
fn misfit(error: impl core::fmt::Display) -> ! {
    panic!("dlmd!: {error}")
}

/// The extents, with dimension `infer` taken from `len`.
#[track_caller]
fn extents<E: Extents>(mut dims: E::Index, infer: Option<usize>, len: usize) -> E {
    if let Some(dim) = infer {
        let others: usize = dims
            .as_ref()
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != dim)
            .map(|(_, &n)| n)
            .product();
        if others == 0 || !len.is_multiple_of(others) {
            misfit(format_args!(
                "cannot infer extent {dim}: {len} elements do not divide into rows of {others}"
            ));
        }
        dims.as_mut()[dim] = len / others;
    }
    E::from_array(dims).unwrap_or_else(|e| misfit(e))
}

#[track_caller]
pub fn compact_view<'a, T: DlElement, E: Extents, L: CompactLayout>(
    data: &'a [T],
    dims: E::Index,
    infer: Option<usize>,
) -> HostMdspan<'a, T, E, L> {
    let extents = extents::<E>(dims, infer, data.len());
    HostMdspan::from_slice(data, extents).unwrap_or_else(|e| misfit(e))
}

#[track_caller]
pub fn compact_view_mut<'a, T: DlElement, E: Extents, L: CompactLayout>(
    data: &'a mut [T],
    dims: E::Index,
    infer: Option<usize>,
) -> HostMdspanMut<'a, T, E, L> {
    let extents = extents::<E>(dims, infer, data.len());
    HostMdspanMut::from_slice_mut(data, extents).unwrap_or_else(|e| misfit(e))
}

#[track_caller]
fn stride_mapping<E: Extents>(extents: E, strides: E::Index) -> StrideMapping<E> {
    StrideMapping::new(extents, strides).unwrap_or_else(|e| misfit(e))
}

#[track_caller]
pub fn strided_view<'a, T: DlElement, E: Extents>(
    data: &'a [T],
    dims: E::Index,
    infer: Option<usize>,
    strides: E::Index,
) -> HostMdspan<'a, T, E, LayoutStride> {
    let mapping = stride_mapping(extents::<E>(dims, infer, data.len()), strides);
    HostMdspan::from_slice_mapping(data, mapping).unwrap_or_else(|e| misfit(e))
}

#[track_caller]
pub fn strided_view_mut<'a, T: DlElement, E: Extents>(
    data: &'a mut [T],
    dims: E::Index,
    infer: Option<usize>,
    strides: E::Index,
) -> HostMdspanMut<'a, T, E, LayoutStride> {
    let mapping = stride_mapping(extents::<E>(dims, infer, data.len()), strides);
    HostMdspanMut::from_slice_mapping_mut(data, mapping).unwrap_or_else(|e| misfit(e))
}

/// A rank-0 view of one element.
pub fn scalar_view<T: DlElement>(x: &T) -> HostMdspan<'_, T, ()> {
    HostMdspan::from_slice(core::slice::from_ref(x), ()).unwrap_or_else(|e| misfit(e))
}

/// A rank-0 read-write view of one element.
pub fn scalar_view_mut<T: DlElement>(x: &mut T) -> HostMdspanMut<'_, T, ()> {
    HostMdspanMut::from_slice_mut(core::slice::from_mut(x), ()).unwrap_or_else(|e| misfit(e))
}

/// Implemented for `T` alone: `A: SameType<B>` holds exactly when `A` and `B` are one type.
#[diagnostic::on_unimplemented(
    message = "every field of a vector `DlElement` must have the same type, but `{Self}` is not `{T}`",
    label = "expected `{T}`, like the first field",
    note = "a `#[repr(C)]` struct is a vector element only when its fields are lanes of one scalar type"
)]
pub trait SameType<T: ?Sized> {}
impl<T: ?Sized> SameType<T> for T {}

/// Compiles only when `A` and `B` are the same type.
pub const fn assert_same_type<A: ?Sized + SameType<B>, B: ?Sized>() {}

/// Compiles only when `T` is a scalar element.
pub const fn assert_scalar<T: crate::DlScalar>() {}

/// Compiles only when `T` is an element.
pub const fn assert_element<T: crate::DlElement>() {}

/// Compiles only for a kernel parameter type: the error points at the parameter.
#[inline(always)]
pub fn kernel_param<P: crate::kernel::KernelParam>() {}

/// The index in the PTX entry point of the kernel parameter `i` of those whose parameter forms
/// are `sizes` bytes: rustc leaves parameters of no size out of the entry point.
pub const fn ptx_param_index<const N: usize>(sizes: [usize; N], i: usize) -> usize {
    let mut index = 0;
    let mut p = 0;
    while p < i && p < N {
        if sizes[p] != 0 {
            index += 1;
        }
        p += 1;
    }
    index
}

/// Per PTX parameter of a kernel whose parameter forms are `sizes` bytes, the alignment its
/// entry point must declare: 64 for those read in place (`in_place`), 0 (as rustc declares it)
/// for the rest, and for the entries past the last parameter.
pub const fn ptx_param_alignments<const N: usize>(sizes: [usize; N], in_place: [bool; N]) -> [u8; N] {
    let mut align = [0u8; N];
    let mut p = 0;
    while p < N {
        if sizes[p] != 0 && in_place[p] {
            align[ptx_param_index(sizes, p)] = 64;
        }
        p += 1;
    }
    align
}

/// The generic address of the kernel parameter `$prefix$index` (PTX names an entry point's
/// parameters `NAME_param_J`), for a parameter read in place (`KernelParam::IN_PLACE`): `mov`
/// of a parameter's name gives its address in the parameter space, and `cvta.param` (PTX ISA
/// 7.7, `sm_70`) the generic address of that, which CUDA C++ takes of a `__grid_constant__`
/// parameter.
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! __param_address {
    ($prefix:literal, $index:expr) => {{
        let at: u64;
        // SAFETY: a `mov` of a kernel parameter's address and its conversion read and write no
        // memory; `$prefix$index` is a parameter of the entry point this expands in.
        unsafe {
            $crate::__private::core::arch::asm!(
                concat!("mov.b64 {at}, ", $prefix, "{index};\n\tcvta.param.u64 {at}, {at};"),
                at = out(reg64) at,
                index = const $index,
                options(pure, nomem, nostack),
            )
        };
        at
    }};
}

/// Compiles only for a kernel context: the error points at the kernel's first parameter.
#[inline(always)]
pub fn kernel_context<C: crate::kernel::Context<'static>>() {}

/// What `#[derive(DlElement)]` adds for CUDA: cudarc's `DeviceRepr` (the type is plain data
/// without padding, so it crosses to a kernel as its bytes) and `ValidAsZeroBits` where every
/// lane is (all-zero bytes are then a valid value), so that a derived element type goes into
/// cudarc's allocations and copies with no `unsafe` of the user's. Without the `cuda` feature
/// it adds nothing. The arguments: the impl's generics, the type, and the where clauses of the
/// two impls.
#[cfg(feature = "cuda")]
#[doc(hidden)]
#[macro_export]
macro_rules! __cuda_element {
    ({$($generics:tt)*} {$($ty:tt)*} {$($repr_where:tt)*} {$($zero_where:tt)*}) => {
        // SAFETY: the derive checked that the type is `repr(C)` or `repr(transparent)` over
        // element types, with no padding: plain data that a kernel reads as its bytes.
        unsafe impl $($generics)* $crate::__private::DeviceRepr for $($ty)* $($repr_where)* {}
        // SAFETY: where every lane's type is valid as zero bits, so is a type made of those lanes
        // and nothing else (no padding).
        unsafe impl $($generics)* $crate::__private::ValidAsZeroBits for $($ty)* $($zero_where)* {}
    };
}

/// What `#[derive(DlElement)]` adds for CUDA: nothing, without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __cuda_element {
    ($($tokens:tt)*) => {};
}

#[cfg(test)]
mod tests {
    use super::{ptx_param_alignments, ptx_param_index};

    #[test]
    fn parameters_read_in_place_are_named_by_their_ptx_index() {
        // A parameter of no size has no PTX parameter: those after it move down one.
        let sizes = [8, 0, 176, 4, 208];
        assert_eq!([0, 1, 2, 3, 4].map(|i| ptx_param_index(sizes, i)), [0, 1, 1, 2, 3]);
        let align = ptx_param_alignments(sizes, [false, true, true, false, true]);
        // The zero-size one needs nothing (it is not in the entry point).
        assert_eq!(align, [0, 64, 0, 64, 0]);
        assert_eq!(ptx_param_alignments([4, 4], [false, false]), [0, 0]);
        assert_eq!(ptx_param_alignments::<0>([], []), [0u8; 0]);
    }
}
