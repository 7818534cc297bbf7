//! The producer side: exports for `__dlpack__`, of CPU data and of CUDA device memory.

use super::capsule::capsule;
use super::request::DlpackRequest;
use crate::dlpack::{DLDevice, DLManagedTensor, DLManagedTensorVersioned, IS_COPIED, ManagedTensorAbi};
use crate::export::ExportError;
use crate::extents::Extents;
use crate::managed::{TensorOwner, export_with};
use core::ptr::NonNull;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A tensor exported for a consumer and not yet handed over: [`into_capsule`](Self::into_capsule)
/// wraps it for `__dlpack__`, [`into_versioned`](Self::into_versioned) hands it to a C consumer
/// (the exchange table's entries). Dropped unused, it is released.
#[derive(Debug)]
pub struct DlpackExport(Raw);

#[derive(Debug)]
enum Raw {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

impl DlpackExport {
    /// Takes over a managed tensor made by dlmd's exports.
    ///
    /// # Safety
    ///
    /// `raw` is a valid managed tensor owned by the caller, who hands it over.
    unsafe fn new<M: ManagedTensorAbi>(raw: NonNull<M>) -> Self {
        if M::VERSIONED {
            Self(Raw::Versioned(raw.cast()))
        } else {
            Self(Raw::Legacy(raw.cast()))
        }
    }

    /// Takes over a versioned managed tensor made by another exporter (such as
    /// `dlmd::candle::export`), to hand to a consumer like the ones [`export_cpu`] and
    /// [`export_cuda`] make. Dropped unused, it is released through its deleter.
    ///
    /// # Safety
    ///
    /// `raw` points to a valid versioned managed tensor owned by the caller, who hands it over;
    /// its deleter may be called once, from any thread.
    pub unsafe fn from_versioned(raw: NonNull<DLManagedTensorVersioned>) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { Self::new(raw) }
    }

    /// Whether the tensor is a `DLManagedTensorVersioned` (the consumer asked for version 1 or
    /// later) rather than a legacy `DLManagedTensor`.
    pub fn is_versioned(&self) -> bool {
        matches!(self.0, Raw::Versioned(_))
    }

    /// The tensor in a capsule of its kind (`"dltensor_versioned"` or `"dltensor"`), as
    /// `__dlpack__` returns it.
    #[inline]
    pub fn into_capsule(self, py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
        let this = core::mem::ManuallyDrop::new(self);
        match this.0 {
            // SAFETY: the tensor is ours (no drop runs for `this`) and is handed to the capsule.
            Raw::Versioned(raw) => unsafe { capsule(py, raw.as_ptr()) },
            // SAFETY: as above.
            Raw::Legacy(raw) => unsafe { capsule(py, raw.as_ptr()) },
        }
    }

    /// The versioned tensor, handed over to the caller (who calls its deleter once); a legacy
    /// tensor comes back unchanged.
    pub fn into_versioned(self) -> Result<NonNull<DLManagedTensorVersioned>, Self> {
        match self.0 {
            Raw::Versioned(raw) => {
                core::mem::forget(self);
                Ok(raw)
            }
            Raw::Legacy(_) => Err(self),
        }
    }
}

impl Drop for DlpackExport {
    fn drop(&mut self) {
        match self.0 {
            // SAFETY: the tensor is owned by this value and released once, here.
            Raw::Versioned(raw) => unsafe { DLManagedTensorVersioned::release(raw.as_ptr()) },
            // SAFETY: as above.
            Raw::Legacy(raw) => unsafe { DLManagedTensor::release(raw.as_ptr()) },
        }
    }
}

fn export_error(e: ExportError) -> PyErr {
    PyBufferError::new_err(e.to_string())
}

