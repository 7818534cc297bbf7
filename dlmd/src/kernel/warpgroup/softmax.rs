//! The online softmax of attention, row by row over a warpgroup's accumulators: [`RowStats`]
//! keeps each query row's running maximum and sum of exponentials across tiles of keys,
//! turns each tile's scores into [`Probs`] (with the correction that rescales what was summed
//! before), and divides the output by the sum at the end. [`Keys`] says which keys of a tile a
//! query row sees: all, those before the sequence's end, or those a causal mask leaves.

use super::accumulators::{Accumulators, Cols, Width};
use super::roles::Warpgroup;
use super::row_values::RowValues;
#[cfg(target_arch = "nvptx64")]
use crate::kernel::math::{exp2, log2, mul_add, rcp};
use core::marker::PhantomData;

/// The keys of a tile of scores: `128` columns.
const KEYS: usize = 128;

/// Which keys of a tile of scores each query row of a warpgroup's part sees: key `j` (its index
/// in the sequence) by query `i` where `j < seq_k` and, if causal, `j ≤ i + seq_k − seq_q`
/// (aligned to the bottom right, as FlashAttention from 2.1 and torch's `is_causal` with
/// equal lengths). The others' scores count as `−∞`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys {
    /// The index in its sequence of the warpgroup's first query row.
    row0: usize,
    /// The index in its sequence of the tile's first key.
    col0: usize,
    seq_q: usize,
    seq_k: usize,
    causal: bool,
}

impl Keys {
    /// The keys of the tile from key `col0` for the query rows from `row0`, in sequences of
    /// `seq_q` queries and `seq_k` keys.
    #[inline(always)]
    pub fn new(row0: usize, col0: usize, seq_q: usize, seq_k: usize, causal: bool) -> Self {
        Keys {
            row0,
            col0,
            seq_q,
            seq_k,
            causal,
        }
    }

    /// The index in its sequence of the warpgroup's first query row.
    #[inline(always)]
    pub(super) fn row0(&self) -> usize {
        self.row0
    }

    /// The index in its sequence of the tile's first key.
    #[inline(always)]
    pub(super) fn col0(&self) -> usize {
        self.col0
    }

    /// Whether query `i` (in its sequence) sees key `j`.
    #[inline(always)]
    pub fn sees(&self, i: usize, j: usize) -> bool {
        j < self.seen_by(i)
    }

    /// The keys query `i` sees: keys `0 .. seen_by(i)` (`seq_k`, or fewer where causal).
    #[inline(always)]
    pub fn seen_by(&self, i: usize) -> usize {
        if self.causal {
            // `j + seq_q ≤ i + seq_k`: `j` below `i + 1 + seq_k − seq_q`, each step exact or
            // saturated past `seq_k` (where the bound is `seq_k` either way).
            let (q, k) = (self.seq_q, self.seq_k);
            let bound = if k >= q {
                i.saturating_add(1).saturating_add(k - q)
            } else {
                i.saturating_add(1).saturating_sub(q - k)
            };
            bound.min(k)
        } else {
            self.seq_k
        }
    }

    /// The first query that sees key `j`: queries `first_seeing(j) .. seq_q` do (none where
    /// `j` is past the keys).
    #[inline(always)]
    pub(super) fn first_seeing(&self, j: usize) -> usize {
        if j >= self.seq_k {
            self.seq_q
        } else if self.causal {
            // `j + seq_q ≤ i + seq_k`: `i` from `j + seq_q − seq_k` (below `seq_q`: `j < seq_k`).
            if self.seq_q >= self.seq_k {
                j + (self.seq_q - self.seq_k)
            } else {
                j.saturating_sub(self.seq_k - self.seq_q)
            }
        } else {
            0
        }
    }

    /// The queries of the sequence.
    #[inline(always)]
    pub(super) fn seq_q(&self) -> usize {
        self.seq_q
    }

    /// Whether each of the 64 rows sees each of the tile's keys: no score is masked.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    #[inline(always)]
    fn whole(&self) -> bool {
        self.seen_by(self.row0).saturating_sub(self.col0) >= KEYS
    }

