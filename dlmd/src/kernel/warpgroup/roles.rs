//! Warp specialisation: [`Block::specialise`] splits a block into the producer of a pipeline
//! and its consumer warpgroups, and the consumers' [`Warpgroup`] context, which issues
//! `wgmma`, waits for it and writes the accumulators to the warpgroup's part of a chunk.

use super::accumulators::{Accumulators, Issue, Retire, Width};
use super::pipeline::{Consumer, Full, Operand, Pipeline, Producer, Stages};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::kernel::block::{Block, Chunk, Chunks, CutBy, Rows, TileSet};
use crate::layout::Layout;
use core::marker::PhantomData;

/// The rows of the accumulators of one warpgroup (`wgmma`'s `m64`), and of its part of a chunk.
pub(super) const ROWS: usize = 64;

/// A consumer warpgroup of a specialised block ([`Block::specialise`]): 128 threads (four warps
/// in a row, the first a multiple of four) that run the consumer's code together. Its
/// operations are warpgroup-wide: only the consumer's code holds a `Warpgroup`, and it cannot
/// be captured by a per-thread closure (it is neither `Send` nor `Sync`).
pub struct Warpgroup<'c, const THREADS: usize> {
    /// The warpgroup's index among the consumers.
    pub(super) index: usize,
    /// The running thread's index in the warpgroup.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) thread: usize,
    /// The running warp's buffer (shared state space) where the pipeline is
    /// [`Buffered`](super::Buffered), else 0.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) buffer: u32,
    pub(super) call: PhantomData<(&'c mut (), *mut u8)>,
    /// None on the host, where no warpgroup runs.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(super) never: core::convert::Infallible,
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// The consumer warpgroups of a block of `THREADS` threads: all but the first (the
    /// producer's).
    pub const CONSUMERS: usize = THREADS / 128 - 1;

    /// The warpgroup's index among the consumers, from 0: the same for its 128 threads. Its
    /// `A` rows are the stage's `64 · index ..`, its part of the chunk those rows.
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.index
    }

    /// Accumulators that start from `f([i, j])` for each element `[i, j]` of the warpgroup's
    /// `64 × N` (its part's local index), each made by the thread that holds it: a bias, or `β ·
    /// c`, added before the products rather than after them, so that what `f` reads is loaded
    /// while the first stage lands, not in the epilogue. [`Accumulators::zero`] starts from 0.
    #[inline(always)]
    pub fn accumulators<T: super::WgmmaInput, W: Width>(
        &self,
        f: impl Fn([usize; 2]) -> f32 + Sync,
    ) -> Accumulators<T, W> {
        Accumulators::from_fn(self.thread, f)
    }

    /// Starts the products of one stage, `acc += a · b` over the stage's depth, `a` the
    /// warpgroup's 64 rows of the stage's `A` tile (`m × k`, K-major) and `b` its whole `B`
    /// tile, read as its type says ([`OperandB`](super::OperandB)): a plain tile is `n × k`
    /// (K-major: `x · wᵀ` of a `Linear` layer), a [`KByN`](super::KByN) tile `k × n`
    /// (MN-major: `x · b` with a row-major `b`). Returns the accumulators with one more group
    /// running, holding the stage: it is released only after a [`wait`](Self::wait) has seen
    /// the products done. `acc` is [`Accumulators`] or [`InFlight`](super::InFlight) (at most
    /// two groups run at once).
    ///
    /// The `A` tile has 64 rows for each consumer warpgroup and one 128-byte swizzled row of
    /// depth; the `B` tile the accumulators' columns and the same depth; both hold the
    /// accumulators' input type in the 128-byte swizzle (otherwise the kernel does not
    /// compile).
    #[inline(always)]
    pub fn mma<X, const STAGES: usize, A: Operand, B: Operand>(
        &mut self,
        acc: X,
        stage: Full<'c, STAGES, A, B>,
    ) -> X::Next
    where
        X: Issue<'c, STAGES, A, B>,
    {
        const {
            assert!(
                A::ROWS == ROWS * (THREADS / 128 - 1),
                "the `A` tile of a stage holds 64 rows for each consumer warpgroup"
            );
            assert!(
                A::COLS * size_of::<A::Element>() == 128,
                "the `A` tile of a stage is one 128-byte swizzled row deep (64 `bf16`s or `f16`s, 128 FP8s)"
            );
        };
        let () = X::CHECK;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw::descriptor_128;
            let places = stage.places;
            let a =
                descriptor_128(places.a(stage.stage) + (self.index * ROWS * A::COLS * size_of::<A::Element>()) as u32);
            let b = places.b(stage.stage);
            // SAFETY: all 128 threads of the warpgroup (the consumer's code, uniform in it), on
            // sm_90a (the kernel waits on bulk copies); the stage has landed (`Full`, through
            // the async proxy, as `wgmma` reads), its tiles are 1024-aligned and laid out in the
            // 128-byte swizzle as their types say (`A` rows of 128 bytes, `B` read by its
            // `OperandB` descriptor, of the same depth: `Issue`'s check), the warpgroup's 64
            // rows inside `A`'s (checked above); the stage is held by the result until a wait
            // sees these products done, so the producer does not refill it before.
            unsafe { acc.issue(a, b, stage) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (acc, stage);
            self.never()
        }
    }

    /// Waits for the products of `acc` that the warpgroup reads next, releases what they read,
    /// and returns them done: [`Accumulators`] from [`InFlight`](super::InFlight) or
    /// [`Running`](super::Running), which the warpgroup may then read;
    /// [`InFlight`](super::InFlight) from [`InFlight2`](super::InFlight2) (its older group
    /// done); and from [`Behind`](super::Behind) the older products' accumulators beside the
    /// younger product, still running.
    #[inline(always)]
    pub fn wait<X: Retire>(&mut self, acc: X) -> X::Done {
        // SAFETY: all 128 threads of the warpgroup, in its uniform code.
        unsafe { acc.retire() }
    }

    /// Writes the accumulators to the warpgroup's part of the chunk: element `[i, j]` of the
    /// `64 × N` as `f(index, value)` at `[i, j]` of `part`'s matrix (its last two dimensions;
    /// `index` the element's index in the whole view), by the thread that holds it, where that
    /// is inside the part and the view. Each thread holds its elements in pairs of neighbours
    /// along a row, which it writes with one store where the view's rows are contiguous.
    ///
    /// A view of rank 3 or more is a batch of matrices, and a part is rows of one of them
    /// where the block's chunk shape is 1 along the dimensions before the rows (`(Const<1>,
    /// Const<1>, Const<128>, Const<D>)` cuts a `b × h × s × d` view into 128 rows of a head).
    ///
    /// In a [`Buffered`](super::Buffered) pipeline, a part whole inside the view whose rows are
    /// contiguous and 16-byte aligned, of a two-byte element, goes through the warp's buffer
    /// and the bulk copy engine instead: the warpgroup returns once the copies have started.
    /// The store then syncs each warp, which its threads all reach: a role's code is uniform
    /// (the [module docs](super) say why).
    #[inline(always)]
    pub fn store<T, U, W, E, L, Sp>(
        &mut self,
        part: Chunk<'_, U, E, L, Sp>,
        acc: Accumulators<T, W>,
        f: impl Fn(E::Index, f32) -> U + Sync,
    ) where
        T: super::WgmmaInput,
        W: Width,
        U: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        const {
            assert!(
                E::RANK >= 2,
                "accumulators are stored to a matrix: a view of rank 2 or more"
            )
        };
        #[cfg(target_arch = "nvptx64")]
        {
            type Part<'p, U, E, L, Sp> = Chunk<'p, U, E, L, Sp>;
            let mut part = part;
            let shape = part.shape();
            let whole = Part::<U, E, L, Sp>::matrix_box(ROWS, W::N);
            if self.buffer != 0 && size_of::<U>() == 2 && W::N.is_multiple_of(64) && part.runs_whole(whole, 16) {
                // SAFETY: every thread of the warpgroup, in its uniform code, on sm_90 (it
                // issues `wgmma`); `buffer` is this warp's own (`specialise`), `U` two bytes,
                // `N` a multiple of 64 (checked) of at most 256 (`Width`), `held` the
                // accumulators' layout (warp `w`'s rows `16 w ..`), the part the warpgroup's
                // alone (`specialise`'s rows of a chunk of the block's), whole and in aligned
                // rows (checked).
                unsafe {
                    super::staging::store(
                        self.buffer,
                        W::N,
                        self.thread,
                        &mut part,
                        |i| acc.held(self.thread, i),
                        &f,
                    )
                };
                return;
            }
            if part.pairs_whole(whole) {
                // The common case: the whole `64 × N` inside the view, every pair one aligned
                // store. No branch between the elements, so that their `f`s overlap.
                crate::unroll!(16, |pa| {
                    crate::unroll!(4, |pb| {
                        let p = 4 * pa + pb;
                        if p < W::N / 4 {
                            let (local, a) = acc.held(self.thread, 2 * p);
                            let (_, b) = acc.held(self.thread, 2 * p + 1);
                            let at = Part::<U, E, L, Sp>::in_matrix(local);
                            let next = Part::<U, E, L, Sp>::in_matrix([local[0], local[1] + 1]);
                            let values = [f(part.index_of(at), a), f(part.index_of(next), b)];
                            // SAFETY: `pairs_whole` held for `64 × N` of the matrix; `local` is
                            // inside it, at an even column (`held`: `8 j + 2 (lane % 4)`); the
                            // accumulators' layout deals each element of the `64 × N` to one
                            // thread, and the part (the warpgroup's alone) holds the whole box,
                            // so both are this thread's.
                            unsafe { part.write_pair_whole(at, values) };
                        }
                    });
                });
                return;
            }
            // Each thread's pairs: pair `p = 2 j + h` is its two elements of row half `h` of
            // 8-column group `j`, each made and stored in turn. (Made all before any is stored,
            // the values of `64 × 256` accumulators spill: the registers are full.) Written out:
            // a loop the compiler kept would put the accumulators in local memory.
            crate::unroll!(16, |pa| {
                crate::unroll!(4, |pb| {
                    let p = 4 * pa + pb;
                    if p < W::N / 4 {
                        let (local, a) = acc.held(self.thread, 2 * p);
                        let (_, b) = acc.held(self.thread, 2 * p + 1);
                        let at = Part::<U, E, L, Sp>::in_matrix(local);
                        let (count, index) = part.pair_inside(at, shape);
                        if count > 0 {
                            let next = part.index_of(Part::<U, E, L, Sp>::in_matrix([local[0], local[1] + 1]));
                            // The second is made only where it is inside; else the first
                            // stands in for it, never stored.
                            let first = f(index, a);
                            let values = [first, if count > 1 { f(next, b) } else { first }];
                            // SAFETY: `count` is `pair_inside`'s for `at`; the accumulators'
                            // layout deals each element of the `64 × N` to one thread, and the
                            // part's box (at most 64 rows of one matrix, the warpgroup's
                            // alone) to this warpgroup, so the elements inside it are this
                            // thread's alone.
                            unsafe { part.write_pair(at, count, values) };
                        }
                    }
                });
            });
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (part, acc, f);
            self.never()
        }
    }

    /// [`store`](Self::store) that reads each element before it writes it:
    /// `f(index, value, old)`, as `C = α · A · B + β · C` asks.
    #[inline(always)]
    pub fn update<T, U, W, E, L, Sp>(
        &mut self,
        part: Chunk<'_, U, E, L, Sp>,
        acc: Accumulators<T, W>,
        f: impl Fn(E::Index, f32, U) -> U + Sync,
    ) where
        T: super::WgmmaInput,
        W: Width,
        U: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        const {
            assert!(
                E::RANK >= 2,
                "accumulators are stored to a matrix: a view of rank 2 or more"
            )
        };
        self.each_held(part, acc, |part, local, value| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `each_held` gives each element of the part to one thread.
            unsafe {
                part.update_one(local, |index, old| f(index, value, old))
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (part, local, value, &f);
        });
    }

    /// `g(part, local, value)` for each element this thread holds whose index `local` is
    /// inside the part's box: each element of the box is one thread's (the accumulators' layout
    /// deals the `64 × N` one to one, and the part's box is at most 64 rows).
    #[inline(always)]
    fn each_held<T, U, W, E, L, Sp>(
        &mut self,
        mut part: Chunk<'_, U, E, L, Sp>,
        acc: Accumulators<T, W>,
        g: impl Fn(&mut Chunk<'_, U, E, L, Sp>, E::Index, f32),
    ) where
        T: super::WgmmaInput,
        W: Width,
        U: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        let shape = part.shape();
        // Written out (a loop the compiler kept would put the accumulators in local memory):
        // 8-column group `j`, then its two rows `h` and two columns `e`.
        crate::unroll!(16, |ja| {
            crate::unroll!(2, |jb| {
                let j = 2 * ja + jb;
                if j < W::N / 8 {
                    crate::unroll!(4, |he| {
                        let (local, value) = acc.held(self.thread, 4 * j + he);
                        let at = Chunk::<'_, U, E, L, Sp>::in_matrix(local);
                        if Chunk::<'_, U, E, L, Sp>::inside(&at, &shape) {
                            g(&mut part, at, value);
                        }
                    });
                }
            });
        });
    }

    #[cfg(not(target_arch = "nvptx64"))]
    pub(super) fn never(&self) -> ! {
        match self.never {}
    }
}

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// Runs a pipeline over `stages` for each of the block's `chunks`, with the block's
    /// warpgroups in two roles, and returns when both are done with the last:
    ///
    /// - the first warpgroup's first thread is the **producer**: `producer(p, origin)` runs for
    ///   each chunk in turn, with the chunk's first index, and fills the stages from tensor maps
    ///   ([`Producer::load`]), each once its last readers have released it; the warpgroup's
    ///   other threads wait;
    /// - every other warpgroup is a **consumer**: `consumer(wg, c, part)` runs for each chunk on
    ///   its 128 threads together, with its [`Warpgroup`], its side of the pipeline
    ///   ([`Consumer::wait`] gives it the stages as they land) and its part of the chunk, the
    ///   chunk's rows `64 · index .. 64 · (index + 1)`, which it writes its accumulators to.
    ///
    /// The roles go at their own pace: while the consumers write one chunk, the producer is
    /// already filling the stages for the next (the pipeline and its phases run on from chunk to
    /// chunk). The block is a multiple of 128 threads, from 256, and each stage's `A` tile holds
    /// 64 rows for each consumer (otherwise the kernel does not compile). Every consumer should
    /// take every stage the producer fills, and the producer fill as many as they take: a
    /// consumer waiting for a stage that is never filled, or a producer for one never released,
    /// waits forever. Before it returns, every copy has landed and every product is done, so
    /// `stages` may run another pipeline.
    ///
    /// In a kernel that declares `min_blocks_per_sm = 1`, the roles also split the block's
    /// registers while they run: the producer warpgroup gives its threads' down to 40, and the
    /// consumers take what that frees (232 a thread in a block of 384), as `setmaxnreg` does in
    /// CUDA C++; every warpgroup has its registers at launch again before this returns.
    #[inline(always)]
    pub fn specialise<const STAGES: usize, A, B, T, E, L, Sp, V, P, Q>(
        &mut self,
        stages: &mut Stages<'k, STAGES, A, B>,
        chunks: Chunks<'_, T, E, L, Sp, V>,
        producer: P,
        consumer: Q,
    ) where
        A: Operand,
        B: Operand,
        T: DlElement,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
        V: Rows,
        E::Index: CutBy<C>,
        P: for<'c> Fn(&mut Producer<'c, STAGES, A, B>, E::Index) + Sync,
        Q: for<'c, 'v> Fn(&mut Warpgroup<'c, THREADS>, &mut Consumer<'c, STAGES, A, B>, Chunk<'v, T, E, L, Sp, V>)
            + Sync,
    {
        const {
            assert!(
                THREADS.is_multiple_of(128) && THREADS >= 256,
                "a specialised block has a producer warpgroup and at least one consumer: a multiple of 128 threads, from 256"
            );
            assert!(
                A::ROWS == ROWS * (THREADS / 128 - 1),
                "the `A` tile of a stage holds 64 rows for each consumer warpgroup"
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
                matches!(<E::Index as CutBy<C>>::MATRIX_ROWS, Some(rows) if rows <= ROWS * (THREADS / 128 - 1)),
                "a specialised block's chunk is a constant number of rows, at most 64 for each consumer warpgroup"
            );
        };
        let _ = Pipeline::<STAGES, A, B>::BYTES;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::pipeline::Places;
            use super::raw;
            let places = Places::of(stages);
            let buffered = stages.buffered;
            let consumers = THREADS / 128 - 1;
            super::roles::roles!(
                THREADS,
                self.min_blocks() == 1,
                |t| {
                    if t < STAGES {
                        // SAFETY: 8-aligned words past the stages, no barrier objects now
                        // (never initialised, or invalidated at the end of the last
                        // specialisation); `roles` orders this before every use.
                        unsafe { raw::mbarrier_init(places.full(t), 1) };
                        // SAFETY: as above; one arrival from each consumer warp.
                        unsafe { raw::mbarrier_init(places.empty(t), (4 * consumers) as u32) };
                    }
                },
                || {
                    let mut p = Producer {
                        places,
                        count: 0,
                        call: PhantomData,
                    };
                    for chunk in chunks {
                        producer(&mut p, chunk.origin());
                    }
                    // Every copy lands before the block goes on: wait for the last fill of
                    // each stage (the earlier ones completed before it was refilled).
                    let filled = p.count;
                    for k in filled.saturating_sub(STAGES)..filled {
                        // SAFETY: an initialised barrier object; its phase `k / STAGES`
                        // completes once fill `k` has landed.
                        unsafe { raw::mbarrier_wait(places.full(k % STAGES), ((k / STAGES) % 2) as u32) };
                    }
                },
                |index, thread| {
                    let mut wg = Warpgroup {
                        index,
                        thread,
                        buffer: if buffered {
                            places.buffer(4 * index + thread / 32)
                        } else {
                            0
                        },
                        call: PhantomData,
                    };
                    let mut c = Consumer {
                        places,
                        count: 0,
                        call: PhantomData,
                    };
                    for chunk in chunks {
                        consumer(&mut wg, &mut c, chunk.lines(ROWS * index, ROWS));
                    }
                    if buffered {
                        // Every copy from the warps' buffers has written the view before
                        // the buffers are free again and the block may exit.
                        // SAFETY: sm_90.
                        unsafe { raw::bulk_wait::<0>() };
                    }
                },
                |t| {
                    if t < STAGES {
                        // SAFETY: the barrier objects of this specialisation, which nothing
                        // uses any more (`roles`: every copy landed, the producer waited).
                        unsafe { raw::mbarrier_inval(places.full(t)) };
                        // SAFETY: as above.
                        unsafe { raw::mbarrier_inval(places.empty(t)) };
                    }
                }
            );
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // The roles' code, compiled on the host too (never run): the checks that their
            // operations make when a kernel is compiled then hold for host builds that
            // type-check kernels, as for the GPU's.
            type ProducerRole<P, const STAGES: usize, A, B> = for<'c> fn(&P, &mut Producer<'c, STAGES, A, B>);
            type ConsumerRole<Q, const THREADS: usize, const STAGES: usize, A, B, T, E, L, Sp, V> = for<'c, 'v> fn(
                &Q,
                &mut Warpgroup<'c, THREADS>,
                &mut Consumer<'c, STAGES, A, B>,
                Chunk<'v, T, E, L, Sp, V>,
            );
            let _produce: ProducerRole<P, STAGES, A, B> =
                |p, producer| p(producer, crate::extents::IndexArray::zeros());
            let _consume: ConsumerRole<Q, THREADS, STAGES, A, B, T, E, L, Sp, V> =
                |q, wg, consumer, part| q(wg, consumer, part);
            let _ = (stages, chunks, producer, consumer);
            self.never_on_host()
        }
    }
}

