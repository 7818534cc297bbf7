//! XLA's buffers as DLPack tensors: each lent to the handler for the call, as a
//! [`ManagedTensor`] that owns only its shape (`Buffer`), or on CUDA as an import on XLA's
//! stream (`CudaBuffer`).

use super::error::{FrameError, Side};
use super::{ffi, prefix};
use crate::dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor, READ_ONLY,
};
use crate::import::ImportError;
use crate::managed::{ManagedTensor, TensorView};
use crate::view::{Aliased, AliasedMut};
use core::alloc::Layout;
use core::ffi::c_void;
use core::marker::PhantomData;
use std::boxed::Box;
use std::vec::Vec;

/// A managed tensor over an XLA buffer: the struct, then the extents and the row-major
/// strides it points to. Its deleter frees this and nothing else: the data is XLA's.
#[repr(C)]
struct Lent {
    managed: DLManagedTensorVersioned,
    /// `rank` extents, then `rank` strides, up to rank [`INLINE_RANK`].
    inline: [i64; 2 * INLINE_RANK],
    /// The same, of a higher rank.
    spilled: Option<Box<[i64]>>,
}

/// The highest rank whose layout a [`Lent`] holds in itself, without another allocation.
const INLINE_RANK: usize = 8;

/// Frees a [`Lent`]: its block goes back to the thread's kept blocks (`managed::recycle`), as
/// an export's does, for the next call's buffers.
///
/// # Safety
///
/// `managed` is the first field of a `Lent` made by [`lend`], not freed yet.
unsafe extern "C" fn free_lent(managed: *mut DLManagedTensorVersioned) {
    let Some(block) = core::ptr::NonNull::new(managed.cast::<u8>()) else {
        return;
    };
    // SAFETY: `managed` is the start of a `Lent` (`repr(C)`, first field) written into a block
    // of `recycle::allocate` by `lend`, dropped once, here.
    unsafe { core::ptr::drop_in_place(block.as_ptr().cast::<Lent>()) };
    // SAFETY: that block, allocated for `Lent`'s layout, referenced by nothing now (the deleter
    // runs once, when the tensor is gone), given back once.
    unsafe { crate::managed::recycle::release(block, Layout::new::<Lent>()) };
}

/// What a tensor over a buffer is made of.
#[derive(Clone, Copy, Debug)]
struct Fields {
    data: *mut c_void,
    device: DLDevice,
    dtype: DLDataType,
    read_only: bool,
}

/// An XLA buffer (an argument or a result of the call) as a DLPack tensor, lent for the call
/// (`'a`). Its views are of elements by value, as every import's are: [`view`](Self::view)
/// reads, [`view_mut`](Self::view_mut) writes, and is refused for an argument (`READ_ONLY`).
/// A `PRED` buffer is read and written as its bytes, views of `u8`
/// ([`bool_bytes`](Self::bool_bytes), [`bool_bytes_mut`](Self::bool_bytes_mut)), never as
/// `bool`: each byte holds whatever XLA or the handler left there.
///
/// The tensor's device is the call's; its layout is XLA's, compact row-major. A buffer stays
/// on the thread of the call (it is neither `Send` nor `Sync`): a result may share an
/// argument's memory, and views of both on one thread read and write it in turn.
#[derive(Debug)]
pub struct Buffer<'a> {
    tensor: ManagedTensor,
    /// The same memory as `u8`, made when a `PRED` buffer's bytes are asked for.
    bytes: Option<ManagedTensor>,
    fields: Fields,
    side: Side,
    index: usize,
    _call: PhantomData<(&'a (), *const ())>,
}

impl<'a> Buffer<'a> {
    /// The tensor's DLPack form.
    pub fn dl_tensor(&self) -> &DLTensor {
        self.tensor.dl_tensor()
    }

    /// The element type, as DLPack names it.
    pub fn dtype(&self) -> DLDataType {
        self.fields.dtype
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        self.tensor.shape().unwrap_or(&[])
    }

    /// Whether this is an argument (read only).
    pub fn is_read_only(&self) -> bool {
        self.fields.read_only
    }

    /// Which list the buffer is in, and where.
    pub fn position(&self) -> (Side, usize) {
        (self.side, self.index)
    }

    /// The buffer as the read-only view `V`, checked as [`ManagedTensor::view`] checks
    /// (element type, rank, static extents, layout, space; every `bool` 0 or 1); the error names
    /// the buffer.
    pub fn view<'b, V: TensorView<'b, Access = Aliased>>(&'b self) -> Result<V, FrameError> {
        self.not_pred()?;
        self.tensor.view().map_err(|e| self.refused(e))
    }

