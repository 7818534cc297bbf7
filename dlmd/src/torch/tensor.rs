//! An operator's tensors: torch's references to them, owned for the call, lent to dlmd as
//! managed tensors (views on the host, imports on torch's current CUDA stream).

use super::abi::{Status, TensorHandle, Torch};
use super::error::OpError;
use crate::dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor, READ_ONLY,
};
use crate::managed::{ManagedTensor, TensorView};
use crate::view::{Aliased, AliasedMut};
use core::ffi::c_void;
use core::marker::PhantomData;
use std::boxed::Box;
use std::vec::Vec;

/// torch's reference to a tensor, deleted when dropped.
#[derive(Debug)]
pub(crate) struct Handle {
    raw: TensorHandle,
    torch: &'static Torch,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: an owned reference (`Handle::own`), deleted once. A failure leaves nothing to do.
        let _ = unsafe { (self.torch.delete_tensor)(self.raw) };
    }
}

/// What a tensor is made of, as torch describes it.
struct Fields {
    data: *mut c_void,
    device: DLDevice,
    dtype: DLDataType,
    /// `rank` extents, then `rank` strides.
    layout: Vec<i64>,
}

impl Handle {
    /// Owns `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is an owned reference to a tensor (`at::Tensor*` that `torch` made), handed over.
    pub(crate) unsafe fn own(raw: TensorHandle, torch: &'static Torch) -> Result<Self, OpError> {
        if raw.is_null() {
            return Err(OpError::new("a tensor argument is undefined (NULL)"));
        }
        Ok(Self { raw, torch })
    }

    /// Gives up the reference, to torch (an operator's return).
    pub(crate) fn into_raw(self) -> TensorHandle {
        let raw = self.raw;
        core::mem::forget(self);
        raw
    }

    /// A shim's status as a result.
    fn check(status: Status, what: &str) -> Result<(), OpError> {
        if status == 0 {
            Ok(())
        } else {
            Err(OpError::new(std::format!(
                "torch failed to give the tensor's {what} (status {status})"
            )))
        }
    }

    fn dtype(&self) -> Result<DLDataType, OpError> {
        let mut code = 0i32;
        // SAFETY: a live tensor reference and a place for the result.
        Self::check(unsafe { (self.torch.dtype)(self.raw, &mut code) }, "dtype")?;
        self.torch
            .dl_dtype(code)
            .ok_or_else(|| OpError::new(std::format!("torch's element type {code} has no DLPack type")))
    }

    fn rank(&self) -> Result<usize, OpError> {
        let mut rank = 0i64;
        // SAFETY: a live tensor reference and a place for the result.
        Self::check(unsafe { (self.torch.dim)(self.raw, &mut rank) }, "rank")?;
        usize::try_from(rank)
            .ok()
            .filter(|&r| i32::try_from(r).is_ok())
            .ok_or_else(|| OpError::new(std::format!("a tensor of rank {rank}")))
    }

    fn device(&self) -> Result<DLDevice, OpError> {
        let (mut kind, mut index) = (0i32, 0i32);
        // SAFETY: a live tensor reference and places for the results.
        Self::check(unsafe { (self.torch.device_type)(self.raw, &mut kind) }, "device")?;
        if kind == self.torch.cpu {
            return Ok(DLDevice::CPU);
        }
        if kind != self.torch.cuda {
            return Err(OpError::new(std::format!(
                "torch's device type {kind} is neither the CPU nor CUDA"
            )));
        }
        // SAFETY: as above.
        let code = unsafe { (self.torch.device_index)(self.raw, &mut index) };
        Self::check(code, "device index")?;
        if index < 0 {
            return Err(OpError::new(std::format!("a CUDA tensor on device {index}")));
        }
        Ok(DLDevice::cuda(index))
    }

