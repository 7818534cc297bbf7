//! The block's machinery on the GPU: its block-shared memory, the barrier, and the partition
//! of a box of indices among its threads.

use super::stage::unravel;
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::kernel::KernelSpace;
use crate::kernel::geometry::{Axis, Chunk};
use crate::kernel::vector::{read_four, read_four_aligned};
use crate::layout::{Layout, Mapping};
use crate::view::{Mdspan, Shared};
use core::arch::nvptx;

/// The launch's dynamic shared memory, 128-aligned (a row of the 32 banks), which a
/// cooperative kernel's launcher sizes `Block::SHARED_BYTES` (`Launch::block`). The compiler
/// knows the pointer as shared memory (an `addrspace(3)` array), so the tiles' reads and writes
/// are `ld.shared`/`st.shared` rather than generic ones.
#[inline(always)]
pub(super) fn dynamic_shared() -> *mut u8 {
    // The array's alignment is the type's.
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<crate::aligned::Align128<u8, 128>>().cast::<u8>()
}

/// `bar.sync 0`: every thread of the block waits for the others, and memory written before is
/// seen after.
#[inline(always)]
pub(super) fn barrier() {
    // SAFETY: reached by every thread of the block (`Block`'s methods run in uniform code).
    unsafe { nvptx::_syncthreads() }
}

/// The running thread's index in its block (`x` only: a block is `(THREADS, 1, 1)`).
#[inline(always)]
pub(super) fn thread_index<const THREADS: usize>() -> usize {
    // SAFETY: reads a special register; no precondition.
    let index = unsafe { nvptx::_thread_idx_x() as usize };
    // SAFETY: a block's launcher makes it `(THREADS, 1, 1)` (`Launch::block`). Said to
    // the compiler, which then knows how often each thread runs a partition's loop.
    unsafe { core::hint::assert_unchecked(index < THREADS) };
    index
}

/// [`thread_index`], read where it is called: the compiler cannot move the read, so nothing
/// computed from it in a branch that a loop rarely takes is hoisted out of the loop, where it
/// would hold registers for the whole loop (the element-by-element paths of `fetch`).
#[inline(always)]
pub(super) fn thread_index_here<const THREADS: usize>() -> usize {
    let index: u32;
    // SAFETY: reads a special register; no memory is read or written. Not `pure`, so that the
    // compiler keeps it in its branch.
    unsafe { core::arch::asm!("mov.u32 {}, %tid.x;", out(reg32) index, options(nomem, nostack)) };
    // SAFETY: as in `thread_index`.
    unsafe { core::hint::assert_unchecked((index as usize) < THREADS) };
    index as usize
}

/// The block's index in the launch (`x` fastest) and the number of blocks.
#[inline(always)]
pub(super) fn block_index() -> (usize, usize) {
    macro_rules! read {
        ($($register:ident),*) => {
            // SAFETY: each reads a special register; none has a precondition.
            ($(unsafe { nvptx::$register() } as usize),*)
        };
    }
    let (x, y, z) = read!(_block_idx_x, _block_idx_y, _block_idx_z);
    let (nx, ny, nz) = read!(_grid_dim_x, _grid_dim_y, _grid_dim_z);
    ((z * ny + y) * nx + x, nx * ny * nz)
}

/// The `m`-th index this thread owns of the box `shape` cut to `extents` (index `k = thread +
/// m THREADS` of the box in order), `None` past the box or outside `extents`.
#[inline(always)]
pub(super) fn owned<const THREADS: usize, I: IndexArray>(
    m: usize,
    shape: I,
    extents: I,
    first_fastest: bool,
) -> Option<I> {
    let count: usize = shape.as_ref().iter().product();
    let k = thread_index::<THREADS>() + m * THREADS;
    if k < count {
        unravel(k, shape, extents, first_fastest, false)
    } else {
        None
    }
}

