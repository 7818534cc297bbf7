//! A warpgroup's accumulators and the `wgmma` instructions that add to them: `64 × N` `f32`
//! over the warpgroup's 128 threads, in one of three states that the type tells apart
//! ([`Accumulators`], [`InFlight`], [`InFlight2`]), so that no safe code reads one whose
//! products are still running.

use super::operand::{KMajor, MnMajor, OperandA, OperandB};
use super::pipeline::{Full, Operand};
use crate::dtype::{DlElement, F8E4M3FN, F8E5M2};
use core::marker::PhantomData;
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// An input element type of `wgmma` with `f32` accumulators: `bf16`, `f16` (`k = 16` a
/// product), and the FP8 types [`F8E4M3FN`] and [`F8E5M2`] (`k = 32`). Each product reads
/// 32 bytes of every operand row.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input type of `wgmma`",
    label = "`wgmma` multiplies `bf16`, `f16`, `F8E4M3FN` or `F8E5M2` into `f32`",
    note = "convert the operands to one of these before they reach the tiles"
)]
pub trait WgmmaInput: DlElement + sealed::Sealed {}

/// `N` columns of a warpgroup's accumulators (`N` of 64, 128 or 256): the `N` of `wgmma`'s
/// `m64nNk·` shape, and the rows of the `B` operand tile it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cols<const N: usize>;

/// The widths of a warpgroup's accumulators: [`Cols`] of 64, 128 or 256.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a width of `wgmma` accumulators",
    label = "use `Cols<64>`, `Cols<128>` or `Cols<256>`"
)]
pub trait Width: sealed::Sealed + 'static {
    /// The columns.
    const N: usize;
    /// A thread's `N / 2` accumulators.
    #[doc(hidden)]
    type Regs: Copy;
    /// All zero.
    #[doc(hidden)]
    fn zero() -> Self::Regs;
    /// Element `i` of a thread's.
    #[doc(hidden)]
    fn get(regs: &Self::Regs, i: usize) -> f32;
    /// Sets element `i` of a thread's.
    #[doc(hidden)]
    fn set(regs: &mut Self::Regs, i: usize, value: f32);
    /// `wgmma.wait_group PENDING`, the accumulators passed through it (named in a comment)
    /// so that no read of them moves above it.
    ///
    /// # Safety
    ///
    /// As [`wgmma_wait`](super::raw::wgmma_wait).
    #[doc(hidden)]
    unsafe fn wait<const PENDING: u32>(regs: &mut Self::Regs);
}

/// The `wgmma` of input `Self` into accumulators of width `W`, its `B` operand read as
/// `Major` says ([`KMajor`], or [`MnMajor`] for `bf16` and `f16`).
///
/// # Safety
///
/// [`mma_steps`](Self::mma_steps), in each of its forms, issues the products
/// [`mma_row`](Self::mma_row)'s contract says, and nothing else.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`wgmma` has no product of `{Self}` into `{W}` with its `B` tile read this way",
    label = "`wgmma` reads `B` K-major for every input, and MN-major (`MnMajor`) for `bf16` and `f16` only",
    note = "FP8 operands are K-major: load `b` transposed (`n × k`), or use a 16-bit input"
)]
pub unsafe trait Product<W: Width, Major = KMajor>: WgmmaInput {
    /// `wgmma.fence`, then `wgmma.mma_async` over one stage's depth (four products, each of
    /// 32 bytes of every `A` row: `regs += a · b` for the `64`-row K-major `a` in the 128-byte
    /// swizzle and the `N`-column `b`, the `s`-th with `a`'s descriptor advanced by `32 s`
    /// bytes and `b`'s by its step, `Major`'s), then `wgmma.commit_group`.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of a warpgroup together, in converged code, on `sm_90a`; the
    /// descriptors ([`descriptor_128`](super::raw::descriptor_128),
    /// [`descriptor_128_mn`](super::raw::descriptor_128_mn) for `b` read MN-major) describe
    /// initialised shared memory of the running block laid out as they say, written last
    /// through the async proxy (or fenced since) and ordered before this, that nothing writes
    /// until a wait says the group is done; `regs` are read or written by nothing else until
    /// then.
    #[inline(always)]
    unsafe fn mma_row(regs: &mut W::Regs, a: u64, b: u64) {
        // SAFETY: as this function's contract, which is `mma_steps`'.
        unsafe { Self::mma_steps::<{ Steps::OUTSIDE }>(regs, a, b) }
    }

