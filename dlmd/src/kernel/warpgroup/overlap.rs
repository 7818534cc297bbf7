//! A product issued behind others that are still running ([`Warpgroup::behind`], [`Behind`]),
//! so that the warpgroup reads the older products' accumulators while the younger runs on the
//! tensor cores: FlashAttention-3's overlap inside a warpgroup.

use super::accumulators::{Accumulators, Cols, Retire, Width, issue};
use super::borrowed::{Held, ReadTile};
use super::operand::{MnMajor, OperandB};
use super::packed::Converted;
use super::pipeline::Operand;
use super::products::{Fragment, ProductRs, RsDepth, Running};
use super::roles::Warpgroup;
use super::softmax::Probs;
use super::streams::Landed;

/// Products that another can be issued behind ([`Warpgroup::behind`]): one [`Running`]
/// product, or a pair of them (attention's backward pass runs the scores and their gradient
/// together).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a running product that another can be issued behind",
    label = "`behind` takes a `Running` product, or a pair of them",
    note = "a product from `mma_resident`, `mma_pv`, `mma_acc` or `mma_acc_kept`, not yet waited for"
)]
pub trait Older: issue::Sealed {
    /// The accumulators once done.
    type Done;
    /// Waits until at most one group of the warpgroup runs, and releases what the products
    /// held.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, in converged code; a group was
    /// committed after these products'.
    #[doc(hidden)]
    unsafe fn retire_behind(self) -> Self::Done;
}

impl<T: super::WgmmaInput, W: Width, H: Held<W>> Older for Running<'_, T, W, H> {
    type Done = Accumulators<T, W>;
    #[inline(always)]
    unsafe fn retire_behind(self) -> Accumulators<T, W> {
        // SAFETY: the caller's contract: one younger group at least.
        unsafe { self.finish::<1>() }
    }
}

impl<A: Older, B: Older> issue::Sealed for (A, B) {}
impl<A: Older, B: Older> Older for (A, B) {
    type Done = (A::Done, B::Done);
    #[inline(always)]
    unsafe fn retire_behind(self) -> (A::Done, B::Done) {
        let (a, b) = self;
        // SAFETY: the caller's contract, which covers both products.
        let a = unsafe { a.retire_behind() };
        // SAFETY: as above (the first wait already saw both done).
        let b = unsafe { b.retire_behind() };
        (a, b)
    }
}

/// The older products `X`, and the younger `Y` issued after them ([`Warpgroup::behind`]).
/// [`Warpgroup::wait`] waits for the older only: it returns their accumulators and `Y`, still
/// [`Running`]. Dropped instead, each waits for every group of the warpgroup, then releases
/// what it holds.
///
/// ```ignore
/// // Attention's queries' gradient: the next tile's scores and their gradient run first, this
/// // tile's `dQ += dS · K` behind them.
/// let s = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &q_rows, next.borrow());
/// let dp = wg.mma_resident::<T, _, _, 64, _>(Accumulators::zero(), &do_rows, consumer.second());
/// let both = wg.behind((s, dp)).mma_acc::<T, _, 64, D, _>(acc, ds, keys.by_n());
/// let ((s, dp), running) = wg.wait(both); // the next softmax runs while `dS · K` does
/// let p = wg.recompute_probs(s, &lse, scale_log2, &visible);
/// ds = wg.softmax_grad(&p, dp, &delta);
/// acc = wg.wait(running);
/// ```
///
/// The younger product's accumulators and `A` registers stay live beside the older ones' while
/// the warpgroup works on them: where that is more than `ptxas` keeps in registers, it spills,
/// and the overlap can cost more than it saves (measure).
///
/// # Why the wait is enough
///
/// `wgmma.wait_group 1` returns once at most one group of the warpgroup is running: the most
/// recently committed. A `Behind` is made only by [`Ahead`]'s methods, which take the older
/// products by value (so their groups were committed) and then issue the younger one, whose
/// last instruction commits a group: the older groups are not the most recent, so the wait sees
/// them done. Products issued later only make it wait longer. The younger product keeps what it
/// reads (its tile, the registers of its `A` operand) until a wait of its own.
#[must_use = "the older products' accumulators come back from `Warpgroup::wait`"]
pub struct Behind<X, Y> {
    older: X,
    younger: Y,
}

impl<X, Y> issue::Sealed for Behind<X, Y> {}

