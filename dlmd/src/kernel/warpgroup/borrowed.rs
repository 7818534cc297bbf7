//! What a running product holds ([`Held`]), and a landed tile read by more than one product:
//! [`Landed::borrow`] lends it to products as it is,
//! [`Landed::by_n`] as a [`KByN`] tile (the same memory read MN-major), and a product that
//! borrows a tile ([`Borrowed`]) leaves it to its holder, which releases it once every product
//! that borrowed it is done. Attention's backward pass reads each streamed tile twice: keys as
//! `Kᵀ` in the scores and as `K` in the queries' gradient.

use super::accumulators::Width;
use super::operand::KByN;
use super::pipeline::Operand;
use super::streams::Landed;
use core::marker::PhantomData;

/// A landed tile lent to products for `'h` (the borrow of its [`Landed`] handle), read as
/// `K`: the tile's own type ([`Landed::borrow`]) or [`KByN`] of it ([`Landed::by_n`]). The
/// handle cannot be dropped, so the tile cannot be released, while a product that borrowed it
/// is [`Running`](super::Running).
pub struct Borrowed<'h, K> {
    pub(super) tile: u32,
    kind: PhantomData<(&'h (), K, *mut u8)>,
}

impl<'c, S: Operand> Landed<'c, S> {
    /// The tile lent to products as it is, for as long as the borrow.
    #[inline(always)]
    pub fn borrow(&self) -> Borrowed<'_, S> {
        Borrowed {
            tile: self.tile,
            kind: PhantomData,
        }
    }

    /// The tile lent to products as a [`KByN`] tile: its rows the products' depth, read
    /// MN-major (`K` of the queries' gradient `dQ = dS · K`, where the scores read it K-major).
    #[inline(always)]
    pub fn by_n(&self) -> Borrowed<'_, KByN<S>> {
        Borrowed {
            tile: self.tile,
            kind: PhantomData,
        }
    }
}

mod read {
    pub trait Sealed {}
}

/// The streamed tile of a product: a [`Landed`] tile, which the product holds and releases
/// once a wait has seen it done, or a [`Borrowed`] one, which its holder releases.
pub trait ReadTile<'h, K: Operand>: read::Sealed {
    /// What the running product keeps: the tile, or the borrow.
    type Held<W: Width>: Held<W>;
    /// The tile's shared-state-space address.
    #[doc(hidden)]
    fn tile(&self) -> u32;
    /// Into what the running product keeps.
    #[doc(hidden)]
    fn hold<W: Width>(self) -> Self::Held<W>;
}

impl<K: Operand> read::Sealed for Landed<'_, K> {}
impl<'h, 'c: 'h, K: Operand> ReadTile<'h, K> for Landed<'c, K> {
    type Held<W: Width> = Landed<'c, K>;
    #[inline(always)]
    fn tile(&self) -> u32 {
        self.tile
    }
    #[inline(always)]
    fn hold<W: Width>(self) -> Landed<'c, K> {
        self
    }
}

impl<K> read::Sealed for Borrowed<'_, K> {}
impl<'h, K: Operand> ReadTile<'h, K> for Borrowed<'h, K> {
    type Held<W: Width> = Borrowed<'h, K>;
    #[inline(always)]
    fn tile(&self) -> u32 {
        self.tile
    }
    #[inline(always)]
    fn hold<W: Width>(self) -> Borrowed<'h, K> {
        self
    }
}

impl<K> held::Sealed for Borrowed<'_, K> {}
impl<K, W: Width> Held<W> for Borrowed<'_, K> {
    #[inline(always)]
    unsafe fn wait<const PENDING: u32>(&mut self, regs: &mut W::Regs) {
        // SAFETY: the caller's contract.
        unsafe { W::wait::<PENDING>(regs) };
    }
    #[inline(always)]
    unsafe fn release(self) {
        // The holder releases the tile, once its borrows (this one) are over.
    }
}

pub(super) mod held {
    pub trait Sealed {}
}

/// What a [`Running`](super::Running) product of accumulators of width `W` holds until it is done: the
/// streamed tile it reads ([`Landed`]) and, for `O += P · V`, the registers of `P`
/// ([`Fragment`](super::Fragment)).
pub trait Held<W: Width>: held::Sealed {
    /// Waits until at most `PENDING` groups of the warpgroup are running (`wgmma.wait_group
    /// PENDING`), the fragment (if any) and `regs` named.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, in converged code, on `sm_90a`;
    /// at least `PENDING` groups were committed after the ones that write `regs` and read the
    /// fragment, so that the wait sees those done (the registers of groups still running are
    /// touched only after a wait of their own).
    #[doc(hidden)]
    unsafe fn wait<const PENDING: u32>(&mut self, regs: &mut W::Regs);
    /// Releases what it holds.
    ///
    /// # Safety
    ///
    /// Called by all 128 threads of the warpgroup together, once no product reads it.
    #[doc(hidden)]
    unsafe fn release(self);
}

impl<T: Operand> held::Sealed for Landed<'_, T> {}
impl<V: Operand, W: Width> Held<W> for Landed<'_, V> {
    #[inline(always)]
    unsafe fn wait<const PENDING: u32>(&mut self, regs: &mut W::Regs) {
        // SAFETY: the caller's contract.
        unsafe { W::wait::<PENDING>(regs) };
    }
    #[inline(always)]
    unsafe fn release(self) {
        // SAFETY: the caller's contract.
        unsafe { Landed::release(self) };
    }
}
