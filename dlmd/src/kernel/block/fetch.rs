//! Asynchronous copies from global memory into a tile (`cp.async`, `sm_80` and later): the
//! block starts them with [`Block::fetch`] and goes on working while they are in flight; the
//! tile, [`Fetching`] meanwhile, is out of reach until [`Block::landed`] has waited for them,
//! and readable only after the barrier that follows, like any tile the block writes.

use super::{Block, Tile, TileLayout, TileSet, Writable, Written};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Mdspan, Shared};

/// A tile that the block's copies ([`Block::fetch`]) are filling: no thread can read or write
/// it. [`Block::landed`] waits for the copies and gives the tile back [`Written`]. Dropped
/// instead, it waits for every copy of the thread, so that none lands after the tile's memory
/// has gone.
pub struct Fetching<'k, T, E: Extents, L: TileLayout> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    tile: core::mem::ManuallyDrop<Tile<'k, T, E, L, Writable>>,
    /// The number of the copies' group among the block's, from 0.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    group: u32,
}

impl<T, E: Extents, L: TileLayout> Drop for Fetching<'_, T, E, L> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a `Fetching` exists only where `fetch` ran, so on `sm_80` or later (its
        // copies' instruction would not have assembled otherwise).
        unsafe {
            crate::kernel::mma::raw::cp_async_wait::<0>()
        };
    }
}

/// The bytes of one asynchronous copy: 16, the most `cp.async` moves at once.
const PIECE: usize = 16;

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// Starts copying `src[origin + index]` into element `index` of `tile`, for every index of
    /// the tile, as zero where that is outside `src`, and returns the tile [`Fetching`]: the
    /// copies are in flight while the block goes on, until [`landed`](Self::landed).
    ///
    /// The tile is rank 2; its fastest dimension holds a multiple of 16 bytes and its lines
    /// start a multiple of 16 bytes apart (otherwise the kernel does not compile). Where `src`
    /// is contiguous along the tile's fastest dimension, starts 16-aligned, its other stride
    /// keeps 16-byte alignment and `origin` is a multiple of 16 bytes along that dimension,
    /// each thread copies 16-byte pieces with `cp.async` (piece `p` in index order, lines
    /// after lines, by thread `p % THREADS`: the tile's memory order where its layout is
    /// strided); elsewhere the same threads load and store the pieces' elements one by one,
    /// and the tile is just as written once it has landed.
    #[inline(always)]
    pub fn fetch<T, E, L, E2, L2, Sp>(
        &mut self,
        tile: Tile<'k, T, E, L, Writable>,
        src: &Mdspan<'_, T, E2, L2, Sp, Shared>,
        origin: [usize; 2],
    ) -> Fetching<'k, T, E, L>
    where
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: TileLayout,
        E2: Extents<Index = [usize; 2]>,
        L2: Layout,
        Sp: KernelSpace,
    {
        let _ = const { pieces_of::<T, E, L>() };
        on_gpu!(self.inner, (tile, src, origin), {
            let group = self.inner.groups;
            self.inner.groups = group.wrapping_add(1);
            fetch_pieces::<THREADS, T, E, L, E2, L2, Sp>(&tile, src, origin);
            Fetching {
                tile: core::mem::ManuallyDrop::new(tile),
                group,
            }
        })
    }

    /// Waits for the copies of `fetching` (a [`Fetching`] tile of [`fetch`](Self::fetch), or a
    /// tuple of them), and of every fetch before them, and returns the tiles [`Written`]:
    /// readable after the next [`sync`](Self::sync). One wait for a tuple, for its youngest
    /// fetch.
    #[inline(always)]
    pub fn landed<F: Landing<'k>>(&mut self, fetching: F) -> F::Landed {
        on_gpu!(self.inner, (fetching), {
            // The groups committed after the youngest of these may stay in flight:
            // `wait_group n` waits for all but the `n` most recent, older ones first. More than
            // 7 are waited for too (a smaller `n` waits for more).
            let younger = fetching.younger(self.inner.groups);
            // SAFETY: `fetch` ran, so the kernel is for `sm_80` or later.
            unsafe { crate::kernel::mma::raw::cp_async_wait_at_most(younger) };
            // SAFETY: this thread's copies of the fetches are complete (above); the barrier that
            // makes the tiles readable makes every thread's seen by all.
            unsafe { fetching.land() }
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What [`Block::landed`] waits for: a [`Fetching`] tile, or a tuple of up to four.
pub trait Landing<'k>: sealed::Sealed {
    /// The tiles, [`Written`].
    type Landed;
    /// The fewest groups the block committed after one of these fetches, of `groups` in all:
    /// waiting until no more than that many are in flight lands every one of them.
    #[doc(hidden)]
    fn younger(&self, groups: u32) -> u32;
    /// The tiles, written.
    ///
    /// # Safety
    ///
    /// Every copy of the fetches is complete for this thread.
    #[doc(hidden)]
    unsafe fn land(self) -> Self::Landed;
}

impl<T, E: Extents, L: TileLayout> sealed::Sealed for Fetching<'_, T, E, L> {}

impl<'k, T: DlElement, E: Extents, L: TileLayout> Landing<'k> for Fetching<'k, T, E, L> {
    type Landed = Tile<'k, T, E, L, Written>;
    #[inline(always)]
    fn younger(&self, groups: u32) -> u32 {
        // The block's groups are numbered in order from 0, wrapping: the distance is exact
        // below 2³² groups in flight.
        groups.wrapping_sub(self.group).wrapping_sub(1)
    }
    #[inline(always)]
    unsafe fn land(self) -> Self::Landed {
        let mut fetching = core::mem::ManuallyDrop::new(self);
        // SAFETY: taken once, from a `Fetching` that is not dropped (`ManuallyDrop`).
        let tile = unsafe { core::mem::ManuallyDrop::take(&mut fetching.tile) };
        // SAFETY: every element of the tile was written in this phase: by this thread's copies
        // (complete: caller) or stores of its pieces, and the pieces of all the block's threads
        // cover the tile (`fetch`).
        unsafe { tile.written() }
    }
}

