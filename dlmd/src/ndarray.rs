//! [`ndarray`] 0.17 interop (feature `ndarray`): `ArrayView`/`ArrayViewMut` ⇄ host views without
//! a copy, both ways, and owned `Array`s exported as managed tensors.
//!
//! | from | to | what is checked |
//! |---|---|---|
//! | `ArrayView<'a, T, Ix<R>>` | [`Mdspan<'a, T, E, L, Host, Shared>`](crate::Mdspan) ([`from_array_view`]) | static extents of `E`, strides against `L` |
//! | `ArrayViewMut<'a, T, Ix<R>>` | `Mdspan<'a, T, E, L, Host, Unique>` ([`from_array_view_mut`]) | as above, and no overlap |
//! | a host or managed view, read-only | `ArrayView<'a, T, Ix<R>>` ([`to_array_view`]) | nothing: every layout fits |
//! | a host or managed view, read-write | `ArrayViewMut<'a, T, Ix<R>>` ([`to_array_view_mut`]) | nothing |
//! | `Array<T, Ix<R>>` | a managed tensor ([`export`]) | a row-major copy where the array is not row-major |
//!
//! Negative strides (`s![..;-1]`, `invert_axis`) need [`LayoutStrideRelaxed`](crate::LayoutStrideRelaxed),
//! which keeps the offset of index 0; zero strides (broadcast views) need it too and are read-only.
//! A layout that cannot describe the array's strides is a [`ViewError`], never a copy.
//!
//! Aliased views (imports of memory others share, [`Aliased`](crate::view::Aliased)) do not
//! convert to `ArrayView`, which hands out references: that does not compile.
//!
//! ```
//! use dlmd::{Dims, LayoutRight, LayoutStrideRelaxed};
//! use ndarray::{Array2, s};
//!
//! let mut a = Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as f32);
//! let flipped = a.slice(s![.., ..;-1]);
//! let view = dlmd::ndarray::from_array_view::<_, Dims<2>, LayoutStrideRelaxed, 2>(flipped).unwrap();
//! assert_eq!(view[[1, 0]], 13.0);
//! assert!(dlmd::ndarray::from_array_view::<_, Dims<2>, LayoutRight, 2>(a.slice(s![.., ..;-1])).is_err());
//!
//! let mut view = dlmd::ndarray::from_array_view_mut::<_, Dims<2>, LayoutRight, 2>(a.view_mut()).unwrap();
//! view[[2, 3]] = -1.0;
//! let back = dlmd::ndarray::to_array_view(view.as_view());
//! assert_eq!(back[[2, 3]], -1.0);
//! ```

use crate::dlpack::{DLDevice, IS_COPIED, ManagedTensorAbi};
use crate::dtype::DlElement;
use crate::export::ExportError;
use crate::extents::{Dims, Extents};
use crate::layout::{Layout, LayoutError, Mapping, negative_reach};
use crate::managed::{TensorOwner, export_with};
use crate::space::{Host, HostAccessible, MemorySpace};
use crate::view::{Mdspan, Shared, Unique, ViewError};
use ndarray::{Array, ArrayBase, ArrayView, ArrayViewMut, Axis, Dim, Dimension, RawData, ShapeBuilder, StrideShape};

/// The mapping of an ndarray array's shape and strides under layout `L`, with extents `E`, and
/// how far below index 0 the span starts (in elements).
fn mapping<E, L, const R: usize>(shape: &[usize], strides: &[isize]) -> Result<(L::Mapping<E>, usize), ViewError>
where
    E: Extents<Index = [usize; R]>,
    L: Layout,
{
    let shape: [usize; R] = core::array::from_fn(|d| shape[d]);
    let strides: [isize; R] = core::array::from_fn(|d| strides[d]);
    let extents = E::from_array(shape)?;
    let back = negative_reach(&shape, &strides)?;
    // Layouts without an offset see negative strides as such (a clearer error than the offset).
    let offset = if L::HAS_OFFSET { back } else { 0 };
    let mapping = L::Mapping::from_strides(extents, &strides, offset)?;
    if mapping.offset() != back {
        return Err(LayoutError::UnexpectedOffset {
            offset: back,
            layout: L::NAME,
        }
        .into());
    }
    Ok((mapping, back))
}

