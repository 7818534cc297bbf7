//! Which NCCL data type an element type is, decided at compile time, and the reductions.

use crate::dlpack::{DLDataType, DLDataTypeCode};
use crate::dtype::{ByteExact, DlElement, DlScalar, F8E4M3FN, F8E5M2};
use cudarc::nccl::sys;
use half::{bf16, f16};

/// NCCL's data types, as dlmd maps element types to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `ncclInt8`.
    Int8,
    /// `ncclUint8`.
    Uint8,
    /// `ncclInt32`.
    Int32,
    /// `ncclUint32`.
    Uint32,
    /// `ncclInt64`.
    Int64,
    /// `ncclUint64`.
    Uint64,
    /// `ncclFloat16`.
    Float16,
    /// `ncclFloat32`.
    Float32,
    /// `ncclFloat64`.
    Float64,
    /// `ncclBfloat16` (NCCL 2.10 and later).
    Bfloat16,
    /// `ncclFloat8e4m3` (NCCL 2.24 and later): OCP FP8 E4M3, dlmd's [`F8E4M3FN`].
    Float8E4M3,
    /// `ncclFloat8e5m2` (NCCL 2.24 and later): OCP FP8 E5M2, dlmd's [`F8E5M2`].
    Float8E5M2,
}

impl DataType {
    /// NCCL's data type for one lane of a DLPack data type, where it has one.
    ///
    /// ```
    /// use dlmd::dlpack::{DLDataType, DLDataTypeCode};
    /// use dlmd::nccl::DataType;
    /// assert_eq!(DataType::of(DLDataType::new(DLDataTypeCode::FLOAT, 32, 4)), Some(DataType::Float32));
    /// assert_eq!(DataType::of(DLDataType::new(DLDataTypeCode::INT, 16, 1)), None);
    /// ```
    pub const fn of(dtype: DLDataType) -> Option<Self> {
        const INT: u8 = DLDataTypeCode::INT.0;
        const UINT: u8 = DLDataTypeCode::UINT.0;
        const FLOAT: u8 = DLDataTypeCode::FLOAT.0;
        const BFLOAT: u8 = DLDataTypeCode::BFLOAT.0;
        const E4M3: u8 = DLDataTypeCode::FLOAT8_E4M3FN.0;
        const E5M2: u8 = DLDataTypeCode::FLOAT8_E5M2.0;
        Some(match (dtype.code, dtype.bits) {
            (INT, 8) => Self::Int8,
            (UINT, 8) => Self::Uint8,
            (INT, 32) => Self::Int32,
            (UINT, 32) => Self::Uint32,
            (INT, 64) => Self::Int64,
            (UINT, 64) => Self::Uint64,
            (FLOAT, 16) => Self::Float16,
            (FLOAT, 32) => Self::Float32,
            (FLOAT, 64) => Self::Float64,
            (BFLOAT, 16) => Self::Bfloat16,
            (E4M3, 8) => Self::Float8E4M3,
            (E5M2, 8) => Self::Float8E5M2,
            _ => return None,
        })
    }

    /// The oldest NCCL version (`ncclGetVersion`'s number, 22400 for 2.24.0) with this type.
    pub const fn min_version(self) -> i32 {
        match self {
            Self::Bfloat16 => 21000,
            Self::Float8E4M3 | Self::Float8E5M2 => 22400,
            _ => 0,
        }
    }

    /// NCCL's name of the type.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Int8 => "ncclInt8",
            Self::Uint8 => "ncclUint8",
            Self::Int32 => "ncclInt32",
            Self::Uint32 => "ncclUint32",
            Self::Int64 => "ncclInt64",
            Self::Uint64 => "ncclUint64",
            Self::Float16 => "ncclFloat16",
            Self::Float32 => "ncclFloat32",
            Self::Float64 => "ncclFloat64",
            Self::Bfloat16 => "ncclBfloat16",
            Self::Float8E4M3 => "ncclFloat8e4m3",
            Self::Float8E5M2 => "ncclFloat8e5m2",
        }
    }

    /// The value cudarc's bindings pass to NCCL.
    pub const fn to_sys(self) -> sys::ncclDataType_t {
        use sys::ncclDataType_t as T;
        match self {
            Self::Int8 => T::ncclInt8,
            Self::Uint8 => T::ncclUint8,
            Self::Int32 => T::ncclInt32,
            Self::Uint32 => T::ncclUint32,
            Self::Int64 => T::ncclInt64,
            Self::Uint64 => T::ncclUint64,
            Self::Float16 => T::ncclFloat16,
            Self::Float32 => T::ncclFloat32,
            Self::Float64 => T::ncclFloat64,
            Self::Bfloat16 => T::ncclBfloat16,
            Self::Float8E4M3 => T::ncclFloat8e4m3,
            Self::Float8E5M2 => T::ncclFloat8e5m2,
        }
    }
}

