//! Aliased access: views of memory that others may read and write while the view lives, such as
//! a tensor imported from Python or C. Elements are copied in and out by value, as through
//! [`Cell`](core::cell::Cell), so no Rust reference ever points at memory someone else may
//! change, and two views of one buffer never hold two `&mut T` to one element. A `bool` element
//! is read byte by byte, each nonzero byte as `true`: another holder may have written any byte
//! since the import checked them.
//!
//! ```
//! use dlmd::dlpack::DLManagedTensorVersioned;
//! use dlmd::managed::{ManagedTensor, export};
//! use dlmd::{Dims, HostMdspanAliasedMut, LayoutRight};
//!
//! let raw = export::<DLManagedTensorVersioned>(vec![1.0f64, 2.0, 3.0], Dims::new([3])).unwrap();
//! // SAFETY: `raw` is a fresh dlmd export, handed over.
//! let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
//! let md = tensor.view_mut::<HostMdspanAliasedMut<'_, f64, Dims<1>, LayoutRight>>().unwrap();
//! md.store([1], 20.0);
//! assert_eq!(md.load([1]), 20.0);
//! assert_eq!(md.values().collect::<Vec<_>>(), [1.0, 20.0, 3.0]);
//! ```

use super::{Mdspan, OutOfBounds, first_index, index_out_of_bounds, next_index};
use crate::access::{Access, Aliased, AliasedAccess, AliasedMut, RefAccess, Shared, Unique};
use crate::dlpack::DLDataTypeCode;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::{Layout, Mapping};
use crate::space::{HostAccessible, MemorySpace};
use core::marker::PhantomData;

impl<'a, T: DlElement, E: Extents, L: Layout, S: HostAccessible, A: Access> Mdspan<'a, T, E, L, S, A> {
    /// A copy of the element at `index`, or `None` outside the extents.
    #[inline]
    pub fn try_load(&self, index: E::Index) -> Option<T> {
        let offset = self.checked_offset(&index)?;
        // SAFETY: `index` is inside the extents, so `offset` is inside the span, which holds
        // initialised `T`s readable from the host (`S: HostAccessible`) for the view's borrow;
        // the read forms no reference, so a write by another holder between loads is no
        // aliasing violation.
        let value = unsafe { read_element(self.ptr.as_ptr().wrapping_add(offset)) };
        Some(value)
    }

    /// A copy of the element at `index`, or which dimension of it is outside the extents: for
    /// indices that come from outside the program (with the `python` feature, `?` turns the
    /// error into Python's `IndexError`).
    #[inline]
    pub fn checked_load(&self, index: E::Index) -> Result<T, OutOfBounds> {
        self.try_load(index).ok_or_else(|| self.out_of_bounds(&index))
    }

    /// Where `index`, which is not inside the extents, leaves them.
    #[cold]
    fn out_of_bounds(&self, index: &E::Index) -> OutOfBounds {
        let extents = self.extents().to_array();
        OutOfBounds::find(index.as_ref(), extents.as_ref()).unwrap_or(OutOfBounds {
            dimension: 0,
            index: index.as_ref().first().copied().unwrap_or(0),
            extent: extents.as_ref().first().copied().unwrap_or(0),
        })
    }

    /// A copy of the element at `index`.
    ///
    /// # Panics
    ///
    /// If `index` is outside the extents ([`checked_load`](Self::checked_load) returns an error
    /// instead).
    #[inline]
    #[track_caller]
    pub fn load(&self, index: E::Index) -> T {
        match self.try_load(index) {
            Some(x) => x,
            None => index_out_of_bounds(index.as_ref(), self.extents().to_array().as_ref()),
        }
    }

    /// A copy of the element at `index`, without checking it.
    ///
    /// # Safety
    ///
    /// `index` is inside the extents.
    #[inline(always)]
    pub unsafe fn load_unchecked(&self, index: E::Index) -> T {
        let p = self.ptr.as_ptr().wrapping_add(self.mapping.offset_of(&index));
        // SAFETY: the caller promises `index` is inside the extents, so `p` is in the span.
        unsafe { read_element(p) }
    }

