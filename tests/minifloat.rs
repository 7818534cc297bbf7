//! dlmd's FP8/FP6/FP4 conversions against `ml_dtypes`, bit for bit.
//!
//! The vectors in `data/minifloat/` come from `scripts/minifloat_vectors.py`: every encoding's
//! value, and over 120 000 conversions from `f32` per format, ties and specials included.

use dlmd::{F4E2M1FN, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2, F8E8M0FNU};

struct Format {
    name: &'static str,
    decode: &'static [u8],
    encode: &'static [u8],
    from_f32: fn(f32) -> u8,
    to_f32: fn(u8) -> f32,
}

macro_rules! vectors {
    ($name:literal, $ty:ident) => {
        Format {
            name: $name,
            decode: include_bytes!(concat!("data/minifloat/", $name, ".decode")),
            encode: include_bytes!(concat!("data/minifloat/", $name, ".encode")),
            from_f32: |x| $ty::from_f32(x).to_bits(),
            to_f32: |c| $ty::from_bits(c).to_f32(),
        }
    };
}

const FORMATS: [Format; 6] = [
    vectors!("f8e4m3fn", F8E4M3FN),
    vectors!("f8e5m2", F8E5M2),
    vectors!("f8e8m0fnu", F8E8M0FNU),
    vectors!("f6e2m3fn", F6E2M3FN),
    vectors!("f6e3m2fn", F6E3M2FN),
    vectors!("f4e2m1fn", F4E2M1FN),
];

/// NaNs are compared by sign and NaN-ness: a payload is not part of the value numpy reports.
fn same_f32(a: f32, b: f32) -> bool {
    if a.is_nan() || b.is_nan() {
        a.is_nan() && b.is_nan() && a.is_sign_negative() == b.is_sign_negative()
    } else {
        a.to_bits() == b.to_bits()
    }
}

#[test]
fn every_encoding_decodes_as_ml_dtypes_does() {
    for format in &FORMATS {
        let expected: Vec<f32> = format
            .decode
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert!(expected.len() >= 16, "{}: vectors missing", format.name);
        let mut wrong = Vec::new();
        for (code, &want) in expected.iter().enumerate() {
            let got = (format.to_f32)(code as u8);
            if !same_f32(got, want) {
                wrong.push(format!("code {code:#04x}: dlmd {got:e}, ml_dtypes {want:e}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "{}: {} of {} decodes differ:\n{}",
            format.name,
            wrong.len(),
            expected.len(),
            wrong[..wrong.len().min(20)].join("\n")
        );
    }
}

#[test]
fn conversions_from_f32_match_ml_dtypes_bit_for_bit() {
    for format in &FORMATS {
        let records = format.encode.chunks_exact(5);
        assert!(
            records.len() >= 100_000,
            "{}: only {} vectors",
            format.name,
            records.len()
        );
        let mut wrong = Vec::new();
        let total = records.len();
        // Miri interprets every conversion: a spread-out sample of the vectors there.
        for record in records.step_by(if cfg!(miri) { 401 } else { 1 }) {
            let input = f32::from_bits(u32::from_le_bytes(record[..4].try_into().unwrap()));
            let want = record[4];
            let got = (format.from_f32)(input);
            if got != want {
                wrong.push(format!(
                    "{input:e} ({:#010x}): dlmd {got:#04x}, ml_dtypes {want:#04x}",
                    input.to_bits()
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "{}: {} of {total} conversions differ:\n{}",
            format.name,
            wrong.len(),
            wrong[..wrong.len().min(20)].join("\n")
        );
    }
}

/// The ml_dtypes values of every FP4 E2M1 encoding.
fn fp4_values() -> Vec<f32> {
    include_bytes!("data/minifloat/f4e2m1fn.decode")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn packed_fp4_pairs_decode_as_ml_dtypes_does_lane_by_lane() {
    let values = fp4_values();
    assert_eq!(values.len(), 16);
    for byte in 0..=255u8 {
        let pair = dlmd::F4E2M1FNx2::from_bits(byte);
        let (lo, hi) = pair.to_f32_pair();
        // Lane 0 in the low nibble, lane 1 in the high one, as torch and CUDA pack them.
        assert!(same_f32(lo, values[usize::from(byte & 0xF)]), "{byte:#04x} lane 0");
        assert!(same_f32(hi, values[usize::from(byte >> 4)]), "{byte:#04x} lane 1");
        assert_eq!(dlmd::F4E2M1FNx2::new(pair.lane(0), pair.lane(1)).to_bits(), byte);
    }
}

#[test]
#[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
fn packed_fp4_pairs_encode_as_ml_dtypes_does_lane_by_lane() {
    let encode: Vec<(f32, u8)> = include_bytes!("data/minifloat/f4e2m1fn.encode")
        .chunks_exact(5)
        .map(|r| (f32::from_bits(u32::from_le_bytes(r[..4].try_into().unwrap())), r[4]))
        .collect();
    // Consecutive vectors paired: each lane rounds as ml_dtypes rounds it alone.
    for pair in encode.chunks_exact(2) {
        let ((a, code_a), (b, code_b)) = (pair[0], pair[1]);
        let packed = dlmd::F4E2M1FNx2::from_f32_pair(a, b);
        assert_eq!(packed.to_bits(), code_a | (code_b << 4), "{a:e}, {b:e}");
    }
}
