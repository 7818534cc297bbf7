//! The products of attention's two matrix multiplications: `S = Q · Kᵀ` with `Q` a resident
//! tile ([`Warpgroup::mma_resident`]), and `O += P · V` with `P` in registers, the softmax's
//! probabilities converted to the input type ([`Warpgroup::mma_pv`], `wgmma` with its `A`
//! operand in registers), each returned [`Running`] until a wait has seen it done.

use super::accumulators::{Accumulators, Cols, Product, Retire, Width};
use super::borrowed::{Held, ReadTile, held};
use super::operand::{KMajor, MnMajor, MnMajorInput, OperandA, OperandB};
use super::pipeline::Operand;
use super::roles::{ROWS, Warpgroup};
use super::softmax::Probs;
use super::streams::Landed;
use core::marker::PhantomData;
use half::{bf16, f16};

/// The depth of a `wgmma` whose `A` operand is in registers: [`Cols`]`<128>` (eight products of
/// `k = 16`, 32 registers of packed pairs a thread) or `Cols<64>` (four, 16 registers), the
/// columns of the accumulators the fragment was made from.
#[doc(hidden)]
pub trait RsDepth: Width + frag::Frags {}

pub(super) mod frag {
    /// A thread's fragment of a `64 × K` `A` operand, out of safe code's reach.
    pub trait Frags {
        /// A thread's fragment: two elements a register.
        type Frag: Copy;
        /// All zero.
        fn frag() -> Self::Frag;
        /// Sets register `i` of a thread's fragment (`i` below `K / 4`).
        fn set(frag: &mut Self::Frag, i: usize, value: u32);
    }
}

impl RsDepth for Cols<64> {}
impl RsDepth for Cols<128> {}

impl frag::Frags for Cols<64> {
    type Frag = [u32; 16];
    #[inline(always)]
    fn frag() -> [u32; 16] {
        [0; 16]
    }
    #[inline(always)]
    fn set(frag: &mut [u32; 16], i: usize, value: u32) {
        frag[i] = value;
    }
}

impl frag::Frags for Cols<128> {
    type Frag = [u32; 32];
    #[inline(always)]
    fn frag() -> [u32; 32] {
        [0; 32]
    }
    #[inline(always)]
    fn set(frag: &mut [u32; 32], i: usize, value: u32) {
        frag[i] = value;
    }
}

/// The `wgmma` of input `Self` into accumulators of width `W` with its `A` operand in
/// registers (`64 × K` a warpgroup, `K` of [`RsDepth`]: `P` of 128 keys in the forward pass)
/// and its `B` operand MN-major in shared memory (`K × N`: `V`).
///
/// # Safety
///
/// [`mma_rs`](Self::mma_rs) and [`wait_rs`](Self::wait_rs) issue what their contracts say,
/// and nothing else; [`pack`](Self::pack) converts as it says.
#[doc(hidden)]
pub unsafe trait ProductRs<W: Width, K: RsDepth = Cols<128>>: MnMajorInput {
    /// `lo` and `hi` converted to `Self` (rounded to nearest even), `lo` in the low half: two
    /// neighbours of a row of an `A` fragment.
    #[cfg(target_arch = "nvptx64")]
    fn pack(lo: f32, hi: f32) -> u32;

    /// `wgmma.fence`, then `K / 16` `wgmma.mma_async` of `k = 16` (`regs += a · b`, the `s`-th
    /// with registers `a[4 s .. 4 s + 4]` and `b`'s descriptor advanced by `128 s`: 16 rows of
    /// the MN-major layout), then `wgmma.commit_group`.
    ///
    /// # Safety
    ///
    /// As [`Product::mma_row`] (all 128 threads of a warpgroup, converged, `sm_90a`; `regs`
    /// read or written by nothing else until a wait), for `b` read MN-major, `K` rows; `a`
    /// holds the thread's fragment of the `64 × K` `A`, which nothing writes until a wait says
    /// the group is done ([`wait_rs`](Self::wait_rs) on the same registers).
    unsafe fn mma_rs(regs: &mut W::Regs, a: &<K as frag::Frags>::Frag, b: u64);

