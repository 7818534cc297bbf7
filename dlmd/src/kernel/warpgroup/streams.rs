//! A pipeline of one resident tile and two streams: [`Streams`], the tile set of a kernel whose
//! consumers keep one operand for a whole chunk (attention's query rows) while two others
//! (its keys and values) stream through the stages, each stream with barrier objects of its
//! own, so that the first can be multiplied while the second is still landing. The block runs it
//! with [`Block::specialise_streams`](crate::kernel::Block::specialise_streams); the producer
//! fills it through a [`StreamProducer`], the consumers take its tiles [`Landed`] from a
//! [`StreamConsumer`].

use super::pipeline::Operand;
use crate::kernel::block::{TileSealed, TileSet};
use core::marker::PhantomData;

mod specialise;

/// The alignment of every tile of the set: the 128-byte swizzle's period, 1024 bytes.
const ALIGN: usize = 1024;

/// The shared memory of a resident tile `R` and `STAGES` stages of two streamed tiles `S0`
/// and `S1` ([`Operand`]s), with a pair of barrier objects for the resident tile and for each
/// streamed tile of each stage (one counting the bytes that land, one the consumer warps that
/// release it): a [`TileSet`] for a cooperative kernel's [`Block`](crate::kernel::Block)
/// type, which [`Block::split`](crate::kernel::Block::split) makes into [`Streamed`].
///
/// Attention's forward pass at head dimension 128: `Streams<2, Q, K, KByN<V>>` with the
/// three tiles `TileOf<bf16, (Const<128>, Const<128>), Swizzle128>`, 160 KiB.
pub struct Streams<const STAGES: usize, R, S0, S1, R2 = ()>(PhantomData<(R, S0, S1, R2)>);

impl<const STAGES: usize, R, S0, S1, R2> TileSealed for Streams<STAGES, R, S0, S1, R2> {}

impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Resident2> Streams<STAGES, R, S0, S1, R2> {
    /// The first resident tile's bytes, aligned: where the second starts.
    const R0_BYTES: usize = R::BYTES.next_multiple_of(ALIGN);
    /// The resident tiles' bytes, aligned.
    const R_BYTES: usize = Self::R0_BYTES + R2::BYTES.next_multiple_of(ALIGN);
    /// The first stream's tile's bytes, aligned.
    const S0_BYTES: usize = S0::BYTES.next_multiple_of(ALIGN);
    /// A stage's bytes: both streams' tiles.
    const STAGE_BYTES: usize = Self::S0_BYTES + S1::BYTES.next_multiple_of(ALIGN);
    /// The slack to align the tiles (the set starts 128-aligned), the resident tile, the stages,
    /// then the barrier objects: two for the resident tile, four a stage, 8 bytes each.
    const TOTAL: usize = {
        assert!(STAGES >= 1 && STAGES <= 16, "a pipeline has 1 to 16 stages");
        let total = (ALIGN - 128) + Self::R_BYTES + STAGES * Self::STAGE_BYTES + 16 + 32 * STAGES;
        assert!(
            total <= crate::kernel::MAX_SHARED_BYTES,
            "a resident tile and its streams' stages fit in 227 KiB of shared memory"
        );
        total.next_multiple_of(128)
    };
}

// SAFETY: `BYTES` covers the slack to align the tiles, the resident tile, the stages and the
// barrier objects; `tiles` makes one handle over them, which reaches nothing outside.
unsafe impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Resident2> TileSet
    for Streams<STAGES, R, S0, S1, R2>
{
    type Tiles<'k> = Streamed<'k, STAGES, R, S0, S1, R2>;
    const BYTES: usize = Self::TOTAL;
    #[inline(always)]
    unsafe fn tiles<'k>(base: *mut u8) -> Streamed<'k, STAGES, R, S0, S1, R2> {
        Streamed {
            base,
            kernel: PhantomData,
        }
    }
}

/// The tiles of a [`Streams`] set, in block-shared memory: handed to
/// [`Block::specialise_streams`](crate::kernel::Block::specialise_streams), which runs one
/// producer and the consumer warpgroups over them; no other code reaches their memory.
pub struct Streamed<'k, const STAGES: usize, R, S0, S1, R2 = ()> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) base: *mut u8,
    kernel: PhantomData<(&'k (), R, S0, S1, R2)>,
}

