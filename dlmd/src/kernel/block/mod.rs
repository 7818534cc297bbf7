//! Cooperative kernels: the threads of a block share tiles of block-shared memory, meet at
//! barriers, reduce together and write the chunks of global memory their block owns, and safe
//! code can neither race on a tile or an element of a view nor reach a barrier that some of the
//! block's threads skip ([why](#why-safe-code-cannot-race-nor-split-a-barrier)).
//!
//! A cooperative kernel takes a [`Block`] first, which says how many threads a block has, which
//! tiles it shares ([`TileOf`]) and the shape it cuts views into chunks of ([`ChunkShape`]);
//! the launch's block must have that many threads
//! ([`LaunchError::Block`](https://docs.rs/dlmd/latest/dlmd/cuda/enum.LaunchError.html)),
//! and the launcher reserves the tiles' memory as the launch's dynamic shared memory, sized
//! from the type (no `shared_mem_bytes` to pass). The compiler knows that memory as shared, so
//! tiles are read and written with `ld.shared`/`st.shared`, as CUDA C++'s `__shared__`
//! arrays. A tiled transpose:
//!
//! ```ignore
//! type Tile32 = TileOf<f32, (Const<32>, Const<32>), RightPadded<1>>;
//!
//! #[dlmd::kernel]
//! pub fn transpose(block: Block<'_, 256, Tile32, (Const<32>, Const<32>)>,
//!                  src: DeviceMdspan<'_, f32, Dims<2>>, dst: DeviceMdspanMut<'_, f32, Dims<2>>) {
//!     let (mut block, mut tile) = block.split();
//!     for chunk in block.chunks(dst) {
//!         let [i0, j0] = chunk.origin();
//!         let written = block.write(tile, |[a, b]| src.get_or([j0 + a, i0 + b], 0.0));
//!         let readable = block.sync(written);
//!         block.store(chunk, |[i, j]| readable[[j - j0, i - i0]]);
//!         tile = block.sync(readable);
//!     }
//! }
//! ```
//!
//! `examples/kernels`' `transpose_tiled` is the same kernel with a 64 × 64 tile whose rows it
//! moves four neighbours at a time, as vectors ([`Block::write_runs`], [`Block::store_runs`],
//! [`Mdspan::get_run`](crate::view::Mdspan::get_run)).
//!
//! # Why safe code cannot race, nor split a barrier
//!
//! The kernel's body is *uniform* code: every thread of a block runs it with the same values,
//! so it takes the same branches and reaches the same barriers. It holds the [`Block`]; what
//! differs from thread to thread lives only inside closures the block runs on each thread.
//!
//! 1. **The body cannot see which thread it is.** A cooperative kernel has no
//!    [`Thread`](super::Thread) (the kernel's context is its `Block`, and `Thread::current` is
//!    `unsafe`). Its values are the parameters, the block's own index ([`Block::index`], the
//!    same for all its threads), what it reads from memory that no thread writes in the phase
//!    (read-only views, [`Readable`] tiles), and the results of block reductions, which every
//!    thread receives whole.
//! 2. **Per-thread values stay inside per-thread closures.** [`Block::each`] runs a closure on
//!    every thread with its [`Lane`]; what it returns is a [`Varying`], which uniform code cannot
//!    look into: it only hands it to more per-thread closures ([`Varying::map`]) or to a
//!    collective ([`Block::sum`], [`Block::warp_sum`], …) whose result is uniform again (or, for
//!    warp operations, another `Varying`). The closures are `Fn + Sync`: they cannot write what
//!    they capture (no `&mut`, no `Cell`), so no thread's value leaks out through a capture.
//! 3. **Barriers and collectives take `&mut Block`**, which no per-thread closure can hold: a
//!    `Block` is neither `Sync` nor `Send`, so an `Fn + Sync` closure captures it in no form.
//!    Every barrier is therefore reached from uniform code, by every thread or by none.
//! 4. **A tile's phase is in its type, and moves by value.** A [`Writable`] tile is written by
//!    [`Block::write`], which gives every element to exactly one thread (the same partition in
//!    every phase); it returns the tile [`Written`], which nothing can read. Only
//!    [`Block::sync`] (a barrier) turns it [`Readable`], and only the next barrier turns it
//!    [`Writable`] again. A readable tile is borrowed for reads; the barrier takes it by value,
//!    so no borrow from one phase survives into the next. Hence no thread reads an element
//!    another writes in the same phase, and no two threads write one element.
//! 5. **Global memory is split the same way.** A mutable view is cut into chunks
//!    ([`Block::chunks`]) of which each block owns its own, and [`Block::store`] gives each
//!    element of a chunk to one thread of that block; [`Block::store_cells`] gives it to the
//!    thread whose [`Cells`] hold it, and writes nothing where the block's threads would not
//!    cover the chunk exactly once ([`Cells::covers`]). Every block cuts a view alike: `chunks`
//!    takes the view, so it is cut once, and cuts it by the block's [`ChunkShape`], a type that
//!    the kernel's signature names (`Block<'_, 256, Tiles, (Const<64>, Const<64>)>`). A type is
//!    fixed before any code runs, so no value of one block (its index, a chunk's origin, what
//!    it reads) can choose another shape on one side of a branch: `chunks` takes no shape, and
//!    safe code makes no block of another shape ([`Block::split`] keeps it; only the kernel's
//!    entry point makes a block).
//!
//! 6. **No atomic type, nor thread-local static, exists in a kernel.** An atomic that a
//!    kernel's threads write (a `static AtomicBool`, or one that an `Fn + Sync` closure captures
//!    by reference) would be shared interior mutability that no bound of the block's closures
//!    can see: a read of it may give each thread another value, and a branch of the body on it
//!    would take a barrier on some of the block's threads only. A `#[thread_local] static` of a
//!    `Cell`, which a closure sets without capturing it, would carry each thread's own value
//!    there too. Kernels are compiled for `nvptx64` without atomics (`dlmd-build`'s `TARGET`,
//!    whose `core` defines no atomic type), and dlmd does not compile for an `nvptx64` target
//!    that has them, so a kernel that names one does not build; and `dlmd-build` lets a kernel
//!    crate turn on only the nightly features kernels need (`KERNEL_FEATURES`), not
//!    `thread_local`. What is left are dlmd's atomic operations on views, whose results reach
//!    per-thread code only ([`Thread::atomic_fetch_add`](super::Thread::atomic_fetch_add): a
//!    cooperative kernel has no `Thread`).
//!
//! Any other pattern (shared memory outside tiles, barriers in divergent code) is `unsafe`, in
//! `core::arch::nvptx` and inline assembly, under their own contracts. The kernel crate's
//! dependencies other than dlmd are outside this argument, as their `unsafe` code is: one could
//! turn on `thread_local` for itself and lend safe code a thread-local `Cell`.

