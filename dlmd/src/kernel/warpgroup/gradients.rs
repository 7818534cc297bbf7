//! Attention's backward pass over a warpgroup's accumulators: the probabilities recomputed from
//! the scores and the saved log-sum-exp ([`Warpgroup::recompute_probs`]), and the scores'
//! gradient `dS = P ∘ (dP − Δ)` ([`Warpgroup::softmax_grad`]), with a statistic of each query
//! broadcast along the accumulators' rows ([`RowValues`], where rows are queries: the queries'
//! gradient) or along their columns ([`ColValues`], where the tiles are transposed and rows
//! are keys: the keys' and values' gradients). [`Queries`] says which queries of a transposed
//! tile each key row is seen by.

use super::accumulators::{Accumulators, Cols, Width};
use super::roles::Warpgroup;
use super::row_values::RowValues;
use super::softmax::Keys;
use crate::access::RefAccess;
use crate::extents::Extents;
use crate::layout::Layout;
use crate::space::Reachable;
use crate::view::Mdspan;
use core::marker::PhantomData;

/// A value for each of the `N` columns of a warpgroup's `64 × N` accumulators, for the
/// consumer call `'c`: each thread holds those of its columns (`8 j + 2 (l % 4)` and `+ 1`),
/// as the eight threads that hold a column do. Made by [`Warpgroup::cols`] or
/// [`Warpgroup::cols_from`].
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub struct ColValues<'c, const N: usize> {
    values: [f32; 64],
    call: PhantomData<(&'c (), *mut u8)>,
}

mod sealed {
    pub trait Sealed {}

    /// The per-thread side of [`Broadcast`](super::Broadcast), out of safe code's reach: a
    /// thread's value would let code branch where the warpgroup must run alike.
    pub trait At<W> {
        /// The value of the element in place `i` of this thread's accumulators.
        fn at(&self, i: usize) -> f32;
    }
}

/// A value for each row or each column of a warpgroup's accumulators of width `W`:
/// [`RowValues`] (any width) or [`ColValues`] of `W`'s columns. No accessor: the values are
/// the threads' own, read only by the operations that take them.
pub trait Broadcast<W: Width>: sealed::At<W> {}

impl<W: Width> sealed::At<W> for RowValues<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> f32 {
        self.values[(i / 2) % 2]
    }
}
impl<W: Width> Broadcast<W> for RowValues<'_> {}

impl<const N: usize> sealed::At<Cols<N>> for ColValues<'_, N>
where
    Cols<N>: Width,
{
    #[inline(always)]
    fn at(&self, i: usize) -> f32 {
        self.values[(2 * (i / 4) + i % 2) % 64]
    }
}
impl<const N: usize> Broadcast<Cols<N>> for ColValues<'_, N> where Cols<N>: Width {}

/// Which element of a warpgroup's tile of scores counts: a query sees a key ([`Keys`], rows
/// are queries) or a key is seen by a query ([`Queries`], rows are keys).
pub trait Visible: sealed::Sealed {
    /// The columns `lo .. hi` of row `r` (`0..64`) of the warpgroup's `64 × N` that count,
    /// from the tile's first, each at most `cols`: one interval a row, which a thread compares
    /// each of its columns with.
    #[doc(hidden)]
    fn columns(&self, r: usize, cols: usize) -> (u32, u32);
}

impl sealed::Sealed for Keys {}
impl Visible for Keys {
    #[inline(always)]
    fn columns(&self, r: usize, cols: usize) -> (u32, u32) {
        let seen = self.seen_by(self.row0().saturating_add(r));
        (0, seen.saturating_sub(self.col0()).min(cols) as u32)
    }
}

/// Which queries of a transposed tile of scores (`Sᵀ = K · Qᵀ`: rows are keys, columns
/// queries) see each key row of a warpgroup's part: query `i` sees key `j` where `i < seq_q`,
/// `j < seq_k` and, if causal, `j ≤ i + seq_k − seq_q`, as [`Keys`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queries {
    /// The index in its sequence of the warpgroup's first key row.
    row0: usize,
    /// The index in its sequence of the tile's first query.
    col0: usize,
    seq_q: usize,
    keys: Keys,
}

impl Queries {
    /// The queries of the tile from query `col0` for the key rows from `row0`, in sequences
    /// of `seq_q` queries and `seq_k` keys.
    #[inline(always)]
    pub fn new(row0: usize, col0: usize, seq_q: usize, seq_k: usize, causal: bool) -> Self {
        Queries {
            row0,
            col0,
            seq_q,
            keys: Keys::new(0, 0, seq_q, seq_k, causal),
        }
    }

    /// Whether query `i` (in its sequence) sees key `j`.
    #[inline(always)]
    pub fn sees(&self, i: usize, j: usize) -> bool {
        i < self.seq_q && self.keys.sees(i, j)
    }

