//! Where a chunk's sequence lies in attention's tensors: each batch entry a sequence of its
//! own, all of one length ([`Dense`]), or sequences of different lengths packed one after
//! another along the rows of one batch entry, from their cumulative lengths ([`Packed`],
//! `cu_seqlens` as `flash_attn_varlen_func` takes them). A kernel's chunks are rows of one
//! tensor (its "own": the queries for the forward pass and the queries' gradient, the keys for
//! the keys' gradient); the sequence of each also has rows of the "other" (its keys, or its
//! queries).

use dlmd::{Dims, LayoutStride};

/// The cumulative sequence lengths of a packed batch: `b + 1` `i32` offsets on the device.
pub type SeqOffsets<'a> = dlmd::DeviceMdspan<'a, i32, Dims<1>, LayoutStride>;

#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
pub(crate) use lengths::{Dense, Lengths, Sequence, packed};

/// What the kernels compile: the lengths, in kernel code only.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
mod lengths {
    use super::SeqOffsets;
    use dlmd::kernel::KernelSpace;
    use dlmd::kernel::block::{Chunks, Segment, Segments};
    use dlmd::{Dims, DlElement, LayoutStride};

    /// The sequence of a chunk: its own rows `own0 .. own0 + own_len` and its other rows `other0
    /// .. other0 + other_len`, in the tensors' rows.
    #[derive(Clone, Copy, Debug, Default)]
    pub(crate) struct Sequence {
        pub(crate) own0: usize,
        pub(crate) own_len: usize,
        pub(crate) other0: usize,
        pub(crate) other_len: usize,
    }

    /// How a kernel finds the sequence of each of its chunks, and cuts its output into them.
    pub(crate) trait Lengths: Copy + Sync {
        /// The sequence whose own rows hold `row` (a chunk's first).
        fn at(&self, row: usize) -> Sequence;

        /// The sequence of a chunk of `segment` (what the chunk says), else as [`at`](Self::at).
        fn of(&self, row: usize, segment: Option<Segment>) -> Sequence;

        /// The chunks of the kernel's output, cut along its sequences; `None` where they do not
        /// fit the output.
        fn cut<'v, T: DlElement, S: KernelSpace>(
            &self,
            chunks: Chunks<'v, T, Dims<4>, LayoutStride, S>,
        ) -> Option<Chunks<'v, T, Dims<4>, LayoutStride, S>>
        where
            Self: 'v;
    }

    /// Each batch entry one sequence: `own` rows and `other` rows.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Dense {
        pub(crate) own: usize,
        pub(crate) other: usize,
    }

    impl Lengths for Dense {
        #[inline(always)]
        fn at(&self, _: usize) -> Sequence {
            Sequence {
                own0: 0,
                own_len: self.own,
                other0: 0,
                other_len: self.other,
            }
        }

        #[inline(always)]
        fn of(&self, row: usize, _: Option<Segment>) -> Sequence {
            self.at(row)
        }

        #[inline(always)]
        fn cut<'v, T: DlElement, S: KernelSpace>(
            &self,
            chunks: Chunks<'v, T, Dims<4>, LayoutStride, S>,
        ) -> Option<Chunks<'v, T, Dims<4>, LayoutStride, S>>
        where
            Self: 'v,
        {
            Some(chunks)
        }
    }

    /// Sequences packed along the rows: the own rows in `own`'s segments, the other rows in
    /// `other`'s, segment by segment. Made by [`packed`] alone, from a kernel's parameters:
    /// what `cut` relies on.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Packed<'s> {
        own: Segments<'s>,
        other: Segments<'s>,
    }

    impl Packed<'_> {
        #[inline(always)]
        fn pair(&self, own: Segment) -> Sequence {
            let other = self.other.get(own.index).unwrap_or_default();
            Sequence {
                own0: own.start,
                own_len: own.len,
                other0: other.start,
                other_len: other.len,
            }
        }
    }

    impl Lengths for Packed<'_> {
        #[inline(always)]
        fn at(&self, row: usize) -> Sequence {
            self.pair(self.own.containing(row).unwrap_or_default())
        }

        #[inline(always)]
        fn of(&self, row: usize, segment: Option<Segment>) -> Sequence {
            match segment {
                Some(own) => self.pair(own),
                None => self.at(row),
            }
        }

        #[inline(always)]
        fn cut<'v, T: DlElement, S: KernelSpace>(
            &self,
            chunks: Chunks<'v, T, Dims<4>, LayoutStride, S>,
        ) -> Option<Chunks<'v, T, Dims<4>, LayoutStride, S>>
        where
            Self: 'v,
        {
            // SAFETY: `packed` made `own` from a kernel parameter, in every thread of the
            // launch alike (the kernels call it first thing, with their parameters, and with
            // nothing that differs between threads), and the kernels only read their offsets.
            unsafe { chunks.in_segments(self.own) }
        }
    }

    /// The packed lengths of `own` and `other`'s offsets: `None` where either is not offsets (a
    /// negative or decreasing one), they count different sequences, or `other`'s reach past
    /// `other_rows`.
    #[inline(always)]
    pub(crate) fn packed<'s>(own: SeqOffsets<'s>, other: SeqOffsets<'s>, other_rows: usize) -> Option<Packed<'s>> {
        let (own, other) = (Segments::new(own)?, Segments::new(other)?);
        (own.count() == other.count() && other.end() <= other_rows).then_some(Packed { own, other })
    }
}