    /// The tiles of `128` keys that a part of `rows` query rows from `row0` sees at all.
    #[inline(always)]
    pub fn tiles(row0: usize, rows: usize, seq_q: usize, seq_k: usize, causal: bool) -> usize {
        Self::tiles_of(KEYS, row0, rows, seq_q, seq_k, causal)
    }

    /// The tiles of `cols` keys that a part of `rows` query rows from `row0` sees at all.
    #[inline(always)]
    pub fn tiles_of(cols: usize, row0: usize, rows: usize, seq_q: usize, seq_k: usize, causal: bool) -> usize {
        let last = if causal {
            row0.saturating_add(rows)
                .saturating_add(seq_k)
                .saturating_sub(seq_q)
                .min(seq_k)
        } else {
            seq_k
        };
        last.div_ceil(cols.max(1))
    }
}

/// The running maximum and sum of exponentials of the two query rows that each thread of a
/// warpgroup holds of its accumulators (rows `16 w + l / 4` and `+ 8`), for the consumer call
/// `'c`. No accessor: statistics meet only the accumulators of the warpgroup that made them,
/// whose rows are the same in every width.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub struct RowStats<'c> {
    max: [f32; 2],
    sum: [f32; 2],
    /// The scale (times `log2 e`) of the last [`update`](Self::update): the one the
    /// log-sum-exp is in.
    scale_log2: f32,
    thread: usize,
    call: PhantomData<(&'c (), *mut u8)>,
    /// None on the host, where no warpgroup runs.
    #[cfg(not(target_arch = "nvptx64"))]
    never: core::convert::Infallible,
}

/// A tile's probabilities `P = 2^(S · scale − max)`, `64 × 128` over the warpgroup's threads as
/// its scores were, and the correction `2^(old max − new max)` of each of the thread's rows:
/// what [`Warpgroup::mma_pv`] multiplies by `V`, after rescaling the output. No accessor.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub struct Probs<'c, T> {
    pub(super) p: [f32; 64],
    pub(super) correction: [f32; 2],
    kind: PhantomData<(&'c (), T, *mut u8)>,
}

#[cfg(target_arch = "nvptx64")]
/// `body` for `i` in `0..n`, written out (at most 64).
macro_rules! each {
    ($n:expr, |$i:ident| $body:block) => {
        crate::unroll!(8, |outer| {
            crate::unroll!(8, |inner| {
                let $i = 8 * outer + inner;
                if $i < $n $body
            });
        })
    };
}

#[cfg(target_arch = "nvptx64")]
/// One lane's `value` swapped with lane `lane ^ mask`'s.
#[inline(always)]
fn swap(value: f32, mask: u32) -> f32 {
    // SAFETY: every lane of the warp runs this (a warpgroup's uniform code).
    unsafe { super::raw::shuffle_xor(value, mask) }
}

#[cfg(target_arch = "nvptx64")]
/// `f` over the four lanes that hold a row (`l / 4` alike).
#[inline(always)]
fn quad(value: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let value = f(value, swap(value, 1));
    f(value, swap(value, 2))
}

impl<'c> RowStats<'c> {
    /// Statistics of no key yet: maximum `−∞`, sum 0.
    #[inline(always)]
    pub fn new<const THREADS: usize>(wg: &Warpgroup<'c, THREADS>) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            RowStats {
                max: [f32::NEG_INFINITY; 2],
                sum: [0.0; 2],
                scale_log2: 0.0,
                thread: wg.thread,
                call: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        wg.never()
    }

