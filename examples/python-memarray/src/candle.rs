//! candle beside the Python frameworks (feature `candle`; `candle-cuda` for GPUs): a numpy,
//! torch or cupy tensor goes into candle through DLPack, a candle operation runs on it, and the
//! result goes back out as a `CandleTensor` that any DLPack consumer reads without a copy.
//!
//! Into candle, a tensor of another producer is copied once (candle owns its memory: a `Vec` on
//! the CPU, an allocation it frees itself on a GPU), on the device for CUDA; a `CandleTensor`
//! comes back as the very candle tensor. Out of candle, nothing is copied: the consumer reads
//! candle's storage, read-only.

use crate::import_error;
use candle_core::{D, Device, Tensor};
use core::ptr::NonNull;
use dlmd::dlpack::{DLDevice, DLDeviceType};
use dlmd::python::{DlpackExport, DlpackExporter, DlpackRequest, from_dlpack as import};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

/// A candle tensor that Python frameworks read through DLPack (`torch.from_dlpack(t)`,
/// `numpy.from_dlpack(t)`), read-only and without a copy.
#[pyclass(frozen, module = "dlmd_memarray")]
pub struct CandleTensor {
    tensor: Tensor,
}

fn candle_error(e: impl std::fmt::Display) -> PyErr {
    PyBufferError::new_err(e.to_string())
}

/// The DLPack device of a candle device.
fn dl_device(device: &Device) -> DLDevice {
    match device.location() {
        candle_core::DeviceLocation::Cuda { gpu_id } => DLDevice::cuda(gpu_id as i32),
        _ => DLDevice::CPU,
    }
}

#[pymethods]
impl CandleTensor {
    /// The tensor's shape.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.tensor.dims().to_vec()
    }

    /// candle's dtype, as candle names it (`"f32"`).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.tensor.dtype().as_str()
    }

    /// candle's id of the tensor: equal for the same candle tensor.
    #[getter]
    fn tensor_id(&self) -> String {
        format!("{:?}", self.tensor.id())
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        let d = dl_device(self.tensor.device());
        (d.device_type.0, d.device_id)
    }
}

impl DlpackExporter for CandleTensor {
    fn dlpack(slf: &Bound<'_, Self>, request: &DlpackRequest) -> PyResult<DlpackExport> {
        let tensor = &slf.get().tensor;
        if !request.versioned {
            return Err(PyBufferError::new_err(
                "a candle tensor is exported read-only, which only DLPack 1.0's versioned tensor can say; pass max_version=(1, 0)",
            ));
        }
        if request.copy == Some(true) {
            return Err(PyBufferError::new_err(
                "a candle tensor is exported without a copy; copy=True is refused",
            ));
        }
        let device = dl_device(tensor.device());
        if let Some(wanted) = request.dl_device
            && wanted != device
        {
            return Err(PyBufferError::new_err(format!(
                "the candle tensor is on ({}, {}), not on the device asked for",
                device.device_type.0, device.device_id
            )));
        }
        // candle's stream has the work that made the tensor: the consumer's stream waits for it
        // (an event, as dlmd's own CUDA exports order it; stream -1 asks for nothing, and a
        // consumer on candle's own stream, such as `candle_import`, needs nothing either).
        #[cfg(feature = "candle-cuda")]
        if let Device::Cuda(cuda) = tensor.device() {
            let stream = cuda.cuda_stream();
            if !request.no_sync && request.stream != Some(array_api_stream(&stream)) {
                dlmd::cuda::sync_consumer_stream(&stream, request.stream).map_err(candle_error)?;
            }
        }
        let raw = dlmd::candle::export(tensor).map_err(candle_error)?;
        let raw = NonNull::new(raw).ok_or_else(|| PyBufferError::new_err("the export made no tensor"))?;
        // SAFETY: `raw` was just made by dlmd's candle export and is handed over; its deleter may
        // run on any thread.
        Ok(unsafe { DlpackExport::from_versioned(raw) })
    }
}

/// A stream as the array API's `stream` argument names it: its handle, or 1 for the legacy
/// default stream (NULL) and for the per-thread default stream (cudarc's default, which torch
/// refuses as `2`): work queued on the legacy default stream is ordered before the per-thread
/// one's later work, which synchronises with it.
#[cfg(feature = "candle-cuda")]
fn array_api_stream(stream: &cudarc::driver::CudaStream) -> isize {
    let handle = stream.cu_stream() as isize;
    if handle == 0 || handle == 2 { 1 } else { handle }
}

