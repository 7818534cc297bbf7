//! Views: a pointer, a layout mapping and a memory space, with the element type, rank, static
//! extents, layout, memory space and mutability all in the type.
//!
//! ```
//! use dlmd::{Dyn, HostMdspan, HostMdspanMut, LayoutLeft, Const};
//!
//! let data = [1, 2, 3, 4, 5, 6];
//! let md = HostMdspan::<i32, (Const<2>, Dyn)>::from_slice(&data, (Const, Dyn(3))).unwrap();
//! assert_eq!(md[[1, 0]], 4);
//! assert_eq!(md.get([2, 0]), None);
//!
//! let mut buf = [0.0f32; 6];
//! let mut out = HostMdspanMut::<f32, (Const<2>, Const<3>), LayoutLeft>::from_slice_mut(&mut buf, (Const, Const)).unwrap();
//! out[[1, 0]] = 7.0;
//! assert_eq!(buf[1], 7.0);
//! ```

mod aliased;
mod aliases;
mod elements;
mod error;
mod sub;

pub use crate::access::{
    Access, Aliased, AliasedAccess, AliasedMut, Atomic, CopyAccess, RefAccess, Shared, Unique, WriteAccess,
};
pub use aliased::Values;
pub use aliases::{
    DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, HostMdspan, HostMdspanAliased, HostMdspanAliasedMut,
    HostMdspanMut, ManagedMdspan, ManagedMdspanMut, OpaqueMdspan, OpaqueMdspanMut,
};
pub use elements::Iter;
pub(crate) use elements::{first_index, index_out_of_bounds, next_index};
pub use error::{OutOfBounds, ViewError};
pub use sub::{SliceError, SliceResult, SliceSpec, SliceSpecs, SubLayout, SubLayoutOf, Submdspan};

use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::{CompactLayout, Layout, LayoutError, LayoutRight, Mapping};
use crate::space::{Host, MemorySpace, Reborrow, SpaceFrom};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// An n-dimensional view of elements `T`, borrowed for `'a`.
///
/// - `E`: the [extents](crate::extents), for example `(Const<2>, Dyn)` or `Dims<3>`;
/// - `L`: the [layout](crate::layout), [`LayoutRight`] by default;
/// - `S`: the [memory space](crate::space), [`Host`] by default;
/// - `A`: [`Shared`] (read-only, `Copy`) or [`Unique`] (read-write).
///
/// The usual names are the aliases [`HostMdspan`], [`HostMdspanMut`], [`DeviceMdspan`],
/// [`DeviceMdspanMut`], [`ManagedMdspan`] and [`ManagedMdspanMut`].
///
/// Elements are reachable from the host (`md[[i, j]]`, [`get`](Self::get), [`iter`](Self::iter))
/// only for host-accessible spaces; on a device view, indexing does not compile.
pub struct Mdspan<'a, T, E: Extents, L: Layout = LayoutRight, S: MemorySpace = Host, A: Access = Shared> {
    /// Start of the span: every index maps to `ptr + mapping.offset_of(index)`. Dangling when
    /// the span is empty.
    ptr: NonNull<T>,
    mapping: L::Mapping<E>,
    space: S,
    _marker: PhantomData<(&'a T, A)>,
}

// SAFETY: a reference view is a borrow of `T`s (shared or unique); `DlElement` types are
// `Send + Sync`, so moving or sharing the borrow across threads is as safe as for `&T` / `&mut T`.
// Aliased views are neither `Send` nor `Sync`, like `&Cell<T>`: their stores take `&self`.
unsafe impl<T: DlElement, E: Extents, L: Layout, S: MemorySpace, A: RefAccess> Send for Mdspan<'_, T, E, L, S, A> {}
// SAFETY: as for `Send`; `&Mdspan` only reads (a `Unique` view writes through `&mut self` only).
unsafe impl<T: DlElement, E: Extents, L: Layout, S: MemorySpace, A: RefAccess> Sync for Mdspan<'_, T, E, L, S, A> {}

impl<T, E: Extents, L: Layout, S: MemorySpace, A: CopyAccess> Clone for Mdspan<'_, T, E, L, S, A> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, E: Extents, L: Layout, S: MemorySpace, A: CopyAccess> Copy for Mdspan<'_, T, E, L, S, A> {}

