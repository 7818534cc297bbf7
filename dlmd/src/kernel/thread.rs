//! The running thread of a kernel ([`Thread`]): its place in the launch, and the elements of the
//! launch's views it owns ([`partition`](super::partition) hands each to one thread).

use super::KernelSpace;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::Layout;
use crate::view::{Access, Mdspan, Shared, Unique};

mod sealed {
    pub trait Sealed {}
}

/// The access of the views [`Thread::for_each_mut`] writes: [`Unique`], that of a mutable view
/// (`DeviceMdspanMut`, `ManagedMdspanMut`), which the launch proved no other argument reaches.
#[diagnostic::on_unimplemented(
    message = "`for_each_mut` writes a mutable view, and a view with `{Self}` access is not one",
    label = "this view is read-only",
    note = "make the kernel parameter a mutable view (`DeviceMdspanMut`, `ManagedMdspanMut`: access `Unique`), \
            whose elements `for_each_mut` hands one to each thread; a read-only view (`DeviceMdspan`) is read \
            with `view[index]` or `Thread::for_each`"
)]
pub trait ForEachMut: Access + sealed::Sealed {
    /// The view, as the mutable view it is.
    #[doc(hidden)]
    fn unique<'s, 'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace>(
        view: &'s mut Mdspan<'v, T, E, L, S, Self>,
    ) -> &'s mut Mdspan<'v, T, E, L, S, Unique>;
}

impl sealed::Sealed for Unique {}

impl ForEachMut for Unique {
    #[inline(always)]
    fn unique<'s, 'v, T: DlElement, E: Extents, L: Layout, S: KernelSpace>(
        view: &'s mut Mdspan<'v, T, E, L, S, Unique>,
    ) -> &'s mut Mdspan<'v, T, E, L, S, Unique> {
        view
    }
}

/// The thread of a kernel that runs the code: its place in the launch, and the elements of a
/// mutable view it owns.
///
/// An element-wise kernel takes it as its first parameter (`thread: Thread`), which the entry
/// point makes and the launcher does not pass. On the host there is none (the type has no value
/// there), so its methods type-check everywhere and run only in kernels.
#[derive(Clone, Copy, Debug)]
pub struct Thread(pub(super) Inner);

#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Debug)]
pub(super) struct Inner;

#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub(super) enum Inner {}

