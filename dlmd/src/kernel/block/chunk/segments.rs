//! A view's rows in segments of different lengths, one after another (the sequences of a
//! batch packed together, as `cu_seqlens` describes them): the chunks of each segment, none
//! reaching into the next ([`Chunks::in_segments`]).

use super::Chunks;
use crate::dtype::DlElement;
use crate::extents::{Dims, Extents};
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::space::Reachable;
use crate::view::{Mdspan, Shared};
use core::marker::PhantomData;

/// The segments of a view's rows, from their offsets: segment `i` is rows `offsets[i] ..
/// offsets[i + 1]`, of `count() + 1` offsets (`cu_seqlens` of a packed batch). Made by
/// [`new`](Self::new), which reads every offset and takes them only where they are `0` or more
/// and never decrease, so that no two segments share a row.
#[derive(Clone, Copy, Debug)]
pub struct Segments<'s> {
    /// Offset `0`, and the distance in elements from one offset to the next (checked for
    /// every offset by `new`).
    first: *const i32,
    stride: isize,
    count: usize,
    /// The largest segment's length, found as `new` reads the offsets.
    longest: usize,
    view: PhantomData<&'s [i32]>,
}

// SAFETY: a `Segments` only reads its offsets, which `new` took from a read-only view: sending
// it to or sharing it with other threads shares nothing else.
unsafe impl Send for Segments<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Segments<'_> {}

/// One segment of [`Segments`]: the `index`-th, rows `start .. start + len` of the view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Which segment: `0 .. count()`.
    pub index: usize,
    /// Its first row.
    pub start: usize,
    /// Its number of rows (0 for an empty segment).
    pub len: usize,
}

impl<'s> Segments<'s> {
    /// The segments between consecutive `offsets` (at least one of them; `n + 1` for `n`
    /// segments). `None` where an offset is negative or smaller than the one before it. Each
    /// thread that makes one reads every offset once: the offsets of a batch of sequences are
    /// a few hundred bytes, which the first thread's reads bring into cache for the others.
    ///
    /// Reading is all it does: safe anywhere. Cutting a view's chunks along the segments
    /// ([`Chunks::in_segments`]) asks more of where the offsets come from.
    #[inline(always)]
    pub fn new<L: Layout, S: Reachable<Shared>>(offsets: Mdspan<'s, i32, Dims<1>, L, S, Shared>) -> Option<Self> {
        let n = offsets.extents().to_array()[0];
        // The address of offset 0, with the provenance of the whole view (a reference to one
        // element reaches that element alone).
        let first = (offsets.data_handle() as *const i32).with_addr((offsets.get([0])? as *const i32).addr());
        let stride = match offsets.get([1]) {
            Some(second) => (second as *const i32 as isize).wrapping_sub(first as isize) / size_of::<i32>() as isize,
            None => 0,
        };
        let (mut last, mut longest) = (0i32, 0usize);
        for i in 0..n {
            let at = offsets.get([i])?;
            // Every offset where `offset` later reads it: `first + i · stride`.
            if !core::ptr::eq(at, first.wrapping_offset(stride.wrapping_mul(i as isize))) || *at < last {
                return None;
            }
            if i > 0 {
                longest = longest.max((*at - last) as usize);
            }
            last = *at;
        }
        Some(Segments {
            first,
            stride,
            count: n - 1,
            longest,
            view: PhantomData,
        })
    }

