//! Products whose `A` operand is a warpgroup's accumulators, converted to the input type in
//! registers ([`Warpgroup::mma_acc`]): attention's backward pass multiplies the recomputed
//! probabilities `Pᵀ` by the output's gradient (`dV += Pᵀ · dO`) and the scores' gradient by
//! the keys or queries (`dQ += dS · K`, `dK += dSᵀ · Q`), each `A` made by the warpgroup
//! from accumulators it holds.

use super::accumulators::{Accumulators, Cols, Width};
use super::borrowed::{Held, ReadTile, held};
use super::operand::{MnMajor, OperandB};
use super::pipeline::Operand;
use super::products::{ProductRs, RsDepth, Running, frag::Frags};
use super::roles::Warpgroup;
use core::marker::PhantomData;

/// The registers of an `A` operand of depth `K` packed from accumulators, which a running
/// product reads, and what the product keeps of its `B` tile (`H`).
pub struct Converted<T, K: RsDepth, H> {
    a: <K as Frags>::Frag,
    held: H,
    kind: PhantomData<T>,
}

impl<T, K: RsDepth, H> held::Sealed for Converted<T, K, H> {}
impl<T: ProductRs<W, K>, K: RsDepth, W: Width, H: Held<W>> Held<W> for Converted<T, K, H> {
    #[inline(always)]
    unsafe fn wait<const PENDING: u32>(&mut self, regs: &mut W::Regs) {
        // SAFETY: the caller's contract.
        unsafe { T::wait_rs::<PENDING>(regs, &mut self.a) };
    }
    #[inline(always)]
    unsafe fn release(self) {
        // SAFETY: the caller's contract (the products that read the tile are done).
        unsafe { self.held.release() };
    }
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Starts `acc += a · b`: the warpgroup's accumulators `a` (`64 × K`, no product running:
    /// they were waited for), converted to `T` in registers (rounded to nearest even), times
    /// `b` (`K × D`, read MN-major: a [`KByN`](super::KByN) tile, or a landed tile lent
    /// [`by_n`](super::Landed::by_n)). `K` is 64 or 128. Returns the accumulators
    /// [`Running`]; [`wait`](Self::wait) gives them back.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn mma_acc<'h, T, V, const K: usize, const D: usize, B: ReadTile<'h, V>>(
        &mut self,
        acc: Accumulators<T, Cols<D>>,
        a: Accumulators<T, Cols<K>>,
        b: B,
    ) -> Running<'h, T, Cols<D>, Converted<T, Cols<K>, B::Held<Cols<D>>>>
    where
        Cols<D>: Width,
        Cols<K>: RsDepth,
        T: ProductRs<Cols<D>, Cols<K>>,
        V: OperandB<T, D, Major = MnMajor> + Operand,
    {
        self.mma_acc_kept::<T, V, K, D, B>(acc, &a, b)
    }

    /// [`mma_acc`](Self::mma_acc) with `a` lent, not given: the product reads its own copy,
    /// converted to `T` in registers, and the warpgroup may go on reading `a` (attention's
    /// backward pass starts `dV += Pᵀ · dO` and then computes `dSᵀ` from the same `Pᵀ`).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn mma_acc_kept<'h, T, V, const K: usize, const D: usize, B: ReadTile<'h, V>>(
        &mut self,
        acc: Accumulators<T, Cols<D>>,
        a: &Accumulators<T, Cols<K>>,
        b: B,
    ) -> Running<'h, T, Cols<D>, Converted<T, Cols<K>, B::Held<Cols<D>>>>
    where
        Cols<D>: Width,
        Cols<K>: RsDepth,
        T: ProductRs<Cols<D>, Cols<K>>,
        V: OperandB<T, D, Major = MnMajor> + Operand,
    {
        const {
            assert!(
                V::DEPTH == K,
                "the `B` tile of a product from accumulators holds as many rows as the accumulators have columns"
            );
        };
        #[cfg(target_arch = "nvptx64")]
        {
            let mut regs = acc.regs;
            // The thread's fragment of `a` as `wgmma`'s `A` registers: packed pairs along a row,
            // for step `s` of 16 columns rows `r`, `r + 8`, `r`, `r + 8` of columns
            // `16 s + 2 (l % 4)` and `+ 8`, which is the order the accumulators hold them.
            let mut frag = <Cols<K> as Frags>::frag();
            crate::unroll!(16, |i| {
                if i < K / 8 {
                    let x = |j: usize| <Cols<K> as Width>::get(&a.regs, j);
                    <Cols<K> as Frags>::set(&mut frag, 2 * i, T::pack(x(4 * i), x(4 * i + 1)));
                    <Cols<K> as Frags>::set(&mut frag, 2 * i + 1, T::pack(x(4 * i + 2), x(4 * i + 3)));
                }
            });
            // SAFETY: all 128 threads of the warpgroup, on sm_90a; `b` has landed, 1024-aligned,
            // `K × D` read MN-major through its descriptor (`V`'s); `frag` moves into the
            // result with what it keeps of `b`, and no code writes either until a wait sees the
            // products done.
            unsafe { T::mma_rs(&mut regs, &frag, V::descriptor(b.tile())) };
            Running::of(
                regs,
                Converted {
                    a: frag,
                    held: b.hold(),
                    kind: PhantomData,
                },
            )
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (acc, a, b);
            self.never()
        }
    }
}