    fn fields(&self) -> Result<Fields, OpError> {
        let rank = self.rank()?;
        let (mut data, mut sizes, mut strides) = (core::ptr::null_mut(), core::ptr::null_mut(), core::ptr::null_mut());
        // SAFETY: a live tensor reference and a place for the result.
        Self::check(unsafe { (self.torch.data_ptr)(self.raw, &mut data) }, "data")?;
        // SAFETY: as above; the extents and strides are torch's, valid while the reference
        // lives (copied below).
        Self::check(unsafe { (self.torch.sizes)(self.raw, &mut sizes) }, "extents")?;
        // SAFETY: as above.
        Self::check(unsafe { (self.torch.strides)(self.raw, &mut strides) }, "strides")?;
        if rank > 0 && (sizes.is_null() || strides.is_null()) {
            return Err(OpError::new("torch gave NULL extents or strides"));
        }
        let mut layout = Vec::new();
        layout
            .try_reserve_exact(2 * rank)
            .map_err(|_| OpError::new(std::format!("a tensor of rank {rank}")))?;
        if rank > 0 {
            // SAFETY: torch's extents, `rank` values, valid while the tensor reference lives
            // (checked non-NULL above).
            layout.extend_from_slice(unsafe { core::slice::from_raw_parts(sizes, rank) });
            // SAFETY: as above, its strides.
            layout.extend_from_slice(unsafe { core::slice::from_raw_parts(strides, rank) });
        }
        Ok(Fields {
            data,
            device: self.device()?,
            dtype: self.dtype()?,
            layout,
        })
    }

    /// A new tensor over this one's storage, with its extents and strides (torch's
    /// `_reinterpret_tensor`): it keeps the storage alive, where a new reference to the same
    /// tensor would follow it to another (`set_`).
    fn alias(&self) -> Result<Handle, OpError> {
        let fields = self.fields()?;
        let rank = fields.layout.len() / 2;
        let (sizes, strides) = fields.layout.split_at(rank);
        let mut alias = core::ptr::null_mut();
        // SAFETY: a live tensor reference, `rank` extents and strides (torch's own, copied),
        // an offset of 0 from its own, and a place for the new tensor.
        let code =
            unsafe { (self.torch.reinterpret)(self.raw, rank as i64, sizes.as_ptr(), strides.as_ptr(), 0, &mut alias) };
        Self::check(code, "storage")?;
        // SAFETY: a new owned reference from torch.
        unsafe { Handle::own(alias, self.torch) }
    }

    /// The bytes the tensor's elements lie in, `start..end` (empty where it has no element).
    pub(crate) fn span(&self) -> Result<(usize, usize), OpError> {
        let fields = self.fields()?;
        let rank = fields.layout.len() / 2;
        let (sizes, strides) = fields.layout.split_at(rank);
        let start = fields.data.addr();
        if sizes.contains(&0) {
            return Ok((start, start));
        }
        let outside = || {
            OpError::new(std::format!(
                "a tensor of extents {sizes:?} and strides {strides:?} at {start:#x} reaches outside the address space"
            ))
        };
        // At most 2^16 · 2^16 bits an element, and each step below at most 2^63 · 2^63 · 2^29
        // before it is checked: `i128` holds them, and every sum is checked.
        let item = (i128::from(fields.dtype.bits) * i128::from(fields.dtype.lanes) + 7) / 8;
        let (mut low, mut high) = (start as i128, start as i128 + item);
        for (&size, &stride) in sizes.iter().zip(strides) {
            if size < 0 {
                return Err(OpError::new(std::format!("torch gave the extents {sizes:?}")));
            }
            let reach = i128::from(size - 1)
                .checked_mul(i128::from(stride))
                .and_then(|r| r.checked_mul(item))
                .ok_or_else(outside)?;
            if reach < 0 {
                low = low.checked_add(reach).ok_or_else(outside)?;
            } else {
                high = high.checked_add(reach).ok_or_else(outside)?;
            }
        }
        match (usize::try_from(low), usize::try_from(high)) {
            (Ok(low), Ok(high)) => Ok((low, high)),
            _ => Err(outside()),
        }
    }

