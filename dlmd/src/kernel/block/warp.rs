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

// The LLVM intrinsics, not inline assembly: LLVM knows them as convergent, so no pass moves a
// shuffle into or out of a branch, or copies it into two.
#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_sync_bfly_i32(members: u32, value: i32, lane_mask: i32, clamp: i32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_sync_idx_i32(members: u32, value: i32, source: i32, clamp: i32) -> i32;
}

/// Moves `value` between the lanes of the warp with `$intrinsic` (32 bits at a time).
#[cfg(target_arch = "nvptx64")]
macro_rules! shuffle_fn {
    ($name:ident, $intrinsic:ident) => {
        #[inline(always)]
        pub(super) fn $name<T: WarpValue>(value: T, b: u32) -> T {
            let shuffle = |bits: u32| {
                // SAFETY: every lane of the warp runs this shuffle (the full mask): the block's
                // collectives run in uniform code, and a block is whole warps. `b` is below 32
                // (callers), and 0x1f makes the whole warp one segment.
                unsafe { $intrinsic(u32::MAX, bits as i32, b as i32, 0x1f) as u32 }
            };
            let bits = value.to_bits();
            let low = shuffle(bits as u32);
            let high = if size_of::<T>() == 8 {
                shuffle((bits >> 32) as u32)
            } else {
                0
            };
            T::from_bits(u64::from(low) | (u64::from(high) << 32))
        }
    };
}

#[cfg(target_arch = "nvptx64")]
shuffle_fn!(shuffle_xor, shfl_sync_bfly_i32);
#[cfg(target_arch = "nvptx64")]
shuffle_fn!(shuffle_index, shfl_sync_idx_i32);

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
