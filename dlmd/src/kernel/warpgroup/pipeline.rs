//! The stages of a pipeline: operand tiles in block-shared memory, filled by the bulk copy
//! engine (TMA) and read by `wgmma`, handed between a producer and the consumer warpgroups
//! through barrier objects whose phases the handles count, so that no safe code picks one.

use super::staging::{Direct, Stores, WARP_BYTES};
use crate::dtype::DlElement;
use crate::extents::Const;
use crate::kernel::block::{TileOf, TileSealed, TileSet};
use crate::kernel::swizzle::Swizzle;
use crate::kernel::tensor_map::TensorMap;
use core::marker::PhantomData;

/// The alignment of a stage's tiles: the 128-byte swizzle's period, the largest of them.
const STAGE_ALIGN: usize = 1024;

/// An operand tile of a pipeline stage: `TileOf<T, (Const<ROWS>, Const<COLS>), S>` with a
/// [`Swizzle`] `S` for its layout, whose rows are whole swizzled rows (`COLS` elements of a
/// multiple of `S::BYTES` bytes), or such a tile read as a `k × n` `B` operand
/// ([`KByN`](super::KByN)). The bulk copy engine fills it from a [`TensorMap`] of the same
/// element, tile and swizzle ([`Map`](Self::Map)): a map of another tile or swizzle does not
/// fit the tile's type.
///
/// In shared memory, a tile is its column panels one after another, each `ROWS` rows of one
/// swizzled row (`S::BYTES` bytes, [`Swizzle::offset`]): element `[r, c]` is in panel
/// `c / P` (`P = S::BYTES / size_of::<T>()` columns a panel), row `r` of it. A tile of one
/// swizzled row (the K-major operands of `x · wᵀ`) is one panel.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a swizzled operand tile",
    label = "a pipeline stage holds `TileOf<T, (Const<ROWS>, Const<COLS>), Swizzle128>`-like tiles",
    note = "an operand tile is laid out by a `Swizzle` (`Swizzle32`, `Swizzle64`, `Swizzle128`), each row whole swizzled rows"
)]
pub trait Operand: TileSealed + 'static {
    /// The element type.
    type Element: DlElement;
    /// The swizzle.
    type Swizzle: Swizzle;
    /// The tensor map of rank `RANK` that fills it: same element, tile and swizzle.
    type Map<'a, const RANK: usize>;
    /// Rows.
    const ROWS: usize;
    /// Elements a row.
    const COLS: usize;
    /// The tile's bytes, checked where a kernel uses it: rows of a multiple of `S::BYTES`, each
    /// panel a whole number of the swizzle's periods (rows a multiple of `S::ALIGN /
    /// S::BYTES`), at most 256 rows and columns (a copy's box).
    const BYTES: usize;
    /// Starts the copies of the tile of `map` whose first element is at `origin` (`[…, row,
    /// column]`) into the tile at `dst`, one a panel, each signalling its bytes to the barrier
    /// object at `bar`; a coordinate past `i32::MAX` asks for a box past the tensor's edge, all
    /// zero.
    ///
    /// # Safety
    ///
    /// As [`tma_load_2d`](super::raw::tma_load_2d) for each panel: `dst` is `BYTES` of the
    /// block's shared memory, 1024-aligned, that nothing reads or writes until `bar`'s phase
    /// completes; `bar` expects these bytes.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn copy<const RANK: usize>(dst: u32, map: &Self::Map<'_, RANK>, origin: [usize; RANK], bar: u32);
}