/// candle's device for DLPack device `(device_type, id)`: the CPU, or (feature `candle-cuda`)
/// one `CudaDevice` per GPU, kept for the process so that candle's operations may combine
/// tensors imported at different times.
fn candle_device(device_type: i32, id: i32) -> PyResult<Device> {
    match DLDeviceType(device_type) {
        DLDeviceType::CPU | DLDeviceType::CUDA_HOST => Ok(Device::Cpu),
        #[cfg(feature = "candle-cuda")]
        DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED => {
            use std::sync::Mutex;
            static DEVICES: Mutex<Vec<Option<Device>>> = Mutex::new(Vec::new());
            let ordinal =
                usize::try_from(id).map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("device id {id}")))?;
            let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
            if devices.len() <= ordinal {
                devices.resize(ordinal + 1, None);
            }
            if let Some(device) = &devices[ordinal] {
                return Ok(device.clone());
            }
            let device = Device::new_cuda(ordinal).map_err(candle_error)?;
            devices[ordinal] = Some(device.clone());
            Ok(device)
        }
        other => Err(PyBufferError::new_err(format!(
            "candle here takes CPU memory{}, not DLPack device type {} (id {id})",
            if cfg!(feature = "candle-cuda") {
                " and CUDA memory"
            } else {
                ""
            },
            other.0
        ))),
    }
}

/// `x` (any DLPack producer) as a candle tensor: the very tensor for a `CandleTensor`, one copy
/// otherwise (on the device for CUDA, on candle's stream, which the producer is asked to order its
/// work before).
fn to_candle(x: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = x.cast::<CandleTensor>() {
        return Ok(t.get().tensor.clone());
    }
    dlpack_to_candle(x)
}

/// `x` as a candle tensor through DLPack, whatever `x` is (a `CandleTensor` too, through its
/// `__dlpack__`).
fn dlpack_to_candle(x: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let (device_type, id): (i32, i32) = x.call_method0("__dlpack_device__")?.extract()?;
    let device = candle_device(device_type, id)?;
    let managed = match &device {
        #[cfg(feature = "candle-cuda")]
        Device::Cuda(cuda) => dlmd::python::from_dlpack_on_stream(x, Some(array_api_stream(&cuda.cuda_stream())))?,
        _ => import(x)?,
    };
    dlmd::candle::import(managed, &device).map_err(|e| match e {
        dlmd::candle::CandleError::Import(e) => import_error(e),
        e => candle_error(e),
    })
}

/// `x` (any DLPack producer: numpy, torch, cupy, a `CandleTensor`) as a `CandleTensor`: a
/// `CandleTensor` comes back as the same candle tensor, anything else as one copy.
#[pyfunction]
#[pyo3(signature = (x, /))]
pub fn candle_import(x: &Bound<'_, PyAny>) -> PyResult<CandleTensor> {
    Ok(CandleTensor { tensor: to_candle(x)? })
}

/// The softmax of `x` over its last dimension, computed by candle (on `x`'s device): `x` goes in
/// through DLPack, the result comes out as a `CandleTensor`.
#[pyfunction]
#[pyo3(signature = (x, /))]
pub fn candle_softmax(x: &Bound<'_, PyAny>) -> PyResult<CandleTensor> {
    let x = to_candle(x)?;
    let softmax = (|| {
        let max = x.max_keepdim(D::Minus1)?;
        let e = x.broadcast_sub(&max)?.exp()?;
        e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
    })()
    .map_err(candle_error)?;
    Ok(CandleTensor { tensor: softmax })
}

/// Imports every object of `xs` into candle and drops the tensors, returning how many: the
/// per-tensor cost of `candle_import` without a Python call each, for benchmarks. `how` is
/// `"candle"` (as `candle_import`: a `CandleTensor` taken as it is) or `"dlpack"` (always through
/// DLPack: `__dlpack_device__`, `__dlpack__`, the capsule, dlmd's import).
#[pyfunction]
#[pyo3(signature = (xs, how = "candle", /))]
pub fn candle_import_batch(xs: &Bound<'_, pyo3::types::PyList>, how: &str) -> PyResult<usize> {
    let import = match how {
        "candle" => to_candle,
        "dlpack" => dlpack_to_candle,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "how must be \"candle\" or \"dlpack\", not {other:?}"
            )));
        }
    };
    for x in xs.iter() {
        std::hint::black_box(import(&x)?);
    }
    Ok(xs.len())
}