impl<T, E: Extents, L: Layout, S: MemorySpace, A: Access> fmt::Debug for Mdspan<'_, T, E, L, S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mdspan")
            .field("ptr", &self.ptr)
            .field("mapping", &self.mapping)
            .field("space", &self.space)
            .field("mutable", &A::MUTABLE)
            .finish()
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout> Mdspan<'a, T, E, L, Host, Shared> {
    /// A read-only view of `data` through `mapping`.
    ///
    /// Fails when the slice is shorter than the mapping's span.
    pub fn from_slice_mapping(data: &'a [T], mapping: L::Mapping<E>) -> Result<Self, ViewError> {
        let needed = mapping.required_span_size();
        if needed > data.len() {
            return Err(ViewError::SliceTooShort {
                needed,
                len: data.len(),
            });
        }
        // SAFETY: `data` is valid for reads of `data.len() >= needed` initialised, aligned `T`s
        // for `'a` and is not written while borrowed; the mapping keeps every index below
        // `needed`.
        Ok(unsafe { Self::from_raw_parts(data.as_ptr().cast_mut(), mapping, Host) })
    }
}

impl<'a, T: DlElement, E: Extents, L: CompactLayout> Mdspan<'a, T, E, L, Host, Shared> {
    /// A read-only view of `data` with `extents` in this compact layout.
    pub fn from_slice(data: &'a [T], extents: E) -> Result<Self, ViewError> {
        Self::from_slice_mapping(data, L::mapping(extents)?)
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout> Mdspan<'a, T, E, L, Host, Unique> {
    /// A read-write view of `data` through `mapping`.
    ///
    /// Fails when the slice is shorter than the mapping's span, or when the mapping reaches an
    /// element through two indices.
    pub fn from_slice_mapping_mut(data: &'a mut [T], mapping: L::Mapping<E>) -> Result<Self, ViewError> {
        let needed = mapping.required_span_size();
        if needed > data.len() {
            return Err(ViewError::SliceTooShort {
                needed,
                len: data.len(),
            });
        }
        if !L::ALWAYS_UNIQUE && !mapping.is_unique() {
            return Err(LayoutError::Overlapping.into());
        }
        // SAFETY: `data` is valid for reads and writes of `needed` aligned `T`s for `'a`, and
        // borrowed exclusively for `'a`; the mapping is unique and keeps indices below `needed`.
        Ok(unsafe { Self::from_raw_parts(data.as_mut_ptr(), mapping, Host) })
    }
}

impl<'a, T: DlElement, E: Extents, L: CompactLayout> Mdspan<'a, T, E, L, Host, Unique> {
    /// A read-write view of `data` with `extents` in this compact layout.
    pub fn from_slice_mut(data: &'a mut [T], extents: E) -> Result<Self, ViewError> {
        Self::from_slice_mapping_mut(data, L::mapping(extents)?)
    }
}

impl<'a, T: DlElement, E: Extents, L: Layout, S: MemorySpace, A: Access> Mdspan<'a, T, E, L, S, A> {
    /// A view of the elements at `ptr` through `mapping`, in `space`.
    ///
    /// # Safety
    ///
    /// - `ptr` is aligned for `T`, and when `mapping.required_span_size()` is not 0, it points
    ///   into one allocation of `space` holding at least that many initialised `T`s from `ptr`
    ///   on, valid for the span's bytes (which must fit in `isize`);
    /// - for `'a`, nothing writes those elements except through this view, and for [`Unique`]
    ///   access nothing reads them either except through this view;
    /// - for [`Unique`] access, `mapping.is_unique()` holds (no two indices reach one element);
    /// - where `T`'s scalar is `bool`, every byte of every element reached is 0 or 1;
    /// - `ptr` may be null or dangling only when the span is empty.
    #[inline]
    pub unsafe fn from_raw_parts(ptr: *mut T, mapping: L::Mapping<E>, space: S) -> Self {
        // SAFETY: forwarded from the caller; a NULL pointer only for an empty span, where the
        // dangling one is never dereferenced either.
        unsafe { Self::from_non_null(NonNull::new(ptr).unwrap_or(NonNull::dangling()), mapping, space) }
    }

    /// [`from_raw_parts`](Self::from_raw_parts) for a pointer known not to be NULL.
    ///
    /// # Safety
    ///
    /// As for [`from_raw_parts`](Self::from_raw_parts).
    #[inline(always)]
    pub(crate) unsafe fn from_non_null(ptr: NonNull<T>, mapping: L::Mapping<E>, space: S) -> Self {
        Self {
            ptr,
            mapping,
            space,
            _marker: PhantomData,
        }
    }