impl<T: DlElement, const ROWS: usize, const COLS: usize, S: Swizzle> Operand
    for TileOf<T, (Const<ROWS>, Const<COLS>), S>
{
    type Element = T;
    type Swizzle = S;
    type Map<'a, const RANK: usize> = TensorMap<'a, T, (Const<ROWS>, Const<COLS>), S, RANK>;
    const ROWS: usize = ROWS;
    const COLS: usize = COLS;
    const BYTES: usize = {
        assert!(
            (COLS * size_of::<T>()).is_multiple_of(S::BYTES) && COLS >= 1,
            "an operand tile's row is whole swizzled rows: `COLS` elements of a multiple of `S::BYTES` bytes"
        );
        assert!(
            ROWS >= 1 && ROWS <= 256 && COLS <= 256,
            "an operand tile has 1 to 256 rows and columns (a copy's box)"
        );
        assert!(
            (ROWS * S::BYTES).is_multiple_of(S::ALIGN),
            "an operand tile's panels hold a whole number of the swizzle's periods (8 rows of 128 bytes, 8 of 64, 8 of 32)"
        );
        ROWS * COLS * size_of::<T>()
    };
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn copy<const RANK: usize>(dst: u32, map: &Self::Map<'_, RANK>, origin: [usize; RANK], bar: u32) {
        let () = TensorMap::<T, (Const<ROWS>, Const<COLS>), S, RANK>::CHECK;
        let clamp = |x: usize| x.min(i32::MAX as usize) as i32;
        let (panel_cols, panel_bytes) = (S::BYTES / size_of::<T>(), ROWS * S::BYTES);
        // The coordinates innermost first, as the copy instructions take them: the column (set
        // for each panel), the row, then the matrix's index in the batch.
        let mut at = [0i32; RANK];
        for d in 1..RANK {
            at[d] = clamp(origin[RANK - 1 - d]);
        }
        for p in 0..COLS / panel_cols {
            at[0] = clamp(origin[RANK - 1].saturating_add(p * panel_cols));
            // SAFETY: as this function's contract, for panel `p`: its `ROWS × S::BYTES` bytes
            // inside the tile's (`p` below the panels), aligned to the swizzle's period (`dst`
            // is 1024-aligned, and a panel's bytes are a whole number of periods, each dividing
            // 1024); the map's rank is `RANK`, 2 to 5 (its check).
            unsafe { super::raw::tma_load(dst + (p * panel_bytes) as u32, map.map(), at, bar) };
        }
    }
}

/// The shared memory of a pipeline of `STAGES` stages, each an `A` and a `B` operand tile
/// ([`Operand`]), and the stages' barrier objects: a [`TileSet`] for a cooperative kernel's
/// [`Block`](crate::kernel::Block) type, which [`Block::split`](crate::kernel::Block::split)
/// makes into [`Stages`], run by [`Block::specialise`](crate::kernel::Block::specialise).
/// `O` says how the consumers write their accumulators out: [`Direct`] from registers, or
/// [`Buffered`](super::Buffered) through a buffer for each consumer warp, after the barrier
/// objects, that the bulk copy engine copies to the view.
pub struct Pipeline<const STAGES: usize, A, B, O = Direct>(PhantomData<(A, B, O)>);

impl<const STAGES: usize, A, B, O> TileSealed for Pipeline<STAGES, A, B, O> {}

impl<const STAGES: usize, A: Operand, B: Operand, O: Stores> Pipeline<STAGES, A, B, O> {
    /// The bytes of the stages, the barrier objects and the consumer warps' buffers (one for
    /// each 16 rows of `A`: each consumer warp's rows), aligned as [`Stages`]' base needs.
    const TOTAL: usize = {
        let staging = if O::BUFFERED { (A::ROWS / 16) * WARP_BYTES } else { 0 };
        let total = Pipeline::<STAGES, A, B>::UNSTAGED + staging;
        assert!(
            total <= crate::kernel::MAX_SHARED_BYTES,
            "a pipeline's stages (and its consumers' buffers, where `Buffered`) fit in 227 KiB of shared memory"
        );
        total.next_multiple_of(128)
    };
}

impl<const STAGES: usize, A: Operand, B: Operand> Pipeline<STAGES, A, B> {
    /// The bytes of `A`'s tile in a stage, aligned.
    const A_BYTES: usize = A::BYTES.next_multiple_of(STAGE_ALIGN);
    /// The bytes of a stage.
    pub(super) const STAGE_BYTES: usize = Self::A_BYTES + B::BYTES.next_multiple_of(STAGE_ALIGN);
    /// The bytes of the stages, then two barrier objects a stage (8 bytes each), after up to
    /// `STAGE_ALIGN - 128` bytes to align the first stage (the tile set starts 128-aligned).
    const UNSTAGED: usize = {
        assert!(STAGES >= 1 && STAGES <= 16, "a pipeline has 1 to 16 stages");
        (STAGE_ALIGN - 128) + STAGES * Self::STAGE_BYTES + 16 * STAGES
    };
    /// The bytes a copy into one stage brings: both tiles'.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) const COPY_BYTES: u32 = (A::BYTES + B::BYTES) as u32;
}

