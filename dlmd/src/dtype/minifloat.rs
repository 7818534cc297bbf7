//! Storage types for the FP8, FP6 and FP4 formats of DLPack 1.3.
//!
//! See the [`dtype`](crate::dtype#fp8-fp6-and-fp4) module docs for their conversions.

use core::cmp::Ordering;
use core::fmt;

/// How a format treats the values at the edges of its range.
#[derive(Clone, Copy)]
enum Specials {
    /// No infinity; the all-ones code of each sign is NaN; overflow becomes NaN (E4M3FN).
    NanOnly,
    /// IEEE-like: the all-ones exponent holds ±∞ and NaN; overflow becomes ±∞ (E5M2).
    Ieee,
    /// Neither infinity nor NaN; overflow saturates (the MX element formats).
    Saturate,
}

/// A signed binary format with an implicit leading bit and subnormals.
#[derive(Clone, Copy)]
struct Format {
    exponent_bits: u32,
    mantissa_bits: u32,
    specials: Specials,
}

impl Format {
    const fn width(self) -> u32 {
        1 + self.exponent_bits + self.mantissa_bits
    }

    const fn bias(self) -> i32 {
        (1 << (self.exponent_bits - 1)) - 1
    }

    const fn sign_bit(self) -> u8 {
        1 << (self.width() - 1)
    }

    /// The largest finite magnitude's code.
    const fn max_finite(self) -> u8 {
        let all = (1u32 << (self.exponent_bits + self.mantissa_bits)) - 1;
        (match self.specials {
            Specials::NanOnly => all - 1,
            Specials::Ieee => all - (1 << self.mantissa_bits),
            Specials::Saturate => all,
        }) as u8
    }

    const fn nan(self, negative: bool) -> u8 {
        let sign = if negative { self.sign_bit() } else { 0 };
        let magnitude = (1u32 << (self.exponent_bits + self.mantissa_bits)) - 1;
        match self.specials {
            Specials::NanOnly => magnitude as u8 | sign,
            // The quiet NaN: the top mantissa bit set.
            Specials::Ieee => {
                let exponent_all_ones = ((1u32 << self.exponent_bits) - 1) << self.mantissa_bits;
                (exponent_all_ones | 1 << (self.mantissa_bits - 1)) as u8 | sign
            }
            // ml_dtypes' quiet_NaN() is the negative zero code, negated for a negative NaN.
            Specials::Saturate => self.sign_bit() ^ sign,
        }
    }

    /// What a magnitude too large to hold, or an infinity, becomes.
    const fn overflow(self, negative: bool) -> u8 {
        let sign = if negative { self.sign_bit() } else { 0 };
        match self.specials {
            Specials::NanOnly => self.nan(negative),
            Specials::Ieee => (self.max_finite() + 1) | sign,
            Specials::Saturate => self.max_finite() | sign,
        }
    }

    const fn encode(self, value: f32) -> u8 {
        let bits = value.to_bits();
        let negative = bits >> 31 != 0;
        let sign = if negative { self.sign_bit() } else { 0 };
        let magnitude = bits & 0x7fff_ffff;
        if magnitude > 0x7f80_0000 {
            return self.nan(negative);
        }
        if magnitude == 0x7f80_0000 {
            return self.overflow(negative);
        }
        let f32_exponent = (magnitude >> 23) as i32;
        if f32_exponent == 0 {
            // An f32 subnormal is below 2^-126, under half the smallest subnormal of every
            // format handled here: it rounds to zero.
            return sign;
        }
        let significand = (magnitude & 0x7f_ffff) | 0x80_0000;
        let exponent = f32_exponent - 127 + self.bias();
        // Keep `mantissa_bits` bits below the leading one of a normal result; a subnormal
        // result keeps as many fewer as its exponent is below the normal range.
        let shift = if exponent >= 1 {
            23 - self.mantissa_bits
        } else {
            23 - self.mantissa_bits + (1 - exponent) as u32
        };
        if shift > 24 {
            // Below half the smallest subnormal.
            return sign;
        }
        let kept = round_to_nearest_even(significand, shift);
        // For a normal result, `kept` includes the implicit bit; adding the biased exponent
        // minus one places it, and a carry out of the mantissa moves into the exponent on its
        // own. A subnormal result is `kept` as it is, and a carry makes it the smallest normal.
        let code = if exponent >= 1 {
            ((exponent as u32 - 1) << self.mantissa_bits) + kept
        } else {
            kept
        };
        if code > self.max_finite() as u32 {
            return self.overflow(negative);
        }
        code as u8 | sign
    }