mod cells;
mod lane;
#[cfg(target_arch = "nvptx64")]
mod shared;
mod stage;
mod tile;
mod warp;

pub use cells::Cells;
#[doc(hidden)]
pub use chunk::CutBy;
pub use chunk::{
    Chunk, ChunkShape, ChunkSide, Chunks, Grouped, LastRowsFirst, NoChunks, Rows, Segment, Segments, ValuesOfRows,
    Whole,
};
pub use lane::{Lane, Varying};
pub use stage::{Stage, Staged};
/// The seal of [`TileSet`] and the other tile traits, for the tile sets of other modules.
pub(crate) use tile::sealed::Sealed as TileSealed;
pub use tile::{
    Barrier, LeftPadded, LeftSwizzled, Phase, Readable, RightPadded, RightSwizzled, Tile, TileLayout, TileOf, TileSet,
    TileShape, Writable, Written,
};
pub use warp::WarpValue;

use crate::dtype::DlElement;
use crate::extents::Extents;
use core::marker::PhantomData;

/// `$gpu` in a kernel; on the host, where no `Block` exists (`$never` is uninhabited there),
/// only a use of the arguments.
macro_rules! on_gpu {
    ($never:expr, ($($unused:expr),*), $gpu:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        return $gpu;
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = ($($unused,)*);
            match $never {}
        }
    }};
}

