//! XLA's buffers as DLPack tensors: each lent to the handler for the call, as a
//! [`ManagedTensor`] that owns only its shape (`Buffer`), or on CUDA as an import on XLA's
//! stream (`CudaBuffer`).

use super::error::{FrameError, Side};
use super::ffi;
use crate::dlpack::{DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor, READ_ONLY};
use crate::import::ImportError;
use crate::managed::{ManagedTensor, TensorView};
use crate::view::{Aliased, AliasedMut};
use core::marker::PhantomData;
use std::boxed::Box;
use std::vec::Vec;

/// A managed tensor over an XLA buffer: the struct, then the extents and the row-major
/// strides it points to. Its deleter frees this and nothing else: the data is XLA's.
#[repr(C)]
struct Lent {
    managed: DLManagedTensorVersioned,
    /// `rank` extents, then `rank` strides.
    layout: Box<[i64]>,
}

/// Frees a [`Lent`].
///
/// # Safety
///
/// `managed` is the first field of a `Lent` made by [`borrowed`], not freed yet.
unsafe extern "C" fn free_lent(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: `managed` is the start of a boxed `Lent` (`repr(C)`, first field), freed once.
    drop(unsafe { Box::from_raw(managed.cast::<Lent>()) });
}

/// An XLA buffer (an argument or a result of the call) as a DLPack tensor, lent for the call
/// (`'a`). Its views are of elements by value, as every import's are: [`view`](Self::view)
/// reads, [`view_mut`](Self::view_mut) writes, and is refused for an argument (`READ_ONLY`).
///
/// The tensor's device is the call's; its layout is XLA's, compact row-major.
#[derive(Debug)]
pub struct Buffer<'a> {
    tensor: ManagedTensor,
    side: Side,
    index: usize,
    _call: PhantomData<&'a ()>,
}

impl<'a> Buffer<'a> {
    /// The tensor, to read its fields.
    pub fn tensor(&self) -> &ManagedTensor {
        &self.tensor
    }

    /// The tensor's DLPack form.
    pub fn dl_tensor(&self) -> &DLTensor {
        self.tensor.dl_tensor()
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        self.tensor.shape().unwrap_or(&[])
    }

    /// Whether this is an argument (read only).
    pub fn is_read_only(&self) -> bool {
        self.tensor.is_read_only()
    }

    /// Which list the buffer is in, and where.
    pub fn position(&self) -> (Side, usize) {
        (self.side, self.index)
    }

    /// The buffer as the read-only view `V`, checked as
    /// [`ManagedTensor::view`] checks (element type, rank, static extents, layout, space); the
    /// error names the buffer.
    pub fn view<'b, V: TensorView<'b, Access = Aliased>>(&'b self) -> Result<V, FrameError> {
        self.tensor.view().map_err(|e| self.refused(e))
    }

    /// The buffer as the read-write view `V`, checked as [`ManagedTensor::view_mut`] checks;
    /// an argument is refused ([`ImportError::ReadOnly`]).
    pub fn view_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, FrameError> {
        let (side, index) = (self.side, self.index);
        self.tensor
            .view_mut()
            .map_err(|source| FrameError::Import { side, index, source })
    }

    /// `source`, naming this buffer.
    fn refused(&self, source: ImportError) -> FrameError {
        FrameError::Import {
            side: self.side,
            index: self.index,
            source,
        }
    }

    /// The buffer as an import on `stream`.
    #[cfg(feature = "cuda")]
    pub(crate) fn on_stream(self, stream: crate::exchange::WorkStream) -> CudaBuffer<'a> {
        CudaBuffer {
            side: self.side,
            index: self.index,
            // SAFETY: XLA's FFI contract: the buffer is ready on the call's stream, which lives
            // for the call; the tensor describes memory XLA keeps for every launch queued on
            // that stream during the call, and `CudaBuffer` does not outlive the call.
            imported: unsafe { crate::cuda::Imported::new(self.tensor, stream) },
            _call: PhantomData,
        }
    }
}

/// An XLA buffer on a CUDA device as an import on XLA's stream, lent for the call: what
/// [`Imported`](crate::cuda::Imported) offers through `Deref` (kernel arguments, launches on
/// XLA's stream, without a host wait), never the import itself, which would outlive the call.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
#[derive(Debug)]
pub struct CudaBuffer<'a> {
    side: Side,
    index: usize,
    imported: crate::cuda::Imported,
    _call: PhantomData<&'a ()>,
}