/// `store(index, value(index))` for this thread's share of the indices below `extents`, within
/// a box of `shape` (at least `extents` in each dimension, and known when the kernel is
/// compiled, so that the index arithmetic is shifts and multiplications): the `k`-th index of
/// the box in order (the first dimension fastest with `first_fastest`, else the last) to thread
/// `k % THREADS`, so that every index goes to exactly one thread of the block and neighbouring
/// threads take neighbouring indices; indices of the box outside `extents` are skipped
/// (`constant`: the box is a tile's, see [`unravel`]). Four
/// at a time: the four values are made before any is stored, so that the loads `value` makes
/// are in flight together (the compiler moves no load above a store it cannot tell apart).
#[inline(always)]
pub(super) fn write_partition<const THREADS: usize, I: IndexArray, T: Copy>(
    shape: I,
    extents: I,
    first_fastest: bool,
    constant: bool,
    value: impl Fn(I) -> T,
    mut store: impl FnMut(I, T),
) {
    let count: usize = shape.as_ref().iter().product();
    let mut k = thread_index::<THREADS>();
    while k < count {
        let index = |j: usize| {
            let at = k + j * THREADS;
            if at < count {
                unravel(at, shape, extents, first_fastest, constant)
            } else {
                None
            }
        };
        // Written out four times (no arrays: they would live in local memory).
        let (i0, i1, i2, i3) = (index(0), index(1), index(2), index(3));
        let (v0, v1, v2, v3) = (i0.map(&value), i1.map(&value), i2.map(&value), i3.map(&value));
        if let (Some(i), Some(v)) = (i0, v0) {
            store(i, v);
        }
        if let (Some(i), Some(v)) = (i1, v1) {
            store(i, v);
        }
        if let (Some(i), Some(v)) = (i2, v2) {
            store(i, v);
        }
        if let (Some(i), Some(v)) = (i3, v3) {
            store(i, v);
        }
        k += 4 * THREADS;
    }
}

/// [`Lane::for_each`](super::Lane::for_each) for thread `lane` of a block of `THREADS`.
#[inline(always)]
pub(super) fn read_partition<const THREADS: usize, T, E, L, S>(
    lane: usize,
    view: &Mdspan<'_, T, E, L, S, Shared>,
    mut f: impl FnMut(E::Index, &T),
) where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
{
    let rank = E::RANK;
    let extents = view.extents().to_array();
    if rank == 0 {
        if lane == 0 {
            // SAFETY: the one element of a rank-0 view, read-only while the view lives.
            f(E::Index::zeros(), unsafe { &*view.data_handle() });
        }
        return;
    }
    let mapping = *view.mapping();
    let data = view.data_handle().cast_const();
    let fast = if L::FIRST_FASTEST { 0 } else { rank - 1 };
    let outer: usize = (0..rank).filter(|&d| d != fast).map(|d| extents.as_ref()[d]).product();
    let axis = Axis {
        id: lane,
        count: THREADS,
    };
    for mut o in 0..outer {
        let mut index = E::Index::zeros();
        for d in (0..rank).rev().filter(|&d| d != fast) {
            let extent = extents.as_ref()[d];
            index.as_mut()[d] = o % extent;
            o /= extent;
        }
        // Each four from a multiple of four along the fastest dimension: all of them aligned to
        // their size where the line's first element is and the dimension is contiguous, which
        // is tested once for the line, not at each four's address.
        index.as_mut()[fast] = 0;
        let line = data.wrapping_add(mapping.offset_of(&index));
        let aligned = mapping.stride(fast) == 1 && (line as usize).is_multiple_of(4 * size_of::<T>());
        // The line walked with one way of reading fours or the other, each its own loop: the
        // aligned one then holds no fallback, not even a predicated one.
        if aligned {
            let read = |first: *const T| {
                // SAFETY: four neighbouring elements of the view, which nothing writes while
                // the view lives, from a multiple of four elements past the line's aligned
                // first element (`walk_line` reads fours from there), so aligned to their size.
                unsafe { read_four_aligned(first) }
            };
            walk_line(view, axis, index, fast, read, &mut f);
        } else {
            let stride = mapping.stride(fast);
            let read = |first: *const T| {
                // SAFETY: four elements of the view, one stride apart, which nothing writes
                // while the view lives.
                unsafe { read_four(first, stride) }
            };
            walk_line(view, axis, index, fast, read, &mut f);
        }
    }
}

/// The line of `view` along dimension `fast` through `index` (its entry there ignored), each
/// element to one thread of `axis` (fours by `read`, from a multiple of four), handed to `f`:
/// [`read_partition`]'s walk of one line.
#[inline(always)]
fn walk_line<T, E, L, S, F>(
    view: &Mdspan<'_, T, E, L, S, Shared>,
    axis: Axis,
    mut index: E::Index,
    fast: usize,
    read: impl Fn(*const T) -> [T; 4],
    f: &mut F,
) where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
    F: FnMut(E::Index, &T),
{
    let (data, mapping) = (view.data_handle().cast_const(), view.mapping());
    axis.chunks::<true>(view.extent(fast), |chunk| match chunk {
        Chunk::One(i) => {
            index.as_mut()[fast] = i;
            // SAFETY: inside the extents, so in the span of a view nothing writes while it lives.
            f(index, unsafe { &*data.wrapping_add(mapping.offset_of(&index)) });
        }
        Chunk::Four(i) => {
            index.as_mut()[fast] = i;
            let values = read(data.wrapping_add(mapping.offset_of(&index)));
            for (k, value) in values.iter().enumerate() {
                let mut at = index;
                at.as_mut()[fast] = i + k;
                f(at, value);
            }
        }
    });
}
