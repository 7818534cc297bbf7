//! A value for each of a warpgroup's 64 rows ([`RowValues`]), held as its accumulators' rows
//! are, and written to a chunk of a view of rows' values ([`Warpgroup::store_rows`]): the
//! log-sum-exp of attention's softmax beside its output.

use super::roles::Warpgroup;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::kernel::block::{Chunk, ValuesOfRows};
use crate::layout::Layout;
use core::marker::PhantomData;

/// A value for each row of a warpgroup's `64 × N` accumulators, for the consumer call `'c`:
/// each thread holds those of its two rows (`16 w + l / 4` and `+ 8`), as the four threads of
/// its quad do. Made by [`RowStats::finish_with_lse`](super::RowStats::finish_with_lse);
/// written by [`Warpgroup::store_rows`].
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[must_use = "the rows' values are written by `Warpgroup::store_rows`"]
pub struct RowValues<'c> {
    pub(super) values: [f32; 2],
    pub(super) call: PhantomData<(&'c (), *mut u8)>,
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Writes each row's value `f(index, value)` to row `r` of `part` (along its last
    /// dimension: `[0, …, 0, r]` of its box, `index` the index in the whole view), one thread
    /// of the warpgroup each, where that is inside the part (nothing past the view's edge,
    /// nothing where the part is empty). The part is what
    /// [`Chunk::split_rows`] gives of the warpgroup's part of a chunk
    /// ([`Chunks::with_rows`](crate::kernel::block::Chunks::with_rows)): the values of the
    /// rows it writes.
    #[inline(always)]
    pub fn store_rows<U, F, M, Sp>(
        &mut self,
        part: Chunk<'_, U, F, M, Sp, ValuesOfRows>,
        values: RowValues<'c>,
        f: impl Fn(F::Index, f32) -> U + Sync,
    ) where
        U: DlElement,
        F: Extents,
        M: Layout,
        Sp: KernelSpace,
    {
        const { assert!(F::RANK >= 1, "rows' values are stored to a view of rank 1 or more") };
        #[cfg(target_arch = "nvptx64")]
        {
            use crate::extents::IndexArray;
            let mut part = part;
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            // The first thread of each quad: the four hold the same rows.
            if lane % 4 == 0 {
                crate::unroll!(2, |h| {
                    let mut local = F::Index::zeros();
                    local.as_mut()[F::RANK - 1] = 16 * warp + lane / 4 + 8 * h;
                    let value = values.values[h];
                    // SAFETY: the warpgroup's threads hold its 64 rows once each, and of the four
                    // that hold a row only the first writes; the part is the warpgroup's own (a
                    // specialisation's rows of a chunk of the block's, paired with them).
                    unsafe { part.put_one(local, |index, _| f(index, value)) };
                });
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (part, values, f);
            self.never()
        }
    }
}
