//! The block's collectives: reductions over the whole block (one barrier each) and over each
//! warp, shuffles and broadcasts, which every thread of the block reaches (they take `&mut
//! Block`, which only uniform code holds) and whose block results are uniform again.

use super::{Block, TileSet, Varying, WarpValue};
#[cfg(target_arch = "nvptx64")]
use super::{shared, warp};

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// Combines every thread's value with `op` (associative and commutative, with `identity`
    /// its neutral element), in a fixed order, and gives the result to every thread: a warp
    /// reduction by shuffles, then one barrier and a reduction of the warps' results.
    #[inline(always)]
    pub fn reduce<T: WarpValue>(&mut self, value: Varying<T>, identity: T, op: impl Fn(T, T) -> T + Sync) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            let warps = THREADS / 32;
            let warp = warp::reduce(value.0, &op);
            let lane = shared::thread_index::<THREADS>();
            // Two buffers in turn: a thread still reading the results of the reduction before
            // last has passed the last one's barrier, so this write reaches no slot it reads.
            let slots = self.inner.base.wrapping_add(self.inner.turn * 32 * 8).cast::<T>();
            self.inner.turn ^= 1;
            if lane.is_multiple_of(32) {
                // SAFETY: slot `lane / 32` (below 32) of this turn's buffer, 8 bytes each (`T`
                // is at most 8 bytes and 8-aligned at most): written by this warp's first lane
                // alone, read only after the barrier below.
                unsafe { slots.wrapping_add(lane / 32 * (8 / size_of::<T>())).write(warp) };
            }
            shared::barrier();
            let mine = if lane % 32 < warps {
                // SAFETY: a slot written before the barrier, which nothing writes until the
                // next reduction's barrier after this one.
                unsafe { slots.wrapping_add(lane % 32 * (8 / size_of::<T>())).read() }
            } else {
                identity
            };
            // Lane 0's result to every lane: each warp reduced the same slots in the same
            // lanes, so every thread of the block holds the same bits, whatever `op` is.
            warp::shuffle_index(warp::reduce(mine, &op), 0)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (value, identity, op);
            match self.inner {}
        }
    }

    /// The sum of every thread's value, to every thread ([`reduce`](Self::reduce)).
    #[inline(always)]
    pub fn sum<T: WarpValue>(&mut self, value: Varying<T>) -> T {
        self.reduce(value, T::ZERO, T::add)
    }

    /// The largest of every thread's value, to every thread (for floats, NaN only where all
    /// are).
    #[inline(always)]
    pub fn max<T: WarpValue>(&mut self, value: Varying<T>) -> T {
        self.reduce(value, T::LOWEST, T::max)
    }

    /// The smallest of every thread's value, to every thread.
    #[inline(always)]
    pub fn min<T: WarpValue>(&mut self, value: Varying<T>) -> T {
        self.reduce(value, T::HIGHEST, T::min)
    }

    /// Each warp's sum, to each of its lanes.
    #[inline(always)]
    pub fn warp_sum<T: WarpValue>(&mut self, value: Varying<T>) -> Varying<T> {
        self.warp_reduce(value, T::add)
    }

    /// Each warp's values combined with `op` (associative and commutative), to each of its
    /// lanes, by butterfly shuffles.
    #[inline(always)]
    pub fn warp_reduce<T: WarpValue>(&mut self, value: Varying<T>, op: impl Fn(T, T) -> T + Sync) -> Varying<T> {
        on_gpu!(self.inner, (value, op), Varying(warp::reduce(value.0, &op)))
    }

    /// The value of the lane `lane ^ mask` of each lane's warp (`mask` below 32).
    #[inline(always)]
    pub fn shuffle_xor<T: WarpValue>(&mut self, value: Varying<T>, mask: u32) -> Varying<T> {
        on_gpu!(
            self.inner,
            (value, mask),
            Varying(warp::shuffle_xor(value.0, mask % 32))
        )
    }

    /// The value of lane `source` (below 32) of each lane's warp, to all its lanes.
    #[inline(always)]
    pub fn broadcast<T: WarpValue>(&mut self, value: Varying<T>, source: u32) -> Varying<T> {
        on_gpu!(
            self.inner,
            (value, source),
            Varying(warp::shuffle_index(value.0, source % 32))
        )
    }
}
