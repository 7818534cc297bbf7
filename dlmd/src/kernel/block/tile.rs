//! Block-shared tiles: static-extent views in [`BlockShared`] memory whose phase is in their
//! type ([`Writable`] → [`Written`] → [`Readable`] → [`Writable`] …), and the sets of tiles a
//! cooperative kernel declares in its [`Block`](super::Block) parameter.

use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::layout::{LayoutRight, Mapping};
use crate::space::BlockShared;
use crate::view::{Mdspan, Shared, Unique};
use core::marker::PhantomData;
use core::ops::Index;

mod layout;
#[cfg(test)]
mod tests;

pub use layout::{LeftPadded, LeftSwizzled, RightPadded, RightSwizzled, TileLayout};

pub(super) mod sealed {
    pub trait Sealed {}
}

/// The phase of a [`Tile`]: what the block's threads may do with it until the next barrier.
pub trait Phase: sealed::Sealed + 'static {
    /// The phase after a barrier ([`Block::sync`](super::Block::sync)).
    type Next: Phase;
}

/// A tile the block may write: fresh (its elements are not initialised yet), or read in the
/// phase before the last barrier. [`Block::write`](super::Block::write) writes every element,
/// each by one thread; nothing reads it.
#[derive(Debug)]
pub enum Writable {}

/// A tile whose every element the block wrote in this phase: no thread may read it before a
/// barrier, since the element another thread writes may not be there yet.
#[derive(Debug)]
pub enum Written {}

/// A tile every thread of the block may read (indexing, [`Tile::view`]), and none write: made
/// by the barrier that ended the phase that wrote it.
#[derive(Debug)]
pub enum Readable {}

impl sealed::Sealed for Writable {}
impl sealed::Sealed for Written {}
impl sealed::Sealed for Readable {}
impl Phase for Writable {
    type Next = Writable;
}
impl Phase for Written {
    type Next = Readable;
}
// After a barrier every read of the phase before is done: the block may write the tile again.
impl Phase for Readable {
    type Next = Writable;
}

/// A tile of block-shared memory: `E` static extents of `T`, laid out by `L`, in phase `P`.
///
/// Made by a cooperative kernel's [`Block`](super::Block) from the tiles its type declares
/// ([`TileOf`]), once per block, and never outside a kernel: it is not a kernel parameter and
/// does not outlive the kernel's body (its lifetime `'k` is the kernel's). It moves between
/// phases by value, so no borrow of one phase survives into the next:
///
/// - [`Writable`]: [`Block::write`](super::Block::write) gives every element a value, each by
///   one thread, and returns the tile [`Written`];
/// - [`Written`]: the next [`Block::sync`](super::Block::sync) makes it [`Readable`];
/// - [`Readable`]: every thread reads it; the next barrier makes it [`Writable`] again.
pub struct Tile<'k, T, E: Extents, L: TileLayout, P: Phase> {
    view: Mdspan<'k, T, E, L::Layout, BlockShared, Unique>,
    phase: PhantomData<P>,
}

impl<'k, T: DlElement, E: Extents, L: TileLayout, P: Phase> Tile<'k, T, E, L, P> {
    /// The tile over `view`, in phase `P`.
    ///
    /// # Safety
    ///
    /// `view` is a block-shared allocation of this block that no other tile reaches, and its
    /// elements are in the state `P` says: written by the whole block in this phase (`Written`),
    /// or all written and a barrier passed since (`Readable`).
    #[inline(always)]
    pub(super) unsafe fn from_view(view: Mdspan<'k, T, E, L::Layout, BlockShared, Unique>) -> Self {
        Tile {
            view,
            phase: PhantomData,
        }
    }

    /// The tile in its next phase, after a barrier.
    #[inline(always)]
    pub(super) fn next(self) -> Tile<'k, T, E, L, P::Next> {
        Tile {
            view: self.view,
            phase: PhantomData,
        }
    }

    /// The tile's extents.
    #[inline(always)]
    pub fn extents(&self) -> &E {
        self.view.extents()
    }

    /// The tile's storage, leaving its phase behind.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn into_storage(self) -> Mdspan<'k, T, E, L::Layout, BlockShared, Unique> {
        self.view
    }

    /// The tile's storage, for the block's partition.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn storage(&self) -> &Mdspan<'k, T, E, L::Layout, BlockShared, Unique> {
        &self.view
    }
}

