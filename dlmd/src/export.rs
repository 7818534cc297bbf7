//! View → `DLTensor`: [`to_dlpack_tensor`], the twin of CCCL's `cuda::to_dlpack_tensor`.
//!
//! A [`DlpackTensor`] owns the shape and strides arrays inline (no allocation) and borrows the
//! view's data; [`DlpackTensor::get`] gives a [`DLTensor`] whose `shape` and `strides` point into
//! it, so the `DLTensor` cannot outlive it:
//!
//! ```
//! use dlmd::{Const, HostMdspan, export::to_dlpack_tensor};
//!
//! let data = [1, 2, 3, 4, 5, 6];
//! let md = HostMdspan::<i32, (Const<2>, Const<3>)>::from_slice(&data, (Const, Const)).unwrap();
//! let dl = to_dlpack_tensor(&md);
//! let t = dl.get();
//! assert_eq!(t.ndim, 2);
//! assert_eq!(t.shape(), &[2, 3]);
//! assert_eq!(t.strides(), Some(&[3, 1][..]));
//! assert_eq!(t.data.cast_const(), data.as_ptr().cast());
//! ```
//!
//! The result follows CCCL: `ndim` is the rank; `shape` the extents; `strides` the mapping's, in
//! elements, always present for rank > 0 (NULL `shape` and `strides` for rank 0); `data` NULL
//! for a view with no elements; `device` `{kDLCPU, 0}`, `{kDLCUDA, ordinal}` or
//! `{kDLCUDAManaged, 0}`; `byte_offset` 0, except for a relaxed layout whose negative strides
//! put element 0 after the start of the span: then `data` is the span's start and
//! `byte_offset` reaches element 0, never dropped.
//!
//! FP6 and FP4 elements are stored one per byte, which a plain `DLTensor` cannot say: exporting
//! them does not compile.

use crate::dlpack::{DLDataType, DLDevice, DLTensor};
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::Extents;
use crate::layout::{Layout, LayoutError, Mapping, to_i64};
use crate::space::MemorySpace;
use crate::view::{CopyAccess, Mdspan, Unique};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ops::Deref;

/// Why an owned buffer cannot be exported as a managed tensor (borrowed exports, of views,
/// cannot fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The buffer is shorter than the span of the extents.
    #[error("the extents need {needed} elements but the buffer holds {len}")]
    TooShort {
        /// Elements the extents span.
        needed: usize,
        /// Elements in the buffer.
        len: usize,
    },
    /// The extents are invalid.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// Sub-byte padded elements cannot travel in a legacy tensor, which has no flag for it.
    #[error("FP6/FP4 elements stored one per byte need a versioned tensor with IS_SUBBYTE_TYPE_PADDED")]
    SubbyteInLegacy,
    /// Read-only data (a shared owner such as `Arc<[T]>`) cannot travel in a legacy tensor,
    /// which has no flag for it: its consumers may write.
    #[error("read-only data needs a versioned tensor with READ_ONLY; a legacy tensor's consumers may write")]
    ReadOnlyInLegacy,
}

/// A view's DLPack description: shape and strides inline, data borrowed for `'a`.
#[derive(Debug)]
pub struct DlpackTensor<'a, const R: usize> {
    data: *mut c_void,
    device: DLDevice,
    dtype: DLDataType,
    byte_offset: u64,
    shape: [i64; R],
    strides: [i64; R],
    _data: PhantomData<&'a ()>,
}

// SAFETY: the tensor holds a borrow of `DlElement` data (which is `Send + Sync`) and plain
// arrays; it allows no access to the data by itself.
unsafe impl<const R: usize> Send for DlpackTensor<'_, R> {}
// SAFETY: as for `Send`; `&DlpackTensor` only reads its own fields.
unsafe impl<const R: usize> Sync for DlpackTensor<'_, R> {}

