//! A tile's next contents read ahead: each thread loads its share of a tile's elements into
//! registers ([`Lane::stage`](super::Lane::stage)) while the block still computes with the
//! tile's last contents, and the block writes them after the barrier that ends that phase
//! ([`Block::write_staged`](super::Block::write_staged)). The loads are then in flight during
//! the arithmetic, where [`Block::write`](super::Block::write) would wait for them.

use super::TileLayout;
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use core::marker::PhantomData;

/// Index `k` of the box `shape` in order (the first dimension fastest with `first_fastest`),
/// `None` where it is outside `extents`. With `constant` (a shape known when the kernel is
/// compiled: a tile's) every dimension divides, which the compiler turns into shifts and folds
/// into the offset of the element; otherwise a dimension the rest fits is not divided.
#[inline(always)]
pub(super) fn unravel<I: IndexArray>(k: usize, shape: I, extents: I, first_fastest: bool, constant: bool) -> Option<I> {
    let (shape, extents) = (shape.as_ref(), extents.as_ref());
    let rank = shape.len();
    let mut index = I::zeros();
    let mut rest = k;
    let mut inside = true;
    for step in 0..rank {
        let d = if first_fastest { step } else { rank - 1 - step };
        // No division where the rest fits the dimension (a chunk of one row, with a length
        // known only at run time, divides nothing).
        let (i, next) = if !constant && rest < shape[d] {
            (rest, 0)
        } else {
            (rest % shape[d], rest / shape[d])
        };
        rest = next;
        index.as_mut()[d] = i;
        inside &= i < extents[d];
    }
    inside.then_some(index)
}

/// A thread's share of a tile's next contents, about to be read ahead
/// ([`Lane::stage`](super::Lane::stage), [`Lane::stage_transposed`](super::Lane::stage_transposed)):
/// [`read`](Self::read) makes the [`Staged`] values.
#[derive(Debug)]
pub struct Stage<T, E: Extents, L: TileLayout, const THREADS: usize, const TRANSPOSED: bool> {
    thread: usize,
    tile: PhantomData<Shape<T, E, L>>,
}

impl<T: DlElement, E: Extents, L: TileLayout, const THREADS: usize, const TRANSPOSED: bool>
    Stage<T, E, L, THREADS, TRANSPOSED>
{
    /// Thread `thread`'s share of a tile of `T`, `E` and `L`.
    #[inline(always)]
    pub(super) fn new(thread: usize) -> Self {
        Stage {
            thread,
            tile: PhantomData,
        }
    }

    /// `f(index)` for each of the `K` indices of the tile the block's partition gives this
    /// thread: `K` is the tile's elements over the block's threads (otherwise the kernel does
    /// not compile).
    #[inline(always)]
    pub fn read<const K: usize>(self, f: impl Fn(E::Index) -> T) -> Staged<T, E, L, K, TRANSPOSED> {
        Staged {
            values: core::array::from_fn(|m| [f(Staged::<T, E, L, K, TRANSPOSED>::index::<THREADS>(self.thread, m))]),
            tile: PhantomData,
        }
    }

    /// [`read`](Self::read) in runs of `G` neighbours along the partition's fastest dimension
    /// (the tile's fastest in memory, or with [`Lane::stage_transposed`](super::Lane::stage_transposed)
    /// the other end's): `f(index)` gives the `G` elements from `index` along it, for each of
    /// the `K` runs the partition of runs gives this thread (run `r` in order by thread
    /// `r % THREADS`). For runs read as one vector from global memory
    /// ([`Mdspan::get_run`](crate::view::Mdspan::get_run)); [`Block::write_staged`](super::Block::write_staged)
    /// writes them to the tile, as one vector where the tile's layout keeps each run
    /// contiguous and aligned. `G` divides that dimension's extent, and `K × G` is the tile's
    /// elements over the block's threads (otherwise the kernel does not compile).
    #[inline(always)]
    pub fn read_runs<const K: usize, const G: usize>(
        self,
        f: impl Fn(E::Index) -> [T; G],
    ) -> Staged<T, E, L, K, TRANSPOSED, G> {
        Staged {
            values: core::array::from_fn(|m| f(Staged::<T, E, L, K, TRANSPOSED, G>::index::<THREADS>(self.thread, m))),
            tile: PhantomData,
        }
    }
}

/// The tile type a [`Stage`] or [`Staged`] is for (no value of it is held).
type Shape<T, E, L> = fn() -> (T, E, L);

/// One thread's share of a tile's elements, read ahead ([`Stage::read`], [`Stage::read_runs`]):
/// the `K` runs of `G` neighbours (single elements by default) the block's partition gives the
/// thread, in its order, for a tile of `T`, extents `E` and layout `L` (dealt along its memory
/// order, or with `TRANSPOSED` the other way, as
/// [`Block::write_transposed`](super::Block::write_transposed) does). A tile of `E`'s elements is
/// `K × G` per thread of the block exactly, so every element of the tile is in one thread's
/// `Staged`; it stays with the thread that read it (a [`Varying`](super::Varying) value, which no
/// warp operation moves), and [`Block::write_staged`](super::Block::write_staged) writes it back
/// in the same partition.
#[derive(Clone, Copy, Debug)]
pub struct Staged<T, E, L, const K: usize, const TRANSPOSED: bool, const G: usize = 1> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    values: [[T; G]; K],
    tile: PhantomData<fn() -> (E, L)>,
}

impl<T: DlElement, E: Extents, L: TileLayout, const K: usize, const TRANSPOSED: bool, const G: usize>
    Staged<T, E, L, K, TRANSPOSED, G>
{
    /// Whether the partition deals the tile's first index fastest.
    pub(super) const FIRST_FASTEST: bool = L::FIRST_FASTEST != TRANSPOSED;

    /// The dimension the partition deals fastest, along which the runs lie.
    pub(super) const FAST: usize = if Self::FIRST_FASTEST {
        0
    } else {
        E::RANK.saturating_sub(1)
    };

    /// Refuses to compile where the tile's elements are not `K` runs of `G` for each of
    /// `THREADS` threads exactly (some element would go unwritten, or past the tile), or where
    /// `G` does not divide the extent the runs lie along.
    #[inline(always)]
    pub(super) fn check<const THREADS: usize>() {
        const {
            assert!(
                matches!(E::STATIC_SIZE, Some(size) if size == K * G * THREADS),
                "a thread's staged share of a tile is the tile's elements over the block's threads, exactly"
            );
            let fastest = match E::STATIC_ENDS {
                (Some(first), Some(last)) => {
                    if Self::FIRST_FASTEST {
                        first
                    } else {
                        last
                    }
                }
                _ => 0,
            };
            assert!(
                G > 0 && fastest.is_multiple_of(G),
                "a tile staged in runs has the run's length dividing the extent the runs lie along"
            );
        };
    }

    /// The first index of run `m` of thread `thread`'s share of the tile: run `thread + m ·
    /// THREADS` in the partition's order.
    #[inline(always)]
    pub(super) fn index<const THREADS: usize>(thread: usize, m: usize) -> E::Index {
        Self::check::<THREADS>();
        let shape = super::tile::static_shape::<E>();
        let mut runs = shape;
        runs.as_mut()[Self::FAST] /= G;
        // Below `K · THREADS`, the tile's runs: inside them, so the index is `Some`.
        let mut index = unravel(thread + m * THREADS, runs, runs, Self::FIRST_FASTEST, true).unwrap_or(runs);
        index.as_mut()[Self::FAST] *= G;
        index
    }

    /// The runs, in the partition's order.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn values(&self) -> &[[T; G]; K] {
        &self.values
    }
}