    /// The number of segments.
    #[inline(always)]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The row past the last segment's (the last offset).
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.offset(self.count)
    }

    /// Segment `index`, or `None` past the last.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<Segment> {
        if index >= self.count {
            return None;
        }
        let start = self.offset(index);
        Some(Segment {
            index,
            start,
            len: self.offset(index + 1) - start,
        })
    }

    /// The segment that holds `row`, or `None` where no segment does (past the end, or before
    /// the first offset). Halves the segments until one is left: `log₂ count` reads.
    #[inline(always)]
    pub fn containing(&self, row: usize) -> Option<Segment> {
        if row < self.offset(0) || row >= self.end() {
            return None;
        }
        // The last offset at or before `row`: offsets[low] ≤ row < offsets[high].
        let (mut low, mut high) = (0, self.count);
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.offset(mid) <= row {
                low = mid;
            } else {
                high = mid;
            }
        }
        self.get(low)
    }

    /// The largest segment's length (a packed batch's `max_seqlen`).
    #[inline(always)]
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// Offset `i` (the last for `i` past `count`), which `new` found to be `0` or more.
    #[inline(always)]
    fn offset(&self, i: usize) -> usize {
        let i = i.min(self.count);
        // SAFETY: `new` read every offset `0 ..= count` through the view and found each at
        // `first + i · stride`, an element of the view, borrowed for `'s`, which nobody writes
        // (`new`'s contract with its caller); `i ≤ count` (above).
        let value = unsafe { *self.first.wrapping_offset(self.stride.wrapping_mul(i as isize)) };
        value as usize
    }
}

/// A [`Chunks`] cut along segments: the segments, whose chunks along the rows are numbered
/// by where each segment starts (see [`rows`](Self::rows)).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cut<'s> {
    pub(super) segments: Segments<'s>,
}

