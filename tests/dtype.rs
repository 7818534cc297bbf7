//! Every built-in element type has the DLPack data type of the table in `dlmd::dtype`, and no
//! two of them share one.

use dlmd::dlpack::{DLDataType, DLDataTypeCode as C};
use dlmd::{DlElement, F4E2M1FN, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2, F8E8M0FNU};
use half::{bf16, f16};
use num_complex::Complex;

fn dt(code: C, bits: u8, lanes: u16) -> DLDataType {
    DLDataType::new(code, bits, lanes)
}

/// `(name, dtype, size)` of every built-in scalar.
fn scalars() -> Vec<(&'static str, DLDataType, usize)> {
    macro_rules! row {
        ($t:ty) => {
            (
                stringify!($t),
                <$t as DlElement>::DTYPE,
                core::mem::size_of::<$t>(),
            )
        };
    }
    vec![
        row!(bool),
        row!(i8),
        row!(i16),
        row!(i32),
        row!(i64),
        row!(u8),
        row!(u16),
        row!(u32),
        row!(u64),
        row!(f16),
        row!(f32),
        row!(f64),
        row!(bf16),
        row!(Complex<f16>),
        row!(Complex<f32>),
        row!(Complex<f64>),
        row!(Complex<bf16>),
        row!(F8E4M3FN),
        row!(F8E5M2),
        row!(F8E8M0FNU),
        row!(F6E2M3FN),
        row!(F6E3M2FN),
        row!(F4E2M1FN),
    ]
}

#[test]
fn scalar_data_types() {
    let expected = [
        dt(C::BOOL, 8, 1),
        dt(C::INT, 8, 1),
        dt(C::INT, 16, 1),
        dt(C::INT, 32, 1),
        dt(C::INT, 64, 1),
        dt(C::UINT, 8, 1),
        dt(C::UINT, 16, 1),
        dt(C::UINT, 32, 1),
        dt(C::UINT, 64, 1),
        dt(C::FLOAT, 16, 1),
        dt(C::FLOAT, 32, 1),
        dt(C::FLOAT, 64, 1),
        dt(C::BFLOAT, 16, 1),
        dt(C::COMPLEX, 32, 1),
        dt(C::COMPLEX, 64, 1),
        dt(C::COMPLEX, 128, 1),
        dt(C::BCOMPLEX, 32, 1),
        dt(C::FLOAT8_E4M3FN, 8, 1),
        dt(C::FLOAT8_E5M2, 8, 1),
        dt(C::FLOAT8_E8M0FNU, 8, 1),
        dt(C::FLOAT6_E2M3FN, 6, 1),
        dt(C::FLOAT6_E3M2FN, 6, 1),
        dt(C::FLOAT4_E2M1FN, 4, 1),
    ];
    let scalars = scalars();
    assert_eq!(scalars.len(), expected.len());
    for ((name, dtype, size), want) in scalars.into_iter().zip(expected) {
        assert_eq!(dtype, want, "{name}");
        // Whole-byte types take bits / 8 bytes; FP6 and FP4 take one byte each.
        assert_eq!(size, usize::from(dtype.bits).div_ceil(8), "{name}");
    }
}

#[test]
fn no_two_types_share_a_data_type() {
    let mut all: Vec<(&str, DLDataType)> = scalars().into_iter().map(|(n, d, _)| (n, d)).collect();
    all.push(("[f32; 2]", <[f32; 2]>::DTYPE));
    all.push(("[f16; 2]", <[f16; 2]>::DTYPE));
    all.push(("[u8; 4]", <[u8; 4]>::DTYPE));
    all.push(("[Complex<f32>; 2]", <[Complex<f32>; 2]>::DTYPE));
    for (i, (a, da)) in all.iter().enumerate() {
        for (b, db) in &all[i + 1..] {
            assert_ne!(da, db, "{a} and {b} share {da}");
        }
    }
}

#[test]
fn arrays_are_vectors_of_their_scalar() {
    assert_eq!(<[f32; 2]>::DTYPE, dt(C::FLOAT, 32, 2));
    assert_eq!(<[f32; 4]>::DTYPE, dt(C::FLOAT, 32, 4));
    assert_eq!(<[i8; 3]>::DTYPE, dt(C::INT, 8, 3));
    assert_eq!(<[bf16; 8]>::DTYPE, dt(C::BFLOAT, 16, 8));
    assert_eq!(<[u64; 16]>::DTYPE, dt(C::UINT, 64, 16));
    assert_eq!(<[Complex<f64>; 2]>::DTYPE, dt(C::COMPLEX, 128, 2));
    assert_eq!(<[F4E2M1FN; 2]>::DTYPE, dt(C::FLOAT4_E2M1FN, 4, 2));
    assert_eq!(<[bool; 5]>::LANES, 5);
}

#[test]
fn display_names() {
    assert_eq!(<f32>::DTYPE.to_string(), "float32");
    assert_eq!(<[f32; 4]>::DTYPE.to_string(), "float32x4");
    assert_eq!(<Complex<f16>>::DTYPE.to_string(), "complex32");
    assert_eq!(<bool>::DTYPE.to_string(), "bool");
    assert_eq!(<F8E4M3FN>::DTYPE.to_string(), "float8_e4m3fn");
}

#[test]
fn packed_fp4_pairs_are_one_byte_of_two_lanes() {
    use dlmd::{ElementStorage, F4E2M1FNx2};
    assert_eq!(F4E2M1FNx2::DTYPE, dt(C::FLOAT4_E2M1FN, 4, 2));
    assert_eq!((F4E2M1FNx2::LANES, std::mem::size_of::<F4E2M1FNx2>()), (2, 1));
    // Packed: no padding flag; `[F4E2M1FN; 2]` has the same code, bits and lanes but is padded
    // (two bytes), which the flag tells apart.
    const { assert!(!<F4E2M1FNx2 as DlElement>::Storage::IS_SUBBYTE_PADDED) };
    const { assert!(<[dlmd::F4E2M1FN; 2] as DlElement>::Storage::IS_SUBBYTE_PADDED) };
    assert_eq!(<[dlmd::F4E2M1FN; 2]>::DTYPE, F4E2M1FNx2::DTYPE);
}
