//! [`Block::specialise_streams`]: a block's producer and consumer warpgroups over a
//! [`Streams`] set, its barrier objects made and unmade around them.

#[cfg(target_arch = "nvptx64")]
use super::super::roles::ROWS;
use super::super::roles::Warpgroup;
#[cfg(target_arch = "nvptx64")]
use super::Spots;
use super::{Counts, Resident2, StreamConsumer, StreamProducer, Streamed, Streams};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::kernel::block::{Block, Chunk, Chunks, CutBy, Rows, TileSet};
use crate::kernel::warpgroup::Operand;
use crate::layout::Layout;
#[cfg(target_arch = "nvptx64")]
use core::marker::PhantomData;

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// [`specialise`](Block::specialise) over a [`Streams`] set: for each of the block's
    /// `chunks`, the producer (the first warpgroup's first thread) runs `producer(p, origin)`,
    /// which fills the resident tile and the streams' stages ([`StreamProducer`]), and each
    /// consumer warpgroup runs `consumer(wg, c, part)` on its 128 threads, taking the tiles as
    /// they land ([`StreamConsumer`]) and writing its part of the chunk (its rows
    /// `64 · index .. 64 · (index + 1)`). The producer fills ahead from one chunk to the next
    /// as far as the consumers' releases allow; before this returns, every copy has landed and
    /// every product is done. Registers are split between the roles as for `specialise`.
    ///
    /// Every consumer should take every tile the producer fills, in each slot, and the
    /// producer fill as many as they take; otherwise a role waits forever, but no tile is read
    /// before it lands or refilled while it is read.
    #[inline(always)]
    pub fn specialise_streams<const STAGES: usize, R, S0, S1, R2, T, E, L, Sp, V, P, Q>(
        &mut self,
        tiles: &mut Streamed<'k, STAGES, R, S0, S1, R2>,
        chunks: Chunks<'_, T, E, L, Sp, V>,
        producer: P,
        consumer: Q,
    ) where
        R: Operand,
        S0: Operand,
        S1: Operand,
        R2: Resident2,
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
        V: Rows,
        E::Index: CutBy<C>,
        P: for<'c> Fn(&mut StreamProducer<'c, STAGES, R, S0, S1, R2>, E::Index) + Sync,
        Q: for<'c, 'v> Fn(
                &mut Warpgroup<'c, THREADS>,
                &mut StreamConsumer<'c, STAGES, R, S0, S1, R2>,
                Chunk<'v, T, E, L, Sp, V>,
            ) + Sync,
    {
        const {
            assert!(
                THREADS.is_multiple_of(128) && THREADS >= 256,
                "a specialised block has a producer warpgroup and at least one consumer: a multiple of 128 threads, from 256"
            );
            assert!(
                E::RANK >= 2,
                "a specialised block's chunks are rows of a matrix: a view of rank 2 or more"
            );
            assert!(
                <E::Index as CutBy<C>>::ONE_MATRIX,
                "a specialised block's chunk is part of one matrix: its sides before the last two are `Const<1>`"
            );
            assert!(
                matches!(<E::Index as CutBy<C>>::MATRIX_ROWS, Some(rows) if rows <= super::super::roles::ROWS * (THREADS / 128 - 1)),
                "a specialised block's chunk is a constant number of rows, at most 64 for each consumer warpgroup"
            );
        };
        let _ = Streams::<STAGES, R, S0, S1, R2>::TOTAL;
        let start = Counts {
            resident: 0,
            streams: [0, 0],
        };
        #[cfg(target_arch = "nvptx64")]
        {
            use super::super::raw;
            let spots = Spots::of(tiles);
            let consumer_warps = (4 * (THREADS / 128 - 1)) as u32;
            super::super::roles::roles!(
                THREADS,
                self.min_blocks() == 1,
                |t| {
                    if t == 0 {
                        for (bar, count) in spots.barriers(consumer_warps) {
                            // SAFETY: 8-aligned words past the tiles, no barrier objects
                            // now (never initialised, or invalidated at the end of the last
                            // specialisation); `roles` orders this before every use.
                            unsafe { raw::mbarrier_init(bar, count) };
                        }
                    }
                },
                || {
                    let mut p = StreamProducer {
                        spots,
                        counts: start,
                        call: PhantomData,
                    };
                    for chunk in chunks {
                        producer(&mut p, chunk.origin());
                    }
                    // Every copy lands before the block goes on: the last fill of each
                    // slot (the earlier ones completed before it was refilled).
                    let last = |which: Option<usize>, slots: usize, filled: usize| {
                        for k in filled.saturating_sub(slots)..filled {
                            // SAFETY: an initialised barrier object; its phase `k / slots`
                            // completes once fill `k` has landed.
                            unsafe { raw::mbarrier_wait(spots.pair(which, k % slots).0, ((k / slots) % 2) as u32) };
                        }
                    };
                    last(None, 1, p.counts.resident);
                    last(Some(0), STAGES, p.counts.streams[0]);
                    last(Some(1), STAGES, p.counts.streams[1]);
                },
                |index, thread| {
                    let mut wg = Warpgroup {
                        index,
                        thread,
                        buffer: 0,
                        call: PhantomData,
                    };
                    let mut c = StreamConsumer {
                        spots,
                        counts: start,
                        call: PhantomData,
                    };
                    for chunk in chunks {
                        consumer(&mut wg, &mut c, chunk.lines(ROWS * index, ROWS));
                    }
                },
                |t| {
                    if t == 0 {
                        for (bar, _) in spots.barriers(consumer_warps) {
                            // SAFETY: the barrier objects of this specialisation, which
                            // nothing uses any more (`roles`: every copy landed, the
                            // producer waited, the roles joined).
                            unsafe { raw::mbarrier_inval(bar) };
                        }
                    }
                }
            );
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // The roles' code, compiled on the host too (never run), as for `specialise`.
            type ProducerRole<P, const STAGES: usize, R, S0, S1, R2> =
                for<'c> fn(&P, &mut StreamProducer<'c, STAGES, R, S0, S1, R2>);
            type ConsumerRole<Q, const THREADS: usize, const STAGES: usize, R, S0, S1, R2, T, E, L, Sp, V> =
                for<'c, 'v> fn(
                    &Q,
                    &mut Warpgroup<'c, THREADS>,
                    &mut StreamConsumer<'c, STAGES, R, S0, S1, R2>,
                    Chunk<'v, T, E, L, Sp, V>,
                );
            let _produce: ProducerRole<P, STAGES, R, S0, S1, R2> =
                |p, producer| p(producer, crate::extents::IndexArray::zeros());
            let _consume: ConsumerRole<Q, THREADS, STAGES, R, S0, S1, R2, T, E, L, Sp, V> =
                |q, wg, consumer, part| q(wg, consumer, part);
            let _ = (tiles, chunks, producer, consumer, start);
            self.never_on_host()
        }
    }
}