    /// The first tile of `rows` queries that any of the key rows from `row0` is seen by, and
    /// the tiles of the sequence: the tiles of queries a part of keys loops over.
    #[inline(always)]
    pub fn tiles(row0: usize, rows: usize, seq_q: usize, seq_k: usize, causal: bool) -> (usize, usize) {
        let all = seq_q.div_ceil(rows.max(1));
        if !causal {
            return (0, all);
        }
        // Key `j` is seen from query `j + seq_q − seq_k` on.
        let first = row0.saturating_add(seq_q).saturating_sub(seq_k) / rows.max(1);
        (first.min(all), all)
    }
}

impl sealed::Sealed for Queries {}
impl Visible for Queries {
    #[inline(always)]
    fn columns(&self, r: usize, cols: usize) -> (u32, u32) {
        let first = self.keys.first_seeing(self.row0.saturating_add(r));
        let at = |i: usize| i.saturating_sub(self.col0).min(cols) as u32;
        (at(first), at(self.keys.seq_q()))
    }
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// A value for each of the warpgroup's 64 rows: `f(r)` for row `r` (`0..64`), computed by
    /// the threads that hold the row (a query's saved statistic, read from a view).
    #[inline(always)]
    pub fn rows(&self, f: impl Fn(usize) -> f32 + Sync) -> RowValues<'c> {
        let (warp, lane) = (self.thread / 32, self.thread % 32);
        let mut values = [0.0f32; 2];
        crate::unroll!(2, |h| {
            values[h] = f(16 * warp + lane / 4 + 8 * h);
        });
        RowValues {
            values,
            call: PhantomData,
        }
    }

    /// A value for each of the `N` columns of the warpgroup's `64 × N` accumulators: `f(c)`
    /// for column `c` (`0..N`), computed by the threads that hold the column.
    #[inline(always)]
    pub fn cols<const N: usize>(&self, f: impl Fn(usize) -> f32 + Sync) -> ColValues<'c, N>
    where
        Cols<N>: Width,
    {
        let lane = self.thread % 32;
        let mut values = [0.0f32; 64];
        crate::unroll!(16, |a| {
            crate::unroll!(4, |b| {
                let i = 4 * a + b;
                if i < N / 4 {
                    values[i] = f(8 * (i / 2) + 2 * (lane % 4) + i % 2);
                }
            });
        });
        ColValues {
            values,
            call: PhantomData,
        }
    }

    /// A value for each of the `N` columns of the warpgroup's `64 × N` accumulators read from
    /// a run of `view` along its last dimension: column `c` is the element at `index` with
    /// `c` added to its last index, or `fill` where that index is at or past `end` or past the
    /// view's extent (a saved statistic of each query of a transposed tile, with the queries
    /// past a sequence read as `fill`). As [`cols`](Self::cols) with `f(c)` reading
    /// `view.get(…)`, in fewer instructions: where the run is whole inside the view and its
    /// elements are neighbours, each thread finds its first column's address once and the
    /// others at fixed distances from it. A view of rank 0 has no last dimension: every column
    /// is `fill`.
    #[inline(always)]
    pub fn cols_from<const N: usize, E, L, S, A>(
        &self,
        view: &Mdspan<'_, f32, E, L, S, A>,
        index: E::Index,
        end: usize,
        fill: f32,
    ) -> ColValues<'c, N>
    where
        Cols<N>: Width,
        E: Extents,
        L: Layout,
        S: Reachable<A>,
        A: RefAccess,
    {
        #[cfg(target_arch = "nvptx64")]
        {
            use crate::layout::Mapping;
            let lane = self.thread % 32;
            let mut values = [fill; 64];
            let Some(last) = E::RANK.checked_sub(1) else {
                // Rank 0: one element, no run along a last dimension.
                return ColValues {
                    values,
                    call: PhantomData,
                };
            };
            let start = index.as_ref()[last];
            let mapping = view.mapping();
            let mut run_end = index;
            let whole = match start.checked_add(N - 1) {
                Some(stop) if stop < end => {
                    run_end.as_mut()[last] = stop;
                    mapping.contains(&run_end) && mapping.stride(last) == 1
                }
                _ => false,
            };
            if whole {
                // The run's first element, and this thread's first column (`2 (l % 4)`).
                let first = view
                    .as_ptr()
                    .wrapping_add(mapping.offset_of(&index))
                    .wrapping_add(2 * (lane % 4));
                crate::unroll!(16, |a| {
                    crate::unroll!(4, |b| {
                        let i = 4 * a + b;
                        if i < N / 4 {
                            // SAFETY: column `8 (i / 2) + 2 (l % 4) + i % 2` of the run, below
                            // `N`: the index and the run's last are inside the extents
                            // (checked), so is every index between them, whose elements are
                            // neighbours (stride 1 along the last dimension) from `index`'s;
                            // initialised `f32`s of a reference view, which nothing writes
                            // while it is borrowed (in a kernel, device memory is reached only
                            // through read-only views, kept unwritten while the kernel runs).
                            values[i] = unsafe { first.wrapping_add(8 * (i / 2) + i % 2).read() };
                        }
                    });
                });
            } else {
                crate::unroll!(16, |a| {
                    crate::unroll!(4, |b| {
                        let i = 4 * a + b;
                        if i < N / 4 {
                            let c = 8 * (i / 2) + 2 * (lane % 4) + i % 2;
                            let mut at = index;
                            values[i] = match start.checked_add(c) {
                                Some(col) if col < end => {
                                    at.as_mut()[last] = col;
                                    view.get(at).copied().unwrap_or(fill)
                                }
                                _ => fill,
                            };
                        }
                    });
                });
            }
            ColValues {
                values,
                call: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, index, end, fill);
            self.never()
        }
    }

    /// The probabilities of a tile of scores `s`, recomputed from each query's log-sum-exp
    /// `lse` (as the forward pass saved it): `e^(s · scale − lse)` where `visible` says the
    /// element counts, 0 elsewhere (and where `lse` is `+∞`: a query that saw no key).
    /// `scale_log2` is the softmax scale times `log2 e`; `lse` is broadcast along the rows
    /// where rows are queries ([`RowValues`]) or along the columns where they are keys
    /// ([`ColValues`]).
    #[inline(always)]
    pub fn recompute_probs<T: super::WgmmaInput, W: Width>(
        &self,
        s: Accumulators<T, W>,
        lse: &impl Broadcast<W>,
        scale_log2: f32,
        visible: &impl Visible,
    ) -> Accumulators<T, W> {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut regs = s.regs;
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            // The columns each of the thread's two rows counts: two 32-bit comparisons a
            // score.
            let mut bounds = [(0u32, 0u32); 2];
            crate::unroll!(2, |h| {
                bounds[h] = visible.columns(16 * warp + lane / 4 + 8 * h, W::N);
            });
            crate::unroll!(16, |a| {
                crate::unroll!(8, |b| {
                    let i = 8 * a + b;
                    if i < W::N / 2 {
                        let c = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                        let (lo, hi) = bounds[(i / 2) % 2];
                        let base = sealed::At::<W>::at(lse, i) * core::f32::consts::LOG2_E;
                        let x = W::get(&regs, i);
                        let p = if c >= lo && c < hi {
                            crate::kernel::math::exp2(crate::kernel::math::mul_add(x, scale_log2, -base))
                        } else {
                            0.0
                        };
                        W::set(&mut regs, i, p);
                    }
                });
            });
            Accumulators::of(regs)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (s, lse, scale_log2, visible);
            self.never()
        }
    }

    /// The scores' gradient `dS = P ∘ (dP − Δ)` from the probabilities `p`, their gradient
    /// `dp` (`dO · Vᵀ`, or its transpose), and each query's `Δ = Σ dO ∘ O` (`delta`,
    /// broadcast along the rows or the columns as for
    /// [`recompute_probs`](Self::recompute_probs)).
    #[inline(always)]
    pub fn softmax_grad<T: super::WgmmaInput, W: Width>(
        &self,
        p: &Accumulators<T, W>,
        dp: Accumulators<T, W>,
        delta: &impl Broadcast<W>,
    ) -> Accumulators<T, W> {
        let mut regs = dp.regs;
        crate::unroll!(16, |a| {
            crate::unroll!(8, |b| {
                let i = 8 * a + b;
                if i < W::N / 2 {
                    let x = W::get(&regs, i);
                    W::set(&mut regs, i, W::get(&p.regs, i) * (x - sealed::At::<W>::at(delta, i)));
                }
            });
        });
        Accumulators::of(regs)
    }
}