impl<'k, T: DlElement, E: Extents, L: TileLayout> Tile<'k, T, E, L, Writable> {
    /// The tile [`Written`], once the block has written it.
    ///
    /// # Safety
    ///
    /// The block's threads have written every element of the tile in this phase.
    #[inline(always)]
    pub(super) unsafe fn written(self) -> Tile<'k, T, E, L, Written> {
        Tile {
            view: self.view,
            phase: PhantomData,
        }
    }
}

impl<'k, T: DlElement, E: Extents, L: TileLayout> Tile<'k, T, E, L, Readable> {
    /// The tile as a read-only view, for as long as it stays readable: what [`submdspan`](Mdspan::submdspan)
    /// and the view's other reading methods take.
    #[inline(always)]
    pub fn view(&self) -> Mdspan<'_, T, E, L::Layout, BlockShared, Shared> {
        const {
            assert!(
                L::SWIZZLE == 0,
                "a swizzled tile has no strided view: read its elements with `get` or `get_or`, or load it as `mma` operands"
            )
        };
        // SAFETY: the tile's span, read-only while the tile stays `Readable` (borrowed here):
        // nothing writes it in a readable phase.
        unsafe { Mdspan::from_non_null(self.view.non_null(), *self.view.mapping(), BlockShared) }
    }

    /// The element at `index`, `None` outside the extents.
    #[inline(always)]
    pub fn get(&self, index: E::Index) -> Option<&T> {
        if !self.view.mapping().contains(&index) {
            return None;
        }
        // SAFETY: inside the extents, checked above.
        Some(unsafe { self.element(index) })
    }

    /// The element at `index`, `fill` outside the extents: [`get`](Self::get) by value, with no
    /// `Option` of a reference between (whose test the compiler does not always see through for
    /// block-shared memory).
    #[inline(always)]
    pub fn get_or(&self, index: E::Index, fill: T) -> T {
        if !self.view.mapping().contains(&index) {
            return fill;
        }
        // SAFETY: inside the extents, checked above.
        *unsafe { self.element(index) }
    }

    /// The `K` elements from `index` along the tile's last dimension (`index`, then its last
    /// index one more, …), `None` where they pass its extents: one vector load where they are
    /// neighbours in memory and aligned to their size (a row-major tile's row, from a multiple
    /// of `K`, with `K` elements of 4, 8 or 16 bytes), `K` loads otherwise. The reads of a
    /// thread's runs of [`Lane::cells_in_runs`](super::Lane::cells_in_runs).
    #[inline(always)]
    pub fn get_run<const K: usize>(&self, index: E::Index) -> Option<[T; K]> {
        const { assert!(K > 0, "a run has at least one element") };
        const {
            assert!(
                L::SWIZZLE == 0,
                "a swizzled tile is read in runs by `mma` loads only: read its elements with `get` or `get_or`"
            )
        };
        let last = E::RANK.checked_sub(1)?;
        let mut end = index;
        end.as_mut()[last] = index.as_ref()[last].checked_add(K - 1)?;
        let mapping = self.view.mapping();
        // The run's last index inside the extents: so is its first, which differs only in a
        // smaller last index.
        if !mapping.contains(&end) {
            return None;
        }
        // SAFETY: `index` and the last of the run are inside the extents (checked above), so
        // is every index between them, in the tile's span.
        let first = unsafe { self.view.data_handle().add(mapping.offset_of(&index)) }.cast_const();
        let stride = mapping.stride(last);
        // Aligned to the run's size, told from the index rather than the address: the tile
        // starts 128-aligned, its strides are constants, and a run's first index is often
        // known a multiple of `K` (`Lane::cells_in_runs`), so the compiler decides this when
        // the kernel is compiled, and keeps the one vector load. Written out here, not through
        // `runs_aligned`: the compiler folds this form only (through that function the matrix
        // product's tile reads went element by element; the build test counts them).
        let aligned = stride == 1
            && index.as_ref()[last].is_multiple_of(K)
            && (0..E::RANK).all(|d| d == last || mapping.stride(d).rem_euclid(K as isize) == 0);
        if aligned {
            // SAFETY: the run's elements, readable (every element was written, nothing writes
            // them in this phase), neighbours from `first`, which is a multiple of `K` elements
            // from the tile's 128-aligned start (its offset is: every stride but the last, 1, is
            // a multiple of `K`, and so is the last index), so aligned to the run's size where
            // that is 8 or 16 bytes.
            return Some(unsafe { crate::aligned::read_aligned_run::<T, K>(first) });
        }
        // SAFETY: the run's elements, readable, `stride` apart from `first`.
        Some(unsafe { crate::aligned::read_run::<T, K>(first, stride) })
    }

    /// The element at `index`.
    ///
    /// # Safety
    ///
    /// `index` is inside the extents.
    #[inline(always)]
    unsafe fn element(&self, index: E::Index) -> &T {
        let offset = L::offset_of::<T, E>(self.view.mapping(), &index);
        // SAFETY: inside the extents (caller), so in the tile's span: an in-bounds offset.
        let element = unsafe { self.view.data_handle().add(offset) };
        // SAFETY: readable, so every element was written and nothing writes it while the
        // returned reference (which borrows the tile) lives.
        unsafe { &*element }
    }
}