// SAFETY: `BYTES` covers the slack to align the stages, the stages, the barrier objects and,
// where `Buffered`, the consumer warps' buffers; `tiles` makes one handle over them, which
// reaches nothing outside.
unsafe impl<const STAGES: usize, A: Operand, B: Operand, O: Stores> TileSet for Pipeline<STAGES, A, B, O> {
    type Tiles<'k> = Stages<'k, STAGES, A, B>;
    const BYTES: usize = Self::TOTAL;
    #[inline(always)]
    unsafe fn tiles<'k>(base: *mut u8) -> Stages<'k, STAGES, A, B> {
        Stages {
            base,
            buffered: O::BUFFERED,
            kernel: PhantomData,
        }
    }
}

/// The stages of a [`Pipeline`], in block-shared memory: handed to
/// [`Block::specialise`](crate::kernel::Block::specialise), which runs one producer and the
/// consumer warpgroups over them; no other code reaches their memory.
pub struct Stages<'k, const STAGES: usize, A, B> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    base: *mut u8,
    /// Whether the consumer warps' buffers follow the barrier objects
    /// ([`Buffered`](super::Buffered)).
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) buffered: bool,
    kernel: PhantomData<(&'k (), A, B)>,
}

/// The shared-state-space addresses of a pipeline's stages and barrier objects.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub(super) struct Places<const STAGES: usize, A, B> {
    /// The first stage, 1024-aligned.
    first: u32,
    kinds: PhantomData<fn() -> (A, B)>,
}

impl<const STAGES: usize, A, B> Clone for Places<STAGES, A, B> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<const STAGES: usize, A, B> Copy for Places<STAGES, A, B> {}

#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
impl<const STAGES: usize, A: Operand, B: Operand> Places<STAGES, A, B> {
    /// The places of `stages`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn of(stages: &Stages<'_, STAGES, A, B>) -> Self {
        // SAFETY: the stages are the block's shared memory (`TileSet::tiles`).
        let base = unsafe { crate::kernel::mma::raw::shared_address(stages.base) };
        Places {
            first: base.next_multiple_of(STAGE_ALIGN as u32),
            kinds: PhantomData,
        }
    }

    /// Stage `s`'s `A` tile.
    #[inline(always)]
    pub(super) fn a(self, s: usize) -> u32 {
        self.first + (s * Pipeline::<STAGES, A, B>::STAGE_BYTES) as u32
    }

    /// Stage `s`'s `B` tile.
    #[inline(always)]
    pub(super) fn b(self, s: usize) -> u32 {
        self.a(s) + Pipeline::<STAGES, A, B>::A_BYTES as u32
    }

    /// The barrier object whose phases complete as stage `s`'s copies land.
    #[inline(always)]
    pub(super) fn full(self, s: usize) -> u32 {
        self.first + (STAGES * Pipeline::<STAGES, A, B>::STAGE_BYTES + 8 * s) as u32
    }

    /// The barrier object whose phases complete as every consumer warp has released stage `s`.
    #[inline(always)]
    pub(super) fn empty(self, s: usize) -> u32 {
        self.full(STAGES + s)
    }

    /// Consumer warp `w`'s buffer, where the pipeline is [`Buffered`](super::Buffered): after the
    /// barrier objects, 16-aligned (the stages are a multiple of 1024 bytes, the barrier
    /// objects of 16).
    #[inline(always)]
    pub(super) fn buffer(self, w: usize) -> u32 {
        self.full(2 * STAGES) + (w * WARP_BYTES) as u32
    }
}

/// The producer of a pipeline: the one thread of the block that starts the copies into its
/// stages, in turn. It cannot read a stage, nor fill one that a consumer still holds:
/// [`load`](Self::load) waits until every consumer warp has released the stage it refills.
pub struct Producer<'c, const STAGES: usize, A, B> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) places: Places<STAGES, A, B>,
    /// The stages filled so far.
    pub(super) count: usize,
    pub(super) call: PhantomData<(&'c mut (), *mut u8)>,
}