/// A read-only host view of an ndarray view, without a copy: extents `E` (checked against the
/// array's shape where static), layout `L` (checked against its strides; negative and zero
/// strides need [`LayoutStrideRelaxed`](crate::LayoutStrideRelaxed)).
pub fn from_array_view<'a, T, E, L, const R: usize>(
    array: ArrayView<'a, T, Dim<[usize; R]>>,
) -> Result<Mdspan<'a, T, E, L, Host, Shared>, ViewError>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    Dim<[usize; R]>: Dimension,
{
    let (mapping, back) = mapping::<E, L, R>(array.shape(), array.strides())?;
    let start = array.as_ptr().wrapping_sub(back).cast_mut();
    // SAFETY: the mapping was built from the array's own shape and strides, with index 0 at
    // `back` elements above `start`: every index maps to an element of the array, which `array`
    // lets us read, and nobody write, for `'a` (what an `ArrayView` is). The view reads only.
    Ok(unsafe { Mdspan::from_raw_parts(start, mapping, Host) })
}

/// A read-write host view of an ndarray view, without a copy: as [`from_array_view`], and
/// refused where two indices reach one element.
pub fn from_array_view_mut<'a, T, E, L, const R: usize>(
    mut array: ArrayViewMut<'a, T, Dim<[usize; R]>>,
) -> Result<Mdspan<'a, T, E, L, Host, Unique>, ViewError>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    Dim<[usize; R]>: Dimension,
{
    let (mapping, back) = mapping::<E, L, R>(array.shape(), array.strides())?;
    if !mapping.is_unique() {
        return Err(ViewError::Layout(LayoutError::Overlapping));
    }
    let start = array.as_mut_ptr().wrapping_sub(back);
    // SAFETY: as in `from_array_view`; `array` lends its elements exclusively for `'a` (what an
    // `ArrayViewMut` is), and no two indices of the mapping reach one element (checked above).
    Ok(unsafe { Mdspan::from_raw_parts(start, mapping, Host) })
}

/// A view as ndarray's raw constructors take it (non-negative strides from the lowest address).
struct Parts<T, const R: usize> {
    shape: Dim<[usize; R]>,
    /// The strides' magnitudes.
    strides: Dim<[usize; R]>,
    /// The lowest address an index reaches.
    low: *mut T,
    /// The axes whose stride is negative, to invert after construction.
    reversed: [bool; R],
}

/// The [`Parts`] of `view`.
fn ndarray_parts<T: DlElement, E, L, S, const R: usize>(
    view: &Mdspan<'_, T, E, L, S, impl crate::view::Access>,
) -> Parts<T, R>
where
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: MemorySpace,
    Dim<[usize; R]>: Dimension,
{
    let shape = view.extents().to_array();
    let strides: [isize; R] = core::array::from_fn(|d| view.stride(d));
    // Index 0 sits `offset` elements above the start of the span; the lowest element an index
    // reaches is `back` elements below index 0 (a valid mapping's offset covers that reach).
    let back = negative_reach(&shape, &strides).unwrap_or(0);
    let low = view.data_handle().wrapping_add(view.mapping().offset() - back);
    let mut reversed = [false; R];
    let mut magnitudes = [0usize; R];
    for d in 0..R {
        reversed[d] = strides[d] < 0 && shape[d] > 1;
        magnitudes[d] = if shape[d] > 1 { strides[d].unsigned_abs() } else { 0 };
    }
    Parts {
        shape: dim(&shape),
        strides: dim(&magnitudes),
        low,
        reversed,
    }
}

/// An ndarray dimension of rank `R` holding `values`.
fn dim<const R: usize>(values: &[usize; R]) -> Dim<[usize; R]>
where
    Dim<[usize; R]>: Dimension,
{
    let mut dim = Dim::<[usize; R]>::zeros(R);
    dim.slice_mut().copy_from_slice(values);
    dim
}

