//! Single elements and pairs of neighbours of a chunk, read and written by the thread that
//! holds them: what the tensor cores' accumulators store, each element by its one thread.

use super::{Chunk, Rows};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::layout::Layout;

impl<T: DlElement, E: Extents, L: Layout, S: KernelSpace, R: Rows> Chunk<'_, T, E, L, S, R> {
    /// How many of the elements at `local` and the next along the last dimension are inside
    /// the view and the box `shape` (from the chunk's first index, inside its own box): 0, the
    /// first (1), or both (2); and the first's index in the whole view.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn pair_inside(&self, local: E::Index, shape: E::Index) -> (usize, E::Index) {
        let last = E::RANK - 1;
        let extents = self.extents();
        let mut index = self.origin;
        let mut count = 2;
        for d in 0..E::RANK {
            let limit = extents.as_ref()[d].min(shape.as_ref()[d]);
            let at = local.as_ref()[d];
            if at >= limit {
                count = 0;
            } else if d == last && at + 1 >= limit {
                count = count.min(1);
            }
            index.as_mut()[d] += at;
        }
        (count, index)
    }

    /// Writes `values[0]` to the element at `local` and `values[1]` to the next along the last
    /// dimension, the first `count` of them ([`pair_inside`](Self::pair_inside)): one store of
    /// both where they are neighbours in memory, aligned to their size.
    ///
    /// # Safety
    ///
    /// `count` is what `pair_inside` gave for `local`; the block's partition gives the elements
    /// it counts to this thread alone.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn write_pair(&mut self, local: E::Index, count: usize, values: [T; 2]) {
        use crate::layout::Mapping;
        let last = E::RANK - 1;
        if count == 0 {
            return;
        }
        let (_, first) = self.element(local);
        if count == 1 {
            // SAFETY: inside the view (caller), this thread's alone (caller).
            unsafe { first.write(values[0]) };
        } else if self.mapping.stride(last) == 1 && (first as usize).is_multiple_of(2 * size_of::<T>()) {
            // SAFETY: both inside the view and this thread's alone (caller), neighbours (stride
            // 1) aligned to their size (checked).
            unsafe { write_both(first, values) };
        } else {
            // SAFETY: as above, one stride apart.
            unsafe { crate::aligned::write_each(first, self.mapping.stride(last), values) };
        }
    }

    /// Whether every pair of the box `shape` that starts at an even index along the last
    /// dimension is whole inside the view, its two elements neighbours aligned to their size
    /// ([`runs_whole`](Self::runs_whole) for runs of two elements). Then
    /// [`write_pair_whole`](Self::write_pair_whole) may write any such pair of the box (one
    /// store where a pair is 4, 8 or 16 bytes), and its address be read as an aligned pair,
    /// without a check of their own.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn pairs_whole(&self, shape: E::Index) -> bool {
        self.runs_whole(shape, 2 * size_of::<T>())
    }

    /// Whether the box `shape` (from the chunk's first index) lies inside the view and is cut
    /// into runs of `bytes` along its last dimension, each contiguous and aligned to `bytes`:
    /// the chunk is not cut by the view's edge within `shape`, its last dimension is contiguous
    /// and a whole number of runs, and its first element and each step along the other
    /// dimensions are aligned to `bytes` (a power of two). Then the run that starts at any
    /// index of the box whose last coordinate is a multiple of `bytes / size_of::<T>()` is
    /// `bytes` of the view's memory, inside the box.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn runs_whole(&self, shape: E::Index, bytes: usize) -> bool {
        use crate::extents::IndexArray;
        use crate::layout::Mapping;
        let last = E::RANK - 1;
        let extents = self.extents();
        let (_, first) = self.element(E::Index::zeros());
        bytes.is_power_of_two()
            && (0..E::RANK).all(|d| extents.as_ref()[d] >= shape.as_ref()[d])
            && (shape.as_ref()[last] * size_of::<T>()).is_multiple_of(bytes)
            && self.mapping.stride(last) == 1
            && (first as usize).is_multiple_of(bytes)
            && (0..last).all(|d| {
                self.mapping
                    .stride(d)
                    .unsigned_abs()
                    .wrapping_mul(size_of::<T>())
                    .is_multiple_of(bytes)
            })
    }

    /// The address of the element at `local` of the chunk (which may be past the view's edge:
    /// not to be dereferenced unless it is inside).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn address(&self, local: E::Index) -> *mut T {
        self.element(local).1
    }

    /// Writes `values` to the element at `local` and the next along the last dimension with one
    /// store.
    ///
    /// # Safety
    ///
    /// [`pairs_whole`](Self::pairs_whole) held for a box `shape`; `local` is inside `shape`,
    /// at an even index along the last dimension; the block's partition gives both elements to
    /// this thread alone.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn write_pair_whole(&mut self, local: E::Index, values: [T; 2]) {
        let (_, first) = self.element(local);
        // SAFETY: inside `shape` at an even index of its last dimension, whose side is even,
        // so both elements are inside the box, which lies inside the view (`pairs_whole`);
        // neighbours (stride 1) at an offset from the aligned first element that is a multiple
        // of a pair's size (aligned steps, an even index); this thread's alone (caller).
        unsafe { write_both(first, values) };
    }

    /// Writes `f(index, element)` to the element at `local` of the chunk (`index` its index in
    /// the whole view, `element` its address, which `f` may read), where that is inside the
    /// view (nothing past its edge): `f` is called only there.
    ///
    /// # Safety
    ///
    /// The block's partition gives the element at `local` of the chunk's box to this thread
    /// alone.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn put_one(&mut self, local: E::Index, f: impl FnOnce(E::Index, *const T) -> T) {
        let extents = self.extents();
        if Self::inside(&local, &extents) {
            let (index, element) = self.element(local);
            let value = f(index, element);
            // SAFETY: inside the chunk's extents, cut at the view's edge (checked), so in the
            // span of a unique view; the chunk is this block's alone (`Chunks`) and the element
            // this thread's alone (caller); a kernel's views are of global memory.
            unsafe { element.write(value) }
        }
    }

    /// Writes `f(index, old)` (`index` in the whole view, `old` the element's value before) to
    /// the element at `local` of the chunk, where that is inside the view (nothing past its
    /// edge).
    ///
    /// # Safety
    ///
    /// The block's partition gives the element at `local` of the chunk's box to this thread
    /// alone.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) unsafe fn update_one(&mut self, local: E::Index, f: impl FnOnce(E::Index, T) -> T) {
        let extents = self.extents();
        if Self::inside(&local, &extents) {
            let (index, element) = self.element(local);
            // SAFETY: inside the chunk's extents, cut at the view's edge (checked), so in the
            // span of a unique view, whose elements are initialised; the chunk is this block's
            // alone (`Chunks`) and the element this thread's alone (caller), so nothing writes it
            // while this thread reads it; a kernel's views are of global memory.
            let old = unsafe { element.read() };
            // SAFETY: as above.
            unsafe { element.write(f(index, old)) }
        }
    }
}