    /// The buffer as the read-write view `V`, checked as [`ManagedTensor::view_mut`] checks;
    /// an argument is refused ([`ImportError::ReadOnly`]).
    pub fn view_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, FrameError> {
        self.not_pred()?;
        let (side, index) = (self.side, self.index);
        self.tensor
            .view_mut()
            .map_err(|source| FrameError::Import { side, index, source })
    }

    /// A `PRED` buffer's bytes as the read-only view `V` of `u8`, each a valid `u8` whatever it
    /// holds; otherwise checked as [`view`](Self::view) checks.
    pub fn bool_bytes<'b, V: TensorView<'b, Access = Aliased>>(&'b mut self) -> Result<V, FrameError> {
        let (side, index) = (self.side, self.index);
        self.bytes()?
            .view()
            .map_err(|source| FrameError::Import { side, index, source })
    }

    /// A `PRED` result's bytes as the read-write view `V` of `u8`: the way to write a `bool`
    /// result, whose bytes XLA leaves as they were (not 0 or 1, which a view of `bool` checks).
    /// The handler writes 0 or 1, for XLA to read as `PRED`.
    pub fn bool_bytes_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, FrameError> {
        let (side, index) = (self.side, self.index);
        self.bytes()?
            .view_mut()
            .map_err(|source| FrameError::Import { side, index, source })
    }

    /// Refuses a view of a `PRED` buffer's elements as `bool`: another buffer of the call may
    /// share its memory (a result aliasing an argument, or the same result taken twice), whose
    /// bytes ([`bool_bytes_mut`](Self::bool_bytes_mut)) take any value after a view of `bool`
    /// checked them.
    fn not_pred(&self) -> Result<(), FrameError> {
        if self.fields.dtype == DLDataType::new(DLDataTypeCode::BOOL, 8, 1) {
            return Err(FrameError::Pred {
                side: self.side,
                index: self.index,
            });
        }
        Ok(())
    }

    /// The buffer as a tensor of `u8`, if its elements are `PRED`.
    fn bytes(&mut self) -> Result<&mut ManagedTensor, FrameError> {
        let bools = DLDataType::new(DLDataTypeCode::BOOL, 8, 1);
        if self.fields.dtype != bools {
            return Err(self.refused(ImportError::DataType {
                expected: bools,
                found: self.fields.dtype,
            }));
        }
        if self.bytes.is_none() {
            let fields = Fields {
                dtype: DLDataType::new(DLDataTypeCode::UINT, 8, 1),
                ..self.fields
            };
            let mut shape = Vec::new();
            shape
                .try_reserve_exact(self.shape().len())
                .map_err(|_| FrameError::Rank {
                    side: self.side,
                    index: self.index,
                    rank: self.shape().len() as i64,
                })?;
            shape.extend_from_slice(self.shape());
            // SAFETY: the same memory, extents and layout as `tensor`, valid for the call (as
            // `borrowed` found it), its bytes read and written as `u8`, which every byte is.
            self.bytes = Some(unsafe { lend(fields, &shape, self.side, self.index) }?);
        }
        Ok(self.bytes.as_mut().expect("made above"))
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
            // for the call; XLA keeps the memory the tensor describes for every launch queued on
            // that stream during the call, and orders its own later work on it after them (the
            // next operations of its program run on that stream, or wait for it); `CudaBuffer`
            // does not outlive the call.
            imported: unsafe { crate::cuda::Imported::lent(self.tensor, stream) },
            _call: PhantomData,
        }
    }
}

