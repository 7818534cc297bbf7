//! A view's elements by reference, where its memory space and access allow it: `get`,
//! `get_mut`, indexing and iteration for reference views ([`Shared`](crate::view::Shared),
//! [`Unique`]) that the running code can reach, and the index walk that aliased views' copies
//! share.

use super::Mdspan;
use crate::access::{Access, RefAccess, Unique};
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::layout::{Layout, Mapping};
use crate::space::{MemorySpace, Reachable};
use core::ops::{Index, IndexMut};

impl<'a, T: DlElement, E: Extents, L: Layout, S: Reachable<A>, A: RefAccess> Mdspan<'a, T, E, L, S, A> {
    /// The element at `index`, or `None` outside the extents.
    #[inline]
    pub fn get(&self, index: E::Index) -> Option<&T> {
        refuse_device_memory_on_the_host::<S>();
        let offset = self.checked_offset(&index)?;
        // SAFETY: `index` is inside the extents, so `offset` is inside the span, one allocation
        // (an in-bounds offset, which keeps the pointer non-null: no check of it follows).
        let element = unsafe { self.ptr.add(offset) };
        // SAFETY: the span holds initialised `T`s reachable from this code (`S: Reachable<A>`)
        // for the view's borrow.
        Some(unsafe { element.as_ref() })
    }

    /// The element at `index` by value, or `fill` outside the extents: how a kernel reads a
    /// matrix's ragged edge as zeros.
    #[inline]
    pub fn get_or(&self, index: E::Index, fill: T) -> T {
        self.get(index).copied().unwrap_or(fill)
    }

    /// The element at `index`, without checking it.
    ///
    /// # Safety
    ///
    /// `index` is inside the extents.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, index: E::Index) -> &T {
        refuse_device_memory_on_the_host::<S>();
        // SAFETY: the caller promises `index` is inside the extents, so the offset is in the span.
        unsafe { &*self.ptr.as_ptr().wrapping_add(self.mapping.offset_of(&index)) }
    }

    /// The `K` elements from `index` along the view's last dimension (`index`, then its last
    /// index one more, …), `None` where they pass the extents (or the view has rank 0). One
    /// vector load where they are neighbours in memory and aligned to their size (a row of a
    /// row-major view, from an address that is a multiple of 8 or 16 bytes: in a kernel, four
    /// `f32` as one `float4`), `K` loads otherwise. A run that the edge cuts short is `None`:
    /// read its elements one by one ([`get`](Self::get)).
    #[inline(always)]
    pub fn get_run<const K: usize>(&self, index: E::Index) -> Option<[T; K]> {
        const { assert!(K > 0, "a run has at least one element") };
        refuse_device_memory_on_the_host::<S>();
        let last = E::RANK.checked_sub(1)?;
        let mut end = index;
        end.as_mut()[last] = index.as_ref()[last].checked_add(K - 1)?;
        // The run's last index inside the extents: so is its first, which differs only in a
        // smaller last index.
        if !self.mapping.contains(&end) {
            return None;
        }
        let offset = self.mapping.offset_of(&index);
        // SAFETY: `index` and the run's last index are inside the extents (checked above), so
        // is every index between them, in the span: an in-bounds offset.
        let first = unsafe { self.ptr.add(offset) }.as_ptr().cast_const();
        let stride = self.mapping.stride(last);
        if S::GPU_GLOBAL && cfg!(target_arch = "nvptx64") {
            // Aligned to the run's size wherever the element at index 0 is, the other strides
            // are multiples of `K` and the run starts at a multiple of `K`. All but the last
            // test are the same for every run of the view, and the compiler can often answer
            // the last itself (an index made of multiples of `K`): a kernel's loop over runs
            // then tests the view once, not each run's address.
            let origin = self
                .ptr
                .as_ptr()
                .wrapping_add(self.mapping.offset_of(&E::Index::zeros()));
            let aligned = stride == 1
                && (origin as usize).is_multiple_of(K * size_of::<T>())
                && (0..last).all(|d| self.mapping.stride(d).unsigned_abs().is_multiple_of(K))
                && index.as_ref()[last].is_multiple_of(K);
            if aligned {
                // SAFETY: as below, and `first` is aligned to the run's size: a multiple of `K`
                // elements (every term of the offset from index 0 is) from an aligned origin.
                return Some(unsafe { crate::aligned::read_global_aligned_run::<T, K>(first) });
            }
            // SAFETY: as below; in a kernel, device and managed memory is reached only through
            // read-only views (`Reachable<Shared>`), which the launch keeps unwritten while
            // the kernel runs.
            return Some(unsafe { crate::aligned::read_global_run::<T, K>(first, stride) });
        }
        // SAFETY: the run's elements, initialised `T`s reachable from this code
        // (`S: Reachable<A>`) that nothing writes while the view is borrowed (a reference
        // view's elements, as `get` hands out), one stride of the last dimension apart.
        Some(unsafe { crate::aligned::read_run::<T, K>(first, stride) })
    }

    /// [`get_run`](Self::get_run) with `fill` for the elements outside the extents: the run
    /// whole (one vector load where it can be), or, where the edge cuts it short, the elements
    /// inside one by one and `fill` past the edge. What a kernel reads a tile's worth of a
    /// matrix with, its last tiles ragged.
    #[inline(always)]
    pub fn get_run_or<const K: usize>(&self, index: E::Index, fill: T) -> [T; K] {
        self.get_run::<K>(index).unwrap_or_else(|| {
            let rank = E::RANK;
            core::array::from_fn(|q| {
                let mut at = index;
                // A view of rank 0 has one element, the run's first.
                let next = match rank.checked_sub(1) {
                    Some(last) => at.as_ref()[last].checked_add(q).map(|i| at.as_mut()[last] = i),
                    None => (q == 0).then_some(()),
                };
                match next {
                    Some(()) => self.get_or(at, fill),
                    None => fill,
                }
            })
        })
    }

    /// The elements in row-major index order, whatever the layout.
    pub fn iter(&self) -> Iter<'_, T, E, L, S, A> {
        Iter {
            view: self,
            next: first_index(self.extents()),
        }
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: Reachable<Unique>> Mdspan<'a, T, E, L, S, Unique> {
    /// The element at `index` for writing, or `None` outside the extents.
    #[inline]
    pub fn get_mut(&mut self, index: E::Index) -> Option<&mut T> {
        let offset = self.checked_offset(&index)?;
        // SAFETY: as in `get`; the view is unique, so `&mut self` is the only access to the
        // element for the returned borrow.
        Some(unsafe { &mut *self.ptr.as_ptr().wrapping_add(offset) })
    }

    /// The element at `index` for writing, without checking it.
    ///
    /// # Safety
    ///
    /// `index` is inside the extents.
    #[inline(always)]
    pub unsafe fn get_unchecked_mut(&mut self, index: E::Index) -> &mut T {
        // SAFETY: the caller promises `index` is inside the extents; the view is unique.
        unsafe { &mut *self.ptr.as_ptr().wrapping_add(self.mapping.offset_of(&index)) }
    }

    /// Calls `f` with each index, in row-major order, and a mutable reference to its element.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(E::Index, &mut T)) {
        let mut next = first_index(self.extents());
        while let Some(index) = next {
            next = next_index(self.extents(), index);
            // SAFETY: `index` comes from walking the extents, so it is inside them; the
            // reference ends before the next iteration.
            f(index, unsafe { self.get_unchecked_mut(index) });
        }
    }

    /// Sets every element to `value`.
    pub fn fill(&mut self, value: T) {
        self.for_each_mut(|_, x| *x = value);
    }
}