impl<const STAGES: usize, A: Operand, B: Operand> Producer<'_, STAGES, A, B> {
    /// Fills the next stage: `A`'s tile with the box of `a` whose first element is at
    /// `a_origin` (`[…, row, column]`), `B`'s with `b`'s at `b_origin`, by the bulk copy engine, once
    /// the stage's last readers have released it. Elements of a box past the tensor's edge
    /// arrive as zero. The consumers receive the stages in the order they were filled
    /// ([`Consumer::wait`]).
    #[inline(always)]
    pub fn load<const RA: usize, const RB: usize>(
        &mut self,
        a: &A::Map<'_, RA>,
        a_origin: [usize; RA],
        b: &B::Map<'_, RB>,
        b_origin: [usize; RB],
    ) {
        let _ = Pipeline::<STAGES, A, B>::TOTAL;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw;
            let (k, places) = (self.count, self.places);
            let s = k % STAGES;
            if k >= STAGES {
                // The stage's fill `k - STAGES` was released by every consumer warp.
                // SAFETY: an initialised barrier object of the running specialisation
                // (`Block::specialise`), on sm_90 (the kernel issues bulk copies).
                unsafe { raw::mbarrier_wait(places.empty(s), ((k / STAGES - 1) % 2) as u32) };
            }
            // SAFETY: an initialised barrier object, whose phase `k / STAGES` expects the
            // producer's one arrival (this one: one a fill) and these bytes.
            unsafe { raw::mbarrier_arrive_expect_tx(places.full(s), Pipeline::<STAGES, A, B>::COPY_BYTES) };
            // SAFETY: the maps are valid tensor maps of tensors the kernel only reads
            // (`TensorMap`), of these tiles' boxes and swizzles (their types); the stage's
            // tiles are 1024-aligned, released by their readers (above), and read next once
            // `full`'s phase completes, which waits for these bytes.
            unsafe { A::copy(places.a(s), a, a_origin, places.full(s)) };
            // SAFETY: as above.
            unsafe { B::copy(places.b(s), b, b_origin, places.full(s)) };
        }
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = (a, a_origin, b, b_origin);
        self.count += 1;
    }
}

/// A consumer warpgroup's side of a pipeline: [`wait`](Self::wait) gives it the stages in the
/// order the producer filled them, each once its copies have landed.
pub struct Consumer<'c, const STAGES: usize, A, B> {
    pub(super) places: Places<STAGES, A, B>,
    /// The stages received so far.
    pub(super) count: usize,
    pub(super) call: PhantomData<(&'c mut (), *mut u8)>,
}

impl<'c, const STAGES: usize, A: Operand, B: Operand> Consumer<'c, STAGES, A, B> {
    /// Waits until the next stage's copies have landed, and returns it [`Full`]: the
    /// warpgroup's to read (by [`Warpgroup::mma`](super::Warpgroup::mma)) until it drops the
    /// handle, which releases the stage to the producer.
    #[inline(always)]
    pub fn wait(&mut self) -> Full<'c, STAGES, A, B> {
        let (k, places) = (self.count, self.places);
        let s = k % STAGES;
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an initialised barrier object of the running specialisation; the phase
        // `k / STAGES` is this consumer's next (its stages are received in turn, and no round
        // is skipped: the round before was waited for by this consumer's last wait of `s`).
        unsafe {
            super::raw::mbarrier_wait(places.full(s), ((k / STAGES) % 2) as u32)
        };
        self.count += 1;
        Full {
            places,
            stage: s,
            call: PhantomData,
        }
    }
}

/// A stage whose copies have landed, held by a consumer warpgroup: its tiles are read by
/// [`Warpgroup::mma`](super::Warpgroup::mma), which keeps the handle until the products that
/// read them are done. Dropped, it releases the stage: each warp of the warpgroup arrives on
/// the stage's barrier object, and the producer refills it once every consumer warp has.
pub struct Full<'c, const STAGES: usize, A: Operand, B: Operand> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) places: Places<STAGES, A, B>,
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) stage: usize,
    call: PhantomData<(&'c (), *mut u8)>,
}

impl<const STAGES: usize, A: Operand, B: Operand> Drop for Full<'_, STAGES, A, B> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: a special register, no precondition.
            let lane = unsafe { core::arch::nvptx::_thread_idx_x() } % 32;
            // SAFETY: an initialised barrier object of the running specialisation, whose
            // phase for this stage's round expects one arrival from each consumer warp: this
            // warp's first lane's, once (the handle is dropped once, by each of its threads).
            // Predicated, not branched: the warp stays converged for the aligned waits around.
            unsafe { super::raw::mbarrier_arrive_where(self.places.empty(self.stage), lane == 0) };
        }
    }
}