/// The tile types of a [`Streams`] set.
type Kinds<R, S0, S1, R2> = fn() -> (R, S0, S1, R2);

/// The shared-state-space addresses of a [`Streams`] set's tiles and barrier objects.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub(super) struct Spots<const STAGES: usize, R, S0, S1, R2> {
    /// The resident tile, 1024-aligned.
    first: u32,
    kinds: PhantomData<Kinds<R, S0, S1, R2>>,
}

impl<const STAGES: usize, R, S0, S1, R2> Clone for Spots<STAGES, R, S0, S1, R2> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<const STAGES: usize, R, S0, S1, R2> Copy for Spots<STAGES, R, S0, S1, R2> {}

#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Resident2> Spots<STAGES, R, S0, S1, R2> {
    /// The places of `tiles`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn of(tiles: &Streamed<'_, STAGES, R, S0, S1, R2>) -> Self {
        // SAFETY: the tiles are the block's shared memory (`TileSet::tiles`).
        let base = unsafe { crate::kernel::mma::raw::shared_address(tiles.base) };
        Spots {
            first: base.next_multiple_of(ALIGN as u32),
            kinds: PhantomData,
        }
    }

    /// The resident tile.
    #[inline(always)]
    fn resident(self) -> u32 {
        self.first
    }

    /// The second resident tile (where `R2` is one).
    #[inline(always)]
    fn resident2(self) -> u32 {
        self.first + Streams::<STAGES, R, S0, S1, R2>::R0_BYTES as u32
    }

    /// Stage `s`'s tile of stream `which` (0 or 1).
    #[inline(always)]
    fn streamed(self, which: usize, s: usize) -> u32 {
        let stage = self.first as usize
            + Streams::<STAGES, R, S0, S1, R2>::R_BYTES
            + s * Streams::<STAGES, R, S0, S1, R2>::STAGE_BYTES;
        (stage + which * Streams::<STAGES, R, S0, S1, R2>::S0_BYTES) as u32
    }

    /// Barrier object `i`: 0 and 1 the resident tile's (full, empty), then for stream `w`,
    /// `2 + 2 STAGES w + s` stage `s`'s full and `2 + 2 STAGES w + STAGES + s` its empty.
    #[inline(always)]
    fn barrier(self, i: usize) -> u32 {
        self.streamed(0, STAGES) + (8 * i) as u32
    }

    /// The barrier objects: full, then empty, of the resident tile (`which` `None`) or of
    /// stage `s` of stream `which`.
    #[inline(always)]
    pub(super) fn pair(self, which: Option<usize>, s: usize) -> (u32, u32) {
        match which {
            None => (self.barrier(0), self.barrier(1)),
            Some(w) => (
                self.barrier(2 + 2 * STAGES * w + s),
                self.barrier(2 + 2 * STAGES * w + STAGES + s),
            ),
        }
    }

    /// The tile of the resident slot (`which` `None`) or of stage `s` of stream `which`.
    #[inline(always)]
    pub(super) fn tile(self, which: Option<usize>, s: usize) -> u32 {
        match which {
            None => self.resident(),
            Some(w) => self.streamed(w, s),
        }
    }

    /// Every barrier object of the set, in turn, with the arrivals its phases count: one (the
    /// producer's) for a full object, one from each consumer warp for a stage's empty one, and
    /// one from each consumer warp for each resident tile for the resident slot's (each
    /// resident tile is released on its own).
    #[inline(always)]
    pub(super) fn barriers(self, consumer_warps: u32) -> impl Iterator<Item = (u32, u32)> {
        (0..2 + 4 * STAGES).map(move |i| {
            let count = if i == 1 {
                consumer_warps * (1 + R2::TILES)
            } else if i >= 2 && ((i - 2) % (2 * STAGES)) >= STAGES {
                consumer_warps
            } else {
                1
            };
            (self.barrier(i), count)
        })
    }
}

mod resident2 {
    pub trait Sealed {}
}

/// The second resident tile of a [`Streams`] set: none (`()`, the default), or an
/// [`Operand`] tile, filled with the first ([`StreamProducer::load_residents`]) and taken with
/// it ([`StreamConsumer::residents`]).
pub trait Resident2: resident2::Sealed + 'static {
    /// Its bytes (0 for none).
    #[doc(hidden)]
    const BYTES: usize;
    /// Its tiles: 0 or 1.
    #[doc(hidden)]
    const TILES: u32;
}

