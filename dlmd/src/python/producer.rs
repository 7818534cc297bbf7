//! The producer side: exports for `__dlpack__`, of CPU data and of CUDA device memory.

use super::capsule::capsule;
use super::request::DlpackRequest;
use crate::dlpack::{DLDevice, DLManagedTensor, DLManagedTensorVersioned, IS_COPIED, ManagedTensorAbi};
use crate::export::ExportError;
use crate::extents::Extents;
use crate::managed::{TensorOwner, export_with};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

fn export_error(e: ExportError) -> PyErr {
    PyBufferError::new_err(e.to_string())
}

/// Exports CPU data for `__dlpack__`: `share()` gives an owner of the data itself (kept alive,
/// and the exporter's data unchanged, until the consumer releases the tensor); `copy()` gives a
/// private copy, used only for `copy=True`.
///
/// Consumers release tensors from any thread, with or without the GIL: an owner that holds
/// Python references (such as the exporting object, to keep it alive) drops them inside
/// [`Python::attach`], or pyo3 queues them until some thread next attaches.
pub fn export_cpu<'py, S, C, E>(
    py: Python<'py>,
    request: &DlpackRequest,
    extents: E,
    share: impl FnOnce() -> PyResult<S>,
    copy: impl FnOnce() -> PyResult<C>,
) -> PyResult<Bound<'py, PyCapsule>>
where
    S: TensorOwner,
    C: TensorOwner<Elem = S::Elem>,
    E: Extents,
{
    request.check_cpu()?;
    if request.copy == Some(true) {
        capsule_of(py, copy()?, extents, request.versioned, IS_COPIED, DLDevice::CPU)
    } else {
        capsule_of(py, share()?, extents, request.versioned, 0, DLDevice::CPU)
    }
}

/// Exports CUDA device memory for `__dlpack__`, following the array API's stream rules: the
/// data is made ready on the consumer's stream with an event (`stream=None` or `1`: the legacy
/// default stream; `2`: the per-thread default stream; `-1`: no synchronisation; another value:
/// that stream's handle; `0` is refused as ambiguous), never with a device-wide synchronisation.
/// `dl_device` must be this device; `copy=True` is refused (this producer does not copy device
/// data).
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub fn export_cuda<'py, S, E>(
    py: Python<'py>,
    request: &DlpackRequest,
    extents: E,
    stream: &cudarc::driver::CudaStream,
    share: impl FnOnce() -> PyResult<S>,
) -> PyResult<Bound<'py, PyCapsule>>
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
    crate::cuda::sync_consumer_stream(stream, request.stream).map_err(|e| PyBufferError::new_err(e.to_string()))?;
    capsule_of(py, share()?, extents, request.versioned, 0, device)
}

/// Exports `owner`, memory on `device`, as a managed tensor with `flags` in a capsule: a
/// versioned one for consumers that read them, a legacy one for the others.
fn capsule_of<'py, O: TensorOwner, E: Extents>(
    py: Python<'py>,
    owner: O,
    extents: E,
    versioned: bool,
    flags: u64,
    device: DLDevice,
) -> PyResult<Bound<'py, PyCapsule>> {
    /// One kind of managed tensor, in its capsule.
    fn of<'py, M: ManagedTensorAbi>(
        py: Python<'py>,
        owner: impl TensorOwner,
        extents: impl Extents,
        flags: u64,
        device: DLDevice,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let raw = export_with::<M, _, _>(owner, extents, flags, device).map_err(export_error)?;
        // SAFETY: `raw` was just made by dlmd and is handed to the capsule.
        unsafe { capsule(py, raw) }
    }
    if versioned {
        of::<DLManagedTensorVersioned>(py, owner, extents, flags, device)
    } else {
        of::<DLManagedTensor>(py, owner, extents, flags, device)
    }
}