    /// A managed tensor over the same memory, holding until its deleter runs (from any thread)
    /// a new tensor over the tensor's storage: the memory stays allocated if the tensor is
    /// pointed at another storage (`set_`) or freed meanwhile, as torch's own DLPack export
    /// keeps it. (A storage resized in place, `resize_` growing it, frees its old memory under
    /// every tensor of it, this one and torch's export alike: see the module docs.)
    /// `dtype` in place of torch's where given (bytes of bools).
    fn managed(&self, read_only: bool, dtype: Option<DLDataType>) -> Result<ManagedTensor, OpError> {
        let reference = self.alias()?;
        // What the new tensor holds, read from it.
        let fields = reference.fields()?;
        let rank = fields.layout.len() / 2;
        let mut lent = Box::new(Lent {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion::CURRENT,
                manager_ctx: core::ptr::null_mut(),
                deleter: Some(free_lent),
                flags: if read_only { READ_ONLY } else { 0 },
                dl_tensor: DLTensor {
                    data: fields.data,
                    device: fields.device,
                    ndim: rank as i32,
                    dtype: dtype.unwrap_or(fields.dtype),
                    shape: core::ptr::null_mut(),
                    strides: core::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            layout: fields.layout.into_boxed_slice(),
            reference,
        });
        // The boxed slice does not move with the box: the pointers stay good.
        let base = lent.layout.as_mut_ptr();
        lent.managed.dl_tensor.shape = base;
        // SAFETY: `layout` holds `2 · rank` values, so `base + rank` is in it or one past it.
        lent.managed.dl_tensor.strides = unsafe { base.add(rank) };
        // SAFETY: a versioned tensor of major version 1, owned here, whose shape and strides
        // hold `ndim` values; the data is the storage's, which the tensor the box holds keeps
        // allocated until the deleter (which frees the box once, from any thread) runs. A
        // read-only one is not written by the call (`entry::separate` refused the call where
        // it shares memory with a written tensor), nor by others except as torch's own
        // operations would race (a producer's contract).
        unsafe { ManagedTensor::from_raw(Box::into_raw(lent).cast::<DLManagedTensorVersioned>()) }
            .map_err(|e| OpError::new(std::format!("torch's tensor is not a DLPack tensor: {e}")))
    }

    /// The same tensor on torch's current CUDA stream of its device: lent where it is an
    /// argument of the call (`lend`), otherwise imported as any producer's.
    #[cfg(feature = "cuda")]
    fn cuda(&self, read_only: bool, lend: bool) -> Result<crate::cuda::Imported, OpError> {
        let DLDevice {
            device_type: crate::dlpack::DLDeviceType::CUDA,
            device_id,
        } = self.device()?
        else {
            return Err(OpError::new("the tensor is not on a CUDA device"));
        };
        let stream_of = self
            .torch
            .cuda_stream
            .ok_or_else(|| OpError::new("this torch has no CUDA"))?;
        let mut stream = core::ptr::null_mut();
        // SAFETY: a device index and a place for the stream.
        Self::check(unsafe { stream_of(device_id, &mut stream) }, "CUDA stream")?;
        let managed = self.managed(read_only, None)?;
        // torch's legacy default stream is NULL, which DLPack names 1.
        let value = if stream.is_null() { 1 } else { stream as usize };
        // SAFETY: torch's current stream on the tensor's device, which torch's own kernels of
        // this call would use: torch's work on the tensor so far is ordered before work queued
        // there, and its later work after it (torch's stream semantics; work its user queued on
        // other streams without ordering races as much with torch's own operations).
        let stream = unsafe { crate::exchange::WorkStream::from_raw(value) };
        if !lend {
            // SAFETY: as above; the memory stays allocated while launches over it may run: the
            // import holds the managed tensor, whose own tensor keeps the storage (`managed`),
            // and each launch holds the import until its kernel is done.
            return Ok(unsafe { crate::cuda::Imported::new(managed, stream) });
        }
        // SAFETY: as above, and the memory stays allocated while the call's launches run, as
        // it does for torch's own kernels of the call: during the call the import holds the
        // managed tensor, whose own tensor keeps the storage (`managed`) if the argument is
        // pointed at another (`set_`); once the storage is freed (after the call: the argument
        // is not kept past it), torch's caching allocator hands its block again only to work
        // queued on the stream it was allocated on, after what is queued there (or
        // `cudaFreeAsync` frees it in that stream's order, or `cudaFree`, which waits for the
        // device). An argument used on a stream other than its own must be marked with
        // `record_stream` for torch's own kernels as much as for these (torch's rule), so its
        // block waits for this stream too; memory torch did not allocate is freed in its
        // producer's order, which torch's own kernels rely on as much.
        Ok(unsafe { crate::cuda::Imported::lent(managed, stream) })
    }
}

/// A managed tensor over a torch tensor: the struct, its layout, and a reference to the tensor.
#[repr(C)]
struct Lent {
    managed: DLManagedTensorVersioned,
    layout: Box<[i64]>,
    reference: Handle,
}

/// Frees a [`Lent`], and with it its reference to the tensor.
///
/// # Safety
///
/// `managed` is the first field of a boxed `Lent`, not freed yet.
unsafe extern "C" fn free_lent(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: the start of a boxed `Lent` (`repr(C)`, first field), freed once.
    drop(unsafe { Box::from_raw(managed.cast::<Lent>()) });
}

/// The DLPack type of a bool's bytes.
const BOOL: DLDataType = DLDataType::new(DLDataTypeCode::BOOL, 8, 1);
const BYTE: DLDataType = DLDataType::new(DLDataTypeCode::UINT, 8, 1);

/// A tensor argument the operator reads (`Tensor` in its schema), owned for the call.
///
/// Its memory is torch's: another argument may share it (torch passes what the caller gives),
/// so host views read elements by value, as every import's do. A `bool` tensor is read as its
/// bytes ([`bool_bytes`](Self::bool_bytes)): torch lets any byte into one.
#[derive(Debug)]
pub struct Tensor<'a> {
    pub(crate) handle: Handle,
    /// The parameter's name, for errors (empty for a new tensor).
    pub(crate) name: &'static str,
    /// Whether it is an argument of the call, not a tensor [`Torch::empty`] made.
    argument: bool,
    managed: Option<ManagedTensor>,
    /// The call's: not kept past it, and not sent to another thread.
    _call: PhantomData<(&'a (), *const ())>,
}

/// A tensor argument the operator writes (`Tensor(a!)` in its schema), owned for the call
/// (`'a`), or a new tensor it returns ([`Torch::empty`], `'static`). torch's version counter of
/// an argument is moved before the operator runs, as torch's own in-place operations move it.
#[derive(Debug)]
pub struct TensorMut<'a> {
    pub(crate) handle: Handle,
    /// The parameter's name, for errors (empty for a new tensor).
    pub(crate) name: &'static str,
    /// As [`Tensor`]'s.
    argument: bool,
    managed: Option<ManagedTensor>,
    /// As [`Tensor`]'s.
    _call: PhantomData<(&'a (), *const ())>,
}

macro_rules! common {
    ($ty:ident, $read_only:expr) => {
        impl $ty<'_> {
            /// Argument `name` of the call.
            pub(crate) fn new(handle: Handle, name: &'static str) -> Self {
                Self {
                    handle,
                    name,
                    argument: true,
                    managed: None,
                    _call: PhantomData,
                }
            }

            /// The element type.
            pub fn dtype(&self) -> Result<DLDataType, OpError> {
                self.handle.dtype().map_err(|e| e.of(self.name))
            }

            /// The device.
            pub fn device(&self) -> Result<DLDevice, OpError> {
                self.handle.device().map_err(|e| e.of(self.name))
            }

            /// The number of dimensions.
            pub fn rank(&self) -> Result<usize, OpError> {
                self.handle.rank().map_err(|e| e.of(self.name))
            }

            /// The extents, one a dimension.
            pub fn shape(&self) -> Result<Vec<i64>, OpError> {
                let mut layout = self.handle.fields().map_err(|e| e.of(self.name))?.layout;
                layout.truncate(layout.len() / 2);
                Ok(layout)
            }

            /// The tensor on torch's current CUDA stream of its device, for `#[dlmd::kernel]`
            /// launches (through `Deref`): queued there, after torch's work on it so far and
            /// before torch's later work, without a host wait. Every import check applies.
            ///
            /// An argument's memory is lent ([`Imported::lent`](crate::cuda::Imported::lent)),
            /// as torch lends it to its own kernels: a launch keeps nothing past the call and
            /// records no event, and torch's caching allocator keeps a freed block for the work
            /// queued on its stream. A tensor used on a stream other than the one it was made on
            /// needs `record_stream`, as it does for torch's own operations; memory torch did
            /// not allocate (`torch.from_dlpack`) is freed in its producer's order, as for
            /// torch's own kernels. A tensor [`Torch::empty`] made, which may be kept past the
            /// call (in a `thread_local`) and used on another stream, is held by each launch
            /// until its kernel is done and ordered against dlmd's other launches, as any
            /// import is ([`Imported::new`](crate::cuda::Imported::new)).
            #[cfg(feature = "cuda")]
            #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
            pub fn cuda(&self) -> Result<CudaTensor<'_>, OpError> {
                Ok(CudaTensor {
                    imported: self.handle.cuda($read_only, self.argument).map_err(|e| e.of(self.name))?,
                    _call: PhantomData,
                })
            }

            /// The read-only view `V` of a host tensor, checked as [`ManagedTensor::view`]
            /// checks; a `bool` tensor is refused (read its bytes).
            pub fn view<'b, V: TensorView<'b, Access = Aliased>>(&'b mut self) -> Result<V, OpError> {
                let name = self.name;
                self.lent(None)?.view().map_err(|e| OpError::from(e).of(name))
            }

            /// A `bool` tensor's bytes as the read-only view `V` of `u8`.
            pub fn bool_bytes<'b, V: TensorView<'b, Access = Aliased>>(&'b mut self) -> Result<V, OpError> {
                let name = self.name;
                self.lent(Some(BYTE))?.view().map_err(|e| OpError::from(e).of(name))
            }

            /// The managed tensor views are made of, made once: `bytes` for a bool tensor's
            /// bytes, which its element type must then be.
            fn lent(&mut self, bytes: Option<DLDataType>) -> Result<&mut ManagedTensor, OpError> {
                let dtype = self.dtype()?;
                match bytes {
                    None if dtype == BOOL => {
                        return Err(OpError::new(
                            "a bool tensor is read and written as its bytes (bool_bytes), which may be other than 0 and 1",
                        )
                        .of(self.name));
                    }
                    Some(_) if dtype != BOOL => {
                        return Err(OpError::new(std::format!("bool_bytes of a tensor of {dtype}")).of(self.name));
                    }
                    _ => {}
                }
                if self.managed.is_none() {
                    self.managed = Some(self.handle.managed($read_only, bytes).map_err(|e| e.of(self.name))?);
                }
                Ok(self.managed.as_mut().expect("made above"))
            }
        }
    };
}

