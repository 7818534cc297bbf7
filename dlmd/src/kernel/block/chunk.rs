//! A mutable view cut into chunks, each owned by one block of the launch and written by its
//! threads: how a cooperative kernel writes global memory.

use super::{Block, Cells, TileSet, Varying};
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Mdspan, Unique};
use core::marker::PhantomData;

#[cfg(target_arch = "nvptx64")]
mod element;
mod order;
mod rows;
mod segments;
mod shape;
mod stores;
mod twin;

use order::{grid_index, grouped_index, last_rows_first};

pub use rows::{Rows, ValuesOfRows};
pub use segments::{Segment, Segments};

pub use shape::{ChunkShape, ChunkSide, CutBy, Grouped, LastRowsFirst, NoChunks, Whole};

/// The chunks of a mutable view that one block owns ([`Block::chunks`](super::Block::chunks)),
/// in order: chunk `c` of the view goes to block `c % blocks`, so no two blocks own one, and a
/// smaller grid still covers the view.
///
/// `R` is what each chunk carries beside: nothing, or the chunk of a view of the rows' values
/// ([`with_rows`](Self::with_rows)).
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub struct Chunks<'v, T, E: Extents, L: Layout, S: KernelSpace, R = ()> {
    data: *mut T,
    mapping: L::Mapping<E>,
    shape: E::Index,
    /// Chunks along each dimension.
    counts: E::Index,
    /// The number of this block's next chunk in the view's memory order, unravelled into an
    /// index of the chunk grid when the chunk is handed out (at most one division for each
    /// dimension but the slowest). A kernel holds this one number through its work on a chunk,
    /// not a grid index and a step, which leaves the registers to the work.
    next: usize,
    total: usize,
    step: usize,
    /// The chunk rows of a group of a rank-2 grid numbered group by group ([`Grouped`]); 0 for
    /// memory order.
    group: usize,
    /// Whether chunk rows are numbered from the last ([`LastRowsFirst`]).
    last_rows_first: bool,
    /// The rows' view, whole (a chunk of it all), cut to each chunk's rows as it is handed out.
    rows: R,
    /// The segments the rows are cut along ([`in_segments`](Self::in_segments)), if any.
    cut: Option<segments::Cut<'v>>,
    view: PhantomData<Mdspan<'v, T, E, L, S, Unique>>,
}