impl<'a, const R: usize> DlpackTensor<'a, R> {
    /// The `DLTensor`, borrowing this value: its `shape` and `strides` point into it.
    #[inline(always)]
    pub fn get(&self) -> DLTensorRef<'_> {
        let (shape, strides) = if R == 0 {
            (core::ptr::null_mut(), core::ptr::null_mut())
        } else {
            (self.shape.as_ptr().cast_mut(), self.strides.as_ptr().cast_mut())
        };
        DLTensorRef {
            tensor: DLTensor {
                data: self.data,
                device: self.device,
                ndim: R as i32,
                dtype: self.dtype,
                shape,
                strides,
                byte_offset: self.byte_offset,
            },
            _borrow: PhantomData,
        }
    }

    /// Labels a managed view's tensor `{kDLCUDA, ordinal}`, for consumers that refuse
    /// `kDLCUDAManaged` (PyTorch does): managed memory is valid device memory too. `None` for a
    /// tensor that is not managed.
    ///
    /// ```
    /// # use dlmd::{Const, ManagedMdspan, space::Managed, layout::RightMapping, to_dlpack_tensor, dlpack::DLDevice};
    /// # let data = [0u8; 4];
    /// # // SAFETY: a stand-in for managed memory; only the description is looked at.
    /// # let managed: ManagedMdspan<u8, (Const<4>,)> = unsafe {
    /// #     ManagedMdspan::from_raw_parts(data.as_ptr().cast_mut(), RightMapping::new((Const,)).unwrap(), Managed::new(0)) };
    /// let dl = to_dlpack_tensor(&managed).with_cuda_label(0).unwrap();
    /// assert_eq!(dl.get().device, DLDevice::cuda(0));
    /// ```
    pub fn with_cuda_label(mut self, ordinal: i32) -> Option<Self> {
        (self.device.device_type == crate::dlpack::DLDeviceType::CUDA_MANAGED).then(|| {
            self.device = DLDevice::cuda(ordinal);
            self
        })
    }

    /// The extents, as DLPack writes them.
    pub fn shape(&self) -> &[i64; R] {
        &self.shape
    }

    /// The strides in elements, as DLPack writes them.
    pub fn strides(&self) -> &[i64; R] {
        &self.strides
    }
}

/// A [`DLTensor`] whose `shape` and `strides` borrow a [`DlpackTensor`].
///
/// Derefs to the `DLTensor`; [`as_ptr`](Self::as_ptr) gives the pointer C functions take.
#[derive(Debug, Clone, Copy)]
pub struct DLTensorRef<'t> {
    tensor: DLTensor,
    _borrow: PhantomData<&'t ()>,
}

impl DLTensorRef<'_> {
    /// A pointer to the `DLTensor`, valid while this value is neither moved nor dropped: keep
    /// the `DLTensorRef` in a variable for as long as C code uses the pointer.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const DLTensor {
        &self.tensor
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        if self.tensor.ndim == 0 {
            return &[];
        }
        // SAFETY: built by `DlpackTensor::get`, `shape` points at the `ndim` extents inside the
        // `DlpackTensor` this value borrows.
        unsafe { core::slice::from_raw_parts(self.tensor.shape, self.tensor.ndim as usize) }
    }

    /// The strides, `None` for rank 0.
    pub fn strides(&self) -> Option<&[i64]> {
        if self.tensor.ndim == 0 {
            return None;
        }
        // SAFETY: as for `shape`.
        Some(unsafe { core::slice::from_raw_parts(self.tensor.strides, self.tensor.ndim as usize) })
    }
}

impl Deref for DLTensorRef<'_> {
    type Target = DLTensor;
    #[inline(always)]
    fn deref(&self) -> &DLTensor {
        &self.tensor
    }
}

/// Builds the description of `view` (any access), for a lifetime the caller picks.
#[inline(always)]
fn describe<'x, T, E, L, S, A, const R: usize>(view: &Mdspan<'_, T, E, L, S, A>) -> DlpackTensor<'x, R>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: MemorySpace,
    A: crate::view::Access,
{
    let mapping = view.mapping();
    let (shape, out_strides) = to_i64(mapping);
    let empty = shape.contains(&0);
    let (data, byte_offset) = if empty {
        (core::ptr::null_mut(), 0)
    } else {
        (
            view.data_handle().cast::<c_void>(),
            (mapping.offset() * size_of::<T>()) as u64,
        )
    };
    DlpackTensor {
        data,
        device: view.space().device(),
        dtype: T::DTYPE,
        byte_offset,
        shape,
        strides: out_strides,
        _data: PhantomData,
    }
}

