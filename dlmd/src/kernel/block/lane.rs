//! What one thread of a cooperative kernel's block sees: its [`Lane`], in the per-thread
//! closures [`Block::each`](super::Block::each) runs, and the values that differ from thread to
//! thread, [`Varying`], which uniform code only hands on.

#[cfg(doc)]
use super::{Block, Tile, TileOf};
use super::{Cells, Stage, TileShape};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::Layout;
use crate::view::{Mdspan, Shared};

/// A value of each thread of a block (a register per thread): what [`Block::each`] returns.
/// Uniform code cannot read it; it hands it to per-thread closures ([`map`](Self::map)) or to a
/// block or warp collective.
#[derive(Clone, Copy)]
pub struct Varying<T>(pub(super) T);

// Opaque: a printed value would be a way for uniform code to look into it.
impl<T> core::fmt::Debug for Varying<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Varying(..)")
    }
}

impl<T> Varying<T> {
    /// `f` of this thread's value, on every thread.
    #[inline(always)]
    pub fn map<U>(self, f: impl Fn(T) -> U + Sync) -> Varying<U> {
        Varying(f(self.0))
    }

    /// Both values of each thread, as a pair.
    #[inline(always)]
    pub fn zip<U>(self, other: Varying<U>) -> Varying<(T, U)> {
        Varying((self.0, other.0))
    }
}

/// One thread of a block, as a per-thread closure sees it.
#[derive(Clone, Copy, Debug)]
pub struct Lane<const THREADS: usize> {
    pub(super) index: usize,
}

impl<const THREADS: usize> Lane<THREADS> {
    /// The thread's index in its block, below `THREADS`.
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The thread's warp in the block.
    #[inline(always)]
    pub fn warp(&self) -> usize {
        self.index / 32
    }

    /// The thread's lane in its warp, below 32.
    #[inline(always)]
    pub fn lane(&self) -> usize {
        self.index % 32
    }

    /// Calls `f` with each index of the read-only `view` this thread owns in the block's
    /// partition and its element: along the view's fastest dimension in memory, thread `t` of
    /// the block takes the four neighbours from `4 t`, then those `4 THREADS` further, … (one
    /// vector load where they are contiguous and aligned), and the last `extent % 4` one at a
    /// time; every other index is walked by every thread. Across the block, every element goes
    /// to exactly one thread.
    #[inline(always)]
    pub fn for_each<T, E, L, S>(&self, view: &Mdspan<'_, T, E, L, S, Shared>, f: impl FnMut(E::Index, &T))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: crate::kernel::KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        super::shared::read_partition::<THREADS, T, E, L, S>(self.index, view, f);
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = (view, f);
    }

    /// `[f(index), f(index + THREADS), …]`, `K` of them, with `fill` from `end` on: this
    /// thread's share of `0..end` (its `m`-th index at `m`), kept in registers (the loop over
    /// `m` is unrolled). Across the block, `0..end` goes to the threads once each, as long as
    /// `end ≤ K × THREADS`. [`Block::store_array`] writes such an array back in the same order.
    #[inline(always)]
    pub fn gather<T: Copy, const K: usize>(&self, end: usize, fill: T, f: impl Fn(usize) -> T) -> [T; K] {
        core::array::from_fn(|m| {
            let i = self.index + m * THREADS;
            if i < end { f(i) } else { fill }
        })
    }

    /// This thread's `M × N` cells of a two-dimensional box of `shape` (`[rows, cols]`), the
    /// elements it keeps in registers and [`Block::store_cells`] writes back: see [`Cells`].
    #[inline(always)]
    pub fn cells<const M: usize, const N: usize>(&self, shape: [usize; 2]) -> Cells<M, N> {
        Cells::of(self.index, shape)
    }

    /// [`cells`](Self::cells) whose columns come in runs of `G` neighbours (`G` divides `N`):
    /// each run of a row-major tile is read as one vector ([`Tile::get_run`]), and neighbouring
    /// threads take neighbouring runs.
    #[inline(always)]
    pub fn cells_in_runs<const M: usize, const N: usize, const G: usize>(&self, shape: [usize; 2]) -> Cells<M, N, G> {
        Cells::of(self.index, shape)
    }

    /// The next contents of a tile of type `S` (a [`TileOf`]), to be read ahead
    /// ([`Stage::read`]) in [`Block::write`]'s partition and written by
    /// [`Block::write_staged`] after the phase that still reads the tile: the loads are in
    /// flight during that phase's arithmetic.
    #[inline(always)]
    pub fn stage<S: TileShape>(&self) -> Stage<S::Element, S::Extents, S::Layout, THREADS, false> {
        Stage::new(self.index)
    }

    /// [`stage`](Self::stage) in [`Block::write_transposed`]'s partition.
    #[inline(always)]
    pub fn stage_transposed<S: TileShape>(&self) -> Stage<S::Element, S::Extents, S::Layout, THREADS, true> {
        Stage::new(self.index)
    }

    /// `f(i)` for this thread's share of `0..end`: `i = index, index + THREADS, …`. Across the
    /// block, every `i` goes to exactly one thread.
    #[inline(always)]
    pub fn stride(&self, end: usize, mut f: impl FnMut(usize)) {
        let mut i = self.index;
        while i < end {
            f(i);
            i += THREADS;
        }
    }
}