/// One chunk of a mutable view, owned by the running block: its threads write it with
/// [`Block::store`](super::Block::store), each element by one of them.
///
/// `R` is what the chunk carries beside: nothing, or the chunk of its rows' values
/// ([`Chunks::with_rows`]), taken apart by [`split_rows`](Self::split_rows).
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub struct Chunk<'v, T, E: Extents, L: Layout, S: KernelSpace, R = ()> {
    data: *mut T,
    mapping: L::Mapping<E>,
    origin: E::Index,
    shape: E::Index,
    rows: R,
    /// The segment of the rows it is of, for chunks cut along segments.
    segment: Option<Segment>,
    view: PhantomData<Mdspan<'v, T, E, L, S, Unique>>,
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace> Chunks<'v, T, E, L, S> {
    /// The chunks of `view` of shape `C` that block `block` of `blocks` owns. A side of their
    /// box is 0 only where the view's extent is, and then there are none.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn new<C>(view: Mdspan<'v, T, E, L, S, Unique>, block: usize, blocks: usize) -> Self
    where
        E::Index: CutBy<C>,
    {
        let extents = view.extents().to_array();
        let shape = <E::Index as CutBy<C>>::box_of(extents);
        let mut counts = E::Index::zeros();
        for d in 0..E::RANK {
            let (extent, side) = (extents.as_ref()[d], shape.as_ref()[d]);
            // No division where one chunk spans the dimension (a chunk of a whole row).
            counts.as_mut()[d] = if extent <= side {
                usize::from(extent > 0)
            } else {
                extent.div_ceil(side)
            };
        }
        // Wrapping: a count is at most its extent, so the counts of a view with elements multiply
        // to at most its size; those of one without have a 0, which makes the product 0 however
        // the others wrapped.
        let total = counts
            .as_ref()
            .iter()
            .fold(1usize, |total, &count| total.wrapping_mul(count));
        Chunks {
            data: view.data_handle(),
            mapping: *view.mapping(),
            shape,
            counts,
            next: block,
            total,
            step: blocks,
            group: <E::Index as CutBy<C>>::GROUP,
            last_rows_first: <E::Index as CutBy<C>>::LAST_ROWS_FIRST,
            rows: (),
            cut: None,
            view: PhantomData,
        }
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace> Chunks<'v, T, E, L, S> {
    /// These chunks, each carrying its part of `rows` (a chunk of a whole second view, cut to
    /// each chunk's place as it is handed out).
    #[inline(always)]
    fn carrying<R: Rows>(self, rows: R) -> Chunks<'v, T, E, L, S, R> {
        Chunks {
            data: self.data,
            mapping: self.mapping,
            shape: self.shape,
            counts: self.counts,
            next: self.next,
            total: self.total,
            step: self.step,
            group: self.group,
            last_rows_first: self.last_rows_first,
            rows,
            cut: self.cut,
            view: PhantomData,
        }
    }

    /// Whether the view's first `theirs.len()` extents are `theirs`, element by element (an
    /// array comparison would call `memcmp`, which kernels lack).
    #[inline(always)]
    fn extents_start_with(&self, theirs: &[usize]) -> bool {
        let ours = crate::layout::Mapping::extents(&self.mapping).to_array();
        theirs.len() <= E::RANK && (0..theirs.len()).all(|d| ours.as_ref()[d] == theirs[d])
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace, R: Rows> Iterator for Chunks<'v, T, E, L, S, R> {
    type Item = Chunk<'v, T, E, L, S, R>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.next >= self.total {
                return None;
            }
            // Chunks numbered in the view's memory order (its fastest dimension varies fastest),
            // or group by group; then, for `LastRowsFirst`, the chunk rows from the last.
            let mut current = if self.group > 1 {
                grouped_index::<E, L>(self.next, &self.counts, self.group)
            } else {
                grid_index::<E, L>(self.next, &self.counts)
            };
            if self.last_rows_first {
                current = last_rows_first::<E>(current, &self.counts);
            }
            self.next += self.step;
            let mut origin = E::Index::zeros();
            for d in 0..E::RANK {
                origin.as_mut()[d] = current.as_ref()[d] * self.shape.as_ref()[d];
            }
            let mut shape = self.shape;
            let mut segment = None;
            if let Some(cut) = self.cut {
                // Along the rows, the numbers of each segment from where it starts (`Cut::rows`):
                // its chunks' rows from the segment's start, cut at its end; none past it.
                let dim = E::RANK - 2;
                let Some((first, rows, here)) = cut.rows(current.as_ref()[dim], self.shape.as_ref()[dim]) else {
                    continue;
                };
                origin.as_mut()[dim] = first;
                shape.as_mut()[dim] = rows;
                segment = Some(here);
            }
            let rows = self.rows.at(origin.as_ref(), shape.as_ref(), rows::Token(()));
            return Some(Chunk {
                data: self.data,
                mapping: self.mapping,
                origin,
                shape,
                rows,
                segment,
                view: PhantomData,
            });
        }
    }
}