/// An XLA buffer on a CUDA device as an import on XLA's stream, lent for the call: what
/// [`Imported`](crate::cuda::Imported) offers through `Deref` (kernel arguments, launches on
/// XLA's stream, without a host wait), never the import itself, which would outlive the call.
/// The host reads none of its memory (device memory): launches reach it in stream order, and
/// refuse a written argument that overlaps another.
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
/// `buffer` is NULL or points to an `XLA_FFI_Buffer` whose first `struct_size` bytes are
/// readable, whose `dims` (when `rank` is positive) holds `rank` values and whose data stays
/// valid, with the layout the buffer describes, for `'a`; during `'a` nothing but the handler
/// writes it, and the handler only through results (`entry`'s contract).
pub(crate) unsafe fn borrowed<'a>(
    buffer: *const ffi::Buffer,
    side: Side,
    index: usize,
    device: DLDevice,
) -> Result<Buffer<'a>, FrameError> {
    let refuse = |why| FrameError::Buffer { side, index, why };
    // SAFETY: NULL or a buffer whose size is true (the caller), read as far as it says.
    let buffer = unsafe { prefix::read(buffer) }.ok_or(refuse("the buffer is NULL"))?;
    if buffer.struct_size < ffi::Buffer::STRUCT_SIZE {
        return Err(refuse("XLA_FFI_Buffer is smaller than XLA's FFI API 0.3 defines"));
    }
    let rank_error = FrameError::Rank {
        side,
        index,
        rank: buffer.rank,
    };
    let rank = i32::try_from(buffer.rank)
        .ok()
        .filter(|&r| r >= 0)
        .ok_or_else(|| rank_error.clone())? as usize;
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
    let fields = Fields {
        data: buffer.data,
        device,
        dtype,
        read_only: side == Side::Argument,
    };
    // SAFETY: the buffer's memory, extents and type, valid for `'a` (the caller).
    let tensor = unsafe { lend(fields, dims, side, index) }?;
    Ok(Buffer {
        tensor,
        bytes: None,
        fields,
        side,
        index,
        _call: PhantomData,
    })
}

/// A managed tensor of `fields` and `dims`, row-major.
///
/// # Safety
///
/// `fields.data` holds elements of `fields.dtype` in the row-major layout of `dims`, valid for
/// as long as the tensor lives; nobody writes them while the tensor's views live unless through
/// views on the same thread (`READ_ONLY` where `fields.read_only`).
unsafe fn lend(fields: Fields, dims: &[i64], side: Side, index: usize) -> Result<ManagedTensor, FrameError> {
    let rank = dims.len();
    let mut spilled = Vec::new();
    if rank > INLINE_RANK {
        // A rank no memory holds the layout of is an error, not an abort.
        spilled.try_reserve_exact(2 * rank).map_err(|_| FrameError::Rank {
            side,
            index,
            rank: rank as i64,
        })?;
        spilled.resize(2 * rank, 0);
    }
    let mut inline = [0i64; 2 * INLINE_RANK];
    let layout: &mut [i64] = if rank > INLINE_RANK {
        &mut spilled
    } else {
        &mut inline[..2 * rank]
    };
    layout[..rank].copy_from_slice(dims);
    // Row-major strides, each the product of the extents after it. Extents whose product
    // overflows are refused here, unless an extent is 0: no element, and no stride is used (the
    // import refuses negative extents and the spans no address holds).
    let empty = dims.contains(&0);
    let mut step = 1i64;
    for d in (0..rank).rev() {
        layout[rank + d] = step;
        step = match step.checked_mul(dims[d].max(1)) {
            Some(s) => s,
            None if empty => step,
            None => {
                return Err(FrameError::Extents {
                    side,
                    index,
                    dims: dims.to_vec(),
                });
            }
        };
    }
    let lent = crate::managed::recycle::allocate(Layout::new::<Lent>())
        .cast::<Lent>()
        .as_ptr();
    let value = Lent {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(free_lent),
            flags: if fields.read_only { READ_ONLY } else { 0 },
            dl_tensor: DLTensor {
                data: fields.data,
                device: fields.device,
                ndim: rank as i32,
                dtype: fields.dtype,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        inline,
        spilled: (rank > INLINE_RANK).then(|| spilled.into_boxed_slice()),
    };
    // SAFETY: a block of `Lent`'s layout (size and alignment), uninitialised and owned here.
    unsafe { lent.write(value) };
    // SAFETY: `lent` is the `Lent` just written, owned here, which nothing else refers to yet;
    // its block does not move.
    let made = unsafe { &mut *lent };
    let base: *mut i64 = match &mut made.spilled {
        Some(spilled) => spilled.as_mut_ptr(),
        None => made.inline.as_mut_ptr(),
    };
    made.managed.dl_tensor.shape = base;
    // `2 · rank` values at `base`: `base + rank` is in them or one past them.
    made.managed.dl_tensor.strides = base.wrapping_add(rank);
    // SAFETY: a versioned tensor of major version 1 owned by the caller, whose shape and
    // strides hold `ndim` values each; the data is valid while the tensor lives, and written by
    // others only as the caller says (an argument may be written through a result that shares
    // its memory, by the handler, on this thread: `Buffer` is neither `Send` nor `Sync`); the
    // deleter frees the block once, from any thread.
    unsafe { ManagedTensor::from_raw(lent.cast::<DLManagedTensorVersioned>()) }.map_err(|_| FrameError::Buffer {
        side,
        index,
        why: "the buffer is not a tensor",
    })
}
