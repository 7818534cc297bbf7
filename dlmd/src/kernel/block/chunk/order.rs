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

/// `index` of a grid of `counts` chunks with its chunk row (the dimension before the last,
/// of ranks 2 and more) counted from the last: a one-to-one map of the grid onto itself.
/// Other ranks (which `LastRowsFirst` refuses) are left as they are.
#[inline(always)]
pub(super) fn last_rows_first<E: Extents>(mut index: E::Index, counts: &E::Index) -> E::Index {
    if let Some(dim) = E::RANK.checked_sub(2) {
        let (at, count) = (index.as_ref()[dim], counts.as_ref()[dim]);
        // Below the count for a number of the grid; one past it (never asked for) stays past.
        index.as_mut()[dim] = if at < count { count - 1 - at } else { at };
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
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn last_rows_first_covers_the_grid_once() {
        for counts in [[1, 1, 1, 1], [2, 3, 5, 1], [1, 4, 32, 1], [3, 1, 7, 2], [2, 2, 1, 3]] {
            let total: usize = counts.iter().product();
            let mut seen = vec![false; total];
            for n in 0..total {
                let index = last_rows_first::<Dims<4>>(grid_index::<Dims<4>, LayoutRight>(n, &counts), &counts);
                assert!((0..4).all(|d| index[d] < counts[d]), "{counts:?}: {n} -> {index:?}");
                let flat = ((index[0] * counts[1] + index[1]) * counts[2] + index[2]) * counts[3] + index[3];
                assert!(!seen[flat], "{counts:?}: {index:?} twice");
                seen[flat] = true;
            }
        }
        for group in [1, 2, 3] {
            let mut seen = [false; 15];
            for n in 0..15 {
                let [r, c] =
                    last_rows_first::<Dims<2>>(grouped_index::<Dims<2>, LayoutRight>(n, &[5, 3], group), &[5, 3]);
                assert!(r < 5 && c < 3 && !seen[r * 3 + c], "group {group}: {n} -> ({r}, {c})");
                seen[r * 3 + c] = true;
            }
        }
    }

    #[test]
    fn the_last_chunk_rows_come_first() {
        // 2 heads of 3 chunk rows: each head's rows from the last, the heads in order.
        let order: Vec<[usize; 3]> = (0..6)
            .map(|n| last_rows_first::<Dims<3>>(grid_index::<Dims<3>, LayoutRight>(n, &[2, 3, 1]), &[2, 3, 1]))
            .collect();
        assert_eq!(
            order,
            [[0, 2, 0], [0, 1, 0], [0, 0, 0], [1, 2, 0], [1, 1, 0], [1, 0, 0]]
        );
        // A vector is left in its order.
        assert_eq!(last_rows_first::<Dims<1>>([3], &[5]), [3]);
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