impl<T: DlElement, E: Extents, L: Layout, S: KernelSpace, R: Rows> Chunk<'_, T, E, L, S, R> {
    /// The index, in the whole view, of the chunk's first element.
    #[inline(always)]
    pub fn origin(&self) -> E::Index {
        self.origin
    }

    /// The segment of the view's rows the chunk is of, where the chunks are cut along
    /// segments ([`Chunks::in_segments`]); `None` otherwise.
    #[inline(always)]
    pub fn segment(&self) -> Option<Segment> {
        self.segment
    }

    /// The chunk's extents: the chunk shape, cut short at the view's edge (and at its
    /// segment's end).
    #[inline(always)]
    pub fn extents(&self) -> E::Index {
        // Worked out where it is asked for, from the view's extents (kernel parameters) and the
        // origin, rather than kept: a kernel that writes its chunk after a long loop then holds
        // no register for it through the loop.
        let extents = crate::layout::Mapping::extents(&self.mapping).to_array();
        let mut clipped = E::Index::zeros();
        for d in 0..E::RANK {
            let (start, side) = (self.origin.as_ref()[d], self.shape.as_ref()[d]);
            clipped.as_mut()[d] = side.min(extents.as_ref()[d] - start);
        }
        clipped
    }

    /// Lines `first .. first + count` of the chunk's box along its rows (the dimension before
    /// the last: the rows of a matrix, of each matrix of a batch; the only dimension of a
    /// vector), as a chunk of its own: the part of the chunk that one warpgroup of the block
    /// writes. Its box is cut at the chunk's, and is empty past it; the rows' values it carries
    /// are cut alike.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn lines(self, first: usize, count: usize) -> Self {
        let rows = self.rows.cut(first, count, rows::Token(()));
        let Chunk {
            data,
            mapping,
            origin,
            shape,
            segment,
            view,
            ..
        } = self;
        let (origin, shape) = Self::cut_along(&mapping, origin, shape, E::RANK.saturating_sub(2), first, count);
        Chunk {
            data,
            mapping,
            origin,
            shape,
            rows,
            segment,
            view,
        }
    }

    /// The origin and box of lines `first .. first + count` along dimension `dim` of the box
    /// `shape` at `origin`: cut at the box, empty past it, never past the view's edge.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn cut_along(
        mapping: &L::Mapping<E>,
        mut origin: E::Index,
        mut shape: E::Index,
        dim: usize,
        first: usize,
        count: usize,
    ) -> (E::Index, E::Index) {
        if dim < E::RANK {
            let side = shape.as_ref()[dim];
            // Never past the view's edge, which `extents` subtracts the origin from: a chunk
            // starts inside its view.
            let room = crate::layout::Mapping::extents(mapping).to_array().as_ref()[dim] - origin.as_ref()[dim];
            let first = first.min(side).min(room);
            origin.as_mut()[dim] += first;
            shape.as_mut()[dim] = count.min(side - first);
        }
        (origin, shape)
    }

    /// Index `[row, col]` of a matrix (the last two dimensions) as an index of rank `E::RANK`
    /// (at least 2), 0 along the dimensions before.
    #[inline(always)]
    pub(crate) fn in_matrix([row, col]: [usize; 2]) -> E::Index {
        let mut index = E::Index::zeros();
        let rank = E::RANK;
        if let (Some(r), Some(c)) = (rank.checked_sub(2), rank.checked_sub(1)) {
            index.as_mut()[r] = row;
            index.as_mut()[c] = col;
        }
        index
    }

    /// `local` lies below `bound` in every dimension: inside a box or extents of that shape.
    /// (A function, not a closure: the stores write their steps out, and a closure in each
    /// copy would be type-checked in each.)
    #[inline(always)]
    pub(crate) fn inside(local: &E::Index, bound: &E::Index) -> bool {
        (0..E::RANK).all(|d| local.as_ref()[d] < bound.as_ref()[d])
    }

    /// The box of `rows × cols` of a matrix (the last two dimensions) as extents of rank
    /// `E::RANK` (at least 2), 1 along the dimensions before.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn matrix_box(rows: usize, cols: usize) -> E::Index {
        let mut shape = Self::in_matrix([rows, cols]);
        for side in shape.as_mut().iter_mut().take(E::RANK.saturating_sub(2)) {
            *side = 1;
        }
        shape
    }

    /// The index in the whole view of index `local` of the chunk.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn index_of(&self, local: E::Index) -> E::Index {
        let mut index = self.origin;
        for d in 0..E::RANK {
            index.as_mut()[d] = index.as_ref()[d].wrapping_add(local.as_ref()[d]);
        }
        index
    }

    /// The chunk's box: the shape the view was cut into, also where the view's edge cuts the
    /// chunk short.
    #[inline(always)]
    pub(crate) fn shape(&self) -> E::Index {
        self.shape
    }

    /// The number of elements of the chunk's box (its shape), which a block's partition deals
    /// out.
    #[inline(always)]
    pub(super) fn box_size(&self) -> usize {
        self.shape.as_ref().iter().product()
    }

    /// The index in the whole view of index `local` of the chunk, and its element.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn element(&self, local: E::Index) -> (E::Index, *mut T) {
        use crate::layout::Mapping;
        let mut index = self.origin;
        for d in 0..E::RANK {
            index.as_mut()[d] += local.as_ref()[d];
        }
        (index, self.data.wrapping_add(self.mapping.offset_of(&index)))
    }
}

