//! Hopper tensor cores from a cooperative kernel (`sm_90a`): warpgroups of 128 threads
//! multiplying operand tiles that the bulk copy engine (TMA) brings into block-shared memory
//! several stages ahead, the block split into a producer and consumers (warp specialisation),
//! with the layouts, the stages and the state of every product in the types.
//!
//! The pieces:
//!
//! - a **tensor map** ([`TensorMap`](crate::kernel::tensor_map::TensorMap)): a kernel
//!   parameter made on the host from a device view, which tells the copy engine the tensor's
//!   extents and strides, the box it copies and the [`Swizzle`](crate::kernel::swizzle::Swizzle)
//!   it lays the box out in;
//! - a **pipeline** ([`Pipeline`]): `STAGES` stages, each an `A` and a `B` operand tile
//!   (`TileOf<bf16, (Const<128>, Const<64>), Swizzle128>`: rows of one swizzled 128-byte row),
//!   declared in the [`Block`](crate::kernel::Block) type like any tile;
//! - **roles** ([`Block::specialise`](crate::kernel::Block::specialise)): the first
//!   warpgroup's first thread is the [`Producer`], which fills the stages in turn
//!   ([`Producer::load`]); each other warpgroup is a consumer, with its [`Warpgroup`] and its
//!   [`Consumer`] side of the pipeline, which hands it each stage [`Full`] once it has landed;
//! - **accumulators** of `64 × N` `f32` a warpgroup ([`Accumulators`], [`Cols`]), to which
//!   [`Warpgroup::mma`] adds the products of a stage (`wgmma`, asynchronous), returning them
//!   [`InFlight`] (or [`InFlight2`] with two groups running); only [`Warpgroup::wait`] brings
//!   them back, and only then can they be written out ([`Warpgroup::store`]);
//! - **stores** ([`Stores`]): from registers ([`Direct`]), or, in a
//!   `Pipeline<STAGES, A, B, Buffered>`, through a buffer of shared memory for each consumer
//!   warp, 64 columns at a time, which the bulk copy engine copies to the view a row at a time
//!   while the warp goes on to its next products ([`Buffered`]).
//!
//! Attention adds a second kind of pipeline and two products. A [`Streams`] set keeps one tile
//! resident for a whole chunk (the query rows) while two others stream through the stages (keys
//! and values), each with barrier objects of its own, run by
//! [`Block::specialise_streams`](crate::kernel::Block::specialise_streams); the consumers take
//! its tiles [`Landed`]. [`Warpgroup::mma_resident`] multiplies the resident tile by a streamed
//! one over the whole head dimension (`S = Q · Kᵀ`, borrowing the resident tile while it runs);
//! [`RowStats`] takes the scores into an online softmax row by row ([`Keys`] says which keys
//! each query sees: a sequence's end, a causal mask) and returns the tile's [`Probs`], which
//! [`Warpgroup::mma_pv`] converts in registers and multiplies by the values (`wgmma` with its
//! `A` operand in registers), after rescaling the output by the softmax's correction.
//! [`RowStats::finish_with_lse`] divides the output by each row's sum and gives each row's
//! log-sum-exp as [`RowValues`], which [`Warpgroup::store_rows`] writes to the warpgroup's rows
//! of a view one rank lower than the output, whose chunks the output's carry
//! ([`Chunks::with_rows`](crate::kernel::block::Chunks::with_rows)). The
//! `examples/hopper-kernels` crate's `attention_*` kernels are the forward pass written so.
//!
//! The backward pass adds two pieces. An [`Exchange`], declared beside the pipeline, hands
//! each consumer's `64 × 64` accumulators (the scores' gradient of its keys) to every consumer
//! through shared memory, transposed ([`Warpgroup::exchange`]), as the `A` operand of
//! [`Warpgroup::mma_exchanged`]; and [`Warpgroup::add_to`] adds accumulators to an
//! [`Atomic`](crate::view::Atomic) `f32` view ([`Sums`], a pair of neighbours a request with
//! [`Pairs`]), where blocks sum their shares of one gradient.
//!
//! Inputs are `bf16`, `f16`, or the FP8 types `F8E4M3FN` and `F8E5M2`
//! ([`WgmmaInput`]), accumulated in `f32`. The `A` tile is K-major (`m × k`, rows of `k`); the
//! `B` tile is K-major too (`n × k`: the weight of `x · wᵀ`), or, for `bf16` and `f16`, a
//! [`KByN`] tile `k × n` (a row-major `b` of `x · b`), which `wgmma` reads MN-major
//! ([`OperandB`]). A tile wider than one swizzled row is copied as column panels, one box each.
//!
//! Where the kernel declares `min_blocks_per_sm = 1`,
//! [`Block::specialise`](crate::kernel::Block::specialise) lends the producer
//! warpgroup's registers to the consumers while the pipeline runs (`setmaxnreg`: 40 a producer
//! thread, and what that frees dealt to the consumers, 232 a thread in blocks of 384), and gives
//! them back before it returns. The split is computed from the block's size and the registers
//! `ptxas` gives a thread at launch under those bounds, so the consumers never ask for more
//! than the block holds; without the bound, registers stay as at launch.
//!
//! A kernel computing `y = x · wᵀ` in `128 × 256` chunks, four stages of depth 64 (the
//! `examples/hopper-kernels` crate's `linear_bf16`):
//!
//! ```ignore
//! type X = TileOf<bf16, (Const<128>, Const<64>), Swizzle128>;
//! type W = TileOf<bf16, (Const<256>, Const<64>), Swizzle128>;
//!
//! #[dlmd::kernel]
//! pub fn linear(block: Block<'_, 384, Pipeline<4, X, W>, (Const<128>, Const<256>)>,
//!               x: TensorMap<'_, bf16, (Const<128>, Const<64>), Swizzle128>,
//!               w: TensorMap<'_, bf16, (Const<256>, Const<64>), Swizzle128>,
//!               y: DeviceMdspanMut<'_, bf16, Dims<2>>) {
//!     let steps = x.extents()[1].div_ceil(64);
//!     let (mut block, mut stages) = block.split();
//!     let chunks = block.chunks(y);
//!     block.specialise(&mut stages, chunks,
//!         |producer, [i0, j0]| for s in 0..steps {
//!             producer.load(&x, [i0, 64 * s], &w, [j0, 64 * s]);
//!         },
//!         |wg, consumer, part| {
//!             // One group of products left running while the next stage's is issued.
//!             let mut acc = wg.mma(Accumulators::<bf16, Cols<256>>::zero(), consumer.wait());
//!             for _ in 1..steps {
//!                 let running = wg.mma(acc, consumer.wait());
//!                 acc = wg.wait(running);
//!             }
//!             let acc = wg.wait(acc);
//!             wg.store(part, acc, |_, v| math::to_bf16(v));
//!         });
//! }
//! ```
//!
//! The producer runs ahead from one chunk to the next: while the consumers write a chunk's
//! accumulators, the stages already fill for the next. With `Pipeline<4, X, W, Buffered>`, the
//! same `wg.store` hands the writes to the bulk copy engine, and the consumers go on to the next
//! chunk's products while the copies run.
//!
//! # Why safe code cannot race on the stages and the products
//!
//! The rules of [`block`](crate::kernel::block) hold; the pipeline adds these:
//!
//! 1. **The roles run uniform code of their own.** `specialise` takes `&mut Block`, so it is
//!    reached by every thread of the block together; the roles' closures are `Fn + Sync`,
//!    and receive their contexts as arguments: they cannot write what they capture, nor take
//!    a barrier of the block (they hold no `Block`), and a role's context cannot leave its
//!    closure (its lifetime is the call's). The producer's code runs on one thread; a
//!    consumer's on its warpgroup's 128 threads, which all run it alike, so a warpgroup-wide
//!    instruction (`wgmma`, its waits) is reached by the whole warpgroup or by none of it.
//! 2. **The phases are counted by the handles, not chosen.** A stage's barrier objects go
//!    through one phase a round. The producer and each consumer count the stages they have
//!    filled or received, and wait for the phase that count names: there is no parity to pass,
//!    so none can be wrong. A consumer that asks for more stages than were filled waits; it
//!    cannot be two rounds ahead of a stage's barrier (it passed the round between), where the
//!    barrier's parity would alias.
//! 3. **A stage is read only after its copies land, and refilled only after its readers are
//!    done.** [`Consumer::wait`] returns a stage [`Full`] only once the barrier object that
//!    counts its copies' bytes has completed that round. The handle is the only way to the
//!    stage's tiles ([`Warpgroup::mma`] takes it by value, and the producer has no way to
//!    read a tile), and the products that read it keep it ([`InFlight`]) until a wait has seen
//!    them done; dropping it then is what releases the stage, one arrival from each warp of
//!    each consumer. [`Producer::load`] refills a stage only once every consumer warp has
//!    released its last round.
//! 4. **Accumulators are read only once the products that write them are done.**
//!    [`Accumulators`] have no accessor at all; [`InFlight`] and [`InFlight2`] cannot be
//!    stored or added to more than twice; [`Warpgroup::wait`] waits (`wgmma.wait_group`)
//!    before it returns them. Products issued [`behind`](Warpgroup::behind) others come back
//!    [`Behind`], whose wait returns only the older ones' accumulators, the younger still
//!    [`Running`] ([`Behind`]'s docs say why the wait is enough). Dropped, running products
//!    are waited for before the stage is released, and before `specialise` returns. Forgotten
//!    (`mem::forget`), a running product, an [`InFlight`], a [`Landed`] or a [`Full`] never
//!    releases its stage: nothing reads it again, and the producer waits for it forever (a
//!    hang, not a race; a tile only borrowed by the forgotten product is released by its
//!    holder, whose drop waits for every product first).
//! 5. **Each element of a chunk has one writer.** The chunks are the block's
//!    ([`Block::chunks`](crate::kernel::Block::chunks), cut and dealt by the block's type, in
//!    memory order or in [`Grouped`](crate::kernel::block::Grouped) rows, alike in every
//!    block); the consumer warpgroup `w` receives its rows `64 w .. 64 w + 64` of each alone,
//!    and the accumulators' layout deals each of its `64 × N` elements to one thread. Through
//!    a [`Buffered`] pipeline's buffers, each element is written once to its warp's buffer by
//!    the thread that holds it, and each row of 64 once to the view, by a copy one thread of
//!    the warp starts after the warp's writes (each writer's `fence.proxy.async`, then
//!    `bar.warp.sync`); that thread waits until its copies have read the buffer
//!    (`cp.async.bulk.wait_group.read`), and the warp syncs again, before any thread writes it
//!    anew. The buffers are the warps' own: no other role reaches them.
//! 6. **Nothing is left in flight.** Before `specialise` returns, the producer has waited for
//!    every copy it started, the consumers for every product and every copy from their buffers
//!    (`cp.async.bulk.wait_group 0`: written to the view), and a barrier joins the roles;
//!    the barrier objects are invalidated and made anew by the next call.
//!
//! A producer that fills fewer stages than a consumer waits for, or more than they take and
//! release, leaves threads waiting forever: a hang, which the types do not rule out, but never
//! a read of a stage before it lands or a write over one still read.
//!
//! A role's code is uniform for the same reason a block's body is
//! ([`block`](crate::kernel::block#why-safe-code-cannot-race-nor-split-a-barrier), point 6):
//! kernels have no atomic types, so no value that differs between a warpgroup's threads (an
//! element in a closure of [`Warpgroup::add_to`] or of a softmax) reaches its branches, and
//! every warpgroup operation, `wgmma`'s `.sync.aligned` and a [`Buffered`] store's warp barrier
//! among them, runs on all its threads or on none.
//!
//! One thing holds outside the types: **running accumulators in registers.** Between a product and
//! its wait, the accumulators are registers that `wgmma` writes asynchronously. Safe code cannot
//! read them, but the compiler may move them (a spill, a copy as `InFlight` moves): `ptxas` keeps
//! such moves after the wait, serialising the products where it must (its C7510/C7515 notes), which
//! `scripts/ptx-check.sh` reports for the example kernels. The same holds for the registers of `P`
//! that [`Warpgroup::mma_pv`] reads asynchronously: they move with the running product and are
//! named in its wait, but a product forgotten (`mem::forget`) in a loop leaves their next
//! definition to `ptxas`'s serialisation.
//!
//! Shared memory laid out by hand, another tensor-map layout and the instructions themselves
//! are in [`raw`], `unsafe` under the PTX ISA's rules.