// After `on_gpu!`, which they use.
mod chunk;
mod collective;
mod fetch;
mod mma;

pub use fetch::{Fetching, Landing};

/// The first index of run `run` of a box in runs of `K` along dimension `fast`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn run_start<I: crate::extents::IndexArray, const K: usize>(run: I, fast: usize) -> I {
    let mut first = run;
    first.as_mut()[fast] *= K;
    first
}

/// The most dynamic shared memory a block of any GPU may have: 227 KiB (Hopper; Ampere's
/// A100 gives 163 KiB, consumer cards 99 KiB or 64 KiB). A launch past its device's limit is
/// refused by name (`LaunchError::SharedMemory`); up to 48 KiB runs on every device.
pub const MAX_SHARED_BYTES: usize = 227 * 1024;

/// The block-shared bytes a block keeps for its reductions: two buffers (used in turn, so that
/// one barrier per reduction suffices) of one 8-byte slot per warp. A multiple of 128, so that
/// the tiles after it start on a row of the banks.
const SCRATCH_BYTES: usize = 2 * 32 * 8;
const _: () = assert!(SCRATCH_BYTES.is_multiple_of(128));

/// The threads of one block of a cooperative kernel, the tiles `S` they share, and the shape `C`
/// they cut views into chunks of: the kernel's context, which it takes as its first parameter
/// (never passed by the launcher).
///
/// `THREADS` is the block's size, a multiple of 32 from 32 to 1024 (otherwise the kernel does
/// not compile): the launch's block must be `(THREADS, 1, 1)`. `C` is a [`ChunkShape`]
/// (`(Const<64>, Const<64>)`, `(Const<1>, Whole)`) where the kernel writes a view through
/// [`chunks`](Self::chunks), [`NoChunks`] where it cuts none. See the [module docs](self) for
/// what it lets safe code do, and why that cannot race.
pub struct Block<'k, const THREADS: usize, S: TileSet = (), C = NoChunks> {
    inner: Inner,
    /// The tiles, the chunk shape, the kernel's lifetime, and a raw pointer that makes the
    /// block neither `Send` nor `Sync` on every target (the GPU's `Inner` holds one; the host's
    /// holds nothing), so that a per-thread closure (`Fn + Sync`) cannot capture it in a host
    /// build that type-checks kernels either.
    tiles: PhantomData<(S, C, &'k (), *mut u8)>,
}

#[cfg(target_arch = "nvptx64")]
struct Inner {
    /// The block-shared memory: the reductions' scratch, then the tiles.
    base: *mut u8,
    /// The scratch buffer the next reduction uses.
    turn: usize,
    /// The groups of asynchronous copies the block has started ([`fetch`](Block::fetch)).
    groups: u32,
    /// The kernel's `min_blocks_per_sm` (0: none), a constant of the entry point.
    min_blocks: u32,
}