/// How a cooperative kernel writes global memory: the chunks of a mutable view that the block
/// owns, and each chunk's elements dealt among the block's threads.
impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// This block's chunks of `view`: the view cut into chunks of the block's shape `C` (the
    /// last ones cut short at the view's edge), numbered in the view's memory order (or group
    /// by group, for a [`Grouped`] shape; with the chunk rows counted from the last, for a
    /// [`LastRowsFirst`] one), chunk `c` to block `c % blocks`. Each chunk is written by
    /// [`store`](Self::store) or [`store_array`](Self::store_array); no two blocks own one.
    ///
    /// ```ignore
    /// // In a kernel of `Block<'_, 256, Tiles, (Const<64>, Const<64>)>`: 64 × 64 each.
    /// let squares = block.chunks(dst);
    /// // In a kernel of `Block<'_, 128, (), (Const<1>, Whole)>`: each a whole row of `y`.
    /// let rows = block.chunks(y);
    /// ```
    ///
    /// Every block cuts the view alike, so that no element goes to two blocks:
    ///
    /// - the shape is the block's type ([`ChunkShape`]): constants, and the view's whole extent
    ///   ([`Whole`]), never a value that could differ from block to block; the kernel's
    ///   signature names it, so it is one type for the whole grid before any code runs, and no
    ///   branch of the body can choose another (`chunks` takes none, and no safe code makes a
    ///   block of another shape: [`split`](Self::split) keeps it, and only the kernel's entry
    ///   point makes a block);
    /// - the view is a kernel parameter, which every block holds alike: in a kernel a mutable
    ///   device or managed view is not sliced or borrowed again
    ///   ([`Reborrow`](crate::space::Reborrow)), so no block can make one of its own part of it;
    /// - the view is taken: it is cut once in a kernel, so each of its elements belongs to one
    ///   block for the whole kernel.
    ///
    /// Cut along segments of different lengths instead ([`Chunks::in_segments`]), the chunks
    /// also depend on the segments' offsets, values the compiler cannot see are the same in
    /// every block: that cut is `unsafe`, its contract that they are.
    ///
    /// The view's rank is the shape's (otherwise the kernel does not compile).
    #[inline(always)]
    pub fn chunks<'v, T, E, L, Sp>(&self, view: Mdspan<'v, T, E, L, Sp, Unique>) -> Chunks<'v, T, E, L, Sp>
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
        E::Index: CutBy<C>,
    {
        // The shape's checks, where a kernel that cuts by it is compiled.
        let _ = <E::Index as CutBy<C>>::CONST_SIZE;
        on_gpu!(self.inner, (view), Chunks::new::<C>(view, self.index(), self.count()))
    }

    /// Writes every element of `chunk`: `f(index)` (the index in the whole view) by exactly one
    /// thread of the block, neighbouring threads on neighbouring elements of the view's fastest
    /// dimension.
    ///
    /// Each store takes the chunk: it is written once. Two stores of one chunk by different
    /// partitions (`store`, then `store_runs`) would give one element to two threads with no
    /// barrier between their writes.
    #[inline(always)]
    pub fn store<T, E, L, Sp>(&mut self, chunk: Chunk<'_, T, E, L, Sp>, f: impl Fn(E::Index) -> T + Sync)
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        on_gpu!(self.inner, (chunk, f), {
            let mut chunk = chunk;
            chunk.store::<THREADS>(f)
        })
    }

    /// [`store`](Self::store) in runs of `K` neighbours along the view's fastest dimension in
    /// memory (the last for a row-major view): the chunk's box cut into runs of `K`, run `r` in
    /// memory order by thread `r % THREADS`, which writes `f(index)` (`index` the run's first
    /// element, in the whole view) to the run's `K` elements in order. One vector store a run
    /// where it is whole, contiguous and aligned to its size (8 or 16 bytes: four `f32` as one
    /// `float4`), `K` stores otherwise; a run the view's edge cuts short is written up to the
    /// edge. Returns `false`, writing nothing, where the box's fastest side is not a multiple
    /// of `K` (the same answer on every thread: the box is the block's).
    #[must_use]
    #[inline(always)]
    pub fn store_runs<T, E, L, Sp, const K: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        f: impl Fn(E::Index) -> [T; K] + Sync,
    ) -> bool
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        if !chunk.runs_fit::<K>() {
            return false;
        }
        on_gpu!(self.inner, (f), {
            let mut chunk = chunk;
            chunk.store_runs::<THREADS, K>(f);
            true
        })
    }

    /// Writes each thread's `values[m]` to the `m`-th element it owns of `chunk` in the block's
    /// partition (element `k` of the chunk's box in the view's memory order, for `k = thread +
    /// m × THREADS`): the order [`Lane::gather`] reads a row in. Returns `false`, writing
    /// nothing, where the chunk's box holds more than `K × THREADS` elements (the same answer
    /// on every thread: the box is the block's).
    ///
    /// [`Lane::gather`]: super::Lane::gather
    #[must_use]
    #[inline(always)]
    pub fn store_array<T, E, L, Sp, const K: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        values: Varying<[T; K]>,
    ) -> bool
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        const {
            assert!(
                K.checked_mul(THREADS).is_some(),
                "a block's threads hold at most `usize::MAX` values together"
            );
        };
        if chunk.box_size() > K * THREADS {
            return false;
        }
        on_gpu!(self.inner, (values), {
            let mut chunk = chunk;
            chunk.store_array::<THREADS, K>(values.0);
            true
        })
    }

    /// Writes each thread's `values[m][n]` to its cell `[m, n]` of `chunk`: `cells`, the
    /// thread's [`Lane::cells`] (or [`Lane::cells_in_runs`]) of the chunk's shape, row `row(m)`
    /// and column `col(n)` of the chunk, skipping cells the view's edge cuts off. A thread whose
    /// `cells` are not its own for the chunk's shape writes nothing. Returns `false`, writing
    /// nothing, where the block's threads do not cover the chunk's shape `M × N` cells each
    /// ([`Cells::covers`]; the same answer on every thread: the shape is the block's).
    ///
    /// [`Lane::cells`]: super::Lane::cells
    /// [`Lane::cells_in_runs`]: super::Lane::cells_in_runs
    #[must_use]
    #[inline(always)]
    pub fn store_cells<T, E, L, Sp, const M: usize, const N: usize, const G: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        cells: Varying<Cells<M, N, G>>,
        values: Varying<[[T; N]; M]>,
    ) -> bool
    where
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: Layout,
        Sp: KernelSpace,
    {
        if !Cells::<M, N, G>::covers::<THREADS>(chunk.shape()) {
            return false;
        }
        on_gpu!(self.inner, (cells, values), {
            // The cells the partition gives this thread: any others could be another's.
            let mut chunk = chunk;
            if cells.0 == Cells::of(super::shared::thread_index::<THREADS>(), chunk.shape()) {
                chunk.store_cells(cells.0, values.0);
            }
            true
        })
    }
}