common!(Tensor, true);
common!(TensorMut, false);

impl TensorMut<'_> {
    /// The read-write view `V` of a host tensor, checked as [`ManagedTensor::view_mut`]
    /// checks; a `bool` tensor is refused (write its bytes).
    pub fn view_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, OpError> {
        let name = self.name;
        self.lent(None)?.view_mut().map_err(|e| OpError::from(e).of(name))
    }

    /// A `bool` tensor's bytes as the read-write view `V` of `u8`: write 0 or 1.
    pub fn bool_bytes_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, OpError> {
        let name = self.name;
        self.lent(Some(BYTE))?.view_mut().map_err(|e| OpError::from(e).of(name))
    }

    /// Sets every element to zero, as torch's `zero_` does (on CUDA, queued on torch's current
    /// stream): for an output a kernel does not write whole.
    pub fn zero(&mut self) -> Result<(), OpError> {
        // SAFETY: a live tensor reference, of a tensor the operator writes (a written
        // parameter, which no read one overlaps, or a new tensor); torch's own operation.
        let status = unsafe { (self.handle.torch.zero)(self.handle.raw) };
        if status != 0 {
            return Err(OpError::new(std::format!("torch failed to zero the tensor (status {status})")).of(self.name));
        }
        Ok(())
    }
}