    /// Takes a tile of scores `S` (`64 × 128`, keys as `keys` says, the others `−∞`) into the
    /// statistics: the new maximum of each row, the probabilities `2^(S · scale_log2 − max ·
    /// scale_log2)` and the correction of the earlier sum and output. `scale_log2` is the
    /// softmax scale times `log2 e`, positive.
    #[inline(always)]
    pub fn update<T>(&mut self, s: Accumulators<T, Cols<128>>, scale_log2: f32, keys: Keys) -> Probs<'c, T>
    where
        T: super::WgmmaInput,
    {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut x = s.regs;
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            if !keys.whole() {
                // Each of the thread's two rows sees the tile's keys below a bound (at most the
                // tile's 128): one 32-bit comparison a score, in place.
                let mut until = [0u32; 2];
                crate::unroll!(2, |h| {
                    let row = keys.row0.saturating_add(16 * warp + lane / 4 + 8 * h);
                    until[h] = keys.seen_by(row).saturating_sub(keys.col0).min(KEYS) as u32;
                });
                each!(64, |i| {
                    let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                    if col >= until[(i / 2) % 2] {
                        x[i] = f32::NEG_INFINITY;
                    }
                });
            }
            let mut max = self.max;
            each!(64, |i| {
                let h = (i / 2) % 2;
                max[h] = max[h].max(x[i]);
            });
            let mut correction = [0.0; 2];
            let mut base = [0.0; 2];
            crate::unroll!(2, |h| {
                max[h] = quad(max[h], f32::max);
                // A row with no key seen yet subtracts 0, not `−∞` (which would make NaNs).
                base[h] = if max[h] == f32::NEG_INFINITY {
                    0.0
                } else {
                    max[h] * scale_log2
                };
                correction[h] = if self.max[h] == f32::NEG_INFINITY {
                    0.0
                } else {
                    exp2(mul_add(self.max[h], scale_log2, -base[h]))
                };
            });
            let mut p = [0.0f32; 64];
            let mut sum = [0.0f32; 2];
            each!(64, |i| {
                let h = (i / 2) % 2;
                p[i] = exp2(mul_add(x[i], scale_log2, -base[h]));
                sum[h] += p[i];
            });
            crate::unroll!(2, |h| {
                self.sum[h] = mul_add(self.sum[h], correction[h], sum[h]);
            });
            self.max = max;
            self.scale_log2 = scale_log2;
            Probs {
                p,
                correction,
                kind: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (s, scale_log2, keys);
            match self.never {}
        }
    }

    /// The output divided row by row by the sum of its probabilities (rows that saw no key
    /// stay 0), with the statistics done.
    #[inline(always)]
    pub fn finish<T: super::WgmmaInput, W: Width>(self, o: Accumulators<T, W>) -> Accumulators<T, W> {
        #[cfg(target_arch = "nvptx64")]
        {
            Self::divide(o, self.sums())
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = o;
            match self.never {}
        }
    }

    /// [`finish`](Self::finish), and each row's log-sum-exp: `ln Σⱼ e^(sⱼ · scale)` over the
    /// keys the row saw, in the scale of the last [`update`](Self::update) (one scale for all
    /// of a row's tiles, as a softmax has), `+∞` for a row that saw none (as FlashAttention's:
    /// a backward pass's `e^(s · scale − lse)` is then 0).
    #[inline(always)]
    pub fn finish_with_lse<T: super::WgmmaInput, W: Width>(
        self,
        o: Accumulators<T, W>,
    ) -> (Accumulators<T, W>, RowValues<'c>) {
        #[cfg(target_arch = "nvptx64")]
        {
            let sums = self.sums();
            let mut lse = [f32::INFINITY; 2];
            crate::unroll!(2, |h| {
                if sums[h] > 0.0 {
                    // In base 2, then to base e: ln x = log₂ x · ln 2.
                    lse[h] = mul_add(self.max[h], self.scale_log2, log2(sums[h])) * core::f32::consts::LN_2;
                }
            });
            let values = RowValues {
                values: lse,
                call: PhantomData,
            };
            (Self::divide(o, sums), values)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = o;
            match self.never {}
        }
    }

    /// Each of the thread's rows' sum, over the four threads that hold the row.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn sums(&self) -> [f32; 2] {
        let mut sums = [0.0f32; 2];
        crate::unroll!(2, |h| {
            sums[h] = quad(self.sum[h], |a, b| a + b);
        });
        sums
    }

    /// `o` divided row by row by `sums` (0 where a sum is).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn divide<T: super::WgmmaInput, W: Width>(o: Accumulators<T, W>, sums: [f32; 2]) -> Accumulators<T, W> {
        let mut regs = o.regs;
        let mut scale = [0.0f32; 2];
        crate::unroll!(2, |h| {
            scale[h] = if sums[h] > 0.0 { rcp(sums[h]) } else { 0.0 };
        });
        crate::unroll!(16, |ga| {
            crate::unroll!(8, |gb| {
                let i = 8 * ga + gb;
                if i < W::N / 2 {
                    let x = W::get(&regs, i);
                    W::set(&mut regs, i, x * scale[(i / 2) % 2]);
                }
            });
        });
        Accumulators::of(regs)
    }
}

