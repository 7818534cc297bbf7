//! Block-shared tiles: static-extent views in [`BlockShared`] memory whose phase is in their
//! type ([`Writable`] → [`Written`] → [`Readable`] → [`Writable`] …), and the sets of tiles a
//! cooperative kernel declares in its [`Block`](super::Block) parameter.

use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::layout::{CompactLayout, LayoutRight};
use crate::space::BlockShared;
use crate::view::{Mdspan, Shared, Unique};
use core::marker::PhantomData;
use core::ops::Index;

mod sealed {
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
pub struct Tile<'k, T, E: Extents, L: CompactLayout, P: Phase> {
    view: Mdspan<'k, T, E, L, BlockShared, Unique>,
    phase: PhantomData<P>,
}

impl<'k, T: DlElement, E: Extents, L: CompactLayout, P: Phase> Tile<'k, T, E, L, P> {
    /// The tile over `view`, in phase `P`.
    ///
    /// # Safety
    ///
    /// `view` is a block-shared allocation of this block that no other tile reaches, and its
    /// elements are in the state `P` says: written by the whole block in this phase (`Written`),
    /// or all written and a barrier passed since (`Readable`).
    #[inline(always)]
    pub(super) unsafe fn from_view(view: Mdspan<'k, T, E, L, BlockShared, Unique>) -> Self {
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
    pub(super) fn into_storage(self) -> Mdspan<'k, T, E, L, BlockShared, Unique> {
        self.view
    }

    /// The tile's storage, for the block's partition.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(super) fn storage(&self) -> &Mdspan<'k, T, E, L, BlockShared, Unique> {
        &self.view
    }
}

impl<'k, T: DlElement, E: Extents, L: CompactLayout> Tile<'k, T, E, L, Readable> {
    /// The tile as a read-only view, for as long as it stays readable: what [`submdspan`](Mdspan::submdspan)
    /// and the view's other reading methods take.
    #[inline(always)]
    pub fn view(&self) -> Mdspan<'_, T, E, L, BlockShared, Shared> {
        // SAFETY: the tile's span, read-only while the tile stays `Readable` (borrowed here):
        // nothing writes it in a readable phase.
        unsafe { Mdspan::from_raw_parts(self.view.data_handle(), *self.view.mapping(), BlockShared) }
    }

    /// The element at `index`, `None` outside the extents.
    #[inline(always)]
    pub fn get(&self, index: E::Index) -> Option<&T> {
        use crate::layout::Mapping;
        let mapping = self.view.mapping();
        // SAFETY: inside the extents, so in the tile's span; readable, so nothing writes it
        // while the returned reference (which borrows the tile) lives.
        mapping
            .contains(&index)
            .then(|| unsafe { &*self.view.data_handle().wrapping_add(mapping.offset_of(&index)) })
    }
}

impl<T: DlElement, E: Extents, L: CompactLayout> Index<E::Index> for Tile<'_, T, E, L, Readable> {
    type Output = T;

    /// The element at `index`.
    ///
    /// # Panics
    ///
    /// If `index` is outside the extents.
    #[inline(always)]
    #[track_caller]
    fn index(&self, index: E::Index) -> &T {
        match self.get(index) {
            Some(element) => element,
            None => crate::view::index_out_of_bounds(index.as_ref(), self.extents().to_array().as_ref()),
        }
    }
}

/// The shape of one block-shared tile, as a cooperative kernel's [`Block`](super::Block)
/// declares it: element type `T`, static extents `E`, layout `L` (row-major by default). Its
/// byte size is known at compile time, and the kernel's block-shared memory is the sum of its
/// tiles' (each aligned to 16 bytes), which the GPU reserves per block when the kernel starts.
pub struct TileOf<T, E, L = LayoutRight>(PhantomData<(T, E, L)>);

/// The tiles a cooperative kernel declares: `()`, one [`TileOf`], or a tuple of up to four.
///
/// # Safety
///
/// [`BYTES`](Self::BYTES) covers every tile at its offset, each aligned to 16 bytes and none
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
    /// `base` is 16-aligned block-shared memory of [`BYTES`](Self::BYTES) bytes that nothing
    /// else reaches while `'k` lives.
    #[doc(hidden)]
    unsafe fn tiles<'k>(base: *mut u8) -> Self::Tiles<'k>;
}

/// `bytes` rounded up to a multiple of 16, the alignment of every tile.
const fn aligned(bytes: usize) -> usize {
    bytes.div_ceil(16) * 16
}

impl<T, E, L> sealed::Sealed for TileOf<T, E, L> {}

impl<T: DlElement, E: Extents, L: CompactLayout> TileOf<T, E, L> {
    /// The tile's elements, which must be static; more than fit in a block's shared memory
    /// (48 KiB for statically sized shared memory) fails to compile.
    const SIZE: usize = match E::STATIC_SIZE {
        Some(size) if size <= 48 * 1024 => size,
        _ => panic!("a tile's extents must all be static (`Const<N>`), and fit in 48 KiB of shared memory"),
    };
    /// The tile's bytes, aligned to 16.
    const TILE_BYTES: usize = aligned(Self::SIZE * size_of::<T>());

    /// The fresh tile at `base`.
    ///
    /// # Safety
    ///
    /// As for [`TileSet::tiles`], for this tile's bytes.
    #[inline(always)]
    unsafe fn at<'k>(base: *mut u8) -> Tile<'k, T, E, L, Writable> {
        let mut index = E::Index::zeros();
        for (d, extent) in index.as_mut().iter_mut().enumerate() {
            // Every extent is static (`SIZE`): the type's own.
            *extent = E::static_extent(d).unwrap_or(0);
        }
        let extents = E::from_array_unchecked(index);
        let mapping = match L::mapping(extents) {
            Ok(mapping) => mapping,
            // SAFETY: the extents are static and their size fits in 48 KiB (`SIZE`), so the
            // layout's size check cannot fail.
            Err(_) => unsafe { core::hint::unreachable_unchecked() },
        };
        // A compact layout's span is its size: `TILE_BYTES` covers it.
        let _ = Self::TILE_BYTES;
        // SAFETY: `TILE_BYTES` bytes at `base` are this tile's alone (caller), aligned to 16,
        // and hold the span of `mapping`.
        let view = unsafe { Mdspan::from_raw_parts(base.cast::<T>(), mapping, BlockShared) };
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
unsafe impl<T: DlElement, E: Extents, L: CompactLayout> TileSet for TileOf<T, E, L> {
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

        // SAFETY: each tile at the sum of the sizes before it, each a multiple of 16 bytes, so
        // the tiles follow one another without overlap and stay 16-aligned.
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

impl<T, E: Extents, L: CompactLayout, P: Phase> sealed::Sealed for Tile<'_, T, E, L, P> {}

impl<'k, T: DlElement, E: Extents, L: CompactLayout, P: Phase> Barrier for Tile<'k, T, E, L, P> {
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