    /// The layout mapping.
    #[inline(always)]
    pub fn mapping(&self) -> &L::Mapping<E> {
        &self.mapping
    }
    /// The extents.
    #[inline(always)]
    pub fn extents(&self) -> &E {
        self.mapping.extents()
    }
    /// The extent of dimension `dim`.
    ///
    /// # Panics
    ///
    /// If `dim` is not below the rank.
    #[inline]
    pub fn extent(&self, dim: usize) -> usize {
        self.extents().extent(dim)
    }
    /// The stride of dimension `dim`, in elements.
    ///
    /// # Panics
    ///
    /// If `dim` is not below the rank.
    #[inline]
    pub fn stride(&self, dim: usize) -> isize {
        self.mapping.stride(dim)
    }
    /// The number of dimensions.
    #[inline(always)]
    pub const fn rank(&self) -> usize {
        E::RANK
    }
    /// The number of elements.
    #[inline]
    pub fn size(&self) -> usize {
        self.mapping.size()
    }
    /// Whether the view has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }
    /// The memory space.
    #[inline(always)]
    pub fn space(&self) -> S {
        self.space
    }
    /// The start of the span (index `[0, …]` is at `as_ptr() + mapping().offset()`). Dangling
    /// when the view is empty.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }
    /// The data handle of C++ `mdspan`: the start of the span, as a mutable pointer.
    ///
    /// Writing through it from a [`Shared`] view is undefined behaviour.
    #[inline(always)]
    pub fn data_handle(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// [`data_handle`](Self::data_handle), known not to be NULL.
    #[inline(always)]
    pub(crate) fn non_null(&self) -> NonNull<T> {
        self.ptr
    }

    /// A read-only view of the same elements, borrowing this one ([`Shared`] from a reference
    /// view, [`Aliased`] from an aliased one).
    ///
    /// In a kernel, a mutable device or managed view has no read-only borrow: every thread holds
    /// it, so the borrow would read what other threads write ([`Reborrow`]).
    #[inline]
    pub fn as_view(&self) -> Mdspan<'_, T, E, L, S, A::ReadOnly>
    where
        S: Reborrow<A>,
    {
        self.retyped()
    }

    /// The same pointer, mapping and space with another lifetime and access: each caller's
    /// signature states what the borrow allows.
    #[inline(always)]
    pub(super) fn retyped<'b, B: Access>(&self) -> Mdspan<'b, T, E, L, S, B> {
        Mdspan {
            ptr: self.ptr,
            mapping: self.mapping,
            space: self.space,
            _marker: PhantomData,
        }
    }

    /// A mutable view of the same elements, borrowing this one mutably: the way to hand a view
    /// to work (a kernel launch, a copy) and keep it for later.
    ///
    /// ```
    /// let mut data = [0; 4];
    /// let mut md = dlmd::HostMdspanMut::<i32, dlmd::Dims<1>>::from_slice_mut(&mut data, dlmd::Dims::new([4])).unwrap();
    /// fn fill(mut v: dlmd::HostMdspanMut<'_, i32, dlmd::Dims<1>>) { v.fill(7) }
    /// fill(md.as_view_mut());
    /// assert_eq!(md[[3]], 7);
    /// ```
    ///
    /// Not in a kernel for device or managed memory, where the view is split among the threads
    /// once ([`Reborrow`]).
    #[inline]
    pub fn as_view_mut(&mut self) -> Mdspan<'_, T, E, L, S, A>
    where
        A: WriteAccess,
        S: Reborrow<A>,
    {
        self.retyped()
    }

    /// The view for atomic updates ([`Atomic`]): a kernel's threads may then all add to one
    /// element, and nothing else reaches the elements while it lives.
    ///
    /// On the host only for device and managed memory: in a kernel every thread holds the
    /// mutable view, and some may write it plainly while others would add atomically
    /// ([`Reborrow`]).
    #[inline]
    pub fn into_atomic(self) -> Mdspan<'a, T, E, L, S, Atomic>
    where
        A: WriteAccess + RefAccess,
        S: Reborrow<A>,
    {
        self.retyped()
    }

    /// The same view in another memory space: managed memory becomes host or device memory
    /// (host memory on the host only: in a kernel, host views are a thread's own memory).
    /// Host and device views do not convert into each other, and nothing becomes managed.
    ///
    /// ```
    /// # use dlmd::{Const, ManagedMdspan, space::{Device, Managed}, layout::RightMapping};
    /// # let data = [0u8; 4];
    /// # // SAFETY: a stand-in for managed memory; only shapes are looked at.
    /// # let managed: ManagedMdspan<u8, (Const<4>,)> = unsafe {
    /// #     ManagedMdspan::from_raw_parts(data.as_ptr().cast_mut(), RightMapping::new((Const,)).unwrap(), Managed::new(0)) };
    /// let on_gpu = managed.into_space(Device::new(0));
    /// assert_eq!(on_gpu.space().ordinal(), 0);
    /// ```
    #[inline]
    pub fn into_space<S2: SpaceFrom<S>>(self, to: S2) -> Mdspan<'a, T, E, L, S2, A> {
        Mdspan {
            ptr: self.ptr,
            mapping: self.mapping,
            space: to,
            _marker: PhantomData,
        }
    }