    const fn decode(self, code: u8) -> f32 {
        let code = code as u32 & ((1 << self.width()) - 1);
        let negative = code & self.sign_bit() as u32 != 0;
        let magnitude = code & !(self.sign_bit() as u32);
        let exponent_field = magnitude >> self.mantissa_bits;
        let mantissa = magnitude & ((1 << self.mantissa_bits) - 1);
        let all_ones = (1 << self.exponent_bits) - 1;
        let is_special = match self.specials {
            Specials::NanOnly => magnitude == (1 << (self.exponent_bits + self.mantissa_bits)) - 1,
            Specials::Ieee => exponent_field == all_ones,
            Specials::Saturate => false,
        };
        let f32_magnitude = if is_special {
            if mantissa == 0 && matches!(self.specials, Specials::Ieee) {
                0x7f80_0000
            } else {
                0x7fc0_0000
            }
        } else if exponent_field == 0 {
            if mantissa == 0 {
                0
            } else {
                // Normalise the subnormal: shift its leading one into the implicit position.
                let leading = 31 - mantissa.leading_zeros();
                let shift = self.mantissa_bits - leading;
                let f32_exponent = (1 - self.bias() - shift as i32 + 127) as u32;
                let fraction = (mantissa << shift) & ((1 << self.mantissa_bits) - 1);
                (f32_exponent << 23) | (fraction << (23 - self.mantissa_bits))
            }
        } else {
            let f32_exponent = (exponent_field as i32 - self.bias() + 127) as u32;
            (f32_exponent << 23) | (mantissa << (23 - self.mantissa_bits))
        };
        f32::from_bits(f32_magnitude | if negative { 0x8000_0000 } else { 0 })
    }
}