impl Cut<'_> {
    /// How many chunk numbers the rows take, in chunks of `side` rows (more than 0): the
    /// [`first_number`](Self::first_number) of a segment past the last. Bounded by the
    /// segments' rows and their number, whatever their lengths: many empty segments beside a
    /// long one take a number each, not the long one's chunks each.
    #[inline(always)]
    pub(super) fn numbers(&self, side: usize) -> usize {
        self.first_number(self.segments.count(), side.max(1))
    }

    /// The first chunk number of segment `i` (`i ≤ count`; `side` more than 0): the chunks of
    /// the whole rows from the first offset's to its first row's, plus `i`. Rises by at least
    /// one from each segment to the next, and by at least as many as a segment has chunks:
    /// segment `i` of `len` rows from row `start` has `⌈len / side⌉ ≤ ⌊(start + len) / side⌋ −
    /// ⌊start / side⌋ + 1` of them.
    #[inline(always)]
    fn first_number(&self, i: usize, side: usize) -> usize {
        // The offsets never decrease (`Segments::new`): no wrap.
        self.segments.offset(i) / side - self.segments.offset(0) / side + i
    }

    /// The rows of chunk number `n` along the rows (of the [`numbers`](Self::numbers)), in
    /// chunks of `side` rows: its first row and number of rows, and its segment; `None` for a
    /// number that holds no chunk. Segment `i` has the numbers from its
    /// [`first_number`](Self::first_number), one for each chunk, which end at or before the
    /// next segment's first: the segment of `n` is found by halving (`log₂ count` reads of
    /// the offsets). The chunks of a segment cover its rows once, and no chunk holds rows of
    /// two: the segments share none.
    #[inline(always)]
    pub(super) fn rows(&self, n: usize, side: usize) -> Option<(usize, usize, Segment)> {
        let side = side.max(1);
        let count = self.segments.count();
        if count == 0 {
            return None;
        }
        // The last segment whose first number is at or below `n`: first(low) ≤ n < first(high)
        // (or `high` is `count`).
        let (mut low, mut high) = (0, count);
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.first_number(mid, side) <= n {
                low = mid;
            } else {
                high = mid;
            }
        }
        let here = self.segments.get(low)?;
        let first = (n - self.first_number(low, side)).saturating_mul(side);
        (first < here.len).then(|| (here.start + first, side.min(here.len - first), here))
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace> Chunks<'v, T, E, L, S> {
    /// The chunks of each segment of the view's rows (the dimension before the last), in
    /// place of the chunks of the whole rows: segment `i`'s rows `start .. start + len` cut
    /// from its start into the shape's side, its last chunk cut short at its end, so that no
    /// chunk holds rows of two segments. A chunk's [`segment`](super::Chunk::segment) says
    /// which it is of. The rows' chunks are numbered by where each segment starts: the chunks
    /// of the whole rows from the first offset to the last and one more for each segment,
    /// however long the longest is (a number past a segment's chunks holds none, and is
    /// skipped). `None` where the segments end past the view's rows, or where chunks
    /// were taken already (the cut renumbers them). The other dimensions are cut as before,
    /// and the chunks are dealt to the blocks as before.
    ///
    /// ```ignore
    /// // o: 1 × h × total × d, the sequences packed along its rows; cu_seqlens: b + 1 offsets,
    /// // a kernel parameter.
    /// let segments = Segments::new(cu_seqlens)?;
    /// // SAFETY: every thread of the launch makes `segments` from the same parameter.
    /// let chunks = unsafe { block.chunks(o).in_segments(segments) }?;
    /// ```
    ///
    /// # Safety
    ///
    /// Every thread of every block of the launch cuts this view along the same segments: made
    /// by [`Segments::new`] from the same offsets, a kernel parameter (or a view of one) that
    /// nothing writes while the kernel runs, chosen by no value that differs from thread to
    /// thread or block to block. The chunk shape is the block's type, the same everywhere; the
    /// offsets are values, which the compiler cannot see are: two blocks that cut one view
    /// along different offsets own overlapping chunks, and two threads of a block write one
    /// element.
    #[inline(always)]
    pub unsafe fn in_segments(self, segments: Segments<'v>) -> Option<Self> {
        const {
            assert!(
                E::RANK >= 2,
                "segments are of a view's rows: the view is of rank 2 or more"
            );
        };
        // Chunk numbers of the whole rows are not those of the segments': none may be taken.
        if self.next >= self.step {
            return None;
        }
        let dim = E::RANK - 2;
        let rows = crate::layout::Mapping::extents(&self.mapping).to_array().as_ref()[dim];
        let side = self.shape.as_ref()[dim];
        if side == 0 || segments.end() > rows {
            return None;
        }
        let cut = Cut { segments };
        let mut counts = self.counts;
        counts.as_mut()[dim] = cut.numbers(side);
        // A grid too large to number is refused, not wrapped: chunk numbers map one to one onto
        // the grid's indices only where its size fits.
        let total = counts
            .as_ref()
            .iter()
            .try_fold(1usize, |total, &count| total.checked_mul(count))?;
        Some(Chunks {
            counts,
            total,
            cut: Some(cut),
            ..self
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Cut, Segment, Segments};
    use crate::extents::Dims;
    use crate::layout::{LayoutStride, Mapping};
    use crate::view::Mdspan;
    use proptest::prelude::*;

    fn segments(offsets: &[i32]) -> Option<Segments<'_>> {
        Segments::new(Mdspan::<i32, Dims<1>>::from_slice(offsets, Dims([offsets.len()])).unwrap())
    }

    #[test]
    fn offsets_that_never_decrease_from_zero_make_segments() {
        let s = segments(&[0, 3, 3, 10]).unwrap();
        assert_eq!((s.count(), s.end(), s.longest()), (3, 10, 7));
        assert_eq!(
            s.get(0),
            Some(Segment {
                index: 0,
                start: 0,
                len: 3
            })
        );
        assert_eq!(
            s.get(1),
            Some(Segment {
                index: 1,
                start: 3,
                len: 0
            })
        );
        assert_eq!(s.get(3), None);
        // Row 3 is the empty segment's start and the next one's first row: the next one's.
        assert_eq!(s.containing(3).map(|s| s.index), Some(2));
        assert_eq!(s.containing(9).map(|s| s.index), Some(2));
        assert_eq!(s.containing(0).map(|s| s.index), Some(0));
        assert_eq!(s.containing(10), None);
        // One offset: no segment. Starting past 0: rows before it are no segment's.
        assert_eq!(segments(&[5]).map(|s| (s.count(), s.end())), Some((0, 5)));
        assert_eq!(segments(&[2, 4]).unwrap().containing(1), None);
    }

    #[test]
    fn negative_decreasing_or_no_offsets_are_refused() {
        for bad in [&[-1, 3][..], &[0, 5, 4], &[0, 2, 1, 8], &[]] {
            assert!(segments(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn strided_offsets_are_read_where_the_view_has_them() {
        // Every other element of the slice: 0, 4, 9 (the others would decrease).
        let data = [0, 99, 4, -7, 9];
        let mapping =
            <LayoutStride as crate::layout::Layout>::Mapping::<Dims<1>>::from_strides(Dims([3]), &[2], 0).unwrap();
        let view = Mdspan::<i32, Dims<1>, LayoutStride>::from_slice_mapping(&data, mapping).unwrap();
        let s = Segments::new(view).unwrap();
        assert_eq!((s.count(), s.end()), (2, 9));
        assert_eq!(
            s.get(1),
            Some(Segment {
                index: 1,
                start: 4,
                len: 5
            })
        );
        assert_eq!(mapping.required_span_size(), 5);
    }

    #[test]
    fn many_empty_segments_number_no_more_chunks_than_they_hold() {
        // 1 000 empty sequences and one of 1 000 rows: 1 000 / 128 + 1 001 numbers, not
        // 1 001 times the long one's 8 chunks; each row in one chunk, each chunk found.
        let mut offsets = vec![0i32; 1_001];
        offsets.push(1_000);
        let cut = Cut {
            segments: segments(&offsets).unwrap(),
        };
        assert_eq!(cut.numbers(128), 1_000 / 128 + 1_001);
        let chunks: Vec<_> = (0..cut.numbers(128)).filter_map(|n| cut.rows(n, 128)).collect();
        assert_eq!(chunks.len(), 8);
        for (i, &(start, rows, segment)) in chunks.iter().enumerate() {
            assert_eq!((start, rows, segment.index), (128 * i, 128.min(1_000 - 128 * i), 1_000));
        }
        // Numbered from the first offset: rows before it take no number.
        let late = [5_000, 5_000, 5_300];
        let cut = Cut {
            segments: segments(&late).unwrap(),
        };
        assert_eq!(cut.numbers(128), 5_300 / 128 - 5_000 / 128 + 2);
        assert_eq!(cut.rows(0, 128), None);
        assert_eq!(
            cut.rows(1, 128).map(|(start, rows, _)| (start, rows)),
            Some((5_000, 128))
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 8 } else { 256 },
            // Miri isolates the test from the file system, where failures would be kept.
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]

        #[test]
        fn chunks_cover_each_segment_once_and_none_two(
            lead in 0usize..300,
            lengths in proptest::collection::vec(0usize..300, 0..12),
            side in 1usize..200,
        ) {
            let mut offsets = vec![lead as i32];
            for len in &lengths {
                offsets.push(offsets.last().unwrap() + *len as i32);
            }
            let segments = segments(&offsets).unwrap();
            let cut = Cut { segments };
            let end = segments.end();
            let mut owner = vec![None; end];
            // Past the numbers, no chunk (the chunks are dealt from these numbers alone).
            for n in cut.numbers(side)..cut.numbers(side) + 3 {
                prop_assert!(cut.rows(n, side).is_none(), "a chunk at number {} of {}", n, cut.numbers(side));
            }
            for n in 0..cut.numbers(side) {
                if let Some((start, rows, segment)) = cut.rows(n, side) {
                    prop_assert!(rows > 0 && rows <= side && start + rows <= segment.start + segment.len);
                    for (row, owned) in owner.iter_mut().enumerate().skip(start).take(rows) {
                        prop_assert!(owned.is_none(), "row {} in two chunks", row);
                        *owned = Some(segment.index);
                    }
                }
            }
            for (i, len) in lengths.iter().enumerate() {
                let start = offsets[i] as usize;
                prop_assert!(owner[start..start + len].iter().all(|o| *o == Some(i)));
            }
        }
    }
}
