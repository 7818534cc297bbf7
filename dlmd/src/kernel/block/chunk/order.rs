//! The order in which a view's chunks are numbered, and so dealt to the blocks: memory order,
//! or groups of chunk rows.

use crate::extents::{Extents, IndexArray};
use crate::layout::Layout;

/// `n` as an index of a rank-2 grid of `counts` chunks numbered in groups of `group` chunk rows
/// (along the slower dimension), each group column by column: chunks numbered together share
/// their rows' and columns' operands, which a matrix product's blocks then find in L2. Chunks
/// `0 .. total` map one to one onto the grid. Other ranks, or a group of one row, number in
/// memory order ([`grid_index`]).
#[inline(always)]
pub(super) fn grouped_index<E: Extents, L: Layout>(n: usize, counts: &E::Index, group: usize) -> E::Index {
    if E::RANK != 2 || group <= 1 {
        return grid_index::<E, L>(n, counts);
    }
    let (slow, fast) = if L::FIRST_FASTEST { (1, 0) } else { (0, 1) };
    let (rows, cols) = (counts.as_ref()[slow], counts.as_ref()[fast]);
    // No group larger than the grid: `group · cols` is then at most the number of chunks, which
    // fits `usize`, and so does every product below.
    let group = group.min(rows.max(1));
    let per_group = group * cols;
    let (g, within) = (n / per_group, n % per_group);
    // The last group may have fewer rows; a number past the grid (never asked for) lands past
    // its last row.
    let here = group.min(rows.saturating_sub(g * group)).max(1);
    let mut index = E::Index::zeros();
    index.as_mut()[slow] = g * group + within % here;
    index.as_mut()[fast] = within / here;
    index
}

/// `n` as an index of a grid of `counts` chunks numbered in memory order (the layout's fastest
/// dimension fastest), the slowest dimension taking what is left, however large.
#[inline(always)]
pub(super) fn grid_index<E: Extents, L: Layout>(n: usize, counts: &E::Index) -> E::Index {
    let rank = E::RANK;
    let mut index = E::Index::zeros();
    let mut rest = n;
    for step in 0..rank {
        let d = if L::FIRST_FASTEST { step } else { rank - 1 - step };
        let count = counts.as_ref()[d];
        // No division where it is not needed: the slowest dimension takes what is left, a
        // dimension of one chunk takes nothing (a kernel's whole-row chunks), and a number
        // below the count is its own digit.
        if step + 1 == rank {
            index.as_mut()[d] = rest;
        } else if count <= 1 {
            index.as_mut()[d] = 0;
        } else if rest < count {
            index.as_mut()[d] = rest;
            rest = 0;
        } else {
            index.as_mut()[d] = rest % count;
            rest /= count;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::Dims;
    use crate::layout::LayoutRight;

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn grouped_numbers_cover_the_grid_once() {
        for (rows, cols) in [(1, 1), (1, 7), (7, 1), (5, 3), (16, 32), (33, 5), (64, 32)] {
            for group in [1, 2, 3, 4, 8, 16, 40, usize::MAX, (1 << 63) + 1] {
                let mut seen = vec![false; rows * cols];
                for n in 0..rows * cols {
                    let [r, c] = grouped_index::<Dims<2>, LayoutRight>(n, &[rows, cols], group);
                    assert!(
                        r < rows && c < cols,
                        "{rows} x {cols}, group {group}: {n} -> ({r}, {c})"
                    );
                    assert!(!seen[r * cols + c], "{rows} x {cols}, group {group}: ({r}, {c}) twice");
                    seen[r * cols + c] = true;
                }
            }
        }
    }

    #[test]
    fn a_group_is_numbered_column_by_column() {
        // 4 x 3 chunks in groups of 2 rows: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2), then rows 2-3.
        let order: Vec<[usize; 2]> = (0..12)
            .map(|n| grouped_index::<Dims<2>, LayoutRight>(n, &[4, 3], 2))
            .collect();
        assert_eq!(&order[..6], &[[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]]);
        assert_eq!(order[6], [2, 0]);
    }
}
