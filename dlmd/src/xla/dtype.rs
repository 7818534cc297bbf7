//! XLA's element types as DLPack's: the one table both directions read.

use super::ffi::DataType;
use crate::dlpack::{DLDataType, DLDataTypeCode};

/// Each XLA type with a DLPack type of one lane, whole bytes wide. XLA's sub-byte integers
/// (`s1`…`u4`) and `f4e2m1fn` pack elements into bytes in a layout of XLA's choosing, and a
/// `token` holds no data: none of them has an entry.
const TABLE: [(DataType, DLDataTypeCode, u8); 23] = [
    (DataType::PRED, DLDataTypeCode::BOOL, 8),
    (DataType::S8, DLDataTypeCode::INT, 8),
    (DataType::S16, DLDataTypeCode::INT, 16),
    (DataType::S32, DLDataTypeCode::INT, 32),
    (DataType::S64, DLDataTypeCode::INT, 64),
    (DataType::U8, DLDataTypeCode::UINT, 8),
    (DataType::U16, DLDataTypeCode::UINT, 16),
    (DataType::U32, DLDataTypeCode::UINT, 32),
    (DataType::U64, DLDataTypeCode::UINT, 64),
    (DataType::F16, DLDataTypeCode::FLOAT, 16),
    (DataType::F32, DLDataTypeCode::FLOAT, 32),
    (DataType::F64, DLDataTypeCode::FLOAT, 64),
    (DataType::BF16, DLDataTypeCode::BFLOAT, 16),
    (DataType::C64, DLDataTypeCode::COMPLEX, 64),
    (DataType::C128, DLDataTypeCode::COMPLEX, 128),
    (DataType::F8E5M2, DLDataTypeCode::FLOAT8_E5M2, 8),
    (DataType::F8E3M4, DLDataTypeCode::FLOAT8_E3M4, 8),
    (DataType::F8E4M3, DLDataTypeCode::FLOAT8_E4M3, 8),
    (DataType::F8E4M3FN, DLDataTypeCode::FLOAT8_E4M3FN, 8),
    (DataType::F8E4M3B11FNUZ, DLDataTypeCode::FLOAT8_E4M3B11FNUZ, 8),
    (DataType::F8E5M2FNUZ, DLDataTypeCode::FLOAT8_E5M2FNUZ, 8),
    (DataType::F8E4M3FNUZ, DLDataTypeCode::FLOAT8_E4M3FNUZ, 8),
    (DataType::F8E8M0FNU, DLDataTypeCode::FLOAT8_E8M0FNU, 8),
];

impl DataType {
    /// The DLPack type of this XLA type, or `None` where there is none (sub-byte types, FP4,
    /// `token`, and values XLA does not define).
    ///
    /// ```
    /// use dlmd::DlElement;
    /// use dlmd::xla::ffi::DataType;
    /// assert_eq!(DataType::BF16.to_dlpack(), Some(dlmd::half::bf16::DTYPE));
    /// assert_eq!(DataType::S4.to_dlpack(), None);
    /// ```
    pub fn to_dlpack(self) -> Option<DLDataType> {
        TABLE
            .iter()
            .find(|&&(xla, _, _)| xla == self)
            .map(|&(_, code, bits)| DLDataType::new(code, bits, 1))
    }

    /// The XLA type of a DLPack type, or `None` where there is none (vectors of lanes, types
    /// XLA does not have).
    ///
    /// ```
    /// use dlmd::DlElement;
    /// use dlmd::xla::ffi::DataType;
    /// assert_eq!(DataType::from_dlpack(f32::DTYPE), Some(DataType::F32));
    /// assert_eq!(DataType::from_dlpack(<[f32; 4]>::DTYPE), None);
    /// ```
    pub fn from_dlpack(dtype: DLDataType) -> Option<Self> {
        TABLE
            .iter()
            .find(|&&(_, code, bits)| dtype == DLDataType::new(code, bits, 1))
            .map(|&(xla, _, _)| xla)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DlElement;
    use half::{bf16, f16};
    use num_complex::Complex;

    #[test]
    fn every_mapped_type_goes_both_ways() {
        for &(xla, _, _) in &TABLE {
            let dl = xla.to_dlpack().expect("mapped");
            assert_eq!(DataType::from_dlpack(dl), Some(xla), "{xla:?}");
        }
    }

    #[test]
    fn rust_elements_have_their_xla_types() {
        assert_eq!(DataType::from_dlpack(bool::DTYPE), Some(DataType::PRED));
        assert_eq!(DataType::from_dlpack(i8::DTYPE), Some(DataType::S8));
        assert_eq!(DataType::from_dlpack(u64::DTYPE), Some(DataType::U64));
        assert_eq!(DataType::from_dlpack(f16::DTYPE), Some(DataType::F16));
        assert_eq!(DataType::from_dlpack(bf16::DTYPE), Some(DataType::BF16));
        assert_eq!(DataType::from_dlpack(f64::DTYPE), Some(DataType::F64));
        assert_eq!(DataType::from_dlpack(Complex::<f32>::DTYPE), Some(DataType::C64));
        assert_eq!(DataType::from_dlpack(Complex::<f64>::DTYPE), Some(DataType::C128));
        assert_eq!(DataType::from_dlpack(crate::F8E4M3FN::DTYPE), Some(DataType::F8E4M3FN));
    }

    #[test]
    fn packed_and_unknown_types_have_none() {
        for xla in [
            DataType::S1,
            DataType::U4,
            DataType::F4E2M1FN,
            DataType::TOKEN,
            DataType::INVALID,
            DataType(99),
        ] {
            assert_eq!(xla.to_dlpack(), None, "{xla:?}");
        }
        assert_eq!(DataType::from_dlpack(crate::F4E2M1FNx2::DTYPE), None);
    }
}
