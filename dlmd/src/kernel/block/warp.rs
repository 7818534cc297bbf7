//! Warp collectives: shuffles between the 32 lanes of a warp, and reductions built on them.
//! Every lane of a warp takes part (PTX `shfl.sync` with the full mask), which the block's
//! collectives guarantee: they run in uniform code, and a block is whole warps.

use crate::dtype::DlElement;

mod sealed {
    pub trait Sealed {}
}

/// An element a warp shuffles and reduces: `f32`, `f64`, `i32`, `u32`, `i64`, `u64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shuffled or reduced across a warp",
    note = "warp and block collectives take f32, f64, i32, u32, i64 or u64"
)]
pub trait WarpValue: DlElement + sealed::Sealed {
    /// The neutral element of [`add`](Self::add).
    const ZERO: Self;
    /// The neutral element of [`max`](Self::max): the smallest value (−∞ for floats).
    const LOWEST: Self;
    /// The neutral element of [`min`](Self::min): the largest value (+∞ for floats).
    const HIGHEST: Self;
    /// `a + b` (wrapping for integers).
    fn add(a: Self, b: Self) -> Self;
    /// The larger (for floats, the other where one is NaN).
    fn max(a: Self, b: Self) -> Self;
    /// The smaller (for floats, the other where one is NaN).
    fn min(a: Self, b: Self) -> Self;
    /// The value as bits, and back: what a shuffle moves.
    #[doc(hidden)]
    fn to_bits(self) -> u64;
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
}

macro_rules! warp_float {
    ($($t:ty, $bits:ty;)*) => {$(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            const ZERO: Self = 0.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { a + b }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self { a.max(b) }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self { a.min(b) }
            #[inline(always)]
            fn to_bits(self) -> u64 { <$t>::to_bits(self) as u64 }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self { <$t>::from_bits(bits as $bits) }
        }
    )*};
}

macro_rules! warp_int {
    ($($t:ty, $bits:ty;)*) => {$(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
            #[inline(always)]
            fn to_bits(self) -> u64 { self as $bits as u64 }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self { bits as $bits as $t }
        }
    )*};
}

warp_float!(f32, u32; f64, u64;);
warp_int!(i32, u32; u32, u32; i64, u64; u64, u64;);

/// One `shfl.sync` of 32 bits across the whole warp, in mode `$mode`.
#[cfg(target_arch = "nvptx64")]
macro_rules! shfl {
    ($mode:literal, $value:expr, $b:expr, $c:literal) => {{
        let out: u32;
        // SAFETY: every lane of the warp runs this shuffle (the full mask): the block's
        // collectives run in uniform code, and a block is whole warps. It reads and writes
        // registers only.
        unsafe {
            core::arch::asm!(
                concat!("shfl.sync.", $mode, ".b32 {out}, {value}, {b}, ", $c, ", 0xffffffff;"),
                out = out(reg32) out,
                value = in(reg32) $value,
                b = in(reg32) $b,
                options(nomem, nostack),
            )
        };
        out
    }};
}

/// Moves `value` from lane `source(lane)` to each lane: a 32-bit shuffle, twice for 8 bytes.
#[cfg(target_arch = "nvptx64")]
macro_rules! shuffle_fn {
    ($name:ident, $mode:literal, $c:literal) => {
        #[inline(always)]
        pub(super) fn $name<T: WarpValue>(value: T, b: u32) -> T {
            let bits = value.to_bits();
            let low = shfl!($mode, bits as u32, b, $c);
            let high = if size_of::<T>() == 8 {
                shfl!($mode, (bits >> 32) as u32, b, $c)
            } else {
                0
            };
            T::from_bits(u64::from(low) | (u64::from(high) << 32))
        }
    };
}

#[cfg(target_arch = "nvptx64")]
shuffle_fn!(shuffle_xor, "bfly", "0x1f");
#[cfg(target_arch = "nvptx64")]
shuffle_fn!(shuffle_index, "idx", "0x1f");

/// `op` over the warp's 32 values, by butterfly shuffles: every lane ends with the result,
/// combined in the same order on each.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn reduce<T: WarpValue>(value: T, op: &impl Fn(T, T) -> T) -> T {
    // Written out, so that each shuffle's lane mask is an immediate.
    let value = op(value, shuffle_xor(value, 16));
    let value = op(value, shuffle_xor(value, 8));
    let value = op(value, shuffle_xor(value, 4));
    let value = op(value, shuffle_xor(value, 2));
    op(value, shuffle_xor(value, 1))
}