    /// [`mma_row`](Self::mma_row), the same products, with the descriptors of the stage's
    /// later three steps made from the first's where `STEPS` says: `0`, all before the `asm!`
    /// (as operands); `1`, `A`'s inside it (`add.s64`); `2`, `B`'s inside it. Any other value
    /// is `0`. A choice of code only: it changes how `ptxas` schedules the four products
    /// around the 64-bit values they keep live, and nothing they compute.
    ///
    /// # Safety
    ///
    /// As [`mma_row`](Self::mma_row).
    unsafe fn mma_steps<const STEPS: u8>(regs: &mut W::Regs, a: u64, b: u64);
}

/// The forms of [`Product::mma_steps`].
pub(crate) struct Steps;

// (Host builds compile no `wgmma`: only `OUTSIDE` is named there.)
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
impl Steps {
    /// Every step's descriptors made before the `asm!`.
    pub(crate) const OUTSIDE: u8 = 0;
    /// `A`'s later steps made inside the `asm!`.
    pub(crate) const A_INSIDE: u8 = 1;
    /// `B`'s later steps made inside the `asm!`.
    pub(crate) const B_INSIDE: u8 = 2;
}

macro_rules! input {
    ($($t:ty),*) => {
        $(
            impl sealed::Sealed for $t {}
            impl WgmmaInput for $t {}
        )*
    };
}
input!(bf16, f16, F8E4M3FN, F8E5M2);

macro_rules! width {
    ($n:literal, $regs:literal, $first:literal $($i:literal)*) => {
        impl sealed::Sealed for Cols<$n> {}
        impl Width for Cols<$n> {
            const N: usize = $n;
            type Regs = [f32; $regs];
            #[inline(always)]
            fn zero() -> [f32; $regs] {
                // SAFETY: all-zero bits are `0.0` for `f32`. (A memset, which LLVM keeps in
                // registers; `[0.0; N]` of this size becomes a loop over local memory.)
                unsafe { core::mem::zeroed() }
            }
            #[inline(always)]
            fn get(regs: &[f32; $regs], i: usize) -> f32 {
                regs[i]
            }
            #[inline(always)]
            fn set(regs: &mut [f32; $regs], i: usize, value: f32) {
                regs[i] = value;
            }
            #[inline(always)]
            unsafe fn wait<const PENDING: u32>(regs: &mut [f32; $regs]) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.wait_group.sync.aligned {n}; // {", $first, "}", $(" {", $i, "}",)*),
                        inout(reg32) regs[$first],
                        $(inout(reg32) regs[$i],)*
                        n = const PENDING,
                        options(nostack),
                    )
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = regs;
            }
        }
    };
}

/// The four `wgmma`s of one stage between a fence and a commit, in one `asm!`: `$a` and `$b`
/// name each step's descriptors (operands, or the registers `$setup` makes from the first's).
#[cfg(target_arch = "nvptx64")]
macro_rules! stage {
    ($regs:ident, $ptx:literal, $k:literal, $imm:literal, $n:literal, [$($setup:literal),*], [$a0:literal, $a1:literal, $a2:literal, $a3:literal], [$b0:literal, $b1:literal, $b2:literal, $b3:literal], $first:literal $($i:literal)*; $($operands:tt)*) => {
        core::arch::asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {one}, 0;",
            $($setup,)*
            "wgmma.fence.sync.aligned;",
            concat!("wgmma.mma_async.sync.aligned.m64n", $n, $k, ".f32.", $ptx, ".", $ptx, " {{{", $first, "}", $(", {", $i, "}",)* "}}, ", $a0, ", ", $b0, ", p", $imm, ";"),
            concat!("wgmma.mma_async.sync.aligned.m64n", $n, $k, ".f32.", $ptx, ".", $ptx, " {{{", $first, "}", $(", {", $i, "}",)* "}}, ", $a1, ", ", $b1, ", p", $imm, ";"),
            concat!("wgmma.mma_async.sync.aligned.m64n", $n, $k, ".f32.", $ptx, ".", $ptx, " {{{", $first, "}", $(", {", $i, "}",)* "}}, ", $a2, ", ", $b2, ", p", $imm, ";"),
            concat!("wgmma.mma_async.sync.aligned.m64n", $n, $k, ".f32.", $ptx, ".", $ptx, " {{{", $first, "}", $(", {", $i, "}",)* "}}, ", $a3, ", ", $b3, ", p", $imm, ";"),
            "wgmma.commit_group.sync.aligned;",
            "}}",
            inout(reg32) $regs[$first],
            $(inout(reg32) $regs[$i],)*
            one = in(reg32) 1u32,
            $($operands)*
            options(nostack),
        )
    };
}