mod accumulators;
mod borrowed;
mod descriptor;
mod exchange;
mod gradients;
mod operand;
mod overlap;
mod packed;
mod pipeline;
mod products;
#[cfg(any(target_arch = "nvptx64", doc))]
pub mod raw;
mod reduce;
mod registers;
mod roles;
mod row_values;
mod softmax;
mod staging;
mod streams;

#[doc(hidden)]
pub use accumulators::Product;
pub use accumulators::{Accumulators, Cols, InFlight, InFlight2, Issue, Retire, WgmmaInput, Width};
pub use borrowed::{Borrowed, Held, ReadTile};
pub use exchange::{Exchange, Exchanged, Exchanging};
pub use gradients::{Broadcast, ColValues, Queries, Visible};
pub use operand::{KByN, KMajor, MnMajor, MnMajorInput, OperandA, OperandB};
pub use overlap::{Ahead, Behind, Older};
pub use packed::Converted;
pub use pipeline::{Consumer, Full, Operand, Pipeline, Producer, Stages};
pub use products::{Fragment, Running};
#[doc(hidden)]
pub use products::{ProductRs, RsDepth};
pub use reduce::{Pairs, Requests, Singles, Sums};
pub use roles::Warpgroup;
pub use row_values::RowValues;
pub use softmax::{Keys, Probs, RowStats};
pub use staging::{Buffered, Direct, Stores};
pub use streams::{Landed, Resident2, StreamConsumer, StreamProducer, Streamed, Streams};