/// Exports CPU data for `__dlpack__` (or the exchange table): `share()` gives an owner of the data itself (kept alive,
/// and the exporter's data unchanged, until the consumer releases the tensor); `copy()` gives a
/// private copy, used only for `copy=True`.
///
/// Consumers release tensors from any thread, with or without the GIL: an owner that holds
/// Python references (such as the exporting object, to keep it alive) drops them inside
/// [`Python::attach`], or pyo3 queues them until some thread next attaches.
#[inline]
pub fn export_cpu<S, C, E>(
    request: &DlpackRequest,
    extents: E,
    share: impl FnOnce() -> PyResult<S>,
    copy: impl FnOnce() -> PyResult<C>,
) -> PyResult<DlpackExport>
where
    S: TensorOwner,
    C: TensorOwner<Elem = S::Elem>,
    E: Extents,
{
    request.check_cpu()?;
    if request.copy == Some(true) {
        // SAFETY: a `TensorOwner`'s memory is host memory (its contract), exported as such.
        unsafe { export_of(copy()?, extents, request.versioned, IS_COPIED, DLDevice::CPU) }
    } else {
        // SAFETY: as above.
        unsafe { export_of(share()?, extents, request.versioned, 0, DLDevice::CPU) }
    }
}

/// Exports CUDA device memory for `__dlpack__`, following the array API's stream rules: the
/// data is made ready on the consumer's stream with an event (`stream=None` or `1`: the legacy
/// default stream; `2`: the per-thread default stream; `-1`: no synchronisation; another value:
/// that stream's handle; `0` is refused as ambiguous), never with a device-wide synchronisation.
/// `dl_device` must be this device; `copy=True` is refused (this producer does not copy device
/// data). A request from the exchange table ([`DlpackRequest::no_sync`]) orders nothing: its
/// consumer works on the producer's current work stream.
///
/// # Safety
///
/// The owner `share` gives is memory of `stream`'s device (a CUDA device pointer, such as a
/// cudarc allocation's), which consumers' kernels will read and write there: only its maker
/// knows, and a host buffer labelled so would send their kernels to a host address.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub unsafe fn export_cuda<S, E>(
    request: &DlpackRequest,
    extents: E,
    stream: &cudarc::driver::CudaStream,
    share: impl FnOnce() -> PyResult<S>,
) -> PyResult<DlpackExport>
where
    S: TensorOwner,
    E: Extents,
{
    let ordinal = stream.context().ordinal() as i32;
    let device = DLDevice::cuda(ordinal);
    if let Some(wanted) = request.dl_device
        && wanted != device
    {
        return Err(PyBufferError::new_err(format!(
            "the data is on CUDA device {ordinal} and cannot be exported to device ({}, {})",
            wanted.device_type.0, wanted.device_id
        )));
    }
    if request.copy == Some(true) {
        return Err(PyBufferError::new_err(
            "copy=True: this producer does not copy device data",
        ));
    }
    if !request.no_sync {
        crate::cuda::sync_consumer_stream(stream, request.stream).map_err(|e| PyBufferError::new_err(e.to_string()))?;
    }
    // SAFETY: `share`'s owner is memory of `stream`'s device (the caller's promise).
    unsafe { export_of(share()?, extents, request.versioned, 0, device) }
}

/// Exports `owner`, memory on `device`, as a managed tensor with `flags`: a versioned one for
/// consumers that read them, a legacy one for the others.
///
/// # Safety
///
/// As [`export_with`]'s: `owner`'s memory is memory of `device`.
#[inline(always)]
unsafe fn export_of<O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
    versioned: bool,
    flags: u64,
    device: DLDevice,
) -> PyResult<DlpackExport> {
    /// One kind of managed tensor.
    ///
    /// # Safety
    ///
    /// As [`export_of`]'s.
    #[inline(always)]
    unsafe fn of<M: ManagedTensorAbi>(
        owner: impl TensorOwner,
        extents: impl Extents,
        flags: u64,
        device: DLDevice,
    ) -> PyResult<DlpackExport> {
        // SAFETY: `owner`'s memory is memory of `device` (the caller's promise).
        let raw = unsafe { export_with::<M, _, _>(owner, extents, flags, device) }.map_err(export_error)?;
        let raw = NonNull::new(raw).ok_or_else(|| PyBufferError::new_err("the export made no tensor"))?;
        // SAFETY: `raw` was just made by dlmd and is handed over.
        Ok(unsafe { DlpackExport::new(raw) })
    }
    if versioned {
        // SAFETY: forwarded from the caller.
        unsafe { of::<DLManagedTensorVersioned>(owner, extents, flags, device) }
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { of::<DLManagedTensor>(owner, extents, flags, device) }
    }
}