macro_rules! product {
    ($t:ty, $major:ty, $bstep:literal, $ptx:literal, $k:literal, $imm:literal, $n:literal, $first:literal $($i:literal)*) => {
        // SAFETY: four `wgmma.mma_async` of this shape, input, `B` layout (`$imm`'s last
        // transpose flag, the descriptor's step `$bstep`) and accumulators between a fence and
        // a commit, as `mma_row` says, in each form of `mma_steps` (the same descriptors, made
        // before the `asm!` or by the same additions inside it).
        unsafe impl Product<Cols<$n>, $major> for $t {
            #[inline(always)]
            unsafe fn mma_steps<const STEPS: u8>(regs: &mut <Cols<$n> as Width>::Regs, a: u64, b: u64) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract (`STEPS` is a constant: one form is kept).
                unsafe {
                    if STEPS == Steps::A_INSIDE {
                        stage!(regs, $ptx, $k, $imm, $n,
                            [".reg .b64 s1, s2, s3;", "add.s64 s1, {a0}, 2;", "add.s64 s2, {a0}, 4;", "add.s64 s3, {a0}, 6;"],
                            ["{a0}", "s1", "s2", "s3"], ["{b0}", "{b1}", "{b2}", "{b3}"], $first $($i)*;
                            a0 = in(reg64) a,
                            b0 = in(reg64) b,
                            b1 = in(reg64) b + $bstep,
                            b2 = in(reg64) b + 2 * $bstep,
                            b3 = in(reg64) b + 3 * $bstep,
                        )
                    } else if STEPS == Steps::B_INSIDE {
                        stage!(regs, $ptx, $k, $imm, $n,
                            [".reg .b64 s1, s2, s3;", "add.s64 s1, {b0}, {b1};", "add.s64 s2, {b0}, {b2};", "add.s64 s3, {b0}, {b3};"],
                            ["{a0}", "{a1}", "{a2}", "{a3}"], ["{b0}", "s1", "s2", "s3"], $first $($i)*;
                            a0 = in(reg64) a,
                            a1 = in(reg64) a + 2,
                            a2 = in(reg64) a + 4,
                            a3 = in(reg64) a + 6,
                            b0 = in(reg64) b,
                            b1 = const $bstep,
                            b2 = const 2 * $bstep,
                            b3 = const 3 * $bstep,
                        )
                    } else {
                        stage!(regs, $ptx, $k, $imm, $n,
                            [],
                            ["{a0}", "{a1}", "{a2}", "{a3}"], ["{b0}", "{b1}", "{b2}", "{b3}"], $first $($i)*;
                            a0 = in(reg64) a,
                            a1 = in(reg64) a + 2,
                            a2 = in(reg64) a + 4,
                            a3 = in(reg64) a + 6,
                            b0 = in(reg64) b,
                            b1 = in(reg64) b + $bstep,
                            b2 = in(reg64) b + 2 * $bstep,
                            b3 = in(reg64) b + 3 * $bstep,
                        )
                    }
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (regs, a, b);
            }
        }
    };
}