#[cfg(test)]
mod tests {
    use super::{Queries, Visible};
    use crate::kernel::warpgroup::Keys;

    /// Each row's interval of columns holds exactly the elements whose query sees their key,
    /// rows queries ([`Keys`]) or keys ([`Queries`]), on tiles across the diagonal and the
    /// sequences' ends.
    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn each_rows_columns_are_what_its_queries_see() {
        for (seq_q, seq_k) in [(1, 1), (200, 77), (77, 200), (300, 300), (5, 0), (0, 5)] {
            for causal in [false, true] {
                for (row0, col0) in [(0, 0), (64, 0), (0, 128), (128, 64), (192, 256)] {
                    let keys = Keys::new(row0, col0, seq_q, seq_k, causal);
                    let queries = Queries::new(row0, col0, seq_q, seq_k, causal);
                    for r in 0..64 {
                        let (lo, hi) = keys.columns(r, 128);
                        let (qlo, qhi) = queries.columns(r, 64);
                        for c in 0..128u32 {
                            let sees = keys.sees(row0 + r, col0 + c as usize);
                            assert_eq!(c >= lo && c < hi, sees, "keys: row {r}, column {c}");
                            if c < 64 {
                                let seen = queries.sees(col0 + c as usize, row0 + r);
                                assert_eq!(c >= qlo && c < qhi, seen, "queries: row {r}, column {c}");
                            }
                        }
                    }
                }
            }
        }
    }
}
