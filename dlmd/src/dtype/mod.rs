//! Element types and the DLPack data types they map to.
//!
//! [`DlElement`] ties a Rust type to one [`DLDataType`]. dlmd implements it for:
//!
//! | Rust type | `DLDataType` |
//! |---|---|
//! | `bool` | `{BOOL, 8, 1}` |
//! | `i8`, `i16`, `i32`, `i64` | `{INT, 8‥64, 1}` |
//! | `u8`, `u16`, `u32`, `u64` | `{UINT, 8‥64, 1}` |
//! | `half::f16`, `f32`, `f64` | `{FLOAT, 16‥64, 1}` |
//! | `half::bf16` | `{BFLOAT, 16, 1}` |
//! | `Complex<half::f16>`, `Complex<f32>`, `Complex<f64>` | `{COMPLEX, 32‥128, 1}` |
//! | `Complex<half::bf16>` | `{BCOMPLEX, 32, 1}` |
//! | [`F8E4M3FN`], [`F8E5M2`], [`F8E8M0FNU`] | `{FLOAT8_*, 8, 1}` |
//! | [`F6E2M3FN`], [`F6E3M2FN`] | `{FLOAT6_*, 6, 1}`, one per byte |
//! | [`F4E2M1FN`] | `{FLOAT4_E2M1FN, 4, 1}`, one per byte |
//! | [`F4E2M1FNx2`] | `{FLOAT4_E2M1FN, 4, 2}`, two per byte, packed (torch's `float4_e2m1fn_x2`) |
//! | `[S; N]`, `S` any of the above, `2 ≤ N ≤ 16` | `{S.code, S.bits, N}` |
//!
//! and `#[derive(DlElement)]` adds newtypes and vector structs of your own.
//!
//! No two types of different meaning share a data type: `bool` is not `u8`, `bf16` is not
//! `f16`, a complex number is not a two-lane vector (`Complex<f32>` is `{COMPLEX, 64, 1}`,
//! `[f32; 2]` is `{FLOAT, 32, 2}`), and a vector is not its scalar. CCCL's C++ mapping allows
//! vectors of 2 and 4 lanes only; dlmd allows any lane count from 2 to 16, which covers every
//! vector width of CUDA, SIMD and DLPack consumers in use. `isize`, `usize` and `char` have no
//! DLPack type and are not elements.
//!
//! ## FP8, FP6 and FP4
//!
//! Each type is one byte, `#[repr(transparent)]` over `u8`, so a slice of them is exactly the
//! buffer a framework exchanges. FP6 and FP4 values use the low 6 or 4 bits of their byte: they
//! are stored *padded*, one element per byte, never packed.
//!
//! Conversions from `f32` round to nearest, ties to even, and treat values the format cannot hold
//! as the OCP 8-bit floating point and MX specifications (and the `ml_dtypes` package, against
//! which every encoding and a large random sample are tested bit for bit) do:
//!
//! | type | largest finite | overflow and ±∞ give | NaN gives |
//! |---|---|---|---|
//! | [`F8E4M3FN`] | 448 | NaN (`S.1111.111`) | NaN |
//! | [`F8E5M2`] | 57344 | ±∞ | NaN (`S.11111.10`) |
//! | [`F8E8M0FNU`] | 2¹²⁷ | NaN (`0xFF`); zero and negatives are NaN too | NaN |
//! | [`F6E2M3FN`] | 7.5 | ±7.5 (saturate) | `0b1_00_000`, sign flipped by the NaN's sign |
//! | [`F6E3M2FN`] | 28 | ±28 (saturate) | `0b1_000_00`, sign flipped by the NaN's sign |
//! | [`F4E2M1FN`] | 6 | ±6 (saturate) | `0b1_00_0`, sign flipped by the NaN's sign |
//!
//! The MX element formats have no NaN: the MX specification leaves the conversion of NaN to the
//! implementation, and dlmd follows `ml_dtypes`. [`F8E8M0FNU`], a scale with no mantissa, rounds
//! ties away from zero, as `ml_dtypes` does.

