//! DLPack managed tensors in as candle tensors.

use super::export::{Exported, export_marker};
use super::{CandleElement, CandleError, Visit, candle_dtype};
use crate::dlpack::{DLDeviceType, ManagedTensorAbi};
use crate::extents::{Dims, Extents};
use crate::layout::LayoutStrideRelaxed;
use crate::managed::ManagedTensor;
use candle_core::op::BackpropOp;
use candle_core::{DType, Device, Storage, Tensor};
use std::vec::Vec;

/// The highest rank [`import`] copies (candle's own tensors come back whatever their rank).
pub const MAX_RANK: usize = 8;

/// The candle tensor inside a managed tensor that [`export`](super::export) made, if it is one.
fn exported_by_dlmd(tensor: &ManagedTensor) -> Option<Tensor> {
    let raw = tensor.versioned_ptr()?;
    // SAFETY: `raw` is the live versioned tensor `tensor` owns; its fields are readable.
    let managed = unsafe { raw.as_ref() };
    // candle exports carry the address of a static of this crate as their context: no other
    // producer's context (its own allocation or static) has it. (Function addresses are not
    // unique enough to tell: the same function may show different ones.)
    if managed.manager_ctx() != export_marker() {
        return None;
    }
    // SAFETY: the tensor was made by `export`, as the first field of an `Exported` block that
    // lives until its deleter runs, which `tensor` has not called yet.
    let block = unsafe { raw.cast::<Exported>().as_ref() };
    Some(block.tensor.clone())
}

/// A candle tensor on `device` of the managed tensor's data:
/// - the very candle tensor where [`export`](super::export) made it and it is on `device` (no
///   copy, whatever its layout);
/// - for the CPU, from CPU memory (also pinned and managed CUDA memory, which the host reads): a
///   copy into candle's own storage in row-major order, from any layout, since candle keeps CPU
///   data in a `Vec` it owns;
/// - for a CUDA device (feature `candle-cuda`), from row-major CUDA memory of that GPU: one copy
///   on the device, at device-copy speed, into an allocation of candle's (which frees its memory
///   itself and cannot hold another's).
///
/// The managed tensor is released before this returns. Ranks above [`MAX_RANK`] are refused,
/// as are data types candle has no dtype for and memory `device` cannot take.
pub fn import(tensor: ManagedTensor, device: &Device) -> Result<Tensor, CandleError> {
    if let Some(candle) = exported_by_dlmd(&tensor)
        && candle.device().same_device(device)
    {
        return Ok(candle);
    }
    let dl = tensor.dl_tensor();
    let dtype = candle_dtype(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim).unwrap_or(usize::MAX);
    if ndim > MAX_RANK {
        return Err(CandleError::RankTooHigh(ndim));
    }
    let device_type = dl.device.device_type;
    match device {
        Device::Cpu
            if device_type == DLDeviceType::CPU
                || device_type == DLDeviceType::CUDA_HOST
                || device_type == DLDeviceType::CUDA_MANAGED =>
        {
            host_copy(&tensor, dtype, ndim)
        }
        #[cfg(feature = "candle-cuda")]
        Device::Cuda(cuda) => super::cuda::import_cuda(&tensor, dtype, ndim, cuda),
        _ => Err(CandleError::ImportDevice(device_type.0)),
    }
}

/// The elements of a host-readable tensor of rank `R`, in row-major order, read through dlmd's
/// checked import (the producer may write them meanwhile: they are copied by value), and candle's
/// shape (in values: FP4 pairs count two).
fn host_values<T: CandleElement, const R: usize>(tensor: &ManagedTensor) -> Result<(Vec<T>, Vec<usize>), CandleError> {
    let view = tensor.view::<crate::HostMdspanAliased<'_, T, Dims<R>, LayoutStrideRelaxed>>()?;
    let mut shape = view.extents().to_array().to_vec();
    if let Some(last) = shape.last_mut() {
        *last *= T::PER_ELEMENT;
    }
    Ok((view.values().collect(), shape))
}

/// A copy of a host-readable tensor into candle's own CPU storage.
fn host_copy(tensor: &ManagedTensor, dtype: DType, ndim: usize) -> Result<Tensor, CandleError> {
    struct HostCopy<'a> {
        tensor: &'a ManagedTensor,
        ndim: usize,
    }
    impl Visit for HostCopy<'_> {
        type Out = Result<Tensor, CandleError>;
        fn visit<T: CandleElement>(self) -> Self::Out {
            crate::with_rank!(self.ndim, R => {
                let (values, shape) = host_values::<T, R>(self.tensor)?;
                Ok(Tensor::from_storage(Storage::Cpu(T::cpu_storage(values)), shape, BackpropOp::none(), false))
            }, r => Err(CandleError::RankTooHigh(r)))
        }
    }
    super::element::visit(dtype, HostCopy { tensor, ndim })?
}