impl resident2::Sealed for () {}
impl Resident2 for () {
    const BYTES: usize = 0;
    const TILES: u32 = 0;
}

impl<T: Operand> resident2::Sealed for T {}
impl<T: Operand> Resident2 for T {
    const BYTES: usize = T::BYTES;
    const TILES: u32 = 1;
}

/// Fill counts of the resident slot and of the two streams.
#[derive(Clone, Copy)]
pub(super) struct Counts {
    pub(super) resident: usize,
    pub(super) streams: [usize; 2],
}

/// The producer of a [`Streams`] set: the one thread of the block that starts the copies into
/// its tiles. It cannot read a tile, nor fill one that a consumer still holds: each load waits
/// until every consumer warp has released the tile it refills.
pub struct StreamProducer<'c, const STAGES: usize, R, S0, S1, R2 = ()> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) spots: Spots<STAGES, R, S0, S1, R2>,
    pub(super) counts: Counts,
    pub(super) call: PhantomData<(&'c mut (), *mut u8)>,
}

impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand> StreamProducer<'_, STAGES, R, S0, S1> {
    /// Fills the resident tile with the box of `map` whose first element is at `origin`
    /// (`[…, row, column]`: the matrix's index in a batch of rank 3 or more, then the row and
    /// column), once every consumer has released its last fill. Elements past the tensor's
    /// edge (past the matrix's) arrive as zero.
    #[inline(always)]
    pub fn load_resident<const RANK: usize>(&mut self, map: &R::Map<'_, RANK>, origin: [usize; RANK]) {
        let k = self.counts.resident;
        self.counts.resident += 1;
        let copy = |dst: u32, full: u32| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `fill`'s promise for the slot's tile, which is `R`'s alone.
            unsafe {
                R::copy(dst, map, origin, full)
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (dst, full, map, origin);
        };
        // SAFETY: the resident slot, its `k`-th fill, of its one tile `R` (`R2` is none).
        unsafe { self.fill(None, 1, k, R::BYTES, copy) }
    }
}

impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Operand> StreamProducer<'_, STAGES, R, S0, S1, R2> {
    /// Fills both resident tiles, `R`'s with the box of `map` at `origin` and `R2`'s with the
    /// box of `map2` at `origin2`, once every consumer has released both of its last fill
    /// (attention's backward pass keeps a chunk's keys and values, or its queries and their
    /// output's gradient). Elements past a tensor's edge arrive as zero.
    #[inline(always)]
    pub fn load_residents<const RANK: usize, const RANK2: usize>(
        &mut self,
        map: &R::Map<'_, RANK>,
        origin: [usize; RANK],
        map2: &R2::Map<'_, RANK2>,
        origin2: [usize; RANK2],
    ) {
        let k = self.counts.resident;
        self.counts.resident += 1;
        let second = self.spots.resident2() - self.spots.resident();
        let copy = |dst: u32, full: u32| {
            #[cfg(target_arch = "nvptx64")]
            {
                // SAFETY: `fill`'s promise for the slot's tiles: `R`'s first, 1024-aligned.
                unsafe { R::copy(dst, map, origin, full) };
                // SAFETY: as above, `R2`'s after `R`'s aligned bytes (`Spots`), 1024-aligned.
                unsafe { R2::copy(dst + second, map2, origin2, full) };
            }
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (dst, full, second, map, origin, map2, origin2);
        };
        // SAFETY: the resident slot, its `k`-th fill, of both its tiles, whose bytes the full
        // barrier object expects together.
        unsafe { self.fill(None, 1, k, R::BYTES + R2::BYTES, copy) }
    }
}