/// Rounds `value >> shift` to nearest, ties to even. `shift` is 1 to 24.
const fn round_to_nearest_even(value: u32, shift: u32) -> u32 {
    let kept = value >> shift;
    let rest = value & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

/// The E8M0 scale: `2^(code - 127)`, with `0xFF` as NaN and no sign, zero or infinity.
const fn e8m0_from_f32(value: f32) -> u8 {
    let bits = value.to_bits();
    if bits >> 31 != 0 || bits == 0 || bits >= 0x7f80_0000 {
        // Negative values, zero, infinity and NaN have no code but NaN.
        return 0xff;
    }
    if bits < 0x80_0000 {
        // f32 subnormals lie between the two smallest scales, 2^-127 (code 0, itself the
        // f32 subnormal 0x0040_0000) and 2^-126 (code 1); ml_dtypes gives code 1 for every
        // value above 2^-127.
        return if bits > 0x40_0000 { 1 } else { 0 };
    }
    // Round the exponent by the top mantissa bit: ties (a mantissa of exactly 1.5) go up.
    let code = (bits + 0x40_0000) >> 23;
    if code >= 0xff { 0xff } else { code as u8 }
}

const fn e8m0_to_f32(code: u8) -> f32 {
    match code {
        0xff => f32::NAN,
        // 2^-127 is an f32 subnormal.
        0 => f32::from_bits(0x40_0000),
        c => f32::from_bits((c as u32) << 23),
    }
}

macro_rules! minifloat {
    (
        $(#[$meta:meta])*
        $name:ident, width $width:literal, |$v:ident| $from:expr, |$c:ident| $to:expr, $code:ident,
        example $example_value:literal => $example_bits:literal
    ) => {
        $(#[$meta])*
        ///
        /// ```
        #[doc = concat!("use dlmd::", stringify!($name), ";")]
        #[doc = concat!("let x = ", stringify!($name), "::from_f32(", stringify!($example_value), ");")]
        #[doc = concat!("assert_eq!(x.to_bits(), ", stringify!($example_bits), ");")]
        #[doc = concat!("assert_eq!(x.to_f32(), ", stringify!($example_value), ");")]
        /// ```
        #[repr(transparent)]
        #[derive(Clone, Copy, Default)]
        pub struct $name(u8);

        impl $name {
            /// Width of one value in bits.
            pub const BITS: u32 = $width;
            /// The DLPack type code of this format.
            pub const CODE: crate::dlpack::DLDataTypeCode = crate::dlpack::DLDataTypeCode::$code;

            /// The value with the given encoding. Bits above [`BITS`](Self::BITS) are cleared.
            #[inline]
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits & (u8::MAX >> (8 - $width)))
            }

            /// The encoding: the low [`BITS`](Self::BITS) bits of the byte.
            #[inline]
            pub const fn to_bits(self) -> u8 {
                self.0 & (u8::MAX >> (8 - $width))
            }

            /// The nearest value to `value`, ties to even; see the [`dtype`](crate::dtype#fp8-fp6-and-fp4)
            /// module docs for overflow, infinity and NaN.
            #[inline]
            pub const fn from_f32(value: f32) -> Self {
                let $v = value;
                Self($from)
            }

            /// The exact value as `f32` (every value of this format is one).
            #[inline]
            pub const fn to_f32(self) -> f32 {
                let $c = self.to_bits();
                $to
            }

            /// Whether this is a NaN encoding.
            #[inline]
            pub const fn is_nan(self) -> bool {
                self.to_f32().is_nan()
            }
        }

        impl From<$name> for f32 {
            #[inline]
            fn from(value: $name) -> f32 {
                value.to_f32()
            }
        }

        impl PartialEq for $name {
            /// Compares values as numbers: NaN is unequal to everything, `-0 == +0`.
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                self.to_f32() == other.to_f32()
            }
        }

        impl PartialOrd for $name {
            #[inline]
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    };
}

const E4M3FN: Format = Format {
    exponent_bits: 4,
    mantissa_bits: 3,
    specials: Specials::NanOnly,
};
const E5M2: Format = Format {
    exponent_bits: 5,
    mantissa_bits: 2,
    specials: Specials::Ieee,
};
const E2M3FN: Format = Format {
    exponent_bits: 2,
    mantissa_bits: 3,
    specials: Specials::Saturate,
};
const E3M2FN: Format = Format {
    exponent_bits: 3,
    mantissa_bits: 2,
    specials: Specials::Saturate,
};
const E2M1FN: Format = Format {
    exponent_bits: 2,
    mantissa_bits: 1,
    specials: Specials::Saturate,
};

minifloat! {
    /// OCP FP8 E4M3: 4 exponent bits, 3 mantissa bits, bias 7, no infinity (`float8_e4m3fn`).
    F8E4M3FN, width 8, |v| E4M3FN.encode(v), |c| E4M3FN.decode(c), FLOAT8_E4M3FN,
    example 0.375 => 0x2c
}
minifloat! {
    /// OCP FP8 E5M2: 5 exponent bits, 2 mantissa bits, bias 15, IEEE infinities and NaNs
    /// (`float8_e5m2`).
    F8E5M2, width 8, |v| E5M2.encode(v), |c| E5M2.decode(c), FLOAT8_E5M2,
    example -3.0 => 0xc2
}
minifloat! {
    /// OCP MX scale E8M0: an unsigned power of two `2^(code - 127)`, `0xFF` is NaN
    /// (`float8_e8m0fnu`).
    F8E8M0FNU, width 8, |v| e8m0_from_f32(v), |c| e8m0_to_f32(c), FLOAT8_E8M0FNU,
    example 0.25 => 0x7d
}
minifloat! {
    /// OCP MX FP6 E2M3: 2 exponent bits, 3 mantissa bits, bias 1, no infinity or NaN, stored in
    /// the low 6 bits of a byte (`float6_e2m3fn`).
    F6E2M3FN, width 6, |v| E2M3FN.encode(v), |c| E2M3FN.decode(c), FLOAT6_E2M3FN,
    example 7.5 => 0x1f
}
minifloat! {
    /// OCP MX FP6 E3M2: 3 exponent bits, 2 mantissa bits, bias 3, no infinity or NaN, stored in
    /// the low 6 bits of a byte (`float6_e3m2fn`).
    F6E3M2FN, width 6, |v| E3M2FN.encode(v), |c| E3M2FN.decode(c), FLOAT6_E3M2FN,
    example -0.0625 => 0x21
}
minifloat! {
    /// OCP MX FP4 E2M1: 2 exponent bits, 1 mantissa bit, bias 1, no infinity or NaN, stored in
    /// the low 4 bits of a byte (`float4_e2m1fn`).
    F4E2M1FN, width 4, |v| E2M1FN.encode(v), |c| E2M1FN.decode(c), FLOAT4_E2M1FN,
    example 1.5 => 0x3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_survives_a_round_trip() {
        for code in 0..=255u8 {
            let check = |back: u8, value: f32, name: &str| {
                assert!(
                    value.is_nan() || back == code,
                    "{name} code {code:#x} -> {value} -> {back:#x}"
                );
            };
            let x = F8E4M3FN::from_bits(code).to_f32();
            check(F8E4M3FN::from_f32(x).to_bits(), x, "e4m3fn");
            let x = F8E5M2::from_bits(code).to_f32();
            check(F8E5M2::from_f32(x).to_bits(), x, "e5m2");
            let x = F8E8M0FNU::from_bits(code).to_f32();
            check(F8E8M0FNU::from_f32(x).to_bits(), x, "e8m0fnu");
        }
        for code in 0..64u8 {
            let x = F6E2M3FN::from_bits(code).to_f32();
            assert_eq!(F6E2M3FN::from_f32(x).to_bits(), code, "e2m3fn {code:#x}");
            let x = F6E3M2FN::from_bits(code).to_f32();
            assert_eq!(F6E3M2FN::from_f32(x).to_bits(), code, "e3m2fn {code:#x}");
        }
        for code in 0..16u8 {
            let x = F4E2M1FN::from_bits(code).to_f32();
            assert_eq!(F4E2M1FN::from_f32(x).to_bits(), code, "e2m1fn {code:#x}");
        }
    }

    #[test]
    fn edges_of_each_range() {
        assert_eq!(F8E4M3FN::from_f32(448.0).to_bits(), 0x7e);
        assert!(F8E4M3FN::from_f32(465.0).is_nan());
        assert_eq!(F8E5M2::from_f32(1e6).to_f32(), f32::INFINITY);
        assert_eq!(F4E2M1FN::from_f32(-100.0).to_f32(), -6.0);
        assert_eq!(F6E3M2FN::from_f32(f32::INFINITY).to_f32(), 28.0);
        assert!(F8E8M0FNU::from_f32(0.0).is_nan());
        assert!(F8E8M0FNU::from_f32(-2.0).is_nan());
        assert_eq!(F8E8M0FNU::from_f32(3.0).to_f32(), 4.0);
    }

    #[test]
    fn high_bits_are_ignored() {
        assert_eq!(F4E2M1FN::from_bits(0xf3).to_bits(), 0x3);
        assert_eq!(F6E2M3FN::from_bits(0xc1).to_f32(), 0.125);
    }
}

/// Two OCP FP4 E2M1 values packed into one byte, as torch's `float4_e2m1fn_x2` and CUDA's
/// `__nv_fp4x2_e2m1` store them: lane 0 in the low four bits, lane 1 in the high four. DLPack
/// describes it as `{FLOAT4_E2M1FN, 4, 2}` in a plain tensor (packed, no flag), and shapes count
/// bytes: a `(M, N)` tensor holds `M × 2N` values.
///
/// ```
/// use dlmd::{F4E2M1FN, F4E2M1FNx2};
/// let x = F4E2M1FNx2::from_f32_pair(1.5, -6.0);
/// assert_eq!(x.to_bits(), 0xF3);
/// assert_eq!(x.to_f32_pair(), (1.5, -6.0));
/// assert_eq!(x.lane(0), F4E2M1FN::from_f32(1.5));
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct F4E2M1FNx2(u8);

impl F4E2M1FNx2 {
    /// The pair with this byte: lane 0 in bits 0–3, lane 1 in bits 4–7.
    #[inline]
    pub const fn from_bits(bits: u8) -> Self {
        Self(bits)
    }

    /// The byte.
    #[inline]
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The pair `(lane 0, lane 1)`.
    #[inline]
    pub const fn new(lo: F4E2M1FN, hi: F4E2M1FN) -> Self {
        Self(lo.to_bits() | (hi.to_bits() << 4))
    }

    /// Lane `i` (0 or 1; other values read lane 1).
    #[inline]
    pub const fn lane(self, i: usize) -> F4E2M1FN {
        F4E2M1FN::from_bits(if i == 0 { self.0 } else { self.0 >> 4 })
    }

    /// The nearest values to `lo` and `hi`, as [`F4E2M1FN::from_f32`] rounds them.
    #[inline]
    pub const fn from_f32_pair(lo: f32, hi: f32) -> Self {
        Self::new(F4E2M1FN::from_f32(lo), F4E2M1FN::from_f32(hi))
    }

    /// The two values, exactly.
    #[inline]
    pub const fn to_f32_pair(self) -> (f32, f32) {
        (self.lane(0).to_f32(), self.lane(1).to_f32())
    }
}

impl fmt::Debug for F4E2M1FNx2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = self.to_f32_pair();
        f.debug_tuple("F4E2M1FNx2").field(&lo).field(&hi).finish()
    }
}