/// Whether a tile of `mapping` keeps each run of `k` along dimension `fast` that starts at a
/// multiple of `k` there aligned to the run's size: the runs are contiguous, and every other
/// stride is a multiple of `k`, so the run starts a multiple of `k` elements from the tile's
/// 128-aligned start. The strides are the tile's constants, so the compiler decides this when
/// the kernel is compiled (an address test it would have to make at run time, and would merge
/// the vector path into the element-by-element one).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) fn runs_aligned<M: Mapping>(mapping: &M, fast: usize, k: usize) -> bool {
    let rank = <M::Extents as Extents>::RANK;
    mapping.stride(fast) == 1 && (0..rank).all(|d| d == fast || mapping.stride(d).rem_euclid(k as isize) == 0)
}

/// Writes `values` to a tile's run of `K` from `first`, its elements `stride` apart: one
/// vector store where `aligned` ([`runs_aligned`] for a run that starts at a multiple of `K`),
/// `K` stores otherwise.
///
/// # Safety
///
/// The run's elements are the tile's, written by this thread alone and read by none meanwhile
/// (a writable tile's, given to this thread by the block's partition); where `aligned`, the
/// run is as [`runs_aligned`] says.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) unsafe fn write_run<T: Copy, const K: usize>(first: *mut T, aligned: bool, stride: isize, values: [T; K]) {
    if aligned {
        // SAFETY: the run's `K` elements are neighbours from `first`, which is a multiple of
        // `K` elements from the tile's 128-aligned start, so aligned to their size (caller).
        unsafe { crate::aligned::write_aligned_run(first, values) }
    } else {
        // SAFETY: the run's `K` elements, one stride apart (caller).
        unsafe { crate::aligned::write_each(first, stride, values) }
    }
}

/// The extents of a tile of extents `E`, all static (a dynamic one, which no tile has, as 0).
#[inline(always)]
pub(super) fn static_shape<E: Extents>() -> E::Index {
    let mut shape = E::Index::zeros();
    for (d, extent) in shape.as_mut().iter_mut().enumerate() {
        *extent = E::static_extent(d).unwrap_or(0);
    }
    shape
}

impl<T: DlElement, E: Extents, L: TileLayout> Index<E::Index> for Tile<'_, T, E, L, Readable> {
    type Output = T;

    /// The element at `index`.
    ///
    /// # Panics
    ///
    /// If `index` is outside the extents.
    #[inline(always)]
    #[track_caller]
    fn index(&self, index: E::Index) -> &T {
        if !self.view.mapping().contains(&index) {
            crate::view::index_out_of_bounds(index.as_ref(), self.extents().to_array().as_ref());
        }
        // SAFETY: inside the extents, checked above.
        unsafe { self.element(index) }
    }
}

/// The shape of one block-shared tile, as a cooperative kernel's [`Block`](super::Block)
/// declares it: element type `T`, static extents `E`, and a [`TileLayout`] (row-major by
/// default; [`RightPadded`] and [`LeftPadded`] pad the rows or columns so that a warp reading
/// across them meets every bank of shared memory once). Its byte size is known at compile time,
/// and the kernel's block-shared memory is the sum of its tiles' (each aligned to 128 bytes),
/// which the launcher reserves for each block as the launch's dynamic shared memory.
pub struct TileOf<T, E, L = LayoutRight>(PhantomData<(T, E, L)>);