mod minifloat;

pub use minifloat::{F4E2M1FN, F4E2M1FNx2, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2, F8E8M0FNU};

use crate::dlpack::{DLDataType, DLDataTypeCode};
use half::{bf16, f16};
use num_complex::Complex;

/// A type whose values can be the elements of a DLPack tensor.
///
/// # Safety
///
/// Views reinterpret foreign memory described by [`DTYPE`](Self::DTYPE) as `Self`, so an
/// implementation promises all of:
///
/// 1. `Self` is exactly [`LANES`](Self::LANES) values of [`Scalar`](Self::Scalar) laid out one
///    after another with no padding: `size_of::<Self>() == LANES * size_of::<Scalar>()`, and
///    `align_of::<Self>() >= align_of::<Scalar>()`; or, for [`Packed`] storage, the lanes' bits
///    packed into whole bytes: `8 * size_of::<Self>() == LANES * Scalar::DTYPE.bits`.
/// 2. [`DTYPE`](Self::DTYPE) is `{Scalar::DTYPE.code, Scalar::DTYPE.bits, LANES}`, and for a
///    scalar (`Scalar = Self`) it describes exactly the values of the type.
/// 3. Every byte pattern that is valid for `LANES` consecutive `Scalar`s is a valid `Self`.
/// 4. [`Storage`](Self::Storage) is `Scalar::Storage`, or [`Packed`] for lanes packed into
///    whole bytes (item 1).
///
/// `#[derive(DlElement)]` checks all of these at compile time; implement the trait by hand only
/// for what the derive cannot express.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a DLPack element type",
    label = "`{Self}` has no DLPack data type",
    note = "DlElement is implemented for bool, i8..i64, u8..u64, half::f16, half::bf16, f32, f64, \
            Complex<f16 | f32 | f64 | bf16>, dlmd's FP8/FP6/FP4 types, and arrays [S; N] of those with 2 <= N <= 16",
    note = "for a type of your own, `#[derive(DlElement)]` on a `#[repr(transparent)]` newtype or on a \
            `#[repr(C)]` struct whose fields share one scalar type"
)]
pub unsafe trait DlElement: Copy + Send + Sync + 'static {
    /// The DLPack data type of one element.
    const DTYPE: DLDataType;
    /// Number of scalar lanes: 1 for scalars, N for vector types.
    const LANES: u16;
    /// The type of one lane.
    type Scalar: DlScalar;
    /// Whether the element is stored byte-exact ([`ByteExact`]) or as sub-byte values padded to
    /// one byte each ([`SubbytePadded`]).
    type Storage: ElementStorage;
}

/// A [`DlElement`] with one lane: the types vector elements are built from.
///
/// # Safety
///
/// As for [`DlElement`], with `LANES == 1` and `Scalar == Self`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a scalar DLPack element type",
    label = "not a scalar element",
    note = "vector elements are made of one scalar type (bool, integers, floats, complex, FP8/FP6/FP4), \
            not of other vectors or of types without a DLPack data type"
)]
pub unsafe trait DlScalar: DlElement<Scalar = Self> {}

/// A [`DlElement`] of one lane: a [`DlScalar`], or a newtype of one (`#[derive(DlElement)]` on
/// a `#[repr(transparent)]` newtype implements it where its field does). Vector elements
/// (`[L; N]` and derived vector structs) are made of lanes, so `[Meters; 4]` of a derived
/// `Meters(f32)` is `{FLOAT, 32, 4}`.
///
/// # Safety
///
/// As for [`DlElement`], with `LANES == 1`: `Self` is one `Scalar`, with its size.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a one-lane DLPack element type",
    label = "not a scalar element, or a newtype of one",
    note = "vector elements are made of one scalar type (bool, integers, floats, complex, FP8/FP6/FP4) \
            or newtypes of one, not of other vectors or of types without a DLPack data type"
)]
pub unsafe trait DlLane: DlElement {}