    /// The same view with extents of another type of the same rank, such as static extents for
    /// dynamic ones, checked.
    ///
    /// ```
    /// use dlmd::{Const, Dims, HostMdspan};
    /// let data = [0u16; 6];
    /// let dynamic = HostMdspan::<u16, Dims<2>>::from_slice(&data, Dims::new([2, 3])).unwrap();
    /// let fixed = dynamic.try_into_extents::<(Const<2>, Const<3>)>().unwrap();
    /// assert_eq!(fixed.extent(1), 3);
    /// assert!(dynamic.try_into_extents::<(Const<3>, Const<2>)>().is_err());
    /// ```
    pub fn try_into_extents<E2>(self) -> Result<Mdspan<'a, T, E2, L, S, A>, ViewError>
    where
        E2: Extents<Index = E::Index>,
    {
        let extents = E2::from_array(self.extents().to_array())?;
        let mapping =
            <L::Mapping<E2> as Mapping>::from_strides(extents, &self.mapping.strides(), self.mapping.offset())?;
        Ok(Mdspan {
            ptr: self.ptr,
            mapping,
            space: self.space,
            _marker: PhantomData,
        })
    }

    /// The offset of `index`, if it is inside the extents.
    #[inline(always)]
    fn checked_offset(&self, index: &E::Index) -> Option<usize> {
        self.mapping.contains(index).then(|| self.mapping.offset_of(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::{Const, Dims, Dyn};
    use crate::layout::{LayoutLeft, LayoutStride, StrideMapping};

    #[test]
    fn row_and_column_major() {
        let data: Vec<i32> = (0..6).collect();
        let right = HostMdspan::<i32, Dims<2>>::from_slice(&data, Dims::new([2, 3])).unwrap();
        let left = HostMdspan::<i32, Dims<2>, LayoutLeft>::from_slice(&data, Dims::new([2, 3])).unwrap();
        assert_eq!(right[[1, 2]], 5);
        assert_eq!(left[[1, 2]], 5);
        assert_eq!(right[[0, 1]], 1);
        assert_eq!(left[[0, 1]], 2);
        assert_eq!(right.iter().copied().collect::<Vec<_>>(), data);
        assert_eq!(left.iter().copied().collect::<Vec<_>>(), [0, 2, 4, 1, 3, 5]);
    }

    #[test]
    fn short_slices_and_aliasing_are_refused() {
        let mut data = [0u8; 5];
        assert_eq!(
            HostMdspan::<u8, (Const<2>, Const<3>)>::from_slice(&data, (Const, Const)).unwrap_err(),
            ViewError::SliceTooShort { needed: 6, len: 5 }
        );
        let aliasing = StrideMapping::new(Dims::new([2, 2]), [1, 1]).unwrap();
        assert!(HostMdspan::<u8, Dims<2>, LayoutStride>::from_slice_mapping(&data, aliasing).is_ok());
        assert_eq!(
            HostMdspanMut::<u8, Dims<2>, LayoutStride>::from_slice_mapping_mut(&mut data, aliasing).unwrap_err(),
            ViewError::Layout(LayoutError::Overlapping)
        );
    }

    #[test]
    fn writes_land_where_indexing_says() {
        let mut data = [0u32; 12];
        let mut md = HostMdspanMut::<u32, (Dyn, Const<4>)>::from_slice_mut(&mut data, (Dyn(3), Const)).unwrap();
        md.for_each_mut(|[i, j], x| *x = (10 * i + j) as u32);
        md[[2, 3]] += 100;
        assert_eq!(md.get_mut([3, 0]), None);
        assert_eq!(data[11], 123);
        assert_eq!(data[4], 10);
    }

    #[test]
    fn runs_read_along_the_last_dimension_and_stop_at_the_edge() {
        // 16-aligned storage, so that runs from a multiple of four are the vector path.
        #[repr(align(16))]
        struct Aligned([f32; 24]);
        let data = Aligned(core::array::from_fn(|k| k as f32));
        let right = HostMdspan::<f32, Dims<2>>::from_slice(&data.0, Dims::new([3, 8])).unwrap();
        assert_eq!(right.get_run::<4>([1, 4]), Some([12.0, 13.0, 14.0, 15.0]));
        // Unaligned, the same elements one by one.
        assert_eq!(right.get_run::<4>([2, 1]), Some([17.0, 18.0, 19.0, 20.0]));
        assert_eq!(right.get_run::<2>([0, 6]), Some([6.0, 7.0]));
        assert_eq!(
            right.get_run::<8>([2, 0]),
            Some(core::array::from_fn(|k| 16.0 + k as f32))
        );
        // Past the row's end, past the last row, and an index that would overflow.
        assert_eq!(right.get_run::<4>([1, 5]), None);
        assert_eq!(right.get_run::<1>([3, 0]), None);
        assert_eq!(right.get_run::<2>([0, usize::MAX]), None);
        // Column-major: the last dimension is a stride of 3 apart.
        let left = HostMdspan::<f32, Dims<2>, LayoutLeft>::from_slice(&data.0, Dims::new([3, 8])).unwrap();
        assert_eq!(left.get_run::<4>([2, 3]), Some([11.0, 14.0, 17.0, 20.0]));
        assert_eq!(left.get_run::<4>([0, 5]), None);
        // Negative strides run backwards in memory.
        let reversed = crate::layout::RelaxedMapping::new(Dims::new([2, 4]), [-4, -1], 7).unwrap();
        let view =
            HostMdspan::<f32, Dims<2>, crate::layout::LayoutStrideRelaxed>::from_slice_mapping(&data.0, reversed)
                .unwrap();
        assert_eq!(view.get_run::<4>([0, 0]), Some([7.0, 6.0, 5.0, 4.0]));
        assert_eq!(view.get_run::<2>([1, 2]), Some([1.0, 0.0]));
        let one = [4.5f64];
        let scalar = HostMdspan::<f64, ()>::from_slice(&one, ()).unwrap();
        assert_eq!(scalar.get_run::<1>([]), None);
        // Filled past the edge, whole where it fits, and nothing inside an index past it.
        assert_eq!(right.get_run_or::<4>([1, 6], -1.0), [14.0, 15.0, -1.0, -1.0]);
        assert_eq!(right.get_run_or::<4>([1, 4], -1.0), [12.0, 13.0, 14.0, 15.0]);
        assert_eq!(right.get_run_or::<2>([3, 0], -1.0), [-1.0, -1.0]);
        assert_eq!(right.get_run_or::<3>([0, usize::MAX - 1], -1.0), [-1.0; 3]);
        assert_eq!(left.get_run_or::<4>([0, 6], 0.5), [18.0, 21.0, 0.5, 0.5]);
        assert_eq!(scalar.get_run_or::<2>([], 0.0), [4.5, 0.0]);
        // One element by value, or the fill outside the extents.
        assert_eq!(right.get_or([1, 6], -1.0), 14.0);
        assert_eq!(right.get_or([1, 8], -1.0), -1.0);
        assert_eq!(right.get_or([usize::MAX, 0], -1.0), -1.0);
        assert_eq!(left.get_or([2, 3], 0.5), 11.0);
        assert_eq!(view.get_or([1, 3], 0.5), 0.0);
        assert_eq!(scalar.get_or([], 0.0), 4.5);
    }

    #[test]
    fn empty_and_rank_zero() {
        let none: [f64; 0] = [];
        let empty = HostMdspan::<f64, Dims<2>>::from_slice(&none, Dims::new([0, 5])).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.iter().count(), 0);
        let one = [4.5f64];
        let scalar = HostMdspan::<f64, ()>::from_slice(&one, ()).unwrap();
        assert_eq!(scalar[[]], 4.5);
        assert_eq!(scalar.iter().count(), 1);
    }

    #[test]
    #[should_panic(expected = "index [2, 0] is out of bounds for extents [2, 3]")]
    fn indexing_checks_bounds() {
        let data = [0u8; 6];
        let md = HostMdspan::<u8, Dims<2>>::from_slice(&data, Dims::new([2, 3])).unwrap();
        let _ = md[[2, 0]];
    }
}