    /// Copies of the elements in row-major index order, whatever the layout.
    pub fn values(&self) -> Values<'_, T, E, L, S, A> {
        Values {
            view: self,
            next: first_index(self.extents()),
        }
    }
}

/// The element at `p`, read where another holder of the memory may have written it: the bytes
/// of a `bool` element are read as bytes, each nonzero one read as `true`, so that no byte
/// another holder wrote (a kernel given the tensor's bytes, the producer) makes an invalid
/// `bool`; the import's check of every `bool` covers only the bytes as they were then.
///
/// # Safety
///
/// `p` is aligned and readable for a `T`, and holds one unless `T` is made of `bool`s.
#[inline(always)]
unsafe fn read_element<T: DlElement>(p: *const T) -> T {
    if T::DTYPE.code == DLDataTypeCode::BOOL.0 && T::DTYPE.bits == 8 {
        let mut value = core::mem::MaybeUninit::<T>::uninit();
        let (from, to) = (p.cast::<u8>(), value.as_mut_ptr().cast::<u8>());
        for i in 0..size_of::<T>() {
            // SAFETY: byte `i` of a readable `T`, read as `u8` (every byte pattern is one).
            let byte = unsafe { from.wrapping_add(i).read() };
            // SAFETY: byte `i` of the local `T`.
            unsafe { to.wrapping_add(i).write(u8::from(byte != 0)) };
        }
        // SAFETY: a `T` of 8-bit `bool` scalars is `LANES` `bool`s and nothing else (`DlElement`
        // items 1 and 2), and any pattern valid for them is a valid `T` (item 3): each byte is
        // 0 or 1.
        unsafe { value.assume_init() }
    } else {
        // SAFETY: the caller's `p` holds a `T`; the read forms no reference.
        unsafe { p.read() }
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: HostAccessible> Mdspan<'a, T, E, L, S, AliasedMut> {
    /// Writes `value` at `index` and returns the element it replaced, or `None` (writing
    /// nothing) outside the extents.
    #[inline]
    pub fn replace(&self, index: E::Index, value: T) -> Option<T> {
        let offset = self.checked_offset(&index)?;
        // SAFETY: as in `try_load`; the view is writable (`AliasedMut` views are made only over
        // memory the producer lets consumers write), and the write forms no reference.
        let p = self.ptr.as_ptr().wrapping_add(offset);
        // SAFETY: as above.
        let old = unsafe { read_element(p) };
        // SAFETY: as above.
        unsafe { p.write(value) };
        Some(old)
    }

    /// Writes `value` at `index`, or says which dimension of it is outside the extents (writing
    /// nothing).
    #[inline]
    pub fn checked_store(&self, index: E::Index, value: T) -> Result<(), OutOfBounds> {
        match self.replace(index, value) {
            Some(_) => Ok(()),
            None => Err(self.out_of_bounds(&index)),
        }
    }

    /// Writes `value` at `index`.
    ///
    /// # Panics
    ///
    /// If `index` is outside the extents ([`checked_store`](Self::checked_store) returns an
    /// error instead).
    #[inline]
    #[track_caller]
    pub fn store(&self, index: E::Index, value: T) {
        let Some(offset) = self.checked_offset(&index) else {
            index_out_of_bounds(index.as_ref(), self.extents().to_array().as_ref())
        };
        // SAFETY: as in `replace`.
        unsafe { self.ptr.as_ptr().wrapping_add(offset).write(value) }
    }

    /// Writes `value` at `index`, without checking it.
    ///
    /// # Safety
    ///
    /// `index` is inside the extents.
    #[inline(always)]
    pub unsafe fn store_unchecked(&self, index: E::Index, value: T) {
        let p = self.ptr.as_ptr().wrapping_add(self.mapping.offset_of(&index));
        // SAFETY: the caller promises `index` is inside the extents; as in `replace`.
        unsafe { p.write(value) }
    }

    /// Replaces each element, in row-major index order, with `f(index, element)`.
    pub fn update(&self, mut f: impl FnMut(E::Index, T) -> T) {
        let mut next = first_index(self.extents());
        while let Some(index) = next {
            next = next_index(self.extents(), index);
            // SAFETY: `index` comes from walking the extents, so it is inside them.
            let old = unsafe { self.load_unchecked(index) };
            // SAFETY: as above.
            unsafe { self.store_unchecked(index, f(index, old)) };
        }
    }

    /// Sets every element to `value`.
    pub fn fill(&self, value: T) {
        self.update(|_, _| value);
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: MemorySpace, A: AliasedAccess> Mdspan<'a, T, E, L, S, A> {
    /// This view as a reference view ([`Shared`]), whose elements can be borrowed as `&T`.
    ///
    /// # Safety
    ///
    /// For `'a`, nothing writes the elements: no other holder of the memory (the producer, other
    /// consumers, another import of the same tensor) and no other view.
    #[inline]
    pub unsafe fn assume_unaliased(self) -> Mdspan<'a, T, E, L, S, Shared> {
        self.with_access()
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: MemorySpace> Mdspan<'a, T, E, L, S, AliasedMut> {
    /// This view as a unique reference view ([`Unique`]), whose elements can be borrowed as
    /// `&mut T`.
    ///
    /// # Safety
    ///
    /// For `'a`, nothing reads or writes the elements except through the returned view: no other
    /// holder of the memory (the producer, other consumers, another import of the same tensor)
    /// and no copy of this view.
    #[inline]
    pub unsafe fn assume_unique(self) -> Mdspan<'a, T, E, L, S, Unique> {
        self.with_access()
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: MemorySpace, A: RefAccess> Mdspan<'a, T, E, L, S, A> {
    /// A read-only aliased view of the same elements, borrowing this one: values in and out,
    /// for code written against aliased views.
    #[inline]
    pub fn as_aliased(&self) -> Mdspan<'_, T, E, L, S, Aliased> {
        self.retyped()
    }
}

impl<'a, T, E: Extents, L: Layout, S: MemorySpace, A: Access> Mdspan<'a, T, E, L, S, A> {
    /// The same pointer, mapping and space under another access; callers prove the new access
    /// holds.
    #[inline(always)]
    fn with_access<B: Access>(self) -> Mdspan<'a, T, E, L, S, B> {
        Mdspan {
            ptr: self.ptr,
            mapping: self.mapping,
            space: self.space,
            _marker: PhantomData,
        }
    }
}

