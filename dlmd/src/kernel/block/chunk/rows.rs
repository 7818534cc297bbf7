//! A value for each row of a chunk, in a view of its own: the chunks of a view paired with the
//! chunks of a second view one rank lower, whose element `[i…, r]` belongs to row `[i…, r, ·]`
//! of the first (a softmax's log-sum-exp beside attention's output). Each row's value is
//! written by the block, and the warpgroup, that writes the row.

use super::{Chunk, Chunks};
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Mdspan, Unique};
use core::marker::PhantomData;

/// Proof that a call comes from this crate: the methods of [`Rows`] cut a view anywhere, so no
/// other code may call them.
pub struct Token(pub(super) ());

/// What a chunk carries beside its own elements: nothing (`()`), or the chunk of a view of its
/// rows' values ([`Chunks::with_rows`]), whose chunks carry [`ValuesOfRows`]. Implemented by
/// those three alone: its methods take a `Token`, which no other crate can name or make.
pub trait Rows: Sized {
    /// The rows of the chunk of box `shape` at `origin` of the paired view (of rank one more):
    /// its box's leading sides and origin, and none where the chunk does not start at column 0
    /// (so that of the chunks side by side along a row, one writes its value).
    #[doc(hidden)]
    fn at(&self, origin: &[usize], shape: &[usize], token: Token) -> Self;

    /// Rows `first .. first + count` of these, as `Chunk::lines` cuts the paired chunk.
    #[doc(hidden)]
    fn cut(self, first: usize, count: usize, token: Token) -> Self;
}

impl Rows for () {
    #[inline(always)]
    fn at(&self, _: &[usize], _: &[usize], _: Token) -> Self {}

    #[inline(always)]
    fn cut(self, _: usize, _: usize, _: Token) -> Self {}
}

/// The mark, in its type, of a chunk of rows' values, which [`Chunk::split_rows`] gives (the
/// mark alone makes no chunk; anyone may name it): a value for each row, written by [`Warpgroup::store_rows`](crate::kernel::warpgroup::Warpgroup::store_rows)
/// from the statistics of the rows, never by the stores of a block's or a warpgroup's elements
/// (which take chunks that carry nothing, `()`), so that no row's value lands in another place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValuesOfRows;

impl Rows for ValuesOfRows {
    #[inline(always)]
    fn at(&self, _: &[usize], _: &[usize], _: Token) -> Self {
        ValuesOfRows
    }

    #[inline(always)]
    fn cut(self, _: usize, _: usize, _: Token) -> Self {
        self
    }
}

impl<U: DlElement, F: Extents, M: Layout, S: KernelSpace> Rows for Chunk<'_, U, F, M, S, ValuesOfRows> {
    #[inline(always)]
    fn at(&self, origin: &[usize], shape: &[usize], _: Token) -> Self {
        let rank = F::RANK;
        let mut at = F::Index::zeros();
        let mut side = F::Index::zeros();
        for d in 0..rank {
            at.as_mut()[d] = origin.get(d).copied().unwrap_or(0);
            side.as_mut()[d] = shape.get(d).copied().unwrap_or(0);
        }
        // The paired chunk's columns start at `origin[rank]`: one chunk of each row carries it.
        if origin.get(rank).is_some_and(|&column| column != 0)
            && let Some(last) = rank.checked_sub(1)
        {
            side.as_mut()[last] = 0;
        }
        Chunk {
            data: self.data,
            mapping: self.mapping,
            origin: at,
            shape: side,
            rows: ValuesOfRows,
            segment: None,
            view: PhantomData,
        }
    }

    #[inline(always)]
    fn cut(self, first: usize, count: usize, _: Token) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let (origin, shape) = Self::cut_along(
                &self.mapping,
                self.origin,
                self.shape,
                F::RANK.wrapping_sub(1),
                first,
                count,
            );
            Chunk { origin, shape, ..self }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (first, count);
            self
        }
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace> Chunks<'v, T, E, L, S> {
    /// The chunks paired with the chunks of `rows`, a view of a value for each of this view's
    /// rows: `rows` is of rank one less, and its extents are this view's but the last. Each
    /// chunk then carries the chunk of `rows` of its own rows, which
    /// [`Chunk::split_rows`] hands out: the same origin and box but the last side; empty where
    /// the chunk does not start at column 0, so that each row's value is one block's to write
    /// however many chunks span a row. `None` where the extents differ. The values are written
    /// by the warpgroups of a specialised block
    /// ([`Warpgroup::store_rows`](crate::kernel::warpgroup::Warpgroup::store_rows)).
    ///
    /// ```ignore
    /// // o: b × h × s × d, lse: b × h × s; chunks of (1, 1, 128, d), each with 128 values.
    /// let Some(chunks) = block.chunks(o).with_rows(lse) else { return };
    /// ```
    // The two views' types, spelt out: an alias would hide which is which.
    #[allow(clippy::type_complexity)]
    #[inline(always)]
    pub fn with_rows<'r, U, F, M>(
        self,
        rows: Mdspan<'r, U, F, M, S, Unique>,
    ) -> Option<Chunks<'v, T, E, L, S, Chunk<'r, U, F, M, S, ValuesOfRows>>>
    where
        U: DlElement,
        F: Extents,
        M: Layout,
    {
        const {
            assert!(
                F::RANK + 1 == E::RANK,
                "a view of the rows' values is of rank one less than the view of the rows"
            );
            assert!(
                F::RANK >= 1,
                "a view of the rows' values has a dimension of rows: the view of the rows is of rank 2 or more"
            );
        };
        let theirs = rows.extents().to_array();
        if !self.extents_start_with(theirs.as_ref()) {
            return None;
        }
        Some(self.carrying(Chunk {
            data: rows.data_handle(),
            mapping: *rows.mapping(),
            origin: F::Index::zeros(),
            shape: theirs,
            rows: ValuesOfRows,
            segment: None,
            view: PhantomData,
        }))
    }
}

impl<'v, 'r, T, E, L, S, U, F, M> Chunk<'v, T, E, L, S, Chunk<'r, U, F, M, S, ValuesOfRows>>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
    U: DlElement,
    F: Extents,
    M: Layout,
{
    /// The chunk, and the chunk of its rows' values ([`Chunks::with_rows`]): each written by
    /// whoever writes the rows (a warpgroup's part of a chunk carries its own rows' values),
    /// the values by [`Warpgroup::store_rows`](crate::kernel::warpgroup::Warpgroup::store_rows)
    /// alone ([`ValuesOfRows`]).
    #[allow(clippy::type_complexity)]
    #[must_use]
    #[inline(always)]
    pub fn split_rows(self) -> (Chunk<'v, T, E, L, S>, Chunk<'r, U, F, M, S, ValuesOfRows>) {
        let Chunk {
            data,
            mapping,
            origin,
            shape,
            rows,
            segment,
            view,
        } = self;
        (
            Chunk {
                data,
                mapping,
                origin,
                shape,
                rows: (),
                segment,
                view,
            },
            rows,
        )
    }
}