    /// `wgmma.wait_group PENDING`, the accumulators and the fragment passed through it, so
    /// that no read or write of them moves above it.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, in converged code, on `sm_90a`;
    /// at least `PENDING` groups were committed after the one that writes `regs` and reads
    /// `a`, so that the wait sees it done (the registers of groups still running are touched
    /// only after a wait of their own).
    unsafe fn wait_rs<const PENDING: u32>(regs: &mut W::Regs, a: &mut <K as frag::Frags>::Frag);
}

#[cfg(target_arch = "nvptx64")]
/// One `wgmma` of [`ProductRs::mma_rs`]: accumulators `$n` columns wide, fragment registers
/// `$a`, descriptor `$b`.
macro_rules! rs_step {
    ($n:literal, $ptx:literal, $a:literal, $b:literal, $first:literal $($i:literal)*) => {
        concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ptx, ".", $ptx, " {{{", $first, "}",
                $(", {", $i, "}",)* "}}, {{", $a, "}}, ", $b, ", p, 1, 1, 1;")
    };
}

macro_rules! product_rs {
    ($t:ty, $ptx:literal, $n:literal, $first:literal $($i:literal)*) => {
        // SAFETY: `pack` is `cvt.rn` to the type, `hi` in the upper half; `mma_rs` and
        // `wait_rs` are the instructions their contracts name, on the registers named.
        unsafe impl ProductRs<Cols<$n>, Cols<128>> for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn pack(lo: f32, hi: f32) -> u32 {
                let out: u32;
                // SAFETY: a register-to-register instruction with no precondition.
                unsafe {
                    core::arch::asm!(
                        concat!("cvt.rn.", $ptx, "x2.f32 {out}, {hi}, {lo};"),
                        out = out(reg32) out,
                        hi = in(reg32) hi,
                        lo = in(reg32) lo,
                        options(pure, nomem, nostack),
                    )
                };
                out
            }

            #[inline(always)]
            unsafe fn mma_rs(regs: &mut <Cols<$n> as Width>::Regs, a: &[u32; 32], b: u64) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract.
                unsafe {
                    core::arch::asm!(
                        "{{",
                        ".reg .pred p;",
                        "setp.ne.b32 p, {one}, 0;",
                        "wgmma.fence.sync.aligned;",
                        rs_step!($n, $ptx, "{a0}, {a1}, {a2}, {a3}", "{b0}", $first $($i)*),
                        rs_step!($n, $ptx, "{a4}, {a5}, {a6}, {a7}", "{b1}", $first $($i)*),
                        rs_step!($n, $ptx, "{a8}, {a9}, {a10}, {a11}", "{b2}", $first $($i)*),
                        rs_step!($n, $ptx, "{a12}, {a13}, {a14}, {a15}", "{b3}", $first $($i)*),
                        rs_step!($n, $ptx, "{a16}, {a17}, {a18}, {a19}", "{b4}", $first $($i)*),
                        rs_step!($n, $ptx, "{a20}, {a21}, {a22}, {a23}", "{b5}", $first $($i)*),
                        rs_step!($n, $ptx, "{a24}, {a25}, {a26}, {a27}", "{b6}", $first $($i)*),
                        rs_step!($n, $ptx, "{a28}, {a29}, {a30}, {a31}", "{b7}", $first $($i)*),
                        "wgmma.commit_group.sync.aligned;",
                        "}}",
                        inout(reg32) regs[$first],
                        $(inout(reg32) regs[$i],)*
                        one = in(reg32) 1u32,
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        a4 = in(reg32) a[4], a5 = in(reg32) a[5], a6 = in(reg32) a[6], a7 = in(reg32) a[7],
                        a8 = in(reg32) a[8], a9 = in(reg32) a[9], a10 = in(reg32) a[10], a11 = in(reg32) a[11],
                        a12 = in(reg32) a[12], a13 = in(reg32) a[13], a14 = in(reg32) a[14], a15 = in(reg32) a[15],
                        a16 = in(reg32) a[16], a17 = in(reg32) a[17], a18 = in(reg32) a[18], a19 = in(reg32) a[19],
                        a20 = in(reg32) a[20], a21 = in(reg32) a[21], a22 = in(reg32) a[22], a23 = in(reg32) a[23],
                        a24 = in(reg32) a[24], a25 = in(reg32) a[25], a26 = in(reg32) a[26], a27 = in(reg32) a[27],
                        a28 = in(reg32) a[28], a29 = in(reg32) a[29], a30 = in(reg32) a[30], a31 = in(reg32) a[31],
                        b0 = in(reg64) b,
                        b1 = in(reg64) b + 128,
                        b2 = in(reg64) b + 2 * 128,
                        b3 = in(reg64) b + 3 * 128,
                        b4 = in(reg64) b + 4 * 128,
                        b5 = in(reg64) b + 5 * 128,
                        b6 = in(reg64) b + 6 * 128,
                        b7 = in(reg64) b + 7 * 128,
                        options(nostack),
                    )
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (regs, a, b);
            }

            #[inline(always)]
            unsafe fn wait_rs<const PENDING: u32>(regs: &mut <Cols<$n> as Width>::Regs, a: &mut [u32; 32]) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract; the registers are only named.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.wait_group.sync.aligned {n}; // {", $first, "}", $(" {", $i, "}",)*
                                " {a0} {a1} {a2} {a3} {a4} {a5} {a6} {a7} {a8} {a9} {a10} {a11} {a12} {a13} {a14} {a15}",
                                " {a16} {a17} {a18} {a19} {a20} {a21} {a22} {a23} {a24} {a25} {a26} {a27} {a28} {a29} {a30} {a31}"),
                        inout(reg32) regs[$first],
                        $(inout(reg32) regs[$i],)*
                        a0 = inout(reg32) a[0], a1 = inout(reg32) a[1], a2 = inout(reg32) a[2], a3 = inout(reg32) a[3],
                        a4 = inout(reg32) a[4], a5 = inout(reg32) a[5], a6 = inout(reg32) a[6], a7 = inout(reg32) a[7],
                        a8 = inout(reg32) a[8], a9 = inout(reg32) a[9], a10 = inout(reg32) a[10], a11 = inout(reg32) a[11],
                        a12 = inout(reg32) a[12], a13 = inout(reg32) a[13], a14 = inout(reg32) a[14], a15 = inout(reg32) a[15],
                        a16 = inout(reg32) a[16], a17 = inout(reg32) a[17], a18 = inout(reg32) a[18], a19 = inout(reg32) a[19],
                        a20 = inout(reg32) a[20], a21 = inout(reg32) a[21], a22 = inout(reg32) a[22], a23 = inout(reg32) a[23],
                        a24 = inout(reg32) a[24], a25 = inout(reg32) a[25], a26 = inout(reg32) a[26], a27 = inout(reg32) a[27],
                        a28 = inout(reg32) a[28], a29 = inout(reg32) a[29], a30 = inout(reg32) a[30], a31 = inout(reg32) a[31],
                        n = const PENDING,
                        options(nostack),
                    )
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (regs, a);
            }
        }
    };
}