/// Iterator over copies of a host-accessible view's elements in row-major index order.
pub struct Values<'v, T, E: Extents, L: Layout, S: MemorySpace, A: Access> {
    view: &'v Mdspan<'v, T, E, L, S, A>,
    next: Option<E::Index>,
}

impl<T: DlElement, E: Extents, L: Layout, S: HostAccessible, A: Access> Iterator for Values<'_, T, E, L, S, A> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        let index = self.next?;
        self.next = next_index(self.view.extents(), index);
        // SAFETY: `index` comes from walking the extents, so it is inside them.
        Some(unsafe { self.view.load_unchecked(index) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::Dims;
    use crate::layout::{LayoutRight, RightMapping};
    use crate::space::Host;
    use crate::view::OutOfBounds;

    /// Two aliased views of one buffer, as two imports of one foreign tensor give.
    #[test]
    fn two_writable_views_of_one_buffer_stay_sound() {
        let mut data = [1.0f64, 2.0, 3.0];
        let ptr = data.as_mut_ptr();
        let mapping = RightMapping::new(Dims::new([3])).unwrap();
        // SAFETY: `data` outlives both views and is reached only through raw pointers
        // meanwhile; aliased views lend no references.
        let a = unsafe { Mdspan::<f64, Dims<1>, LayoutRight, Host, AliasedMut>::from_raw_parts(ptr, mapping, Host) };
        // SAFETY: as above.
        let b = unsafe { Mdspan::<f64, Dims<1>, LayoutRight, Host, AliasedMut>::from_raw_parts(ptr, mapping, Host) };
        a.store([0], 10.0);
        assert_eq!(b.load([0]), 10.0);
        b.update(|[i], x| x + i as f64);
        assert_eq!(a.values().collect::<std::vec::Vec<_>>(), [10.0, 3.0, 5.0]);
        // Another holder writes between loads.
        // SAFETY: in bounds; no reference to the element is live.
        unsafe { ptr.wrapping_add(2).write(99.0) };
        assert_eq!(a.load([2]), 99.0);
        assert_eq!(a.replace([1], 7.0), Some(3.0));
        assert_eq!(a.replace([3], 7.0), None);
        let read = b.as_view();
        assert_eq!(read.try_load([1]), Some(7.0));
        assert_eq!(read.try_load([5]), None);
        b.fill(0.5);
        assert_eq!(data, [0.5; 3]);
    }

    #[test]
    fn checked_access_says_which_dimension_is_out() {
        let mut data = [0u16; 6];
        let mapping = RightMapping::new(Dims::new([2, 3])).unwrap();
        // SAFETY: `data` outlives the view and is reached only through it meanwhile.
        let view = unsafe {
            Mdspan::<u16, Dims<2>, LayoutRight, Host, AliasedMut>::from_raw_parts(data.as_mut_ptr(), mapping, Host)
        };
        assert_eq!(view.checked_store([1, 2], 7), Ok(()));
        assert_eq!(view.checked_load([1, 2]), Ok(7));
        let out = OutOfBounds {
            dimension: 1,
            index: 3,
            extent: 3,
        };
        assert_eq!(view.checked_load([1, 3]), Err(out));
        assert_eq!(view.checked_store([1, 3], 9), Err(out));
        assert_eq!(
            view.checked_load([5, 0]).unwrap_err().to_string(),
            "index 5 is out of bounds for dimension 0 of extent 2"
        );
        assert_eq!(data, [0, 0, 0, 0, 0, 7], "nothing written out of bounds");
    }

    #[test]
    fn bools_another_holder_wrote_any_byte_into_read_as_true() {
        // Four bools, and the same bytes as two pairs of bools, as their producer holds them:
        // bytes it may rewrite while the views live (a kernel given the tensor's bytes may store
        // any `u8`).
        let mut bytes = [1u8, 0, 0, 1];
        let ptr = bytes.as_mut_ptr();
        let (four, two) = (Dims::new([4]), Dims::new([2]));
        // SAFETY: `bytes` outlives the views, is reached only through them and `ptr`, and holds
        // valid bools when the views are made.
        let flags = unsafe {
            Mdspan::<bool, Dims<1>, LayoutRight, Host, AliasedMut>::from_raw_parts(
                ptr.cast(),
                RightMapping::new(four).unwrap(),
                Host,
            )
        };
        // SAFETY: as above.
        let pairs = unsafe {
            Mdspan::<[bool; 2], Dims<1>, LayoutRight, Host, Aliased>::from_raw_parts(
                ptr.cast(),
                RightMapping::new(two).unwrap(),
                Host,
            )
        };
        assert_eq!(flags.values().collect::<Vec<_>>(), [true, false, false, true]);
        // SAFETY: in bounds; no reference to the bytes is live.
        unsafe { ptr.write(2) };
        // SAFETY: as above.
        unsafe { ptr.wrapping_add(2).write(255) };
        assert!(flags.load([0]));
        assert_eq!(flags.try_load([2]), Some(true));
        assert_eq!(pairs.load([1]), [true, true]);
        assert_eq!(flags.replace([0], false), Some(true));
        flags.update(|_, b| !b);
        assert_eq!(bytes, [1, 1, 0, 0]);
    }
}