width!(64, 32, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
width!(128, 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
width!(256, 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

product!(bf16, KMajor, 2, "bf16", "k16", ", 1, 1, 0, 0", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(bf16, MnMajor, 128, "bf16", "k16", ", 1, 1, 0, 1", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(bf16, KMajor, 2, "bf16", "k16", ", 1, 1, 0, 0", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(bf16, MnMajor, 128, "bf16", "k16", ", 1, 1, 0, 1", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(bf16, KMajor, 2, "bf16", "k16", ", 1, 1, 0, 0", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);
product!(bf16, MnMajor, 128, "bf16", "k16", ", 1, 1, 0, 1", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);
product!(f16, KMajor, 2, "f16", "k16", ", 1, 1, 0, 0", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(f16, MnMajor, 128, "f16", "k16", ", 1, 1, 0, 1", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(f16, KMajor, 2, "f16", "k16", ", 1, 1, 0, 0", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(f16, MnMajor, 128, "f16", "k16", ", 1, 1, 0, 1", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(f16, KMajor, 2, "f16", "k16", ", 1, 1, 0, 0", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);
product!(f16, MnMajor, 128, "f16", "k16", ", 1, 1, 0, 1", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);
product!(F8E4M3FN, KMajor, 2, "e4m3", "k32", ", 1, 1", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(F8E4M3FN, KMajor, 2, "e4m3", "k32", ", 1, 1", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(F8E4M3FN, KMajor, 2, "e4m3", "k32", ", 1, 1", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);
product!(F8E5M2, KMajor, 2, "e5m2", "k32", ", 1, 1", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product!(F8E5M2, KMajor, 2, "e5m2", "k32", ", 1, 1", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product!(F8E5M2, KMajor, 2, "e5m2", "k32", ", 1, 1", 256, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

/// A warpgroup's `64 × N` accumulators of products of `T` ([`Cols`]`<N>` is `W`), with no
/// product running: the warpgroup may read them ([`Warpgroup::store`](super::Warpgroup::store))
/// or add products to them ([`Warpgroup::mma`](super::Warpgroup::mma)). Thread `t` of the
/// warpgroup (warp `w = t / 32`, lane `l = t % 32`) holds, for each 8-column group `j`,
/// element (`16 w + l / 4 + 8 h`, `8 j + 2 (l % 4) + e`) for `h`, `e` in `0..2`: per-thread
/// values, with no accessor, like a [`Varying`](crate::kernel::Varying).
pub struct Accumulators<T, W: Width> {
    pub(super) regs: W::Regs,
    kind: PhantomData<(T, *mut u8)>,
}

impl<T: WgmmaInput, W: Width> Accumulators<T, W> {
    /// All zero.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::of(W::zero())
    }

    /// The accumulators holding `f([i, j])` for each element `[i, j]` of the `64 × N`, each
    /// made by the thread of the warpgroup (`thread` in it) that holds it.
    #[inline(always)]
    pub(super) fn from_fn(thread: usize, f: impl Fn([usize; 2]) -> f32) -> Self {
        let mut regs = W::zero();
        let place = |i: usize| {
            let (warp, lane) = (thread / 32, thread % 32);
            let (j, h, e) = (i / 4, (i / 2) % 2, i % 2);
            [16 * warp + lane / 4 + 8 * h, 8 * j + 2 * (lane % 4) + e]
        };
        // Written out: indices known when the kernel is compiled keep the accumulators in
        // registers.
        crate::unroll!(16, |a| {
            crate::unroll!(8, |b| {
                let i = 8 * a + b;
                if i < W::N / 2 {
                    W::set(&mut regs, i, f(place(i)));
                }
            });
        });
        Self::of(regs)
    }

    #[inline(always)]
    pub(super) fn of(regs: W::Regs) -> Self {
        Accumulators {
            regs,
            kind: PhantomData,
        }
    }

    /// The element held in place `i` of this thread's, and its index in the warpgroup's
    /// `64 × N` (row, column).
    #[inline(always)]
    pub(super) fn held(&self, thread: usize, i: usize) -> ([usize; 2], f32) {
        let (warp, lane) = (thread / 32, thread % 32);
        let (j, h, e) = (i / 4, (i / 2) % 2, i % 2);
        (
            [16 * warp + lane / 4 + 8 * h, 8 * j + 2 * (lane % 4) + e],
            W::get(&self.regs, i),
        )
    }
}

/// [`Accumulators`] with one group of products running, which reads the stage it holds: no
/// safe code reads them until [`Warpgroup::wait`](super::Warpgroup::wait) has waited for the
/// group. Dropped instead, it waits for every group of the warpgroup, then releases the stage.
pub struct InFlight<'c, T, W: Width, const STAGES: usize, A: Operand, B: Operand> {
    pub(super) regs: W::Regs,
    pub(super) stage: core::mem::ManuallyDrop<Full<'c, STAGES, A, B>>,
    pub(super) kind: PhantomData<(T, *mut u8)>,
}

/// [`Accumulators`] with two groups of products running, the older reading stage `older`, the
/// younger `younger`: [`Warpgroup::wait`](super::Warpgroup::wait) waits for the older, which
/// releases its stage, and leaves the younger [`InFlight`]. Dropped instead, it waits for every
/// group of the warpgroup, then releases both stages.
pub struct InFlight2<'c, T, W: Width, const STAGES: usize, A: Operand, B: Operand> {
    pub(super) regs: W::Regs,
    pub(super) older: core::mem::ManuallyDrop<Full<'c, STAGES, A, B>>,
    pub(super) younger: core::mem::ManuallyDrop<Full<'c, STAGES, A, B>>,
    pub(super) kind: PhantomData<(T, *mut u8)>,
}

impl<T, W: Width, const STAGES: usize, A: Operand, B: Operand> Drop for InFlight<'_, T, W, STAGES, A, B> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: an `InFlight` lives in a consumer warpgroup's code, which all 128 threads
        // run together (`Block::specialise`), on sm_90a (it was made by a `wgmma`).
        unsafe { W::wait::<0>(&mut self.regs) };
        // SAFETY: dropped once, here; the products that read the stage are done (above).
        unsafe { core::mem::ManuallyDrop::drop(&mut self.stage) };
    }
}

impl<T, W: Width, const STAGES: usize, A: Operand, B: Operand> Drop for InFlight2<'_, T, W, STAGES, A, B> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: as for `InFlight`.
        unsafe { W::wait::<0>(&mut self.regs) };
        // SAFETY: dropped once, here; the products that read the stages are done (above).
        unsafe { core::mem::ManuallyDrop::drop(&mut self.older) };
        // SAFETY: as above.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.younger) };
    }
}

pub(super) mod issue {
    pub trait Sealed {}
}

/// What [`Warpgroup::mma`](super::Warpgroup::mma) adds a product to: [`Accumulators`] (which
/// it returns [`InFlight`]) or [`InFlight`] ([`InFlight2`]). The stage's tiles hold the
/// accumulators' input type, in the 128-byte swizzle.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot take a product of this stage",
    label = "at most two groups of products run at once",
    note = "`wait` for the oldest group (`Warpgroup::wait`) before the next `mma`"
)]
pub trait Issue<'c, const STAGES: usize, A: Operand, B: Operand>: issue::Sealed {
    /// The accumulators' width.
    type Width: Width;
    /// The accumulators with one more group running.
    type Next;
    /// The stage's tiles fit together: `B` holds `A`'s depth.
    #[doc(hidden)]
    const CHECK: ();
    /// Issues the products of one stage on the descriptor `a` of the warpgroup's `A` rows and
    /// the `B` tile at shared address `b`, holding `stage`.
    ///
    /// # Safety
    ///
    /// As [`Product::mma_row`], with `stage` the stage that `a` and `b` are in, `b` its `B`
    /// tile, 1024-aligned.
    #[doc(hidden)]
    unsafe fn issue(self, a: u64, b: u32, stage: Full<'c, STAGES, A, B>) -> Self::Next;
}

/// What [`Warpgroup::wait`](super::Warpgroup::wait) waits for: [`InFlight`] (which it returns
/// [`Accumulators`]), [`InFlight2`] ([`InFlight`]: the older group done),
/// [`Running`](super::Running) ([`Accumulators`]) or [`Behind`](super::Behind) (the older
/// products' accumulators, and the younger still running).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no group of products running",
    label = "`wait` takes running products: `InFlight` or `InFlight2` (from `mma`), `Running` or `Behind`",
    note = "accumulators with no product running are read as they are (`Warpgroup::store`)"
)]
pub trait Retire: issue::Sealed {
    /// What the wait gives back: accumulators whose products are done (and, for
    /// [`Behind`](super::Behind), the younger product still running).
    type Done;
    /// Waits for the groups the warpgroup reads next, and releases what they held.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, in converged code.
    #[doc(hidden)]
    unsafe fn retire(self) -> Self::Done;
}

impl<T, W: Width> issue::Sealed for Accumulators<T, W> {}
impl<T, W: Width, const STAGES: usize, A: Operand, B: Operand> issue::Sealed for InFlight<'_, T, W, STAGES, A, B> {}
impl<T, W: Width, const STAGES: usize, A: Operand, B: Operand> issue::Sealed for InFlight2<'_, T, W, STAGES, A, B> {}

/// Checks that the `B` tile holds the `A` tile's depth.
const fn same_depth<T, const N: usize, A: OperandA<T>, B: OperandB<T, N>>() {
    assert!(
        B::DEPTH == A::COLS,
        "the `B` tile of a stage holds the `A` tile's depth (`n × k` with rows of `k`, or `KByN` with `k` rows)"
    );
}

impl<'c, T, const N: usize, const STAGES: usize, A, B> Issue<'c, STAGES, A, B> for Accumulators<T, Cols<N>>
where
    Cols<N>: Width,
    T: Product<Cols<N>, B::Major>,
    A: OperandA<T>,
    B: OperandB<T, N>,
{
    type Width = Cols<N>;
    type Next = InFlight<'c, T, Cols<N>, STAGES, A, B>;
    const CHECK: () = same_depth::<T, N, A, B>();
    #[inline(always)]
    unsafe fn issue(mut self, a: u64, b: u32, stage: Full<'c, STAGES, A, B>) -> Self::Next {
        // SAFETY: as this function's contract, `B`'s descriptor of its layout.
        unsafe { T::mma_row(&mut self.regs, a, B::descriptor(b)) };
        InFlight {
            regs: self.regs,
            stage: core::mem::ManuallyDrop::new(stage),
            kind: PhantomData,
        }
    }
}

impl<'c, T, const N: usize, const STAGES: usize, A, B> Issue<'c, STAGES, A, B>
    for InFlight<'c, T, Cols<N>, STAGES, A, B>
where
    Cols<N>: Width,
    T: Product<Cols<N>, B::Major>,
    A: OperandA<T>,
    B: OperandB<T, N>,
{
    type Width = Cols<N>;
    type Next = InFlight2<'c, T, Cols<N>, STAGES, A, B>;
    const CHECK: () = same_depth::<T, N, A, B>();
    #[inline(always)]
    unsafe fn issue(self, a: u64, b: u32, stage: Full<'c, STAGES, A, B>) -> Self::Next {
        let this = core::mem::ManuallyDrop::new(self);
        let mut regs = this.regs;
        // SAFETY: as this function's contract, `B`'s descriptor of its layout: the running
        // group adds to the same accumulators, which `wgmma` allows (the fence orders the
        // products).
        unsafe { T::mma_row(&mut regs, a, B::descriptor(b)) };
        InFlight2 {
            regs,
            // SAFETY: `this` is not dropped (`ManuallyDrop`): its stage moves here once.
            older: unsafe { core::ptr::read(&this.stage) },
            younger: core::mem::ManuallyDrop::new(stage),
            kind: PhantomData,
        }
    }
}

impl<T: WgmmaInput, W: Width, const STAGES: usize, A: Operand, B: Operand> Retire for InFlight<'_, T, W, STAGES, A, B> {
    type Done = Accumulators<T, W>;
    #[inline(always)]
    unsafe fn retire(self) -> Accumulators<T, W> {
        let mut this = core::mem::ManuallyDrop::new(self);
        let mut regs = this.regs;
        // SAFETY: the warpgroup's threads together (caller); every group done after it.
        unsafe { W::wait::<0>(&mut regs) };
        // SAFETY: `this` is not dropped: its stage is dropped once, here, after the products
        // that read it.
        unsafe { core::mem::ManuallyDrop::drop(&mut this.stage) };
        Accumulators::of(regs)
    }
}

impl<'c, T, W: Width, const STAGES: usize, A: Operand, B: Operand> Retire for InFlight2<'c, T, W, STAGES, A, B> {
    type Done = InFlight<'c, T, W, STAGES, A, B>;
    #[inline(always)]
    unsafe fn retire(self) -> InFlight<'c, T, W, STAGES, A, B> {
        let mut this = core::mem::ManuallyDrop::new(self);
        let mut regs = this.regs;
        // SAFETY: the warpgroup's threads together (caller); every group but the most recent
        // is done after it, and the older group of these is not the most recent (the younger
        // was committed after it).
        unsafe { W::wait::<1>(&mut regs) };
        // SAFETY: `this` is not dropped: the older stage is dropped once, here, after the
        // products that read it.
        unsafe { core::mem::ManuallyDrop::drop(&mut this.older) };
        InFlight {
            regs,
            // SAFETY: `this` is not dropped: the younger stage moves here once.
            stage: unsafe { core::ptr::read(&this.younger) },
            kind: PhantomData,
        }
    }
}