impl<const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Resident2>
    StreamProducer<'_, STAGES, R, S0, S1, R2>
{
    /// Fills the first stream's next stage with the box of `map` at `origin`, once its last
    /// readers have released it. The consumers receive the first stream's tiles in the order
    /// they were filled ([`StreamConsumer::first`]).
    #[inline(always)]
    pub fn load_first<const RANK: usize>(&mut self, map: &S0::Map<'_, RANK>, origin: [usize; RANK]) {
        let k = self.counts.streams[0];
        self.counts.streams[0] += 1;
        let copy = |dst: u32, full: u32| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `fill`'s promise for the stage's tile of stream 0.
            unsafe {
                S0::copy(dst, map, origin, full)
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (dst, full, map, origin);
        };
        // SAFETY: stream 0's stage `k % STAGES`, its `k`-th fill, of its tile `S0`.
        unsafe { self.fill(Some(0), STAGES, k, S0::BYTES, copy) }
    }

    /// Fills the second stream's next stage, as [`load_first`](Self::load_first) the first's.
    #[inline(always)]
    pub fn load_second<const RANK: usize>(&mut self, map: &S1::Map<'_, RANK>, origin: [usize; RANK]) {
        let k = self.counts.streams[1];
        self.counts.streams[1] += 1;
        let copy = |dst: u32, full: u32| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `fill`'s promise for the stage's tile of stream 1.
            unsafe {
                S1::copy(dst, map, origin, full)
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (dst, full, map, origin);
        };
        // SAFETY: stream 1's stage `k % STAGES`, its `k`-th fill, of its tile `S1`.
        unsafe { self.fill(Some(1), STAGES, k, S1::BYTES, copy) }
    }

    /// Fill `k` of the slot `which` (the resident tiles, or a stream) of `slots` stages: waits
    /// until its readers released fill `k - slots`, tells the full barrier object to expect
    /// `bytes`, then runs `copy(tile, full)`.
    ///
    /// # Safety
    ///
    /// `slots` is the slot's number of stages, `k` its fills so far, and `copy` starts copies
    /// of exactly `bytes` into the slot's tiles at `tile` (each of its type, where `Spots`
    /// places it), signalling `full`; `copy` may rely on `tile` being 1024-aligned and
    /// released by its readers, read next once `full`'s phase completes.
    #[inline(always)]
    unsafe fn fill(&mut self, which: Option<usize>, slots: usize, k: usize, bytes: usize, copy: impl FnOnce(u32, u32)) {
        let _ = Streams::<STAGES, R, S0, S1, R2>::TOTAL;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw;
            let s = k % slots;
            let (full, empty) = self.spots.pair(which, s);
            if k >= slots {
                // Fill `k - slots` of the slot was released by every consumer warp.
                // SAFETY: an initialised barrier object of the running specialisation, on sm_90
                // (the kernel issues bulk copies); its phase `k / slots - 1` is the release of
                // that fill, whose parity this is.
                unsafe { raw::mbarrier_wait(empty, ((k / slots - 1) % 2) as u32) };
            }
            // SAFETY: an initialised barrier object whose phase `k / slots` expects the
            // producer's one arrival (this one, once a fill) and these bytes.
            unsafe { raw::mbarrier_arrive_expect_tx(full, bytes as u32) };
            // The tensor maps are valid maps of tensors the kernel only reads (`TensorMap`), of
            // the tiles' boxes and swizzles (their types); the tile is 1024-aligned (`Spots`),
            // released by its readers (above), and read next once `full`'s phase completes,
            // which waits for these bytes: the caller's `copy` starts them.
            copy(self.spots.tile(which, s), full);
        }
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = (which, slots, k, bytes, copy);
    }
}

/// A consumer warpgroup's side of a [`Streams`] set: it takes the resident tile and each
/// stream's stages [`Landed`], in the order the producer filled them.
pub struct StreamConsumer<'c, const STAGES: usize, R, S0, S1, R2 = ()> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) spots: Spots<STAGES, R, S0, S1, R2>,
    pub(super) counts: Counts,
    pub(super) call: PhantomData<(&'c mut (), *mut u8)>,
}

impl<'c, const STAGES: usize, R: Operand, S0: Operand, S1: Operand> StreamConsumer<'c, STAGES, R, S0, S1> {
    /// Waits until the resident tile's next fill has landed, and returns it: the warpgroup's to
    /// read (products borrow it) until it drops the handle, which releases it to the producer.
    #[inline(always)]
    pub fn resident(&mut self) -> Landed<'c, R> {
        let k = self.counts.resident;
        self.counts.resident += 1;
        self.take(None, 1, k)
    }
}