impl Torch {
    /// A new contiguous tensor of `shape` and `dtype` on `device` (the CPU or a CUDA device):
    /// an operator's output, returned to torch. On the CPU its bytes are zero (host views may
    /// read them); on CUDA they are not set (kernels write them).
    pub fn empty(
        &'static self,
        shape: &[i64],
        dtype: DLDataType,
        device: DLDevice,
    ) -> Result<TensorMut<'static>, OpError> {
        let code = self
            .torch_dtype(dtype)
            .ok_or_else(|| OpError::new(std::format!("torch has no element type {dtype}")))?;
        let (kind, index) = match device.device_type {
            crate::dlpack::DLDeviceType::CPU => (self.cpu, 0),
            // torch reads a negative index as its current device: an index is asked for.
            crate::dlpack::DLDeviceType::CUDA if device.device_id < 0 => {
                return Err(OpError::new(std::format!("no CUDA device {}", device.device_id)));
            }
            crate::dlpack::DLDeviceType::CUDA => (self.cuda, device.device_id),
            other => return Err(OpError::new(std::format!("torch makes no tensor on {other:?}"))),
        };
        if shape.iter().any(|&e| e < 0) {
            return Err(OpError::new(std::format!("negative extents {shape:?}")));
        }
        let mut strides = Vec::new();
        strides
            .try_reserve_exact(shape.len())
            .map_err(|_| OpError::new("a tensor of too many dimensions"))?;
        strides.resize(shape.len(), 0);
        let mut step = 1i64;
        for d in (0..shape.len()).rev() {
            strides[d] = step;
            step = step.saturating_mul(shape[d].max(1));
        }
        let mut raw = core::ptr::null_mut();
        // SAFETY: `shape.len()` extents and strides, and a place for the new tensor.
        let status = unsafe {
            (self.empty_strided)(
                shape.len() as i64,
                shape.as_ptr(),
                strides.as_ptr(),
                code,
                kind,
                index,
                &mut raw,
            )
        };
        if status != 0 {
            return Err(OpError::new(std::format!(
                "torch could not make a tensor of {shape:?} {dtype} (status {status})"
            )));
        }
        // SAFETY: a new owned reference from torch.
        let mut tensor = TensorMut::new(unsafe { Handle::own(raw, self) }?, "");
        tensor.argument = false;
        if kind == self.cpu {
            // torch's own `zero_`, which host views may then read.
            tensor.zero()?;
        }
        Ok(tensor)
    }
}

/// A tensor on torch's current CUDA stream, lent for the call: what
/// [`Imported`](crate::cuda::Imported) offers through `Deref` (kernel arguments, launches
/// without a host wait), never the import itself.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
#[derive(Debug)]
pub struct CudaTensor<'a> {
    imported: crate::cuda::Imported,
    _call: PhantomData<&'a ()>,
}

#[cfg(feature = "cuda")]
impl core::ops::Deref for CudaTensor<'_> {
    type Target = crate::cuda::Imported;

    fn deref(&self) -> &crate::cuda::Imported {
        &self.imported
    }
}