/// Nothing, but in a host build that type-checks kernel bodies (`kernel::check`): there the
/// kernel's rules let read-only device views reach their elements, so that kernel bodies
/// compile, and host code of such a build that reaches one refuses to run before reading (the
/// CPU cannot address device memory). A constant test: no code elsewhere.
#[inline(always)]
#[track_caller]
fn refuse_device_memory_on_the_host<S: MemorySpace>() {
    #[cfg(all(not(target_arch = "nvptx64"), dlmd_kernel_check))]
    if !S::HOST_READABLE {
        crate::space::device_only("reading an element of device memory");
    }
}

#[cold]
#[track_caller]
pub(crate) fn index_out_of_bounds(index: &[usize], extents: &[usize]) -> ! {
    panic!("index {index:?} is out of bounds for extents {extents:?}")
}

impl<T: DlElement, E: Extents, L: Layout, S: Reachable<A>, A: RefAccess> Index<E::Index> for Mdspan<'_, T, E, L, S, A> {
    type Output = T;

    #[inline]
    #[track_caller]
    fn index(&self, index: E::Index) -> &T {
        refuse_device_memory_on_the_host::<S>();
        // The offset is checked, then the reference made: no `Option<&T>` between them, whose
        // test would compare the pointer with null on every access (a kernel's loop pays it).
        let Some(offset) = self.checked_offset(&index) else {
            index_out_of_bounds(index.as_ref(), self.extents().to_array().as_ref())
        };
        // SAFETY: as in `get`: `offset` is inside the span, which holds initialised `T`s
        // reachable from this code for the view's borrow.
        unsafe { &*self.ptr.as_ptr().wrapping_add(offset) }
    }
}

impl<T: DlElement, E: Extents, L: Layout, S: Reachable<Unique>> IndexMut<E::Index> for Mdspan<'_, T, E, L, S, Unique> {
    #[inline]
    #[track_caller]
    fn index_mut(&mut self, index: E::Index) -> &mut T {
        let extents = self.extents().to_array();
        match self.get_mut(index) {
            Some(x) => x,
            None => index_out_of_bounds(index.as_ref(), extents.as_ref()),
        }
    }
}

/// The first index of a row-major walk, `None` when the extents hold no element.
#[inline]
pub(crate) fn first_index<E: Extents>(extents: &E) -> Option<E::Index> {
    let e = extents.to_array();
    (!e.as_ref().contains(&0)).then(E::Index::zeros)
}

/// The index after `index` in row-major order.
#[inline]
pub(crate) fn next_index<E: Extents>(extents: &E, mut index: E::Index) -> Option<E::Index> {
    let e = extents.to_array();
    for (i, &n) in index.as_mut().iter_mut().zip(e.as_ref()).rev() {
        *i += 1;
        if *i < n {
            return Some(index);
        }
        *i = 0;
    }
    None
}

/// Iterator over a host-accessible view's elements in row-major index order.
pub struct Iter<'v, T, E: Extents, L: Layout, S: MemorySpace, A: Access> {
    view: &'v Mdspan<'v, T, E, L, S, A>,
    next: Option<E::Index>,
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: Reachable<A>, A: RefAccess> Iterator for Iter<'v, T, E, L, S, A> {
    type Item = &'v T;

    #[inline]
    fn next(&mut self) -> Option<&'v T> {
        let index = self.next?;
        self.next = next_index(self.view.extents(), index);
        // SAFETY: `index` comes from walking the extents, so it is inside them.
        Some(unsafe { self.view.get_unchecked(index) })
    }
}

impl<'v, T: DlElement, E: Extents, L: Layout, S: Reachable<A>, A: RefAccess> IntoIterator
    for &'v Mdspan<'v, T, E, L, S, A>
{
    type Item = &'v T;
    type IntoIter = Iter<'v, T, E, L, S, A>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