impl<'c, const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Operand>
    StreamConsumer<'c, STAGES, R, S0, S1, R2>
{
    /// Waits until the resident tiles' next fill has landed, and returns both: the
    /// warpgroup's to read until it drops both handles (each releases its tile; the producer
    /// refills them once both are released by every consumer warp).
    #[inline(always)]
    pub fn residents(&mut self) -> (Landed<'c, R>, Landed<'c, R2>) {
        let k = self.counts.resident;
        self.counts.resident += 1;
        let first = self.take::<R>(None, 1, k);
        let second = Landed {
            tile: self.spots.resident2(),
            empty: first.empty,
            call: PhantomData,
        };
        (first, second)
    }
}

impl<'c, const STAGES: usize, R: Operand, S0: Operand, S1: Operand, R2: Resident2>
    StreamConsumer<'c, STAGES, R, S0, S1, R2>
{
    /// Waits until the first stream's next stage has landed, and returns its tile.
    #[inline(always)]
    pub fn first(&mut self) -> Landed<'c, S0> {
        let k = self.counts.streams[0];
        self.counts.streams[0] += 1;
        self.take(Some(0), STAGES, k)
    }

    /// Waits until the second stream's next stage has landed, and returns its tile.
    #[inline(always)]
    pub fn second(&mut self) -> Landed<'c, S1> {
        let k = self.counts.streams[1];
        self.counts.streams[1] += 1;
        self.take(Some(1), STAGES, k)
    }

    /// Fill `k` of the slot `which`, of `slots` stages, once landed.
    #[inline(always)]
    fn take<T: Operand>(&self, which: Option<usize>, slots: usize, k: usize) -> Landed<'c, T> {
        let s = k % slots;
        let (full, empty) = self.spots.pair(which, s);
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an initialised barrier object of the running specialisation; its phase
        // `k / slots` is this consumer's next of the slot (its fills are taken in turn, none
        // skipped: the one before was waited for by this consumer's last take of the slot).
        unsafe {
            super::raw::mbarrier_wait(full, ((k / slots) % 2) as u32)
        };
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = full;
        Landed {
            tile: self.spots.tile(which, s),
            empty,
            call: PhantomData,
        }
    }
}

/// A tile of a [`Streams`] set whose copies have landed, held by a consumer warpgroup: read by
/// its products ([`Warpgroup::mma_resident`](super::Warpgroup::mma_resident),
/// [`Warpgroup::mma_pv`](super::Warpgroup::mma_pv)), which keep or borrow it until a wait has
/// seen them done. Dropped, it releases the tile: each warp of the warpgroup arrives on the
/// tile's barrier object, and the producer refills it once every consumer warp has. Products
/// that borrowed it and were forgotten (`mem::forget`) rather than waited for may still read
/// it then: the drop waits for every product of the warpgroup first (so dropping a tile while
/// another product runs waits for that product too).
pub struct Landed<'c, T: Operand> {
    /// The tile (shared state space), 1024-aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    pub(super) tile: u32,
    /// The barrier object its release arrives on.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    empty: u32,
    call: PhantomData<(&'c (), *mut u8, T)>,
}

impl<T: Operand> Landed<'_, T> {
    /// Releases the tile without waiting for the warpgroup's products.
    ///
    /// # Safety
    ///
    /// Run by the warpgroup's threads together; no product that reads the tile is running.
    #[inline(always)]
    pub(super) unsafe fn release(self) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: the caller's contract.
        unsafe { this.arrive() };
    }

    /// Each warp's arrival on the tile's barrier object.
    ///
    /// # Safety
    ///
    /// As [`release`](Self::release), once for the handle.
    #[inline(always)]
    unsafe fn arrive(&self) {
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: a special register, no precondition.
            let lane = unsafe { core::arch::nvptx::_thread_idx_x() } % 32;
            // SAFETY: an initialised barrier object of the running specialisation, whose phase
            // for this fill expects one arrival from each consumer warp: this warp's first
            // lane's, once (the caller: once a handle, by each of its threads). Predicated, not
            // branched: two handles dropped in a row put their aligned waits and arrivals side
            // by side, and a branch there let the compiler split the warp around the waits.
            unsafe { super::raw::mbarrier_arrive_where(self.empty, lane == 0) };
        }
    }
}

impl<T: Operand> Drop for Landed<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a `Landed` lives in a consumer warpgroup's code, which all 128 threads run
        // together (`Block::specialise_streams`), on sm_90a (its products are `wgmma`s).
        unsafe {
            super::raw::wgmma_wait::<0>()
        };
        // SAFETY: every product of the warpgroup is done (above); dropped once.
        unsafe { self.arrive() };
    }
}