/// A scalar element type NCCL reduces and moves: its data type follows from the element's
/// DLPack data type ([`DlElement::DTYPE`]) at compile time.
///
/// # Safety
///
/// `DATA_TYPE` is NCCL's type of exactly `Self`'s bytes (the one [`DataType::of`] gives for
/// `Self::DTYPE`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no NCCL data type",
    label = "NCCL cannot reduce or move this element type",
    note = "NCCL handles i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, F8E4M3FN and F8E5M2, \
            and derived newtypes and vectors of them"
)]
pub unsafe trait NcclScalar: DlScalar {
    /// NCCL's data type of one value.
    const DATA_TYPE: DataType;
}

macro_rules! nccl_scalars {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: the type's own DLPack data type, mapped by `DataType::of`.
        unsafe impl NcclScalar for $t {
            const DATA_TYPE: DataType = match DataType::of(<$t as DlElement>::DTYPE) {
                Some(t) => t,
                None => panic!("a scalar without an NCCL data type"),
            };
        }
    )*};
}
nccl_scalars!(i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, F8E4M3FN, F8E5M2);

/// An element type collectives take: a byte-exact [`DlElement`] whose lanes are of an
/// [`NcclScalar`] type (scalars, derived newtypes of them, and vectors of those). One element
/// is [`LANES`](DlElement::LANES) NCCL values.
pub trait NcclElement: DlElement<Storage = ByteExact> {
    /// NCCL's data type of one lane.
    const DATA_TYPE: DataType;
}

impl<T> NcclElement for T
where
    T: DlElement<Storage = ByteExact>,
    T::Scalar: NcclScalar,
{
    const DATA_TYPE: DataType = <T::Scalar as NcclScalar>::DATA_TYPE;
}

/// A reduction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum.
    #[default]
    Sum,
    /// The product.
    Prod,
    /// The maximum.
    Max,
    /// The minimum.
    Min,
    /// The mean over the ranks.
    Avg,
}

impl ReduceOp {
    pub(super) fn to_sys(self) -> sys::ncclRedOp_t {
        use sys::ncclRedOp_t as O;
        match self {
            Self::Sum => O::ncclSum,
            Self::Prod => O::ncclProd,
            Self::Max => O::ncclMax,
            Self::Min => O::ncclMin,
            Self::Avg => O::ncclAvg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::F8E8M0FNU;
    use num_complex::Complex;

    fn of<T: NcclElement>() -> DataType {
        T::DATA_TYPE
    }

    #[test]
    fn element_types_map_to_nccl_types() {
        assert_eq!(of::<i8>(), DataType::Int8);
        assert_eq!(of::<u8>(), DataType::Uint8);
        assert_eq!(of::<i32>(), DataType::Int32);
        assert_eq!(of::<u32>(), DataType::Uint32);
        assert_eq!(of::<i64>(), DataType::Int64);
        assert_eq!(of::<u64>(), DataType::Uint64);
        assert_eq!(of::<f16>(), DataType::Float16);
        assert_eq!(of::<bf16>(), DataType::Bfloat16);
        assert_eq!(of::<f32>(), DataType::Float32);
        assert_eq!(of::<f64>(), DataType::Float64);
        assert_eq!(of::<F8E4M3FN>(), DataType::Float8E4M3);
        assert_eq!(of::<F8E5M2>(), DataType::Float8E5M2);
        // Vectors are their lanes.
        assert_eq!(of::<[f32; 4]>(), DataType::Float32);
        assert_eq!(of::<[bf16; 2]>(), DataType::Bfloat16);
    }

    #[test]
    fn nccl_numbers_are_ncclh() {
        // The values of `ncclDataType_t` in nccl.h (2.24 and later).
        let expected = [
            (DataType::Int8, 0),
            (DataType::Uint8, 1),
            (DataType::Int32, 2),
            (DataType::Uint32, 3),
            (DataType::Int64, 4),
            (DataType::Uint64, 5),
            (DataType::Float16, 6),
            (DataType::Float32, 7),
            (DataType::Float64, 8),
            (DataType::Bfloat16, 9),
            (DataType::Float8E4M3, 10),
            (DataType::Float8E5M2, 11),
        ];
        for (t, n) in expected {
            assert_eq!(t.to_sys() as u32, n, "{}", t.name());
        }
        assert_eq!(ReduceOp::Sum.to_sys() as u32, 0);
        assert_eq!(ReduceOp::Avg.to_sys() as u32, 4);
    }

    #[test]
    fn dlpack_types_without_nccl_types() {
        for dtype in [
            DLDataType::new(DLDataTypeCode::INT, 16, 1),
            DLDataType::new(DLDataTypeCode::UINT, 16, 1),
            <bool as DlElement>::DTYPE,
            <Complex<f32> as DlElement>::DTYPE,
            <F8E8M0FNU as DlElement>::DTYPE,
            DLDataType::new(DLDataTypeCode::FLOAT, 8, 1),
            DLDataType::new(DLDataTypeCode::INT, 128, 1),
        ] {
            assert_eq!(DataType::of(dtype), None, "{dtype}");
        }
    }

    #[test]
    fn versions_needed() {
        assert_eq!(DataType::Float32.min_version(), 0);
        assert_eq!(DataType::Bfloat16.min_version(), 21000);
        assert_eq!(DataType::Float8E5M2.min_version(), 22400);
    }
}