/// The element type, extents and view layout of one tile type ([`TileOf`]): what
/// [`Lane::stage`](super::Lane::stage) reads ahead for.
pub trait TileShape: sealed::Sealed + 'static {
    /// The tile's element type.
    type Element: DlElement;
    /// The tile's extents, all static.
    type Extents: Extents;
    /// The layout of the tile's view ([`TileLayout::Layout`]).
    type Layout: TileLayout;
}

impl<T: DlElement, E: Extents + 'static, L: TileLayout> TileShape for TileOf<T, E, L> {
    type Element = T;
    type Extents = E;
    type Layout = L;
}

/// The tiles a cooperative kernel declares: `()`, one [`TileOf`], or a tuple of up to four.
///
/// # Safety
///
/// [`BYTES`](Self::BYTES) covers every tile at its offset, each aligned to 128 bytes and none
/// overlapping another; [`tiles`](Self::tiles) makes each tile over its own bytes only.
pub unsafe trait TileSet: sealed::Sealed + 'static {
    /// The tiles, fresh ([`Writable`]).
    type Tiles<'k>;
    /// The block-shared bytes the tiles take.
    const BYTES: usize;

    /// The tiles over the block-shared memory at `base`.
    ///
    /// # Safety
    ///
    /// `base` is 128-aligned block-shared memory of [`BYTES`](Self::BYTES) bytes that nothing
    /// else reaches while `'k` lives.
    #[doc(hidden)]
    unsafe fn tiles<'k>(base: *mut u8) -> Self::Tiles<'k>;
}

/// `bytes` rounded up to a multiple of 128, the alignment of every tile: a row of the 32 banks
/// of shared memory, so that a warp's reads of a tile meet the banks as they would from the
/// start of the block's shared memory (a 16-byte vector read by 8 lanes is then one row of
/// banks, where an offset of 16 would spread it over two).
const fn aligned(bytes: usize) -> usize {
    bytes.div_ceil(128) * 128
}

impl<T, E, L> sealed::Sealed for TileOf<T, E, L> {}

impl<T: DlElement, E: Extents, L: TileLayout> TileOf<T, E, L> {
    /// The elements the tile's span holds (its size, and padding); its extents must all be
    /// static and its bytes fit in a block's shared memory, or the kernel fails to compile. The
    /// launcher reserves the tiles as the launch's dynamic shared memory, of which a launch gets
    /// 48 KiB on every device, and up to [`MAX_SHARED_BYTES`](crate::kernel::MAX_SHARED_BYTES) where the device allows it (opted in to by the launcher).
    const SPAN: usize = {
        if L::SWIZZLE > 0 {
            assert!(E::RANK == 2, "a swizzled tile is rank 2");
            let (Some(first), Some(last)) = E::STATIC_ENDS else {
                panic!("a tile's extents must all be static (`Const<N>`)")
            };
            let fast = if L::FIRST_FASTEST { first } else { last };
            assert!(
                size_of::<T>() > 0 && 16 % size_of::<T>() == 0,
                "a swizzled tile moves 16-byte pieces: its element's size divides 16"
            );
            assert!(
                (fast * size_of::<T>()).is_multiple_of(L::SWIZZLE),
                "a swizzled tile's lines are whole swizzled lines: its fastest extent holds a multiple of the swizzle's bytes (128 for `Swizzle128`: 64 `bf16`)"
            );
        }
        let span = match layout::span::<E, L>() {
            Some(span) => span,
            None => usize::MAX,
        };
        assert!(
            span <= super::MAX_SHARED_BYTES / size_of::<T>(),
            "a tile's extents must all be static (`Const<N>`), and fit in 227 KiB of shared memory"
        );
        // A span shorter than the tile's elements would leave one past the tile's bytes, in the
        // next tile's of a set (whose offset is this tile's bytes after its own).
        let size = match E::STATIC_SIZE {
            Some(size) => size,
            None => usize::MAX,
        };
        assert!(span >= size, "a tile's span holds every element of the tile");
        span
    };
    /// The tile's bytes, aligned to 128.
    const TILE_BYTES: usize = aligned(Self::SPAN * size_of::<T>());