#[cfg(feature = "cuda")]
impl CudaBuffer<'_> {
    /// Which list the buffer is in, and where.
    pub fn position(&self) -> (Side, usize) {
        (self.side, self.index)
    }

    /// The buffer as the kernel argument `P`, checked as [`Imported::arg`](crate::cuda::Imported::arg)
    /// checks; the error names the buffer.
    pub fn arg<P: crate::cuda::ImportParam>(&self) -> Result<crate::cuda::Arg<'_, P>, super::HandlerError> {
        self.imported.arg().map_err(|e| self.named(e))
    }

    /// A `bool` buffer's bytes as the kernel argument `P`, as
    /// [`Imported::arg_bool_bytes`](crate::cuda::Imported::arg_bool_bytes) gives them; the error
    /// names the buffer.
    pub fn arg_bool_bytes<P: crate::cuda::ImportParam>(&self) -> Result<crate::cuda::Arg<'_, P>, super::HandlerError> {
        self.imported.arg_bool_bytes().map_err(|e| self.named(e))
    }

    /// `e`, naming this buffer.
    fn named(&self, e: crate::cuda::CudaError) -> super::HandlerError {
        let e = super::HandlerError::from(e);
        super::HandlerError::new(e.code(), std::format!("{} {}: {}", self.side, self.index, e.message()))
    }
}

#[cfg(feature = "cuda")]
impl core::ops::Deref for CudaBuffer<'_> {
    type Target = crate::cuda::Imported;

    fn deref(&self) -> &crate::cuda::Imported {
        &self.imported
    }
}

/// The buffer at `buffer` as a tensor on `device`: read-only for an argument.
///
/// # Safety
///
/// `buffer` is NULL or points to an `XLA_FFI_Buffer` valid for `'a`, as far as its
/// `struct_size` says, whose `dims` (when `rank` is positive) holds `rank` values and whose
/// data stays valid, with the layout the buffer describes, for `'a`.
pub(crate) unsafe fn borrowed<'a>(
    buffer: *const ffi::Buffer,
    side: Side,
    index: usize,
    device: DLDevice,
) -> Result<Buffer<'a>, FrameError> {
    let refuse = |why| FrameError::Buffer { side, index, why };
    // SAFETY: NULL or a buffer valid for `'a` (the caller); its size is read first.
    let buffer = unsafe { buffer.as_ref() }.ok_or(refuse("the buffer is NULL"))?;
    if buffer.struct_size < ffi::Buffer::STRUCT_SIZE {
        return Err(refuse("XLA_FFI_Buffer is smaller than XLA's FFI API 0.3 defines"));
    }
    let ndim = i32::try_from(buffer.rank)
        .ok()
        .filter(|&r| r >= 0)
        .ok_or(FrameError::Rank {
            side,
            index,
            rank: buffer.rank,
        })?;
    let rank = ndim as usize;
    let dtype = buffer.dtype.to_dlpack().ok_or(FrameError::DataType {
        side,
        index,
        dtype: buffer.dtype,
    })?;
    let dims: &[i64] = if rank == 0 {
        &[]
    } else if buffer.dims.is_null() {
        return Err(refuse("the buffer's dims are NULL"));
    } else {
        // SAFETY: `rank` values at `dims`, valid for `'a` (the caller).
        unsafe { core::slice::from_raw_parts(buffer.dims, rank) }
    };
    let mut layout = Vec::with_capacity(2 * rank);
    layout.extend_from_slice(dims);
    // Row-major strides, each the product of the extents after it: extents whose product
    // overflows are refused here (the import refuses negative extents and the spans no address
    // holds).
    let mut strides = Vec::with_capacity(rank);
    let mut step = 1i64;
    for &d in dims.iter().rev() {
        strides.push(step);
        step = step.checked_mul(d.max(1)).ok_or_else(|| FrameError::Extents {
            side,
            index,
            dims: dims.to_vec(),
        })?;
    }
    layout.extend(strides.iter().rev());
    let mut lent = Box::new(Lent {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(free_lent),
            flags: if side == Side::Argument { READ_ONLY } else { 0 },
            dl_tensor: DLTensor {
                data: buffer.data,
                device,
                ndim,
                dtype,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        layout: layout.into_boxed_slice(),
    });
    // The boxed slice does not move with the box: the pointers stay good.
    let base = lent.layout.as_mut_ptr();
    lent.managed.dl_tensor.shape = base;
    // SAFETY: `layout` holds `2 · rank` values, so `base + rank` is in it or one past it.
    lent.managed.dl_tensor.strides = unsafe { base.add(rank) };
    // SAFETY: a versioned tensor of major version 1 owned by the caller, whose shape and
    // strides hold `ndim` values each; the data is XLA's, valid for the call (`'a`, caller),
    // which the `Buffer` does not outlive; others (XLA) do not write it during the call where
    // it is an argument (`READ_ONLY`); the deleter frees the box once, from any thread.
    let tensor = unsafe { ManagedTensor::from_raw(Box::into_raw(lent).cast::<DLManagedTensorVersioned>()) }
        .map_err(|_| refuse("the buffer is not a tensor"))?;
    Ok(Buffer {
        tensor,
        side,
        index,
        _call: PhantomData,
    })
}