#[cfg(not(target_arch = "nvptx64"))]
enum Inner {}

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// Threads of a block: a multiple of 32 from 32 to 1024 (checked where a kernel of this
    /// block is built, for the GPU or its launcher).
    pub const THREADS: u32 = {
        assert!(
            THREADS >= 32 && THREADS <= 1024 && THREADS.is_multiple_of(32),
            "a block has a multiple of 32 threads, from 32 to 1024"
        );
        THREADS as u32
    };

    /// The kernel's `min_blocks_per_sm` (0: none declared).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn min_blocks(&self) -> u32 {
        self.inner.min_blocks
    }

    /// The block-shared bytes the block reserves: its reductions' scratch, then its tiles.
    pub const SHARED_BYTES: usize = SCRATCH_BYTES + S::BYTES;

    /// The block of the running kernel.
    ///
    /// # Safety
    ///
    /// Called once per thread, at the top of a kernel's entry point (in uniform control flow,
    /// by every thread of a block of `THREADS` threads) launched with
    /// [`SHARED_BYTES`](Self::SHARED_BYTES) bytes of dynamic shared memory, and nothing else
    /// there uses block-shared memory; `min_blocks` is the kernel's `min_blocks_per_sm` as its
    /// entry point declares it (`.minnctapersm`; 0 where it declares none).
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn enter(_anchor: &'k (), min_blocks: u32) -> Self {
        let _ = Self::THREADS;
        // `SHARED_BYTES` of it, the launch's (caller), and nothing else uses it (caller).
        let base = shared::dynamic_shared();
        Block {
            inner: Inner {
                base,
                turn: 0,
                groups: 0,
                min_blocks,
            },
            tiles: PhantomData,
        }
    }

    /// The block's tiles, fresh, and the block without them: each tile is made once. The block
    /// keeps its chunk shape.
    #[inline(always)]
    pub fn split(self) -> (Block<'k, THREADS, (), C>, S::Tiles<'k>) {
        // The tile set's own checks (a pipeline's size, with its buffers), where the kernel uses
        // its tiles.
        let _ = S::BYTES;
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: the tiles' bytes follow the scratch in the block's shared memory, which
            // the launch sized `SHARED_BYTES`, 128-aligned (and `SCRATCH_BYTES` is a multiple
            // of 128); `self` is consumed, so they are made once, and the block returned has no
            // tiles.
            let tiles = unsafe { S::tiles(self.inner.base.wrapping_add(SCRATCH_BYTES)) };
            (
                Block {
                    inner: self.inner,
                    tiles: PhantomData,
                },
                tiles,
            )
        }
        #[cfg(not(target_arch = "nvptx64"))]
        match self.inner {}
    }

    /// Nothing: no block exists on the host, where this is type-checked only.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) fn never_on_host(&self) -> ! {
        match self.inner {}
    }

    /// The block's index in the launch (`x` fastest, then `y`, then `z`): the same for every
    /// thread of the block, so uniform code may branch on it.
    #[inline(always)]
    pub fn index(&self) -> usize {
        on_gpu!(self.inner, (), shared::block_index().0)
    }

    /// The number of blocks in the launch.
    #[inline(always)]
    pub fn count(&self) -> usize {
        on_gpu!(self.inner, (), shared::block_index().1)
    }

    /// `f` on every thread of the block, with its [`Lane`]; what each returns stays its own
    /// ([`Varying`]).
    #[inline(always)]
    pub fn each<R>(&self, f: impl Fn(Lane<THREADS>) -> R + Sync) -> Varying<R> {
        on_gpu!(
            self.inner,
            (f),
            Varying(f(Lane {
                index: shared::thread_index::<THREADS>()
            }))
        )
    }

    /// Writes every element of `tile`: `f(index)` by exactly one thread of the block (element
    /// `k` in the order of the layout's lines by thread `k % THREADS`: memory order where the
    /// layout is strided), and returns the tile [`Written`], which no
    /// thread reads before the next [`sync`](Self::sync).
    #[inline(always)]
    pub fn write<T, E, L>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        f: impl Fn(E::Index) -> T + Sync,
    ) -> Tile<'k, T, E, L, Written>
    where
        T: DlElement,
        E: Extents,
        L: TileLayout,
    {
        self.write_in_order(tile, L::FIRST_FASTEST, f)
    }

    /// [`write`](Self::write), the elements dealt in the transposed order: element `k` of the
    /// tile's indices with the other end's index fastest (the first for a row-major tile) by
    /// thread `k % THREADS`. For a tile that holds a slice of a source transposed (`tile[[k,
    /// i]] = a[[i, k]]`): neighbouring threads then read neighbouring elements of the source;
    /// pad the tile's rows ([`RightPadded`]) so that their writes meet different banks.
    #[inline(always)]
    pub fn write_transposed<T, E, L>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        f: impl Fn(E::Index) -> T + Sync,
    ) -> Tile<'k, T, E, L, Written>
    where
        T: DlElement,
        E: Extents,
        L: TileLayout,
    {
        self.write_in_order(tile, !L::FIRST_FASTEST, f)
    }

    /// [`write`](Self::write) in runs of `K` neighbours: the tile's elements in runs of `K`
    /// along its fastest dimension in memory (the last for a row-major tile, the first for a
    /// column-major one), run `r` in memory order by thread `r % THREADS`, which writes
    /// `f(index)` (`index` the run's first element) to the run's `K` elements in order. One
    /// vector store a run where the layout keeps every run aligned to its size (8 or 16 bytes:
    /// a row of a [`RightPadded`] tile whose padded rows are a multiple of `K` long); `K`
    /// stores otherwise. `K` divides the tile's fastest extent (otherwise the kernel does not
    /// compile). For a tile filled from vector reads of global memory
    /// ([`Mdspan::get_run`](crate::view::Mdspan::get_run)).
    #[inline(always)]
    pub fn write_runs<T, E, L, const K: usize>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        f: impl Fn(E::Index) -> [T; K] + Sync,
    ) -> Tile<'k, T, E, L, Written>
    where
        T: DlElement,
        E: Extents,
        L: TileLayout,
    {
        let runs = Self::runs_of::<E, L, K>();
        const {
            assert!(
                L::SWIZZLE == 0,
                "a swizzled tile is written by `fetch` or `write`, element by element, not in runs"
            )
        };
        on_gpu!(self.inner, (tile, f, runs), {
            use crate::layout::Mapping;
            let storage = tile.storage();
            let (mapping, data) = (*storage.mapping(), storage.data_handle());
            let rank = E::RANK;
            let fast = if L::FIRST_FASTEST { 0 } else { rank - 1 };
            let aligned = tile::runs_aligned(&mapping, fast, K);
            shared::write_partition::<THREADS, E::Index, [T; K]>(
                runs,
                runs,
                L::FIRST_FASTEST,
                true,
                |run| f(run_start::<E::Index, K>(run, fast)),
                |run, values| {
                    let first = data.wrapping_add(mapping.offset_of(&run_start::<E::Index, K>(run, fast)));
                    // SAFETY: the run's `K` elements are inside the tile's extents (`K` divides
                    // the fastest one, and the run starts at a multiple of `K` along it), so in
                    // its span, one fastest stride apart; the partition of runs gives them to
                    // this thread alone, and nothing reads a writable tile.
                    unsafe { tile::write_run(first, aligned, mapping.stride(fast), values) }
                },
            );
            // SAFETY: every element written in this phase, each by one thread: the partition
            // deals every run once, and the runs cover the tile.
            unsafe { Tile::from_view(tile.into_storage()) }
        })
    }

    /// The box of runs of `K` of a tile of `E` and `L`: its static extents, the fastest
    /// divided by `K`, which must divide it (checked when the kernel is compiled).
    #[inline(always)]
    fn runs_of<E: Extents, L: TileLayout, const K: usize>() -> E::Index {
        const {
            assert!(K > 0, "a run has at least one element");
            let (Some(first), Some(last)) = E::STATIC_ENDS else {
                panic!("a tile written in runs has at least one dimension")
            };
            let fastest = if L::FIRST_FASTEST { first } else { last };
            assert!(
                fastest.is_multiple_of(K),
                "a tile written in runs has a fastest extent that is a multiple of the run's length"
            );
        };
        let mut runs = tile::static_shape::<E>();
        let fast = if L::FIRST_FASTEST { 0 } else { E::RANK - 1 };
        runs.as_mut()[fast] /= K;
        runs
    }

    /// Writes every element of `tile` from what each thread staged for it ([`Lane::stage`],
    /// [`Lane::stage_transposed`]): each element by the thread that read it, in the partition
    /// it was read in. Runs ([`Stage::read_runs`]) go as one vector store each where the
    /// tile's layout keeps them contiguous and aligned, otherwise element by element. Returns
    /// the tile [`Written`], as [`write`](Self::write) does.
    #[inline(always)]
    pub fn write_staged<T, E, L, const K: usize, const TRANSPOSED: bool, const G: usize>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        staged: Varying<Staged<T, E, L, K, TRANSPOSED, G>>,
    ) -> Tile<'k, T, E, L, Written>
    where
        T: DlElement,
        E: Extents,
        L: TileLayout,
    {
        Staged::<T, E, L, K, TRANSPOSED, G>::check::<THREADS>();
        const {
            assert!(
                L::SWIZZLE == 0,
                "a swizzled tile is written by `fetch` or `write`, element by element, not from staged runs"
            )
        };
        on_gpu!(self.inner, (tile, staged), {
            use crate::layout::Mapping;
            let storage = tile.storage();
            let (mapping, data) = (*storage.mapping(), storage.data_handle());
            let thread = shared::thread_index::<THREADS>();
            let fast = Staged::<T, E, L, K, TRANSPOSED, G>::FAST;
            let aligned = tile::runs_aligned(&mapping, fast, G);
            crate::unroll!(K, |m| {
                let index = Staged::<T, E, L, K, TRANSPOSED, G>::index::<THREADS>(thread, m);
                let first = data.wrapping_add(mapping.offset_of(&index));
                // SAFETY: the run's `G` elements are inside the tile's extents (`G` divides the
                // extent they lie along, and the run starts at a multiple of `G`), so in its
                // span, one stride of that dimension apart; the partition gives them to this
                // thread alone (the one that staged them: a `Varying` value stays with its
                // thread), and nothing reads a writable tile.
                unsafe { tile::write_run(first, aligned, mapping.stride(fast), staged.0.values()[m]) }
            });
            // SAFETY: every element written in this phase, each by one thread: the partition
            // deals the tile's `K · G · THREADS` elements (`Staged::index`), `K` runs of `G` to
            // each thread.
            unsafe { Tile::from_view(tile.into_storage()) }
        })
    }

    /// [`write`](Self::write) with the first index fastest, or the last.
    #[inline(always)]
    fn write_in_order<T, E, L>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        first_fastest: bool,
        f: impl Fn(E::Index) -> T + Sync,
    ) -> Tile<'k, T, E, L, Written>
    where
        T: DlElement,
        E: Extents,
        L: TileLayout,
    {
        #[cfg(target_arch = "nvptx64")]
        {
            let storage = tile.storage();
            let (mapping, data) = (*storage.mapping(), storage.data_handle());
            let extents = storage.extents().to_array();
            shared::write_partition::<THREADS, E::Index, T>(
                extents,
                extents,
                first_fastest,
                true,
                f,
                |index, value| {
                    // SAFETY: `index` is inside the tile's extents, so its element is in the
                    // tile's span; the partition gives it to this thread alone, and nothing
                    // reads a writable tile.
                    unsafe { data.wrapping_add(L::offset_of::<T, E>(&mapping, &index)).write(value) }
                },
            );
            // SAFETY: every element written in this phase, each by one thread.
            unsafe { Tile::from_view(tile.into_storage()) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (tile, first_fastest, f);
            match self.inner {}
        }
    }

    /// A barrier: every thread of the block waits here for the others, and every write to
    /// block-shared and global memory before it is seen by every thread of the block after it.
    /// The tiles passed move to their next phase: [`Written`] ones become [`Readable`],
    /// [`Readable`] ones [`Writable`].
    #[inline(always)]
    pub fn sync<B: Barrier>(&mut self, tiles: B) -> B::After {
        #[cfg(target_arch = "nvptx64")]
        {
            shared::barrier();
            tiles.after()
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = tiles;
            match self.inner {}
        }
    }
}
