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

pub mod dlpack;
pub mod dtype;
pub mod extents;
pub mod layout;
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
pub use extents::{Const, Dims, Dyn, Extents};
pub use layout::{LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mapping};
pub use space::{Device, Host, Managed};
pub use view::{
    DeviceMdspan, DeviceMdspanMut, HostMdspan, HostMdspanMut, ManagedMdspan, ManagedMdspanMut, Mdspan, Shared, Unique,
    ViewError,
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

/// Items the derive macros expand to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use core;

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
