//! Register blocks: a two-dimensional box dealt to a block's threads `M × N` elements each, so
//! that each thread keeps its share in registers across phases (the accumulators of a tiled
//! matrix product) and the block writes it back with one store.

/// The `M × N` elements of a `rows × cols` box that one thread of a block owns
/// ([`Lane::cells`](super::Lane::cells), [`Lane::cells_in_runs`](super::Lane::cells_in_runs)):
/// its rows and its columns each come in runs of `G` neighbours, rows
/// `first_row + (m / G) · row_step + m % G` for `m < M` and columns
/// `first_col + (n / G) · col_step + n % G` for `n < N` (with `G = 1`, rows `row_step` apart
/// and columns `col_step` apart).
///
/// The box is split into `M × N` grids of the block's threads, `rows / M` threads down and
/// `cols / N` across (each place of the grid `G × G` cells), and thread `t` of the block takes
/// the place `(t / (cols / N), t % (cols / N))` in each. Neighbouring threads take neighbouring
/// columns (or runs): a warp reading row `r` of a tile at the columns it owns meets every bank
/// of shared memory once, one element a thread, or reads its runs as vectors of `G`
/// ([`Tile::get_run`](super::Tile::get_run)); a warp writing its values back writes runs of
/// neighbouring elements. Across the block every element of the box goes to exactly one
/// thread, provided `rows / M × cols / N` is the block's size
/// ([`Block::store_cells`](super::Block::store_cells) checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cells<const M: usize, const N: usize, const G: usize = 1> {
    first: [usize; 2],
    step: [usize; 2],
}

impl<const M: usize, const N: usize, const G: usize> Cells<M, N, G> {
    /// The cells of thread `thread` in a box of `shape` (`[rows, cols]`): see the type's docs.
    /// A box whose sides are not multiples of `M` and `N` is dealt as the largest one that is
    /// (the block's store refuses it).
    #[inline(always)]
    pub(super) fn of(thread: usize, shape: [usize; 2]) -> Self {
        const {
            assert!(M > 0 && N > 0, "a thread owns at least one cell");
            assert!(
                G > 0 && M.is_multiple_of(G) && N.is_multiple_of(G),
                "a thread's rows and columns are whole runs"
            );
        };
        let across = (shape[1] / N).max(1);
        let down = (shape[0] / M).max(1);
        Cells {
            first: [thread / across * G, thread % across * G],
            step: [down * G, across * G],
        }
    }

    /// The row (in the box) of this thread's `m`-th row of cells.
    #[inline(always)]
    pub fn row(&self, m: usize) -> usize {
        self.first[0] + self.distance(m, 0)[0]
    }

    /// The column (in the box) of this thread's `n`-th column of cells.
    #[inline(always)]
    pub fn col(&self, n: usize) -> usize {
        self.first[1] + self.distance(0, n)[1]
    }

    /// How far apart this thread's runs of rows, and of columns, are: `[rows / M × G, cols / N
    /// × G]` of the box (for `G = 1`, how far apart its rows and its columns are).
    #[inline(always)]
    pub fn steps(&self) -> [usize; 2] {
        self.step
    }

    /// How far cell `[m, n]` is from cell `[0, 0]`, in rows and columns.
    #[inline(always)]
    pub fn distance(&self, m: usize, n: usize) -> [usize; 2] {
        [m / G * self.step[0] + m % G, n / G * self.step[1] + n % G]
    }

    /// The box index of cell `[m, n]`.
    #[inline(always)]
    pub fn index(&self, m: usize, n: usize) -> [usize; 2] {
        [self.row(m), self.col(n)]
    }

    /// Whether `THREADS` threads dealt `M × N` cells each cover a box of `shape` exactly once:
    /// `M` divides the rows, `N` the columns, and the grid of threads is the block.
    #[inline(always)]
    pub fn covers<const THREADS: usize>(shape: [usize; 2]) -> bool {
        const { assert!(M > 0 && N > 0, "a thread owns at least one cell") };
        shape[0].is_multiple_of(M)
            && shape[1].is_multiple_of(N)
            && (shape[0] / M).checked_mul(shape[1] / N) == Some(THREADS)
    }
}