/// How an element's lanes are laid out in bytes; see [`DlElement::Storage`].
pub trait ElementStorage: sealed::Sealed + 'static {
    /// Whether lanes narrower than a byte are stored one per byte (the DLPack flag
    /// [`IS_SUBBYTE_TYPE_PADDED`](crate::dlpack::IS_SUBBYTE_TYPE_PADDED)).
    const IS_SUBBYTE_PADDED: bool;
}

/// Storage of elements whose `bits` is a whole number of bytes: what a plain `DLTensor` means.
#[derive(Debug, Clone, Copy)]
pub enum ByteExact {}

/// Storage of FP6 and FP4 elements, one per byte. A plain `DLTensor` cannot say so (DLPack reads
/// such a tensor as packed), so these elements travel only in a
/// [`DLManagedTensorVersioned`](crate::dlpack::DLManagedTensorVersioned) with
/// [`IS_SUBBYTE_TYPE_PADDED`](crate::dlpack::IS_SUBBYTE_TYPE_PADDED) set.
#[derive(Debug, Clone, Copy)]
pub enum SubbytePadded {}

/// Storage of sub-byte lanes packed into whole bytes, as a plain `DLTensor` describes them:
/// [`F4E2M1FNx2`] (torch's `float4_e2m1fn_x2`), two FP4 values per byte, travels as
/// `{FLOAT4_E2M1FN, 4, 2}` without any flag, and its tensors' shapes count bytes.
#[derive(Debug, Clone, Copy)]
pub enum Packed {}

impl ElementStorage for ByteExact {
    const IS_SUBBYTE_PADDED: bool = false;
}

impl ElementStorage for Packed {
    const IS_SUBBYTE_PADDED: bool = false;
}

impl ElementStorage for SubbytePadded {
    const IS_SUBBYTE_PADDED: bool = true;
}

/// Element storage a plain `DLTensor` can describe: whole bytes per lane. Borrowed exports and
/// imports of a plain `DLTensor` need it; managed tensors carry padded storage in their flags.
#[diagnostic::on_unimplemented(
    message = "sub-byte elements stored one per byte cannot travel in a plain `DLTensor`",
    label = "a plain DLTensor would describe these FP6/FP4 elements as packed",
    note = "DLPack reads 4- and 6-bit elements as packed unless a versioned managed tensor sets \
            IS_SUBBYTE_TYPE_PADDED; export them as a managed tensor, or convert them to a byte type"
)]
pub trait PlainStorage: ElementStorage {}
impl PlainStorage for ByteExact {}
impl PlainStorage for Packed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ByteExact {}
    impl Sealed for super::SubbytePadded {}
    impl Sealed for super::Packed {}
}

macro_rules! scalar {
    ($($ty:ty => $code:ident, $bits:literal, $storage:ident;)*) => {$(
        // SAFETY: a primitive or `#[repr(C)]`/`#[repr(transparent)]` type of `$bits` bits (one
        // byte for the sub-byte formats), one lane of itself; every bit pattern of it is valid
        // except for `bool`, whose importers check bytes are 0 or 1 before reading them.
        unsafe impl DlElement for $ty {
            const DTYPE: DLDataType = DLDataType::new(DLDataTypeCode::$code, $bits, 1);
            const LANES: u16 = 1;
            type Scalar = Self;
            type Storage = $storage;
        }
        // SAFETY: one lane, `Scalar = Self`, as required.
        unsafe impl DlScalar for $ty {}
        // SAFETY: one lane.
        unsafe impl DlLane for $ty {}
    )*};
}