impl<X: Older, Y> Retire for Behind<X, Y> {
    type Done = (X::Done, Y);
    #[inline(always)]
    unsafe fn retire(self) -> (X::Done, Y) {
        let Behind { older, younger } = self;
        // SAFETY: the warpgroup's threads together (caller); `younger` committed a group after
        // `older`'s: a `Behind` is made only by `Ahead`'s methods, which issue it after taking
        // `older`, each ending in `ProductRs::mma_rs`, whose last instruction is
        // `wgmma.commit_group` (`Behind`'s docs).
        (unsafe { older.retire_behind() }, younger)
    }
}

/// Older products and the warpgroup that issues the next one behind them
/// ([`Warpgroup::behind`]): [`mma_pv`](Self::mma_pv), [`mma_acc`](Self::mma_acc) and
/// [`mma_acc_kept`](Self::mma_acc_kept), the warpgroup's products from registers, each
/// returning both [`Behind`].
#[must_use = "`behind` issues nothing: call `mma_pv`, `mma_acc` or `mma_acc_kept` on it"]
pub struct Ahead<'w, 'c, const THREADS: usize, X> {
    wg: &'w mut Warpgroup<'c, THREADS>,
    older: X,
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// The next product is issued behind `older`, which is still running: the warpgroup can
    /// then wait for `older` alone and read its accumulators while the next product runs
    /// ([`Behind`], whose docs show the loop and say why the wait is enough).
    #[inline(always)]
    pub fn behind<X: Older>(&mut self, older: X) -> Ahead<'_, 'c, THREADS, X> {
        Ahead { wg: self, older }
    }
}

// Each method here issues exactly one product ending in `wgmma.commit_group` after taking the
// older products (through `then`): what `Behind::retire`'s wait relies on.
impl<'c, const THREADS: usize, X: Older> Ahead<'_, 'c, THREADS, X> {
    /// [`Warpgroup::mma_pv`] behind the older products.
    #[inline(always)]
    pub fn mma_pv<T, V, const D: usize>(
        self,
        o: Accumulators<T, Cols<D>>,
        p: Probs<'c, T>,
        v: Landed<'c, V>,
    ) -> Behind<X, Running<'static, T, Cols<D>, Fragment<'c, T, V>>>
    where
        Cols<D>: Width,
        T: ProductRs<Cols<D>>,
        V: OperandB<T, D, Major = MnMajor>,
    {
        self.then(|wg| wg.mma_pv(o, p, v))
    }

    /// [`Warpgroup::mma_acc`] behind the older products.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn mma_acc<'h, T, V, const K: usize, const D: usize, B: ReadTile<'h, V>>(
        self,
        acc: Accumulators<T, Cols<D>>,
        a: Accumulators<T, Cols<K>>,
        b: B,
    ) -> Behind<X, Running<'h, T, Cols<D>, Converted<T, Cols<K>, B::Held<Cols<D>>>>>
    where
        Cols<D>: Width,
        Cols<K>: RsDepth,
        T: ProductRs<Cols<D>, Cols<K>>,
        V: OperandB<T, D, Major = MnMajor> + Operand,
    {
        self.mma_acc_kept::<T, V, K, D, B>(acc, &a, b)
    }

    /// [`Warpgroup::mma_acc_kept`] behind the older products.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn mma_acc_kept<'h, T, V, const K: usize, const D: usize, B: ReadTile<'h, V>>(
        self,
        acc: Accumulators<T, Cols<D>>,
        a: &Accumulators<T, Cols<K>>,
        b: B,
    ) -> Behind<X, Running<'h, T, Cols<D>, Converted<T, Cols<K>, B::Held<Cols<D>>>>>
    where
        Cols<D>: Width,
        Cols<K>: RsDepth,
        T: ProductRs<Cols<D>, Cols<K>>,
        V: OperandB<T, D, Major = MnMajor> + Operand,
    {
        self.then(|wg| wg.mma_acc_kept::<T, V, K, D, B>(acc, a, b))
    }

    /// The older products and the one `issue` starts behind them. Private: each caller's
    /// `issue` is exactly one product of the warpgroup, ending in `wgmma.commit_group`.
    #[inline(always)]
    fn then<Y>(self, issue: impl FnOnce(&mut Warpgroup<'c, THREADS>) -> Y) -> Behind<X, Y> {
        let younger = issue(self.wg);
        Behind {
            older: self.older,
            younger,
        }
    }
}