#[cfg(test)]
mod tests {
    use super::Cells;

    /// Every element of the box, once: each thread's cells, over the block.
    fn dealt<const M: usize, const N: usize, const G: usize>(threads: usize, shape: [usize; 2]) -> Vec<usize> {
        let mut seen = vec![0usize; shape[0] * shape[1]];
        for t in 0..threads {
            let cells = Cells::<M, N, G>::of(t, shape);
            for m in 0..M {
                for n in 0..N {
                    let [r, c] = cells.index(m, n);
                    assert!(r < shape[0] && c < shape[1], "thread {t} cell [{m}, {n}] at [{r}, {c}]");
                    seen[r * shape[1] + c] += 1;
                }
            }
        }
        seen
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn a_box_the_block_covers_is_dealt_once_per_element() {
        assert!(Cells::<8, 8>::covers::<256>([128, 128]));
        assert!(dealt::<8, 8, 1>(256, [128, 128]).iter().all(|&n| n == 1));
        assert!(Cells::<4, 2>::covers::<32>([16, 16]));
        assert!(dealt::<4, 2, 1>(32, [16, 16]).iter().all(|&n| n == 1));
        assert!(Cells::<1, 1>::covers::<64>([8, 8]));
        assert!(dealt::<1, 1, 1>(64, [8, 8]).iter().all(|&n| n == 1));
        assert!(Cells::<2, 8>::covers::<32>([64, 8]));
        assert!(dealt::<2, 8, 1>(32, [64, 8]).iter().all(|&n| n == 1));
    }

    #[test]
    fn neighbouring_threads_take_neighbouring_columns() {
        let (a, b) = (Cells::<8, 8>::of(4, [128, 128]), Cells::<8, 8>::of(5, [128, 128]));
        assert_eq!((a.row(0), a.col(0)), (0, 4));
        assert_eq!((b.row(0), b.col(0)), (0, 5));
        assert_eq!((a.row(1), a.col(1)), (16, 20));
        assert_eq!(Cells::<8, 8>::of(16, [128, 128]).index(0, 0), [1, 0]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn runs_of_columns_are_dealt_once_per_element_and_side_by_side() {
        assert!(dealt::<8, 8, 4>(256, [128, 128]).iter().all(|&n| n == 1));
        assert!(dealt::<4, 8, 2>(64, [32, 64]).iter().all(|&n| n == 1));
        assert!(dealt::<4, 4, 2>(32, [16, 32]).iter().all(|&n| n == 1));
        // Thread 17 of a 128 × 128 box (16 threads across, runs of 4): rows 4..8, then 68..72;
        // columns 4..8, then 68..72.
        let cells = Cells::<8, 8, 4>::of(17, [128, 128]);
        let rows: Vec<usize> = (0..8).map(|m| cells.row(m)).collect();
        let cols: Vec<usize> = (0..8).map(|n| cells.col(n)).collect();
        assert_eq!(rows, [4, 5, 6, 7, 68, 69, 70, 71]);
        assert_eq!(cols, [4, 5, 6, 7, 68, 69, 70, 71]);
        assert_eq!(cells.distance(5, 1), [65, 1]);
        assert_eq!(Cells::<8, 8, 4>::of(1, [128, 128]).index(0, 0), [0, 4]);
    }

    #[test]
    fn boxes_the_block_does_not_cover_are_told_apart() {
        // Not a multiple of the cells, another block size, an empty box.
        assert!(!Cells::<8, 8>::covers::<256>([128, 120]));
        assert!(!Cells::<8, 8>::covers::<128>([128, 128]));
        assert!(!Cells::<8, 8>::covers::<256>([64, 128]));
        assert!(!Cells::<8, 8>::covers::<256>([0, 0]));
        // Cells whose count overflows `usize` to the block's size cover nothing.
        assert!(!Cells::<1, 1>::covers::<256>([(1 << 62) + 64, 4]));
    }
}