scalar! {
    bool => BOOL, 8, ByteExact;
    i8 => INT, 8, ByteExact;
    i16 => INT, 16, ByteExact;
    i32 => INT, 32, ByteExact;
    i64 => INT, 64, ByteExact;
    u8 => UINT, 8, ByteExact;
    u16 => UINT, 16, ByteExact;
    u32 => UINT, 32, ByteExact;
    u64 => UINT, 64, ByteExact;
    f16 => FLOAT, 16, ByteExact;
    f32 => FLOAT, 32, ByteExact;
    f64 => FLOAT, 64, ByteExact;
    bf16 => BFLOAT, 16, ByteExact;
    Complex<f16> => COMPLEX, 32, ByteExact;
    Complex<f32> => COMPLEX, 64, ByteExact;
    Complex<f64> => COMPLEX, 128, ByteExact;
    Complex<bf16> => BCOMPLEX, 32, ByteExact;
    F8E4M3FN => FLOAT8_E4M3FN, 8, ByteExact;
    F8E5M2 => FLOAT8_E5M2, 8, ByteExact;
    F8E8M0FNU => FLOAT8_E8M0FNU, 8, ByteExact;
    F6E2M3FN => FLOAT6_E2M3FN, 6, SubbytePadded;
    F6E3M2FN => FLOAT6_E3M2FN, 6, SubbytePadded;
    F4E2M1FN => FLOAT4_E2M1FN, 4, SubbytePadded;
}

macro_rules! vector {
    ($($n:literal)*) => {$(
        // SAFETY: `[S; N]` is N values of `S`, each one `S::Scalar` of its size (a lane), with
        // no padding and the alignment of `S`; its valid bit patterns are those of N `S`;
        // DTYPE and Storage follow `S`.
        unsafe impl<S: DlLane> DlElement for [S; $n] {
            const DTYPE: DLDataType = DLDataType { lanes: $n, ..S::DTYPE };
            const LANES: u16 = $n;
            type Scalar = S::Scalar;
            type Storage = S::Storage;
        }
    )*};
}

vector!(2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);

// SAFETY: one byte holding two FP4 lanes packed (item 1's packed form: 8 bits == 2 × 4), every
// byte valid; `{FLOAT4_E2M1FN, 4, 2}` is how DLPack (and torch) describe packed FP4 pairs.
unsafe impl DlElement for F4E2M1FNx2 {
    const DTYPE: DLDataType = DLDataType::new(DLDataTypeCode::FLOAT4_E2M1FN, 4, 2);
    const LANES: u16 = 2;
    type Scalar = F4E2M1FN;
    type Storage = Packed;
}

/// The data type of `T`, for use in `const` contexts and generic code.
///
/// ```
/// use dlmd::{dtype_of, dlpack::{DLDataType, DLDataTypeCode}};
/// assert_eq!(dtype_of::<[f32; 4]>(), DLDataType::new(DLDataTypeCode::FLOAT, 32, 4));
/// ```
pub const fn dtype_of<T: DlElement>() -> DLDataType {
    T::DTYPE
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, size_of};

    fn lanes_fit<T: DlElement>() {
        assert_eq!(size_of::<T>(), T::LANES as usize * size_of::<T::Scalar>());
        assert!(align_of::<T>() >= align_of::<T::Scalar>());
        assert_eq!(T::DTYPE.lanes, T::LANES);
        assert_eq!(T::DTYPE.code, T::Scalar::DTYPE.code);
        assert_eq!(T::DTYPE.bits, T::Scalar::DTYPE.bits);
    }

    #[test]
    fn layouts_match_the_contract() {
        lanes_fit::<bool>();
        lanes_fit::<Complex<f16>>();
        lanes_fit::<Complex<f64>>();
        lanes_fit::<F4E2M1FN>();
        lanes_fit::<[u8; 3]>();
        lanes_fit::<[Complex<f32>; 16]>();
        lanes_fit::<[F6E2M3FN; 2]>();
    }

    fn padded<T: DlElement>() -> bool {
        T::Storage::IS_SUBBYTE_PADDED
    }

    #[test]
    fn storage_of_sub_byte_vectors_is_padded() {
        assert!(padded::<[F4E2M1FN; 4]>());
        assert!(!padded::<[F8E5M2; 4]>());
    }
}