macro_rules! product_rs_64 {
    ($t:ty, $ptx:literal, $n:literal, $first:literal $($i:literal)*) => {
        // SAFETY: `pack` is `cvt.rn` to the type, `hi` in the upper half; `mma_rs` and
        // `wait_rs` are the instructions their contracts name, on the registers named.
        unsafe impl ProductRs<Cols<$n>, Cols<64>> for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn pack(lo: f32, hi: f32) -> u32 {
                let out: u32;
                // SAFETY: a register-to-register instruction with no precondition.
                unsafe {
                    core::arch::asm!(
                        concat!("cvt.rn.", $ptx, "x2.f32 {out}, {hi}, {lo};"),
                        out = out(reg32) out,
                        hi = in(reg32) hi,
                        lo = in(reg32) lo,
                        options(pure, nomem, nostack),
                    )
                };
                out
            }

            #[inline(always)]
            unsafe fn mma_rs(regs: &mut <Cols<$n> as Width>::Regs, a: &[u32; 16], b: u64) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract.
                unsafe {
                    core::arch::asm!(
                        "{{",
                        ".reg .pred p;",
                        "setp.ne.b32 p, {one}, 0;",
                        "wgmma.fence.sync.aligned;",
                        rs_step!($n, $ptx, "{a0}, {a1}, {a2}, {a3}", "{b0}", $first $($i)*),
                        rs_step!($n, $ptx, "{a4}, {a5}, {a6}, {a7}", "{b1}", $first $($i)*),
                        rs_step!($n, $ptx, "{a8}, {a9}, {a10}, {a11}", "{b2}", $first $($i)*),
                        rs_step!($n, $ptx, "{a12}, {a13}, {a14}, {a15}", "{b3}", $first $($i)*),
                        "wgmma.commit_group.sync.aligned;",
                        "}}",
                        inout(reg32) regs[$first],
                        $(inout(reg32) regs[$i],)*
                        one = in(reg32) 1u32,
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        a4 = in(reg32) a[4], a5 = in(reg32) a[5], a6 = in(reg32) a[6], a7 = in(reg32) a[7],
                        a8 = in(reg32) a[8], a9 = in(reg32) a[9], a10 = in(reg32) a[10], a11 = in(reg32) a[11],
                        a12 = in(reg32) a[12], a13 = in(reg32) a[13], a14 = in(reg32) a[14], a15 = in(reg32) a[15],
                        b0 = in(reg64) b,
                        b1 = in(reg64) b + 128,
                        b2 = in(reg64) b + 2 * 128,
                        b3 = in(reg64) b + 3 * 128,
                        options(nostack),
                    )
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (regs, a, b);
            }

            #[inline(always)]
            unsafe fn wait_rs<const PENDING: u32>(regs: &mut <Cols<$n> as Width>::Regs, a: &mut [u32; 16]) {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: as this function's contract; the registers are only named.
                unsafe {
                    core::arch::asm!(
                        concat!("wgmma.wait_group.sync.aligned {n}; // {", $first, "}", $(" {", $i, "}",)*
                                " {a0} {a1} {a2} {a3} {a4} {a5} {a6} {a7} {a8} {a9} {a10} {a11} {a12} {a13} {a14} {a15}",),
                        inout(reg32) regs[$first],
                        $(inout(reg32) regs[$i],)*
                        a0 = inout(reg32) a[0], a1 = inout(reg32) a[1], a2 = inout(reg32) a[2], a3 = inout(reg32) a[3],
                        a4 = inout(reg32) a[4], a5 = inout(reg32) a[5], a6 = inout(reg32) a[6], a7 = inout(reg32) a[7],
                        a8 = inout(reg32) a[8], a9 = inout(reg32) a[9], a10 = inout(reg32) a[10], a11 = inout(reg32) a[11],
                        a12 = inout(reg32) a[12], a13 = inout(reg32) a[13], a14 = inout(reg32) a[14], a15 = inout(reg32) a[15],
                        n = const PENDING,
                        options(nostack),
                    )
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (regs, a);
            }
        }
    };
}