    /// The fresh tile at `base`.
    ///
    /// # Safety
    ///
    /// As for [`TileSet::tiles`], for this tile's bytes.
    #[inline(always)]
    unsafe fn at<'k>(base: *mut u8) -> Tile<'k, T, E, L, Writable> {
        let _ = Self::TILE_BYTES;
        // SAFETY: static extents (every one is: `SPAN`) whose span, `SPAN`, fits in `MAX_SHARED_BYTES`.
        let mapping = unsafe { L::mapping(E::from_array_unchecked(static_shape::<E>()), Self::SPAN) };
        // SAFETY: `base` is in the block's shared memory (caller), whose generic addresses are
        // not NULL. No NULL test: a pointer chosen between `base` and another would lose the
        // compiler's knowledge that it is shared memory.
        let ptr = unsafe { core::ptr::NonNull::new_unchecked(base.cast::<T>()) };
        // SAFETY: `TILE_BYTES` bytes at `base` are this tile's alone (caller), aligned to 128,
        // and hold the mapping's span (`SPAN` elements).
        let view = unsafe { Mdspan::from_non_null(ptr, mapping, BlockShared) };
        // SAFETY: a fresh tile is `Writable`: nothing reads it before it is written.
        unsafe { Tile::from_view(view) }
    }
}

impl sealed::Sealed for () {}

// SAFETY: no tiles, no bytes.
unsafe impl TileSet for () {
    type Tiles<'k> = ();
    const BYTES: usize = 0;
    #[inline(always)]
    unsafe fn tiles<'k>(_: *mut u8) -> Self::Tiles<'k> {}
}

// SAFETY: one tile of `TILE_BYTES` at `base`.
unsafe impl<T: DlElement, E: Extents, L: TileLayout> TileSet for TileOf<T, E, L> {
    type Tiles<'k> = Tile<'k, T, E, L, Writable>;
    const BYTES: usize = Self::TILE_BYTES;
    #[inline(always)]
    unsafe fn tiles<'k>(base: *mut u8) -> Self::Tiles<'k> {
        // SAFETY: the set's bytes are this tile's (caller).
        unsafe { Self::at(base) }
    }
}

macro_rules! tile_tuples {
    ($($name:ident)+) => {
        impl<$($name),+> sealed::Sealed for ($($name,)+) {}

        // SAFETY: each tile at the sum of the sizes before it, each a multiple of 128 bytes, so
        // the tiles follow one another without overlap and stay 128-aligned.
        unsafe impl<$($name: TileSet),+> TileSet for ($($name,)+) {
            type Tiles<'k> = ($($name::Tiles<'k>,)+);
            const BYTES: usize = 0 $(+ $name::BYTES)+;
            #[inline(always)]
            #[allow(unused_assignments)]
            unsafe fn tiles<'k>(base: *mut u8) -> Self::Tiles<'k> {
                let mut offset = 0;
                ($(
                    {
                        // SAFETY: this tile's bytes, after the ones before it, inside the set's
                        // (caller).
                        let tile = unsafe { $name::tiles(base.wrapping_add(offset)) };
                        offset += $name::BYTES;
                        tile
                    },
                )+)
            }
        }
    };
}

tile_tuples!(A);
tile_tuples!(A B);
tile_tuples!(A B C);
tile_tuples!(A B C D);

/// What passes a barrier: a tile (its phase advances) or a tuple of them.
pub trait Barrier: sealed::Sealed {
    /// The same tiles after the barrier.
    type After;
    /// Advances each tile's phase.
    #[doc(hidden)]
    fn after(self) -> Self::After;
}

impl<T, E: Extents, L: TileLayout, P: Phase> sealed::Sealed for Tile<'_, T, E, L, P> {}

impl<'k, T: DlElement, E: Extents, L: TileLayout, P: Phase> Barrier for Tile<'k, T, E, L, P> {
    type After = Tile<'k, T, E, L, P::Next>;
    #[inline(always)]
    fn after(self) -> Self::After {
        self.next()
    }
}

// A barrier with no tiles: the block's writes to global memory before it are seen after it.
impl Barrier for () {
    type After = ();
    #[inline(always)]
    fn after(self) {}
}

macro_rules! barrier_tuples {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Barrier),+> Barrier for ($($name,)+) {
            type After = ($($name::After,)+);
            #[inline(always)]
            fn after(self) -> Self::After {
                ($(self.$index.after(),)+)
            }
        }
    };
}

barrier_tuples!(A 0);
barrier_tuples!(A 0, B 1);
barrier_tuples!(A 0, B 1, C 2);
barrier_tuples!(A 0, B 1, C 2, D 3);
