//! A chunk's elements dealt among the threads of its block and written: one element, one run or
//! one cell each, as [`Block::store`](super::super::Block::store) and its kin ask.

use super::{Chunk, Rows};
use crate::dtype::DlElement;
use crate::extents::Extents;
#[cfg(target_arch = "nvptx64")]
use crate::extents::IndexArray;
use crate::kernel::KernelSpace;
#[cfg(target_arch = "nvptx64")]
use crate::kernel::block::Cells;
use crate::layout::Layout;

impl<T: DlElement, E: Extents, L: Layout, S: KernelSpace, R: Rows> Chunk<'_, T, E, L, S, R> {
    /// Writes `values[m]` to the `m`-th element this thread owns in the block's partition, for
    /// each `m` (unrolled: `K` is known when the kernel is compiled).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(in crate::kernel::block) fn store_array<const THREADS: usize, const K: usize>(&mut self, values: [T; K]) {
        use crate::layout::Mapping;
        let rank = E::RANK;
        let fast = if L::FIRST_FASTEST { 0 } else { rank.saturating_sub(1) };
        // A box that is one line along the fastest dimension (a row of a row-major matrix), the
        // commonest chunk: the thread's `m`-th element is `thread + m THREADS` along it, one
        // multiplication from the chunk's first element, with no index to unravel.
        if rank > 0 && (0..rank).all(|d| d == fast || self.shape.as_ref()[d] == 1) {
            let first = self.element(E::Index::zeros()).1;
            let (stride, len) = (self.mapping.stride(fast), self.extents().as_ref()[fast]);
            let thread = crate::kernel::block::shared::thread_index::<THREADS>();
            #[allow(clippy::needless_range_loop)]
            for m in 0..K {
                let k = thread + m * THREADS;
                if k < len {
                    // SAFETY: `k` is below the chunk's extent along its one line, so the element
                    // is inside the view's extents, in the span of a unique view; the chunk is
                    // this block's alone (`Chunks`), and `k` this thread's alone (the partition
                    // of `owned`, which a one-line box makes `k` itself).
                    unsafe { first.wrapping_offset(k as isize * stride).write(values[m]) }
                }
            }
            return;
        }
        // Indexed, not iterated: the unrolled loop keeps the array in registers.
        #[allow(clippy::needless_range_loop)]
        for m in 0..K {
            let value = values[m];
            if let Some(local) = crate::kernel::block::shared::owned::<THREADS, E::Index>(
                m,
                self.shape,
                self.extents(),
                L::FIRST_FASTEST,
            ) {
                // SAFETY: `local` is inside the chunk, so the element is inside the view's
                // extents, in the span of a unique view; the chunk is this block's alone
                // (`Chunks`), and the partition gives the element to this thread alone.
                unsafe { self.element(local).1.write(value) }
            }
        }
    }

    /// Writes `values[m][n]` to this thread's cell `[m, n]` of the chunk's box, where it is
    /// inside the chunk (unrolled: `M` and `N` are known when the kernel is compiled).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(in crate::kernel::block) fn store_cells<const M: usize, const N: usize, const G: usize>(
        &mut self,
        cells: Cells<M, N, G>,
        values: [[T; N]; M],
    ) where
        E: Extents<Index = [usize; 2]>,
    {
        const {
            assert!(M <= 16 && N <= 16, "a thread stores at most 16 × 16 cells");
        };
        // The rows and columns left in the chunk from the thread's first cell: each cell is
        // compared by its constant distance from the first, so that no row or column index is
        // kept in a register for the whole kernel.
        let [row0, col0] = cells.index(0, 0);
        let (rows, cols) = (
            self.extents()[0].saturating_sub(row0),
            self.extents()[1].saturating_sub(col0),
        );
        // Unrolled by the macro, not left to the compiler's judgement (64 stores are past its
        // threshold): every element of `values` is then reached by a constant index, and the
        // array stays in registers (one run-time index would put it in local memory).
        crate::unroll!(M, |m| {
            crate::unroll!(N, |n| {
                let [down, across] = cells.distance(m, n);
                if down < rows && across < cols {
                    // SAFETY: cell `[m, n]` is inside the chunk, so its element is inside the
                    // view's extents, in the span of a unique view; the chunk is this block's
                    // alone (`Chunks`), and the block's threads cover its box once
                    // (`Cells::covers`, checked by the caller, with this thread's own cells), so
                    // the cell is this thread's alone.
                    unsafe { self.element(cells.index(m, n)).1.write(values[m][n]) }
                }
            });
        });
    }

    /// Whether the chunk's box can be written in runs of `K`: its fastest side (in the view's
    /// memory order) is a multiple of `K`.
    #[inline(always)]
    pub(in crate::kernel::block) fn runs_fit<const K: usize>(&self) -> bool {
        let fast = if L::FIRST_FASTEST { 0 } else { E::RANK.wrapping_sub(1) };
        K > 0 && self.shape.as_ref().get(fast).is_some_and(|side| side.is_multiple_of(K))
    }

    /// Writes every element in runs of `K` along the view's fastest dimension: `f(index)` (the
    /// run's first index in the whole view) by one thread of a block of `THREADS` to the run's
    /// `K` elements, as one vector store to global memory where the run is whole, contiguous
    /// and aligned to its size. Run `r` of the box, in memory order, by thread `r % THREADS`; a
    /// run the view's edge cuts short is written up to the edge, one that starts past it not
    /// at all.
    /// [`runs_fit`](Self::runs_fit) holds.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(in crate::kernel::block) fn store_runs<const THREADS: usize, const K: usize>(
        &mut self,
        f: impl Fn(E::Index) -> [T; K],
    ) {
        use crate::layout::Mapping;
        let fast = if L::FIRST_FASTEST { 0 } else { E::RANK - 1 };
        let start = |run: E::Index| {
            let mut local = run;
            local.as_mut()[fast] *= K;
            local
        };
        // The box's runs, and those that start inside the chunk.
        let (mut runs, mut starts) = (self.shape, self.extents());
        runs.as_mut()[fast] /= K;
        starts.as_mut()[fast] = starts.as_ref()[fast].div_ceil(K);
        let (stride, length) = (self.mapping.stride(fast), self.extents().as_ref()[fast]);
        let count: usize = runs.as_ref().iter().product();
        // One run at a time, each written as soon as it is made: its values come from
        // block-shared memory (a tile), which needs no batching to keep loads in flight, and
        // four runs' values and indices at once would take four times the registers.
        let mut k = crate::kernel::block::shared::thread_index::<THREADS>();
        while k < count {
            if let Some(run) = crate::kernel::block::stage::unravel(k, runs, starts, L::FIRST_FASTEST, false) {
                let local = start(run);
                let (index, first) = self.element(local);
                let values = f(index);
                // Above 0: the run starts inside the chunk.
                let left = length - local.as_ref()[fast];
                if left >= K {
                    // SAFETY: the run's `K` elements are inside the chunk (`left` of them are
                    // along its fastest dimension from the first), so inside the view's
                    // extents, in the span of a unique view, one stride apart; the chunk is
                    // this block's alone (`Chunks`), and the partition of runs (`k` in steps of
                    // `THREADS` from the thread's index) gives the run to this thread alone; a
                    // kernel's views are of global memory (`KernelSpace`: device or managed).
                    unsafe { crate::aligned::write_global_run(first, stride, values) }
                } else {
                    // Indexed, not iterated up to `left`: the loop over a constant count
                    // unrolls, and the values stay in registers.
                    #[allow(clippy::needless_range_loop)]
                    for q in 0..K {
                        if q < left {
                            // SAFETY: as above, for the run's first `left` elements.
                            unsafe { first.wrapping_offset(q as isize * stride).write(values[q]) }
                        }
                    }
                }
            }
            k += THREADS;
        }
    }

    /// Writes every element: `f(index)` (the index in the whole view) by one thread of a block
    /// of `THREADS`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(in crate::kernel::block) fn store<const THREADS: usize>(&mut self, f: impl Fn(E::Index) -> T) {
        // Over the chunk shape (the same for every chunk, so its arithmetic is compiled in),
        // skipping what the view's edge cuts off.
        crate::kernel::block::shared::write_partition::<THREADS, E::Index, T>(
            self.shape,
            self.extents(),
            L::FIRST_FASTEST,
            false,
            |local| f(self.element(local).0),
            |local, value| {
                // SAFETY: as in `store_array`: an element of this block's chunk, given to this
                // thread alone.
                unsafe { self.element(local).1.write(value) }
            },
        );
    }
}