/// The block split into its roles, as [`Block::specialise`] describes, written out in the
/// calling function (so that the roles' code, `wgmma` included, is one function for `ptxas`):
/// `|t| init` on every thread `t` of the block (the barrier objects made, then fenced and joined
/// by a block barrier), `|| produce` on thread 0 (the rest of its
/// warpgroup waits), `|index, thread| consume` on each consumer warpgroup's threads,
/// every product of theirs waited for after it, the block joined again, then `|t| inval` on
/// every thread. Where `split` (one block a multiprocessor) and the block's size allow, the
/// producer warpgroup's registers go to the consumers meanwhile.
///
/// Expanded only in a specialisation's body on the GPU, which every thread of the block runs
/// in its uniform code (`&mut Block`), on sm_90a; `init` makes barrier objects that nothing
/// uses before it nor after `inval`, and `produce` waits for every copy it started.
#[cfg(target_arch = "nvptx64")]
macro_rules! roles {
    ($threads:expr, $split:expr,
     |$t:ident| $init:block,
     || $produce:block,
     |$index:ident, $thread:ident| $consume:block,
     |$t2:ident| $inval:block) => {{
        // SAFETY: a special register, no precondition.
        let $t = unsafe { core::arch::nvptx::_thread_idx_x() } as usize;
        $init
        // SAFETY: sm_90 (a specialisation's kernel issues bulk copies).
        unsafe { $crate::kernel::warpgroup::raw::fence_mbarrier_init() };
        // SAFETY: every thread of the block, in its uniform code (a specialisation's body).
        unsafe { core::arch::nvptx::_syncthreads() };
        let (role, thread) = ($t / 128, $t % 128);
        // The producer's registers to the consumers while the pipeline runs, where the launch
        // bounds let `ptxas` size them (one block a multiprocessor); each role changes its
        // registers first and last in its own branch, so that the code where the roles meet
        // again runs at the registers of the launch.
        let rebalance = $crate::kernel::warpgroup::registers::Split::<{ $threads }>::SOME && $split;
        if role == 0 {
            if rebalance {
                // SAFETY: the producer's warpgroup, converged (uniform code up to here), at its
                // registers at launch and synchronized (the barrier above); the entry point
                // declares `.reqntid THREADS` (the `Block`'s) and `.minnctapersm 1` (`split`);
                // `SOME`; sm_90a (a specialisation's kernel issues `wgmma`).
                unsafe { $crate::kernel::warpgroup::registers::Split::<{ $threads }>::producer_starts() };
            }
            if thread == 0 {
                $produce
            }
            if rebalance {
                // SAFETY: the producer's warpgroup, converged again (past the producer's
                // branch), after `producer_starts`; every consumer thread reaches barrier 0
                // once in `consumer_done`, and no other use of it is under way (the roles hold
                // no `Block`).
                unsafe { $crate::kernel::warpgroup::registers::Split::<{ $threads }>::producer_done() };
            }
        } else {
            if rebalance {
                // SAFETY: a consumer warpgroup, converged, at its registers at launch and
                // synchronized (the barrier above); the bounds and target as for the producer.
                unsafe { $crate::kernel::warpgroup::registers::Split::<{ $threads }>::consumer_starts() };
            }
            {
                let ($index, $thread) = (role - 1, thread);
                $consume
            }
            // Products whose accumulators were forgotten (`mem::forget`) still run: they are
            // done before the tiles are used again.
            // SAFETY: all 128 threads of the warpgroup, sm_90a.
            unsafe { $crate::kernel::warpgroup::raw::wgmma_wait::<0>() };
            if rebalance {
                // SAFETY: the consumer warpgroup, converged (its uniform code), after
                // `consumer_starts`; the producer's threads reach barrier 0 once in
                // `producer_done`, the other consumers' here.
                unsafe { $crate::kernel::warpgroup::registers::Split::<{ $threads }>::consumer_done() };
            }
        }
        if !rebalance {
            // SAFETY: every thread of the block (the roles rejoin here).
            unsafe { core::arch::nvptx::_syncthreads() };
        }
        let $t2 = $t;
        $inval
    }};
}
#[cfg(target_arch = "nvptx64")]
pub(super) use roles;