/// Writes `values` to `first` and the element after it with one store of their size: LLVM
/// splits a store of `[T; 2]` into two.
///
/// # Safety
///
/// Both elements are valid for writes, in a unique view's span, and written by this thread
/// alone; `first` is aligned to `2 · size_of::<T>()`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn write_both<T: DlElement>(first: *mut T, values: [T; 2]) {
    match 2 * size_of::<T>() {
        4 => {
            // SAFETY: `[T; 2]` is 4 bytes (this arm), `T: Copy`: its bytes as a `u32`.
            let bits = unsafe { core::mem::transmute_copy::<[T; 2], u32>(&values) };
            // SAFETY: both valid for writes and this thread's (caller), aligned to 4 (caller).
            unsafe { first.cast::<u32>().write(bits) }
        }
        8 => {
            // SAFETY: as above, 8 bytes.
            let bits = unsafe { core::mem::transmute_copy::<[T; 2], u64>(&values) };
            // SAFETY: as above, aligned to 8.
            unsafe { first.cast::<u64>().write(bits) }
        }
        // SAFETY: as above; `write_aligned_run` picks the stores for any other size (a
        // vector store of 16 bytes, one store each for 1-byte or 16-byte elements).
        _ => unsafe { crate::aligned::write_aligned_run(first, values) },
    }
}
