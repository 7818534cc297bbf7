//! Typed n-dimensional views that speak [DLPack].
//!
//! dlmd maps Rust element types to DLPack data types ([`DlElement`]) and defines the DLPack 1.3
//! C ABI ([`dlpack`]), so tensors can cross between Rust, C++/CUDA kernels and Python frameworks
//! without copies and with every misuse the type system can see refused at compile time.
//!
//! ```
//! use dlmd::{DlElement, dlpack::{DLDataType, DLDataTypeCode}};
//!
//! #[derive(Clone, Copy, DlElement)]
//! #[repr(C)]
//! struct Float4 {
//!     x: f32,
//!     y: f32,
//!     z: f32,
//!     w: f32,
//! }
//!
//! assert_eq!(Float4::DTYPE, DLDataType::new(DLDataTypeCode::FLOAT, 32, 4));
//! assert_eq!(<half::bf16 as DlElement>::DTYPE.to_string(), "bfloat16");
//! ```
//!
//! # Features
//!
//! - `std` (default): `std::error::Error` for the error types.
//! - `derive` (default): `#[derive(DlElement)]`.
//!
//! Without default features the crate is `#![no_std]` and needs no allocator.
//!
//! [DLPack]: https://dmlc.github.io/dlpack/latest/
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![deny(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
#![doc(test(attr(deny(warnings))))]

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dlpack;
pub mod dtype;
pub mod export;
pub mod extents;
pub mod import;
pub mod layout;
#[cfg(feature = "std")]
pub mod managed;
#[cfg(feature = "python")]
pub mod python;
pub mod space;
pub mod view;

/// The `half` crate dlmd's `f16` and `bf16` elements come from.
pub use half;
/// The `num-complex` crate dlmd's complex elements come from.
pub use num_complex;

pub use dtype::{
    ByteExact, DlElement, DlScalar, ElementStorage, F4E2M1FN, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2, F8E8M0FNU,
    SubbytePadded, dtype_of,
};
pub use export::{DLTensorRef, DlpackTensor, to_dlpack_tensor};
pub use extents::{Const, Dims, Dyn, Extents};
pub use import::{
    ImportError, to_device_mdspan, to_device_mdspan_mut, to_host_mdspan, to_host_mdspan_aliased,
    to_host_mdspan_aliased_mut, to_host_mdspan_mut, to_managed_mdspan, to_managed_mdspan_mut,
};
pub use layout::{LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mapping};
pub use space::{Device, Host, Managed};
pub use view::{
    Aliased, AliasedMut, DeviceMdspan, DeviceMdspanMut, HostMdspan, HostMdspanAliased, HostMdspanAliasedMut,
    HostMdspanMut, ManagedMdspan, ManagedMdspanMut, Mdspan, Shared, Unique, ViewError,
};

/// Derives [`DlElement`] for a newtype or a vector struct.
///
/// - A `#[repr(transparent)]` (or `#[repr(C)]`) struct with one field has the field's data type:
///   `struct Meters(f64)` is `{FLOAT, 64, 1}`, `struct Half2([f16; 2])` is `{FLOAT, 16, 2}`.
///   Only such a newtype may be generic, and it is then an element when its field is
///   (`struct Wrap<T>(T)` gets `impl<T> DlElement for Wrap<T> where T: DlElement`).
/// - A `#[repr(C)]` struct of 2 to 16 fields of one scalar element type `S` is the vector
///   `{S.code, S.bits, fields}`: `struct Float4 { x: f32, y: f32, z: f32, w: f32 }` is
///   `{FLOAT, 32, 4}`.
///
/// Refused at compile time, each with a message pointing at the cause: a struct without
/// `#[repr(C)]` or `#[repr(transparent)]`, enums, unions, structs without fields, fields of
/// different types, fields that are not scalar elements in a vector struct, padding (for
/// example `#[repr(C, align(16))]` over three `f32`), `#[repr(packed)]` that lowers the
/// alignment below the scalar's, lifetimes, and generic vector structs.
///
/// `#[dlmd(crate = path)]` names the dlmd crate where it is not reachable as `::dlmd`, for
/// example after renaming it in `Cargo.toml`.
///
/// ```
/// use dlmd::DlElement;
///
/// #[derive(Clone, Copy, DlElement)]
/// #[repr(transparent)]
/// struct Meters(f64);
///
/// #[derive(Clone, Copy, DlElement)]
/// #[repr(C)]
/// struct Half2([half::f16; 2]);
///
/// assert_eq!(Meters::DTYPE.to_string(), "float64");
/// assert_eq!(Half2::DTYPE.to_string(), "float16x2");
/// ```
#[cfg(feature = "derive")]
pub use dlmd_derive::DlElement;

/// Builds a host view over an array, a slice or a `Vec` in one line, checking at compile time
/// what it can see.
///
/// `dlmd!(data, [extents] [, layout] [, strides = [..]])`:
///
/// - `data` is `&x` for a read-only view ([`HostMdspan`]) or `&mut x` for a read-write one
///   ([`HostMdspanMut`]), where `x` is an array, a slice or a `Vec` of [`DlElement`]s;
/// - each extent is an integer literal (a static extent, `Const<N>`), `_` (dynamic, inferred
///   from the length of `data`; at most one), or any other `usize` expression (dynamic);
/// - the layout is `layout_right` (the default), `layout_left` or `layout_stride`, which takes
///   `strides = [..]`;
/// - `[]` makes a rank-0 view of `&x` where `x` is a single element.
///
/// Compile errors: static extents whose product differs from an array's length, an unknown
/// layout, `[]` over data that is not one element, strides that contradict `layout_right` or
/// `layout_left`, more than one `_`.
///
/// ```
/// use dlmd::{Const, HostMdspan, dlmd};
///
/// let data = [1, 2, 3, 4, 5, 6];
/// let md: HostMdspan<'_, i32, (Const<2>, Const<3>)> = dlmd!(&data, [2, 3]);
/// assert_eq!(md[[1, 0]], 4);
///
/// let mut buf = vec![0.0f32; 12];
/// let rows = 3;
/// let mut m = dlmd!(&mut buf, [rows, _], layout_left);
/// m[[2, 3]] = 1.0;
/// assert_eq!(m.extent(1), 4);
/// assert_eq!(buf[11], 1.0);
///
/// let x = 2.5f64;
/// let scalar = dlmd!(&x, []);
/// assert_eq!(scalar[[]], 2.5);
/// ```
///
/// # Panics
///
/// When a run-time extent does not fit the data (an array whose length is known at compile time
/// with static extents never panics). Use [`Mdspan::from_slice`] for a `Result`.
#[cfg(feature = "derive")]
pub use dlmd_derive::dlmd;

/// Items the macros expand to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use core;

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
            if others == 0 || len % others != 0 {
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
}