/// Builds an ndarray view of `view` with `make` (given the shape, with strides where the view
/// has elements, and the lowest address it reaches, dangling for an empty view), then turns the
/// axes with negative strides around.
fn assemble<T, E, L, S, A, Repr, const R: usize>(
    view: &Mdspan<'_, T, E, L, S, A>,
    make: impl FnOnce(StrideShape<Dim<[usize; R]>>, *mut T) -> ArrayBase<Repr, Dim<[usize; R]>>,
) -> ArrayBase<Repr, Dim<[usize; R]>>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: MemorySpace,
    A: crate::view::Access,
    Repr: RawData<Elem = T>,
    Dim<[usize; R]>: Dimension,
{
    let parts = ndarray_parts(view);
    if view.is_empty() {
        return make(parts.shape.into(), core::ptr::NonNull::dangling().as_ptr());
    }
    let mut array = make(parts.shape.strides(parts.strides), parts.low);
    for (d, &back) in parts.reversed.iter().enumerate() {
        if back {
            array.invert_axis(Axis(d));
        }
    }
    array
}

/// The ndarray view of a read-only host (or managed) view, without a copy; every layout fits.
pub fn to_array_view<'a, T, E, L, S, const R: usize>(
    view: Mdspan<'a, T, E, L, S, Shared>,
) -> ArrayView<'a, T, Dim<[usize; R]>>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: HostAccessible,
    Dim<[usize; R]>: Dimension,
{
    assemble(&view, |shape, low| {
        // SAFETY: `low` is the lowest element the view reaches, and moving from it by the
        // strides' magnitudes reaches exactly the view's elements, inside one allocation,
        // within `isize` (a mapping's invariant); the view lends them for reading, and nobody
        // writes them, for `'a` (a shared, non-aliased view). An empty view gives a dangling
        // pointer and no strides, which ndarray allows.
        unsafe { ArrayView::from_shape_ptr(shape, low) }
    })
}

/// The ndarray view of a read-write host (or managed) view, without a copy.
pub fn to_array_view_mut<'a, T, E, L, S, const R: usize>(
    view: Mdspan<'a, T, E, L, S, Unique>,
) -> ArrayViewMut<'a, T, Dim<[usize; R]>>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: HostAccessible,
    Dim<[usize; R]>: Dimension,
{
    assemble(&view, |shape, low| {
        // SAFETY: as in `to_array_view`; the view lends its elements exclusively for `'a`, and
        // a unique view's indices reach distinct elements (extent-1 axes get stride 0, which
        // ndarray never steps along).
        unsafe { ArrayViewMut::from_shape_ptr(shape, low) }
    })
}

/// An owned row-major ndarray array, kept alive by the exported tensor.
struct Owner<T, const R: usize>(Array<T, Dim<[usize; R]>>);

// SAFETY: the array's heap buffer does not move with the array and is owned by it; it is
// row-major (checked when the owner is made), so its `len` elements start at `as_mut_ptr`.
unsafe impl<T: DlElement, const R: usize> TensorOwner for Owner<T, R>
where
    Dim<[usize; R]>: Dimension,
{
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.0.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Exports an owned array as a managed tensor of kind `M` on the CPU: without a copy where it
/// is row-major (C order), otherwise after copying it into row-major order, flagged
/// `IS_COPIED` (in a versioned tensor; a legacy one has no flags).
///
/// ```
/// use dlmd::dlpack::DLManagedTensorVersioned;
/// use dlmd::managed::ManagedTensor;
///
/// let a = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i32);
/// let raw = dlmd::ndarray::export::<DLManagedTensorVersioned, _, 2>(a).unwrap();
/// let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
/// assert_eq!(tensor.dl_tensor().ndim, 2);
/// assert!(!tensor.is_copied());
/// ```
pub fn export<M: ManagedTensorAbi, T: DlElement, const R: usize>(
    array: Array<T, Dim<[usize; R]>>,
) -> Result<*mut M, ExportError>
where
    Dim<[usize; R]>: Dimension,
{
    let (array, flags) = if array.is_standard_layout() {
        (array, 0)
    } else {
        (array.as_standard_layout().into_owned(), IS_COPIED)
    };
    let extents = Dims::<R>::new(core::array::from_fn(|d| array.shape()[d]));
    // SAFETY: an ndarray's memory is on the host, exported as host memory.
    unsafe { export_with::<M, _, _>(Owner(array), extents, flags, DLDevice::CPU) }
}
