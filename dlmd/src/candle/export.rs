//! candle tensors out as DLPack managed tensors, keeping the tensor alive.

use super::{CandleElement, CandleError, Visit, dl_dtype};
use crate::dlpack::{DLDevice, DLManagedTensorVersioned, DLTensor, ManagedTensorAbi, READ_ONLY};
use candle_core::{CpuStorage, Storage, Tensor};
use core::ffi::c_void;
use std::boxed::Box;
use std::vec::Vec;

/// The heap block behind an exported candle tensor: the managed struct first (its address is
/// the block's), then the shape and strides it points into, then the tensor it keeps alive.
#[repr(C)]
pub(super) struct Exported {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
    pub(super) tensor: Tensor,
}

/// What the `manager_ctx` of every tensor [`export`] makes points to: a static of its own, whose
/// address no other producer's context has, so that [`import`](super::import) knows them.
static EXPORT_MARKER: u8 = 0;

/// The `manager_ctx` of candle exports.
pub(super) fn export_marker() -> *mut c_void {
    core::ptr::from_ref(&EXPORT_MARKER).cast_mut().cast()
}

/// The deleter of every tensor [`export`] makes: drops the block, and with it the tensor.
///
/// # Safety
///
/// Called once (the DLPack contract), on a tensor made by [`export`], or with NULL.
unsafe extern "C" fn delete(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `export` made `managed` as the first field of a leaked `Box<Exported>`
    // (`#[repr(C)]`), and the DLPack contract calls the deleter once.
    drop(unsafe { Box::from_raw(managed.cast::<Exported>()) });
}

/// Exports `tensor`, in its own layout (strided, offset, broadcast: candle's strides become
/// DLPack's), as a versioned managed tensor flagged `READ_ONLY` (see the
/// [module docs](super#who-may-write)), without a copy. A clone of the tensor (which shares
/// its storage) lives in the managed tensor until the consumer calls the deleter, from any
/// thread.
///
/// CPU tensors export as CPU memory; CUDA tensors (feature `candle-cuda`) as CUDA memory of
/// their device, ready once candle's stream has run the work queued before the export:
/// synchronise it, or order the consumer's stream after it. Other devices are refused.
///
/// The deleter drops candle's tensor, whose memory candle may then reuse for its next work: a
/// consumer that queued work on the data synchronises that work's stream (or orders candle's
/// stream after it) before it calls the deleter.
pub fn export(tensor: &Tensor) -> Result<*mut DLManagedTensorVersioned, CandleError> {
    let dtype = dl_dtype(tensor.dtype())?;
    let (storage, layout) = tensor.storage_and_layout();
    let (start, device, elem_bytes) = match &*storage {
        Storage::Cpu(cpu) => (
            cpu_parts(cpu, tensor.dtype())?.cast_mut(),
            DLDevice::CPU,
            tensor.dtype().size_in_bytes(),
        ),
        #[cfg(feature = "candle-cuda")]
        Storage::Cuda(cuda) => {
            let (ptr, ordinal) = cuda_parts(&cuda.slice, tensor.dtype())?;
            let ordinal = i32::try_from(ordinal).map_err(|_| crate::cuda::CudaError::Ordinal(ordinal))?;
            (
                ptr as usize as *mut u8,
                DLDevice::cuda(ordinal),
                tensor.dtype().size_in_bytes(),
            )
        }
        other => {
            return Err(CandleError::Device {
                found: format!("{:?}", other.device().location()),
                wanted: "CPU memory, or CUDA memory with the `candle-cuda` feature",
            });
        }
    };
    let (shape, strides, offset) = if tensor.dtype() == candle_core::DType::F4 {
        super::element_layout::<crate::F4E2M1FNx2>(layout)?
    } else {
        super::element_layout::<u8>(layout)?
    };
    // FP4 pairs are one byte each; every other dtype has its size in bytes.
    let elem_bytes = elem_bytes.max(1);
    let to_i64 = |v: usize| i64::try_from(v).map_err(|_| crate::layout::LayoutError::SpanOverflow);
    let shape = shape.into_iter().map(to_i64).collect::<Result<Vec<_>, _>>()?;
    let strides = strides.into_iter().map(|s| s as i64).collect::<Vec<_>>();
    let byte_offset = offset
        .checked_mul(elem_bytes)
        .ok_or(crate::layout::LayoutError::SpanOverflow)?;
    let empty = shape.contains(&0);
    drop(storage);
    let ndim = shape.len() as i32;
    let block = Box::new(Exported {
        managed: DLManagedTensorVersioned::new(
            DLTensor {
                data: if empty {
                    core::ptr::null_mut()
                } else {
                    start.cast::<c_void>()
                },
                device,
                ndim,
                dtype,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: if empty { 0 } else { byte_offset as u64 },
            },
            READ_ONLY,
            export_marker(),
            Some(delete),
        ),
        shape,
        strides,
        tensor: tensor.clone(),
    });
    let raw = Box::into_raw(block);
    // SAFETY: `raw` is a valid, leaked box that nothing else references yet; the shape and
    // strides pointers point into its `Vec`s, which it owns and never changes, until the deleter
    // frees it.
    let block = unsafe { &mut *raw };
    if ndim > 0 {
        let t = block.managed.dl_tensor_mut();
        t.shape = block.shape.as_mut_ptr();
        t.strides = block.strides.as_mut_ptr();
    }
    Ok(raw.cast())
}

/// The first byte of candle's CPU storage of `dtype`.
fn cpu_parts(storage: &CpuStorage, dtype: candle_core::DType) -> Result<*const u8, CandleError> {
    struct Parts<'a>(&'a CpuStorage);
    impl Visit for Parts<'_> {
        type Out = Option<*const u8>;
        fn visit<T: CandleElement>(self) -> Self::Out {
            T::cpu_parts(self.0).map(|(start, _)| start)
        }
    }
    super::element::visit(dtype, Parts(storage))?.ok_or(CandleError::Unsupported(dtype))
}

/// The first byte and the ordinal of candle's CUDA storage of `dtype`.
#[cfg(feature = "candle-cuda")]
fn cuda_parts(
    storage: &candle_core::cuda_backend::CudaStorageSlice,
    dtype: candle_core::DType,
) -> Result<(cudarc::driver::sys::CUdeviceptr, usize), CandleError> {
    struct Parts<'a>(&'a candle_core::cuda_backend::CudaStorageSlice);
    impl Visit for Parts<'_> {
        type Out = Option<(cudarc::driver::sys::CUdeviceptr, usize)>;
        fn visit<T: CandleElement>(self) -> Self::Out {
            T::cuda_parts(self.0).map(|(ptr, _, ordinal)| (ptr, ordinal))
        }
    }
    super::element::visit(dtype, Parts(storage))?.ok_or(CandleError::Unsupported(dtype))
}
