//! DLPack managed tensors in as candle tensors.

use super::export::{Exported, export_marker};
use super::{CandleElement, CandleError, candle_dtype};
use crate::dlpack::{DLDeviceType, ManagedTensorAbi};
use crate::extents::{Dims, Extents};
use crate::layout::LayoutStrideRelaxed;
use crate::managed::ManagedTensor;
use crate::space::Host;
use crate::{F4E2M1FNx2, F8E4M3FN, F8E8M0FNU};
use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, DType, Device, Storage, Tensor};
use half::{bf16, f16};
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

/// Runs `$body` with `$R` the const rank `$rank` (0 to [`MAX_RANK`]).
macro_rules! with_rank {
    ($rank:expr, $R:ident => $body:expr) => {
        match $rank {
            0 => {
                const $R: usize = 0;
                $body
            }
            1 => {
                const $R: usize = 1;
                $body
            }
            2 => {
                const $R: usize = 2;
                $body
            }
            3 => {
                const $R: usize = 3;
                $body
            }
            4 => {
                const $R: usize = 4;
                $body
            }
            5 => {
                const $R: usize = 5;
                $body
            }
            6 => {
                const $R: usize = 6;
                $body
            }
            7 => {
                const $R: usize = 7;
                $body
            }
            8 => {
                const $R: usize = 8;
                $body
            }
            r => Err(CandleError::RankTooHigh(r)),
        }
    };
}
#[cfg(feature = "candle-cuda")]
pub(super) use with_rank;

/// The elements of a host-readable tensor of rank `R`, in row-major order, read through dlmd's
/// checked import (the producer may write them meanwhile: they are copied by value), and candle's
/// shape (in values: FP4 pairs count two).
fn host_values<T: CandleElement, const R: usize>(tensor: &ManagedTensor) -> Result<(Vec<T>, Vec<usize>), CandleError> {
    let view = tensor.as_mdspan::<T, Dims<R>, LayoutStrideRelaxed, Host>()?;
    let mut shape = view.extents().to_array().to_vec();
    if let Some(last) = shape.last_mut() {
        *last *= T::PER_ELEMENT;
    }
    Ok((view.values().collect(), shape))
}

fn host_copy(tensor: &ManagedTensor, dtype: DType, ndim: usize) -> Result<Tensor, CandleError> {
    macro_rules! copy {
        ($t:ty, $wrap:expr) => {
            with_rank!(ndim, R => {
                let (values, shape) = host_values::<$t, R>(tensor)?;
                Ok(Tensor::from_storage(Storage::Cpu($wrap(values)), shape, BackpropOp::none(), false))
            })
        };
    }
    match dtype {
        DType::U8 => copy!(u8, CpuStorage::U8),
        DType::U32 => copy!(u32, CpuStorage::U32),
        DType::I16 => copy!(i16, CpuStorage::I16),
        DType::I32 => copy!(i32, CpuStorage::I32),
        DType::I64 => copy!(i64, CpuStorage::I64),
        DType::BF16 => copy!(bf16, CpuStorage::BF16),
        DType::F16 => copy!(f16, CpuStorage::F16),
        DType::F32 => copy!(f32, CpuStorage::F32),
        DType::F64 => copy!(f64, CpuStorage::F64),
        DType::F8E4M3 => copy!(F8E4M3FN, |v: Vec<F8E4M3FN>| CpuStorage::F8E4M3(
            v.into_iter().map(|x| float8::F8E4M3::from_bits(x.to_bits())).collect()
        )),
        DType::F8E8M0 => copy!(F8E8M0FNU, |v: Vec<F8E8M0FNU>| CpuStorage::F8E8M0(
            v.into_iter().map(F8E8M0FNU::to_bits).collect()
        )),
        DType::F4 => copy!(F4E2M1FNx2, |v: Vec<F4E2M1FNx2>| CpuStorage::F4(
            v.into_iter().map(F4E2M1FNx2::to_bits).collect()
        )),
        _ => Err(CandleError::Unsupported(dtype)),
    }
}