macro_rules! landing_tuples {
    ($($name:ident $index:tt),+) => {
        impl<$($name: sealed::Sealed),+> sealed::Sealed for ($($name,)+) {}

        impl<'k, $($name: Landing<'k>),+> Landing<'k> for ($($name,)+) {
            type Landed = ($($name::Landed,)+);
            #[inline(always)]
            fn younger(&self, groups: u32) -> u32 {
                // The least of the members': a wait that lands the youngest lands them all.
                let mut younger = u32::MAX;
                $( younger = younger.min(self.$index.younger(groups)); )+
                younger
            }
            #[inline(always)]
            unsafe fn land(self) -> Self::Landed {
                // SAFETY: every copy of every fetch of the tuple is complete (caller).
                ($(unsafe { self.$index.land() },)+)
            }
        }
    };
}

landing_tuples!(A 0);
landing_tuples!(A 0, B 1);
landing_tuples!(A 0, B 1, C 2);
landing_tuples!(A 0, B 1, C 2, D 3);

/// Pieces of 16 bytes along a rank-2 tile's fastest dimension, and its lines, checked
/// where a kernel that fetches into the tile is compiled.
const fn pieces_of<T, E: Extents, L: TileLayout>() -> [usize; 2] {
    assert!(E::RANK == 2, "`fetch` fills a rank-2 tile");
    let (first, last) = match E::STATIC_ENDS {
        (Some(first), Some(last)) => (first, last),
        _ => panic!("a tile's extents are static"),
    };
    let (fast, lines) = if L::FIRST_FASTEST { (first, last) } else { (last, first) };
    assert!(
        size_of::<T>() > 0 && PIECE.is_multiple_of(size_of::<T>()),
        "`fetch` copies 16-byte pieces: the element's size divides 16"
    );
    assert!(
        (fast * size_of::<T>()).is_multiple_of(PIECE),
        "`fetch` copies 16-byte pieces: the tile's fastest dimension holds a multiple of 16 bytes"
    );
    assert!(
        ((fast + L::PAD) * size_of::<T>()).is_multiple_of(PIECE),
        "`fetch` copies 16-byte pieces: the tile's lines start a multiple of 16 bytes apart (pad them by a multiple of 16 bytes)"
    );
    [fast * size_of::<T>() / PIECE, lines]
}