product_rs!(bf16, "bf16", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product_rs!(bf16, "bf16", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product_rs!(f16, "f16", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product_rs!(f16, "f16", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product_rs_64!(bf16, "bf16", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product_rs_64!(bf16, "bf16", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
product_rs_64!(f16, "f16", 64, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
product_rs_64!(f16, "f16", 128, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

/// Accumulators with a group of products running that reads `H` (the tiles it holds) and,
/// for `'h`, a resident tile it borrows: no safe code reads them until
/// [`Warpgroup::wait`] has waited for the group, which releases `H`. Dropped instead, it
/// waits for every group of the warpgroup, then releases `H`.
pub struct Running<'h, T, W: Width, H: Held<W>> {
    regs: W::Regs,
    held: core::mem::ManuallyDrop<H>,
    kind: PhantomData<(&'h (), T, *mut u8)>,
}

impl<T, W: Width, H: Held<W>> Running<'_, T, W, H> {
    /// Accumulators with a group running that reads what `held` keeps.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn of(regs: W::Regs, held: H) -> Self {
        Running {
            regs,
            held: core::mem::ManuallyDrop::new(held),
            kind: PhantomData,
        }
    }
}

/// The registers of `P`, `64 × 128` of a warpgroup packed two a register, which a running
/// `O += P · V` reads, and the `V` tile it reads with them.
pub struct Fragment<'c, T, V: Operand> {
    a: [u32; 32],
    v: Landed<'c, V>,
    kind: PhantomData<T>,
}

impl<T, V: Operand> held::Sealed for Fragment<'_, T, V> {}
impl<T: ProductRs<W>, V: Operand, W: Width> Held<W> for Fragment<'_, T, V> {
    #[inline(always)]
    unsafe fn wait<const PENDING: u32>(&mut self, regs: &mut W::Regs) {
        // SAFETY: the caller's contract.
        unsafe { T::wait_rs::<PENDING>(regs, &mut self.a) };
    }
    #[inline(always)]
    unsafe fn release(self) {
        // SAFETY: the caller's contract.
        unsafe { Landed::release(self.v) };
    }
}

impl<T, W: Width, H: Held<W>> Drop for Running<'_, T, W, H> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: a `Running` lives in a consumer warpgroup's code, which all 128 threads run
        // together, on sm_90a (it was made by a `wgmma`).
        unsafe { self.held.wait::<0>(&mut self.regs) };
        // SAFETY: dropped once, here; the products that read it are done (above). (Its
        // `Landed` drop waits again, at no cost: nothing runs.)
        unsafe { core::mem::ManuallyDrop::drop(&mut self.held) };
    }
}

impl<T, W: Width, H: Held<W>> super::accumulators::issue::Sealed for Running<'_, T, W, H> {}

impl<T: super::WgmmaInput, W: Width, H: Held<W>> Running<'_, T, W, H> {
    /// Waits until at most `PENDING` groups of the warpgroup run, releases what the products
    /// held, and returns the accumulators.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, in converged code; at least
    /// `PENDING` groups were committed after this product's, so the wait sees it done.
    #[inline(always)]
    pub(super) unsafe fn finish<const PENDING: u32>(self) -> Accumulators<T, W> {
        let mut this = core::mem::ManuallyDrop::new(self);
        let mut regs = this.regs;
        // SAFETY: the warpgroup's threads together (caller); this product's groups are done
        // after it (caller: `PENDING` younger groups at least).
        unsafe { this.held.wait::<PENDING>(&mut regs) };
        // SAFETY: `this` is not dropped: what it holds is taken once, here, and released
        // after the products that read it.
        let held = unsafe { core::mem::ManuallyDrop::take(&mut this.held) };
        // SAFETY: as above.
        unsafe { held.release() };
        Accumulators::of(regs)
    }
}

impl<T: super::WgmmaInput, W: Width, H: Held<W>> Retire for Running<'_, T, W, H> {
    type Done = Accumulators<T, W>;
    #[inline(always)]
    unsafe fn retire(self) -> Accumulators<T, W> {
        // SAFETY: the warpgroup's threads together (caller); every group is done after a wait
        // with none pending.
        unsafe { self.finish::<0>() }
    }
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Starts `acc += a · bᵀ` over the whole depth of the resident tile `a`: the warpgroup's 64
    /// rows of `a` (`64 · consumers × D`, K-major, borrowed until the product is done) times the
    /// streamed `b` (`N × D`, K-major), `D` of one or more 128-byte panels: attention's scores
    /// `S = Q · Kᵀ` for a tile of `N` keys. `b` is a [`Landed`] tile, which the product holds
    /// and releases when done, or one [`Borrowed`](super::Borrowed) from its holder
    /// ([`Landed::borrow`]) to be read again by a later product. Returns the accumulators
    /// [`Running`]; [`wait`](Self::wait) gives them back.
    #[inline(always)]
    pub fn mma_resident<'h, T, R, K, const N: usize, B: ReadTile<'h, K>>(
        &mut self,
        acc: Accumulators<T, Cols<N>>,
        a: &'h Landed<'c, R>,
        b: B,
    ) -> Running<'h, T, Cols<N>, B::Held<Cols<N>>>
    where
        Cols<N>: Width,
        T: Product<Cols<N>, KMajor>,
        R: OperandA<T>,
        K: OperandB<T, N, Major = KMajor>,
    {
        const {
            assert!(
                R::ROWS == ROWS * (THREADS / 128 - 1),
                "the resident `A` tile holds 64 rows for each consumer warpgroup"
            );
            assert!(
                K::ROWS == N && K::COLS == R::COLS,
                "the streamed `B` tile holds `N` rows of the resident tile's depth"
            );
            assert!(
                (R::COLS * size_of::<R::Element>()).is_multiple_of(128),
                "the resident tile's depth is whole 128-byte swizzled rows"
            );
        };
        let mut regs = acc.regs;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::accumulators::Steps;
            use super::raw::descriptor_128;
            let panels = R::COLS * size_of::<R::Element>() / 128;
            for p in 0..panels {
                let a_at = a.tile + (p * R::ROWS * 128 + self.index * ROWS * 128) as u32;
                let b_at = b.tile() + (p * N * 128) as u32;
                let descriptors = (descriptor_128(a_at), K::descriptor(b_at));
                // The form of the stage's code (the products are the same), the faster one as
                // measured on attention's products (H200, `benchmarks/2026-12-01-steps.md`):
                // where the resident tile has several panels, its later steps' descriptors are
                // made inside the `asm!` (so, presumably, its panels' need not stay live over the
                // kernel's loop); with one panel, the streamed tile's are.
                if panels > 1 {
                    // SAFETY: all 128 threads of the warpgroup (the consumer's code, uniform in
                    // it), on sm_90a; both tiles have landed (`Landed`, through the async proxy,
                    // as `wgmma` reads), 1024-aligned, in the 128-byte swizzle as their types say
                    // (panel `p` of `a`: `R::ROWS` rows of 128 bytes, the warpgroup's 64 inside
                    // them (checked above); panel `p` of `b`: `N` rows); `b` is held and `a`
                    // borrowed by the result until a wait sees these products done.
                    unsafe { T::mma_steps::<{ Steps::A_INSIDE }>(&mut regs, descriptors.0, descriptors.1) }
                } else {
                    // SAFETY: as in the other branch (the same products, in another form).
                    unsafe { T::mma_steps::<{ Steps::B_INSIDE }>(&mut regs, descriptors.0, descriptors.1) }
                }
            }
        }
        #[cfg(target_arch = "nvptx64")]
        {
            Running {
                regs,
                held: core::mem::ManuallyDrop::new(b.hold()),
                kind: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (&mut regs, a, b);
            self.never()
        }
    }

    /// Starts `o = o · c + P · v`: the accumulators `o` rescaled row by row by the softmax's
    /// correction `c` of this step, then the products of its probabilities `P` (`64 × 128`,
    /// converted to `T` in registers) with the streamed `v` (`128 × D`, read MN-major, held):
    /// the second product of an attention step. Returns the accumulators [`Running`].
    #[inline(always)]
    pub fn mma_pv<T, V, const D: usize>(
        &mut self,
        o: Accumulators<T, Cols<D>>,
        p: Probs<'c, T>,
        v: Landed<'c, V>,
    ) -> Running<'static, T, Cols<D>, Fragment<'c, T, V>>
    where
        Cols<D>: Width,
        T: ProductRs<Cols<D>>,
        V: OperandB<T, D, Major = MnMajor>,
    {
        const {
            assert!(
                V::DEPTH == 128,
                "the `V` tile holds the 128 keys of the probabilities' tile"
            );
        };
        #[cfg(target_arch = "nvptx64")]
        {
            let mut regs = o.regs;
            // The thread's fragment of `P` as `wgmma`'s `A` registers: packed pairs along a row,
            // for step `s` of 16 keys rows `r`, `r + 8`, `r`, `r + 8` of columns
            // `16 s + 2 (l % 4)` and `+ 8`, which is the order the scores' accumulators hold them.
            let mut a = [0u32; 32];
            crate::unroll!(16, |i| {
                a[2 * i] = T::pack(p.p[4 * i], p.p[4 * i + 1]);
                a[2 * i + 1] = T::pack(p.p[4 * i + 2], p.p[4 * i + 3]);
            });
            let correction = p.correction;
            crate::unroll!(16, |ga| {
                crate::unroll!(8, |gb| {
                    let i = 8 * ga + gb;
                    if i < D / 2 {
                        let x = <Cols<D> as Width>::get(&regs, i);
                        <Cols<D> as Width>::set(&mut regs, i, x * correction[(i / 2) % 2]);
                    }
                });
            });
            // SAFETY: all 128 threads of the warpgroup, on sm_90a; `v` has landed, 1024-aligned,
            // `128 × D` read MN-major through its descriptor (panels of 128 rows); `a` moves into
            // the result with `v`, and no code writes either until a wait sees the products done.
            unsafe { T::mma_rs(&mut regs, &a, V::descriptor(v.tile)) };
            Running {
                regs,
                held: core::mem::ManuallyDrop::new(Fragment {
                    a,
                    v,
                    kind: PhantomData,
                }),
                kind: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (o, p, v);
            self.never()
        }
    }
}
