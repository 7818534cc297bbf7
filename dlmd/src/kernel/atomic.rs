//! Atomic additions into [`Atomic`](crate::view::Atomic) views, for reductions: PTX's `red.add`
//! and `atom.add` (relaxed, at GPU scope) on each element type that has them.

use super::{KernelSpace, Thread};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::Layout;
use crate::view::{Atomic, Mdspan};

mod sealed {
    pub trait Sealed {}
}

/// An element type a GPU adds to atomically: `f32`, `f64`, `i32`, `u32`, `i64`, `u64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no atomic addition on the GPU",
    note = "atomic additions take f32, f64, i32, u32, i64 or u64"
)]
pub trait AtomicElement: DlElement + sealed::Sealed {
    /// Adds `value` to `*ptr` atomically.
    ///
    /// # Safety
    ///
    /// `ptr` is an element of memory the kernel reaches, updated only atomically meanwhile.
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn red_add(ptr: *mut Self, value: Self);

    /// Adds `value` to `*ptr` atomically and returns the value before.
    ///
    /// # Safety
    ///
    /// As for [`red_add`](Self::red_add).
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn atom_add(ptr: *mut Self, value: Self) -> Self;
}

macro_rules! atomic_element {
    ($($t:ty, $ptx:literal, $class:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicElement for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn red_add(ptr: *mut Self, value: Self) {
                // SAFETY: `ptr` is an element the kernel reaches, updated only atomically
                // (caller); the instruction reads and writes only it.
                unsafe {
                    core::arch::asm!(
                        concat!("red.add.", $ptx, " [{p}], {v};"),
                        p = in(reg64) ptr,
                        v = in($class) value,
                        options(nostack),
                    )
                };
            }

            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn atom_add(ptr: *mut Self, value: Self) -> Self {
                let old: Self;
                // SAFETY: as for `red_add`.
                unsafe {
                    core::arch::asm!(
                        concat!("atom.add.", $ptx, " {o}, [{p}], {v};"),
                        o = out($class) old,
                        p = in(reg64) ptr,
                        v = in($class) value,
                        options(nostack),
                    )
                };
                old
            }
        }
    )*};
}

atomic_element! {
    f32, "f32", reg32;
    f64, "f64", reg64;
    i32, "s32", reg32;
    u32, "u32", reg32;
    i64, "u64", reg64;
    u64, "u64", reg64;
}

impl Thread {
    /// Adds `value` to the element at `index` of `view` atomically: any number of threads may
    /// add to one element at once. `false` (and nothing added) outside the extents.
    #[inline(always)]
    pub fn atomic_add<T, E, L, S>(&self, view: &Mdspan<'_, T, E, L, S, Atomic>, index: E::Index, value: T) -> bool
    where
        T: AtomicElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        match element(view, index) {
            // SAFETY: an element of the view's span in memory the kernel reaches; an atomic
            // view's elements are updated only atomically while it lives.
            Some(element) => unsafe { T::red_add(element, value) },
            None => return false,
        }
        #[cfg(target_arch = "nvptx64")]
        return true;
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, index, value);
            match self.0 {}
        }
    }

    /// [`atomic_add`](Self::atomic_add), returning the element's value before the addition;
    /// `None` outside the extents.
    #[inline(always)]
    pub fn atomic_fetch_add<T, E, L, S>(
        &self,
        view: &Mdspan<'_, T, E, L, S, Atomic>,
        index: E::Index,
        value: T,
    ) -> Option<T>
    where
        T: AtomicElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as in `atomic_add`.
        return element(view, index).map(|element| unsafe { T::atom_add(element, value) });
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, index, value);
            match self.0 {}
        }
    }
}

/// The element at `index` of `view`, `None` outside the extents.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn element<T: DlElement, E: Extents, L: Layout, S: KernelSpace>(
    view: &Mdspan<'_, T, E, L, S, Atomic>,
    index: E::Index,
) -> Option<*mut T> {
    use crate::layout::Mapping;
    let mapping = view.mapping();
    mapping
        .contains(&index)
        .then(|| view.data_handle().wrapping_add(mapping.offset_of(&index)))
}