impl Thread {
    /// The running thread, for code that was not handed its kernel's `Thread`.
    ///
    /// # Safety
    ///
    /// Not in a cooperative kernel (one that takes a [`Block`](super::Block)): there the body
    /// is uniform code, which must not see which thread runs it, or a barrier could be reached
    /// by some threads of a block and not others.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub unsafe fn current() -> Thread {
        Thread(Inner)
    }

    /// The running thread, in a kernel; in a host build that type-checks kernel bodies
    /// ([`kernel::check`](super::check)), a stand-in that refuses to run.
    ///
    /// # Safety
    ///
    /// As in a kernel: not in a cooperative kernel.
    #[cfg(all(not(target_arch = "nvptx64"), dlmd_kernel_check))]
    pub unsafe fn current() -> Thread {
        crate::space::device_only("`Thread::current`")
    }

    /// This thread's index among all threads of the launch (`x` fastest, then `y`, then `z`,
    /// blocks as threads are).
    #[inline(always)]
    pub fn index(&self) -> usize {
        #[cfg(target_arch = "nvptx64")]
        return super::geometry::linear().id;
        #[cfg(not(target_arch = "nvptx64"))]
        match self.0 {}
    }

    /// The number of threads of the launch.
    #[inline(always)]
    pub fn count(&self) -> usize {
        #[cfg(target_arch = "nvptx64")]
        return super::geometry::linear().count;
        #[cfg(not(target_arch = "nvptx64"))]
        match self.0 {}
    }

    /// This thread's block and the number of blocks, where the launch's grid is one row of
    /// blocks (`(n, 1, 1)`); `None` on a grid of several rows or layers.
    ///
    /// For raw code that shares work out among blocks by their `x` index alone: on a grid with
    /// rows or layers, blocks of one `x` would take the same work and write it at once. Every
    /// thread of the launch gets the same answer, so a kernel that returns on `None` returns
    /// in every thread, before any barrier.
    #[inline(always)]
    pub fn block_in_row(&self) -> Option<(usize, usize)> {
        #[cfg(target_arch = "nvptx64")]
        {
            use core::arch::nvptx;
            // SAFETY: reads a special register of the running thread; no precondition.
            let rows = unsafe { nvptx::_grid_dim_y() };
            // SAFETY: as above.
            let layers = unsafe { nvptx::_grid_dim_z() };
            // SAFETY: as above.
            let block = unsafe { nvptx::_block_idx_x() };
            // SAFETY: as above.
            let blocks = unsafe { nvptx::_grid_dim_x() };
            (rows == 1 && layers == 1).then_some((block as usize, blocks as usize))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        match self.0 {}
    }

    /// Calls `f` with each index of `view` this thread owns and its element: across the threads
    /// of the launch, every element goes to exactly one thread, whatever the grid and block
    /// sizes. The view is unique (no two indices reach one element), so no two threads write one
    /// element.
    ///
    /// The partition follows the launch's geometry: the fastest-varying dimension in memory
    /// (the last, or the first for [`LayoutLeft`](crate::LayoutLeft)) goes to the `x` threads,
    /// so a warp touches neighbouring elements; for rank 2 and more the next one goes to `y`
    /// and the remaining dimensions, flattened, to `z`. A rank-1 view goes to all threads in
    /// linear order, a rank-0 view to thread 0. Along the fastest dimension each thread takes
    /// four neighbours at a time (one vector access where they are contiguous and aligned). Each thread strides through its axis (a
    /// grid-stride loop), so a smaller grid still covers the view.
    #[inline(always)]
    pub fn for_each_mut<T, E, L, S, A>(&self, view: &mut Mdspan<'_, T, E, L, S, A>, f: impl FnMut(E::Index, &mut T))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
        A: ForEachMut,
    {
        #[cfg(target_arch = "nvptx64")]
        super::partition::partition(A::unique(view), f);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, f);
            match self.0 {}
        }
    }

    /// Calls `f` with each index of the read-only `view` this thread owns and its element, in
    /// the partition of [`for_each_mut`](Self::for_each_mut) (every element to exactly one
    /// thread of the launch): the way to reduce a view, four neighbours read at once (one vector
    /// access where they are contiguous and aligned).
    #[inline(always)]
    pub fn for_each<T, E, L, S>(&self, view: &Mdspan<'_, T, E, L, S, Shared>, f: impl FnMut(E::Index, &T))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        super::partition::read_partition(view, f);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, f);
            match self.0 {}
        }
    }

    /// Calls `f` with each index of `view` this thread owns, in the partition of
    /// [`for_each_mut`](Self::for_each_mut): across the launch, every index goes to exactly one
    /// thread. The view may have any access; only its extents and layout are used, so a kernel
    /// reads (or reduces) in the same order another one writes.
    #[inline(always)]
    pub fn for_each_index<T, E, L, S, A>(&self, view: &Mdspan<'_, T, E, L, S, A>, f: impl FnMut(E::Index))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
        A: Access,
    {
        #[cfg(target_arch = "nvptx64")]
        super::partition::indices(view, f);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, f);
            match self.0 {}
        }
    }

    /// The element at `index` of a mutable view, for any pattern [`for_each_mut`](Self::for_each_mut)
    /// does not express; `None` outside the extents.
    ///
    /// # Safety
    ///
    /// While the returned reference lives, no other thread of the launch reads or writes that
    /// element (through any view): the kernel hands each index to one thread.
    #[inline(always)]
    pub unsafe fn element_mut<'v, T, E, L, S>(
        &self,
        view: &'v mut Mdspan<'_, T, E, L, S, Unique>,
        index: E::Index,
    ) -> Option<&'v mut T>
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: no other thread touches the element while the reference lives (caller).
        return unsafe { super::partition::element_mut(view, index) };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, index);
            match self.0 {}
        }
    }
}
