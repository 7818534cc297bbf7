//! candle's CUDA tensors (feature `candle-cuda`): device views and exports of candle's CUDA
//! storage without a copy, and DLPack CUDA tensors copied into candle on the device.
//!
//! candle queues its work on one stream per [`CudaDevice`](candle_core::CudaDevice)
//! ([`Borrowed::cuda_stream`]): a kernel over a device view goes on that stream (or waits for
//! it), and an export is ready for the consumer once that stream has run what was queued before
//! it.

use super::{Borrowed, CandleElement, CandleError, Visit, candle_mapping};
use crate::cuda::{CudaError, pointer_info};
use crate::dlpack::DLDeviceType;
use crate::extents::{Dims, Extents};
use crate::layout::{Layout, LayoutError, LayoutRight, Mapping};
use crate::managed::ManagedTensor;
use crate::space::Device as DeviceSpace;
use crate::view::Aliased;
use crate::view::{DeviceMdspan, Mdspan};
use candle_core::op::BackpropOp;
use candle_core::{CudaDevice, CudaStorage, DType, Storage, Tensor};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, sys};
use std::sync::Arc;

impl Borrowed<'_> {
    /// A read-only device view of a CUDA tensor, on its device: as
    /// [`host_view`](Self::host_view) for element type, extents and layout. Launches, copies
    /// and collectives over it, on any stream, run after the work candle queued on
    /// [`cuda_stream`](Self::cuda_stream) before the view was made (on another stream, behind
    /// an event recorded there).
    pub fn device_view<T, E, L>(&self) -> Result<DeviceMdspan<'_, T, E, L>, CandleError>
    where
        T: CandleElement,
        E: Extents,
        L: Layout,
    {
        self.check_dtype::<T>()?;
        let Storage::Cuda(cuda) = &*self.storage else {
            return Err(CandleError::Device {
                found: format!("{:?}", self.storage.device().location()),
                wanted: "a CUDA device",
            });
        };
        let Some((start, len, ordinal)) = T::cuda_parts(&cuda.slice) else {
            return Err(CandleError::Dtype {
                found: self.dtype,
                wanted: T::CANDLE_DTYPE,
            });
        };
        // Work over the view, on any stream, runs after what candle queued on its stream.
        crate::cuda::after_queued(&cuda.device.cuda_stream(), start, len * size_of::<T>());
        let (mapping, offset) = candle_mapping::<T, E, L>(self.layout, len)?;
        let ordinal = i32::try_from(ordinal).map_err(|_| CudaError::Ordinal(ordinal))?;
        let ptr = (start as usize as *mut T).wrapping_add(offset);
        // SAFETY: candle's CUDA storage of `T::CANDLE_DTYPE` is a cudarc allocation of `len`
        // values with `T`'s size and bit patterns (`CandleElement`) on device `ordinal`; index 0
        // sits `offset` elements in and every index stays below `len` (`candle_mapping`). The
        // read lock held by `self` keeps the allocation alive and candle from writing it in place
        // for the view's borrow; the view is read-only.
        Ok(unsafe { Mdspan::from_raw_parts(ptr, mapping, DeviceSpace::new(ordinal)) })
    }

    /// The stream candle queues this tensor's work on, for a CUDA tensor.
    pub fn cuda_stream(&self) -> Option<Arc<CudaStream>> {
        match &*self.storage {
            Storage::Cuda(cuda) => Some(cuda.device.cuda_stream()),
            _ => None,
        }
    }
}

/// The bytes of a row-major CUDA tensor of rank `R`, checked by dlmd's import (including the
/// driver's word that the pointer is device memory of `ordinal`), and candle's shape.
fn device_span<T: CandleElement, const R: usize>(
    tensor: &ManagedTensor,
    ordinal: usize,
) -> Result<(sys::CUdeviceptr, usize, Vec<usize>), CandleError> {
    let view = tensor
        .view::<Mdspan<'_, T, Dims<R>, LayoutRight, DeviceSpace, Aliased>>()
        .map_err(|e| match e {
            crate::import::ImportError::Layout(
                LayoutError::StrideMismatch { .. } | LayoutError::NonPositiveStride { .. },
            ) => CandleError::NotContiguous,
            e => e.into(),
        })?;
    let mut shape = view.extents().to_array().to_vec();
    let elements = view.mapping().required_span_size();
    if let Some(last) = shape.last_mut() {
        *last *= T::PER_ELEMENT;
    }
    let ptr = view.as_ptr();
    if elements > 0 {
        let info = pointer_info(ptr.cast())?;
        if usize::try_from(info.ordinal) != Ok(ordinal) {
            return Err(CandleError::ImportDevice(tensor.dl_tensor().device.device_type.0));
        }
    }
    Ok((ptr as usize as sys::CUdeviceptr, elements * size_of::<T>(), shape))
}

/// A fresh allocation of `bytes` on candle's stream, filled from `src` by one device-to-device
/// copy, which has finished when this returns (the source is released after).
fn copy_on_device<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    src: sys::CUdeviceptr,
    elements: usize,
) -> Result<CudaSlice<T>, CandleError> {
    // SAFETY: every byte is written by the copy below before anyone reads the allocation.
    let dst = unsafe { stream.alloc::<T>(elements) }.map_err(CudaError::from)?;
    if elements > 0 {
        let (dst_ptr, _record) = dst.device_ptr(stream);
        // SAFETY: `src` is `elements` values of `T` of live device memory (checked by dlmd's
        // import, kept alive by the managed tensor until after the synchronisation below), `dst`
        // a new allocation of as many; both on the stream's device.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(dst_ptr, src, elements * size_of::<T>(), stream.cu_stream())
        }
        .map_err(CudaError::from)?;
    }
    stream.synchronize().map_err(CudaError::from)?;
    Ok(dst)
}

/// A CUDA managed tensor as a candle tensor on `device`: one device-to-device copy into candle's
/// own allocation (candle frees its memory itself and cannot hold another's), at device-copy
/// speed, on candle's stream. The tensor must be row-major contiguous and on `device`'s GPU.
/// The copy has finished when this returns. Order the producer's writes before candle's
/// stream (`from_dlpack` with that stream does).
pub(super) fn import_cuda(
    tensor: &ManagedTensor,
    dtype: DType,
    ndim: usize,
    device: &CudaDevice,
) -> Result<Tensor, CandleError> {
    let dl = tensor.dl_tensor();
    if dl.device.device_type != DLDeviceType::CUDA && dl.device.device_type != DLDeviceType::CUDA_MANAGED {
        return Err(CandleError::ImportDevice(dl.device.device_type.0));
    }
    struct DeviceCopy<'a> {
        tensor: &'a ManagedTensor,
        ndim: usize,
        device: &'a CudaDevice,
    }
    impl Visit for DeviceCopy<'_> {
        type Out = Result<Tensor, CandleError>;
        fn visit<T: CandleElement>(self) -> Self::Out {
            let stream = self.device.cuda_stream();
            let ordinal = stream.context().ordinal();
            crate::with_rank!(self.ndim, R => {
                let (src, bytes, shape) = device_span::<T, R>(self.tensor, ordinal)?;
                let slice = copy_on_device::<T::Stored>(&stream, src, bytes / size_of::<T::Stored>())?;
                let storage = CudaStorage {
                    slice: T::cuda_storage(slice),
                    device: self.device.clone(),
                };
                Ok(Tensor::from_storage(Storage::Cuda(storage), shape, BackpropOp::none(), false))
            }, r => Err(CandleError::RankTooHigh(r)))
        }
    }
    super::element::visit(dtype, DeviceCopy { tensor, ndim, device })?
}