/// A view that can be described as a `DLTensor` living for `'a`.
pub trait AsDlpackTensor<'a, const R: usize> {
    /// The description.
    fn to_dlpack_tensor(self) -> DlpackTensor<'a, R>;
}

/// A shared or aliased view's description borrows its data for the view's whole lifetime `'a`:
/// such views are `Copy`, so the description may outlive the view value itself.
impl<'a, T, E, L, S, A, const R: usize> AsDlpackTensor<'a, R> for &Mdspan<'a, T, E, L, S, A>
where
    A: CopyAccess,
    T: DlElement,
    T::Storage: PlainStorage,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: MemorySpace,
{
    #[inline(always)]
    fn to_dlpack_tensor(self) -> DlpackTensor<'a, R> {
        describe(self)
    }
}

/// A mutable view's description borrows the view, so the view cannot write while it lives.
impl<'a, 'v, T, E, L, S, const R: usize> AsDlpackTensor<'a, R> for &'a Mdspan<'v, T, E, L, S, Unique>
where
    T: DlElement,
    T::Storage: PlainStorage,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: MemorySpace,
{
    #[inline(always)]
    fn to_dlpack_tensor(self) -> DlpackTensor<'a, R> {
        describe(self)
    }
}

/// Describes `view` as a DLPack tensor (CCCL's `cuda::to_dlpack_tensor`).
///
/// The `DLTensor` it leads to is read-only in Rust terms: its `data` is a raw pointer, and
/// writing through it takes `unsafe` (and, for a shared view, is undefined behaviour).
#[inline(always)]
pub fn to_dlpack_tensor<'a, V: AsDlpackTensor<'a, R>, const R: usize>(view: V) -> DlpackTensor<'a, R> {
    view.to_dlpack_tensor()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::{Const, Dims};
    use crate::layout::{LayoutStrideRelaxed, RelaxedMapping};
    use crate::view::{HostMdspan, HostMdspanMut};

    #[test]
    fn rank_zero_has_null_shape_and_strides() {
        let x = [3.5f32];
        let md = HostMdspan::<f32, ()>::from_slice(&x, ()).unwrap();
        let dl = to_dlpack_tensor(&md);
        let t = dl.get();
        assert_eq!(t.ndim, 0);
        assert!(t.shape.is_null() && t.strides.is_null());
        assert_eq!(t.data.cast_const(), x.as_ptr().cast());
    }

    #[test]
    fn empty_views_have_null_data() {
        let none: [u8; 0] = [];
        let md = HostMdspan::<u8, Dims<2>>::from_slice(&none, Dims::new([3, 0])).unwrap();
        let dl = to_dlpack_tensor(&md);
        assert!(dl.get().data.is_null());
        assert_eq!(dl.shape(), &[3, 0]);
    }

    #[test]
    fn relaxed_offsets_become_byte_offsets() {
        let data: Vec<i64> = (0..6).collect();
        let mapping = RelaxedMapping::new(Dims::new([2, 3]), [-3, 1], 3).unwrap();
        let md = HostMdspan::<i64, Dims<2>, LayoutStrideRelaxed>::from_slice_mapping(&data, mapping).unwrap();
        let dl = to_dlpack_tensor(&md);
        let t = dl.get();
        assert_eq!(t.data.cast_const(), data.as_ptr().cast());
        assert_eq!(t.byte_offset, 24);
        assert_eq!(t.strides(), Some(&[-3, 1][..]));
    }

    #[test]
    fn mutable_views_export_while_borrowed() {
        let mut data = [0u16; 4];
        let md = HostMdspanMut::<u16, (Const<4>,)>::from_slice_mut(&mut data, (Const,)).unwrap();
        let dl = to_dlpack_tensor(&md);
        assert_eq!(dl.get().dtype, u16::DTYPE);
        assert_eq!(dl.get().device, DLDevice::CPU);
    }
}