#[cfg(test)]
mod tests {
    use super::{KEYS, Keys};

    /// What a query sees, by the definition: a key before the sequence's end and, if causal,
    /// not past the query's diagonal aligned to the bottom right.
    fn defined(i: usize, j: usize, seq_q: usize, seq_k: usize, causal: bool) -> bool {
        j < seq_k && (!causal || j + seq_q <= i + seq_k)
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn a_query_sees_the_keys_below_its_bound() {
        for (seq_q, seq_k) in [(1, 1), (5, 3), (3, 5), (130, 129), (0, 4), (4, 0), (200, 200)] {
            for causal in [false, true] {
                let keys = Keys::new(0, 0, seq_q, seq_k, causal);
                for i in 0..seq_q + 2 {
                    for j in 0..seq_k + 2 {
                        assert_eq!(
                            keys.sees(i, j),
                            defined(i, j, seq_q, seq_k, causal),
                            "query {i}, key {j} of {seq_q} × {seq_k}, causal {causal}"
                        );
                    }
                    let seen = (0..seq_k + 2).filter(|&j| defined(i, j, seq_q, seq_k, causal)).count();
                    assert_eq!(keys.seen_by(i), seen);
                }
            }
        }
    }

    /// Near the end of `usize`, where the definition's sums would overflow: exact there too.
    #[test]
    fn the_bounds_hold_at_the_end_of_usize() {
        const M: usize = usize::MAX;
        // Exact, in 128 bits.
        let defined = |i: usize, j: usize, q: usize, k: usize, causal: bool| {
            j < k && (!causal || j as u128 + q as u128 <= i as u128 + k as u128)
        };
        for (q, k) in [(1, M), (1 << 63, 1 << 63), (M, 2), (M, M), (M - 5, M - 3), (3, 5)] {
            for causal in [false, true] {
                let keys = Keys::new(0, 0, q, k, causal);
                for i in [0, 1, 2, q / 2, q - 1, q.saturating_add(1), M - 1, M] {
                    for j in [0, 1, 2, k / 2, k - 1, k.saturating_add(1), M - 1, M] {
                        assert_eq!(
                            keys.sees(i, j),
                            defined(i, j, q, k, causal),
                            "{i} {j} of {q} × {k}, {causal}"
                        );
                    }
                }
                // The first query that sees a key: it does, the one before does not.
                for j in [0, k / 2, k - 1] {
                    let first = keys.first_seeing(j);
                    assert!(
                        keys.sees(first, j) && (first == 0 || !keys.sees(first - 1, j)),
                        "key {j}"
                    );
                }
            }
        }
        // A tile whose keys would run past the end of `usize` is not whole.
        assert!(!Keys::new(0, M - 127, 1, M, false).whole());
        assert!(Keys::new(0, M - 128, 1, M, false).whole());
    }

    #[test]
    fn a_part_sees_the_tiles_up_to_its_last_rows_keys() {
        for (seq_q, seq_k) in [(1, 300), (300, 1), (257, 513), (128, 128), (1000, 130)] {
            for causal in [false, true] {
                let keys = Keys::new(0, 0, seq_q, seq_k, causal);
                for row0 in (0..seq_q).step_by(64) {
                    let last = (row0 + 64).min(seq_q) - 1;
                    let tiles = Keys::tiles(row0, 64, seq_q, seq_k, causal);
                    assert_eq!(tiles, keys.seen_by(last).div_ceil(KEYS), "rows from {row0}");
                    // Whole below the diagonal: the first row sees every key of the tile.
                    for n in 0..tiles {
                        let tile = Keys::new(row0, KEYS * n, seq_q, seq_k, causal);
                        assert_eq!(tile.whole(), (0..KEYS).all(|c| keys.sees(row0, KEYS * n + c)));
                    }
                }
            }
        }
    }
}