/// This thread's pieces of the fetch of `src` from `origin` into `tile`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fetch_pieces<const THREADS: usize, T, E, L, E2, L2, Sp>(
    tile: &Tile<'_, T, E, L, Writable>,
    src: &Mdspan<'_, T, E2, L2, Sp, Shared>,
    origin: [usize; 2],
) where
    T: DlElement,
    E: Extents<Index = [usize; 2]>,
    L: TileLayout,
    E2: Extents<Index = [usize; 2]>,
    L2: Layout,
    Sp: KernelSpace,
{
    use crate::kernel::mma::raw;
    use crate::layout::Mapping;
    let per_piece = PIECE / size_of::<T>();
    let [pieces, lines] = const { pieces_of::<T, E, L>() };
    let fast = if L::FIRST_FASTEST { 0 } else { 1 };
    let slow = 1 - fast;
    let extents = src.extents().to_array();
    let (stride_fast, stride_slow) = (src.mapping().stride(fast), src.mapping().stride(slow));
    // One answer for the whole block where the view and the origin are the block's, as a
    // kernel's are (each thread tests its own, and copies only its own pieces, either way).
    // An origin outside `src` leaves every piece outside; inside, `origin + local` cannot
    // overflow (the view's extents are below `isize::MAX`, a tile's far below).
    let origin_inside = origin[0] < extents[0] && origin[1] < extents[1];
    // Every piece's first element 16-aligned: the view's start, its mapping's offset (which
    // moves the element at index 0 from the start), its slow stride and the origin along the
    // contiguous fastest dimension all are, in bytes. (A dimension of one element may have any
    // stride: the product wraps, which keeps its remainder by 16.)
    let asynchronous = stride_fast == 1
        && stride_slow
            .wrapping_mul(size_of::<T>() as isize)
            .rem_euclid(PIECE as isize)
            == 0
        && (src.data_handle() as usize).is_multiple_of(PIECE)
        && (src.mapping().offset() * size_of::<T>()).is_multiple_of(PIECE)
        && origin[fast].is_multiple_of(per_piece);
    let mapping = tile.storage().mapping();
    let base = tile.storage().data_handle();
    let thread = super::shared::thread_index::<THREADS>();
    // This thread's piece `turn`, if it has one: where it starts in the tile, its index in
    // `src`, and how many of its elements are inside `src` (0 past its edge, an origin past
    // it included). Each thread's pieces are a count known when the kernel is compiled, so the
    // loops below are written out.
    let total = pieces * lines;
    let turns = total.div_ceil(THREADS);
    // Where the block's threads are whole lines of pieces, a thread's pieces are its first
    // moved `THREADS / pieces` lines a turn: one offset and constants
    // (`TileLayout::offset_of_moved`), where the offsets of a swizzled tile's pieces, each
    // worked out, would each take a register for the whole kernel.
    let whole_lines = THREADS.is_multiple_of(pieces);
    let first = |thread: usize| {
        let mut first = [0usize; 2];
        if whole_lines {
            first[slow] = thread / pieces;
            first[fast] = thread % pieces * per_piece;
        }
        first
    };
    // `thread` is read where the piece is wanted ([`thread_index_here`]): in the rare paths
    // below, so that what is worked out from it stays there.
    let piece = |thread: usize, turn: usize| {
        let p = thread + turn * THREADS;
        // Past the tile's pieces, nothing: no offset is worked out for an index outside it.
        if p >= total {
            return None;
        }
        let (line, piece) = (p / pieces, p % pieces);
        let mut local = [0usize; 2];
        local[slow] = line;
        local[fast] = piece * per_piece;
        // In the tile: the piece's first element, 16 bytes from it are the piece (the fastest
        // dimension holds whole pieces and lines start 16 bytes apart: `pieces_of`). With
        // whole lines of threads, `local` is `first` moved `turn · THREADS / pieces` lines.
        let offset = if whole_lines {
            L::offset_of_moved::<T, E>(mapping, &first(thread), slow, turn * (THREADS / pieces))
        } else {
            L::offset_of::<T, E>(mapping, &local)
        };
        let dst = base.wrapping_add(offset);
        let index = [origin[0].wrapping_add(local[0]), origin[1].wrapping_add(local[1])];
        let inside = if origin_inside && index[slow] < extents[slow] && index[fast] < extents[fast] {
            (extents[fast] - index[fast]).min(per_piece)
        } else {
            0
        };
        Some((dst, index, inside))
    };
    // The tile's extents, and whether the whole tile is inside `src` from `origin`: then
    // every piece is whole, and its source is the origin's element plus its offset in the
    // tile along the view's strides, with no test a piece.
    let mut tile_extents = [0usize; 2];
    tile_extents[slow] = lines;
    tile_extents[fast] = pieces * per_piece;
    let whole = origin_inside && extents[0] - origin[0] >= tile_extents[0] && extents[1] - origin[1] >= tile_extents[1];
    // One branch for the whole fetch (the same on every thread: the view and the origin are
    // the block's), not one a piece.
    // (`THREADS.is_multiple_of(0)` is false: a tile with no pieces never divides by them.)
    if asynchronous && whole && THREADS.is_multiple_of(pieces) {
        let first = first(thread);
        // Piece `p` is line `p / pieces`, piece `p % pieces` of it. The block's threads are
        // whole lines of pieces, so a thread's pieces share a column and lie `THREADS / pieces`
        // lines apart: its source moves by that many slow strides a turn. The products wrap:
        // they overflow only where no piece is read (a thread with none, or the move after a
        // thread's last), for a dimension of one element, whose stride may be anything.
        let lines_a_turn = (THREADS / pieces) as isize;
        // The tile's shared address, once: each piece's is that plus its byte offset.
        // SAFETY: `base` is where the tile starts in the block's shared memory (an address
        // conversion reads nothing, even for a tile without pieces).
        let tile = unsafe { raw::shared_address(base) };
        let mut from = src
            .data_handle()
            .wrapping_add(src.mapping().offset_of(&origin))
            .wrapping_offset(((thread / pieces) as isize).wrapping_mul(stride_slow))
            .wrapping_add(thread % pieces * per_piece);
        // The thread's first piece (`first`, the threads being whole lines of pieces); its
        // later ones are `THREADS / pieces` lines on each, in the same place along the line.
        for turn in 0..turns {
            let p = thread + turn * THREADS;
            if p >= total {
                break;
            }
            // Piece `p` is line `p / pieces = thread / pieces + turn · THREADS / pieces` (the
            // threads are whole lines of pieces), piece `thread % pieces` of it. Being `p <
            // total`, it is inside the tile, whose bytes are at most the shared memory's
            // (`TileOf`'s bound): its byte offset fits 32 bits, as shared addresses do.
            let offset = L::offset_of_moved::<T, E>(mapping, &first, slow, turn * (THREADS / pieces));
            let dst = tile.wrapping_add((offset * size_of::<T>()) as u32);
            // SAFETY: as in the piecewise branch below, with `inside` = all 16 bytes: `dst` is
            // this thread's piece of the tile (16 bytes, 16-aligned, no other thread's, out of
            // every thread's reach while `Fetching` holds the tile); `from` is the piece's first
            // element in `src`, as many slow strides from the origin's as the piece's line and
            // as many elements as its place along it (every view is strided, and the piece's
            // index from `origin` is inside the view, as the whole tile is: an in-bounds
            // offset), 16-aligned (`asynchronous`), and its 16
            // bytes are `per_piece` neighbours along the contiguous fastest dimension inside
            // the view's extents: readable global memory nothing writes while the kernel runs.
            // `fetch` assembles on sm_80 only.
            unsafe { raw::cp_async_16(dst, from.cast::<u8>(), PIECE as u32) };
            from = from.wrapping_offset(lines_a_turn.wrapping_mul(stride_slow));
        }
    } else if asynchronous {
        let thread = super::shared::thread_index_here::<THREADS>();
        for turn in 0..turns {
            let Some((dst, index, inside)) = piece(thread, turn) else {
                break;
            };
            let (from, bytes) = if inside > 0 {
                (
                    src.data_handle()
                        .wrapping_add(src.mapping().offset_of(&index))
                        .cast::<u8>(),
                    inside * size_of::<T>(),
                )
            } else {
                (src.data_handle().cast::<u8>(), 0)
            };
            // SAFETY: `dst` is in the block's shared memory (the tile's).
            let dst = unsafe { raw::shared_address(dst) };
            // SAFETY: `dst` is this piece of the tile: 16 bytes of the block's shared memory,
            // 16-aligned (the tile starts 128-aligned, lines 16 bytes apart and pieces 16 bytes
            // along them; a swizzled tile moves whole pieces within their line, one piece to
            // one place: `TileLayout::offset_of`), given to this thread alone by the partition
            // of pieces (piece `p` to thread `p % THREADS`), and no thread reads or writes the
            // tile until its copies have landed (`Fetching` holds it). `from` is the piece's
            // first element in `src`,
            // 16-aligned (the view's start and its mapping's offset are, in bytes, and from
            // there the element is a multiple of 16 bytes along the contiguous fastest
            // dimension and whole slow strides of 16-byte multiples away), and its first
            // `bytes` bytes are `inside` neighbours inside the
            // view's extents: readable global memory (a kernel's view is device or managed)
            // that nothing writes while the kernel runs (a `Shared` kernel parameter). Where
            // `bytes` is 0 nothing is read. `fetch` assembles on sm_80 only.
            unsafe { raw::cp_async_16(dst, from, bytes as u32) };
        }
    } else {
        let thread = super::shared::thread_index_here::<THREADS>();
        for turn in 0..turns {
            let Some((dst, index, inside)) = piece(thread, turn) else {
                break;
            };
            for q in 0..per_piece {
                let mut at = index;
                at[fast] = at[fast].wrapping_add(q);
                let value = if q < inside {
                    let element = src.data_handle().wrapping_add(src.mapping().offset_of(&at));
                    // SAFETY: inside the view's extents (`q < inside`), readable.
                    unsafe { *element }
                } else {
                    // SAFETY: a `DlElement` is lanes of DLPack scalars (its contract), every one
                    // of which (integers, floats, `bool`'s `false`, complex, FP8/6/4) is valid as
                    // zero bits: what `cp.async` writes past the source's edge too.
                    unsafe { core::mem::zeroed() }
                };
                // SAFETY: element `q` of this thread's piece of the tile (as above), written by
                // this thread alone; the piece is inside the tile's span.
                unsafe { dst.wrapping_add(q).write(value) };
            }
        }
    }
    // SAFETY: on sm_80 or later, as the copies above.
    unsafe { raw::cp_async_commit() };
}
