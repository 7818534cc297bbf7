//! The consumer side: [`from_dlpack`] imports any object with `__dlpack__`.

use super::capsule::take_capsule;
use super::request::device_pair;
use crate::dlpack::{DLDevice, DLDeviceType};
use crate::managed::ManagedTensor;
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, ffi};

/// Imports any object with `__dlpack__` (a numpy array, a torch tensor, a dlmd export…) as an
/// owning [`ManagedTensor`], without copying.
///
/// The object's `__dlpack_device__` must agree with the tensor it exports. The tensor's data
/// stays valid until the returned value is dropped. The object and any other consumer still
/// reach the data meanwhile (two calls on one array give two tensors over one buffer), so the
/// tensor's views are [aliased](crate::view::Aliased): elements by value, no references.
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
    from_dlpack_on_stream(obj, None)
}

/// As [`from_dlpack`], asking a CUDA producer to make the data ready on `stream` (a DLPack
/// stream value: `1` for the legacy default stream, `2` for the per-thread one, or a handle).
/// `None` asks nothing of the producer, which then makes it ready on the legacy default stream.
pub fn from_dlpack_on_stream(obj: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<ManagedTensor> {
    let py = obj.py();
    if obj.is_exact_instance_of::<PyCapsule>() {
        return Err(PyTypeError::new_err(
            "from_dlpack takes an object with __dlpack__, not a bare capsule (its lifetime and device are unknown)",
        ));
    }
    let names = ConsumerArgs::get(py)?;
    let device = match call_method(obj, names.dlpack_device.bind(py), &[], None) {
        Ok(device) => device_of(&device)?,
        Err(e) => return Err(missing_dlpack(obj, names, e)),
    };
    let stream = match stream {
        Some(stream) if device.device_type != DLDeviceType::CPU => Some(stream.into_pyobject(py)?),
        _ => None,
    };
    let exported = match &stream {
        Some(stream) => call_method(
            obj,
            names.dlpack.bind(py),
            &[names.max_version.bind(py), stream.as_any()],
            Some(names.max_version_stream_kw.bind(py)),
        ),
        None => call_method(
            obj,
            names.dlpack.bind(py),
            &[names.max_version.bind(py)],
            Some(names.max_version_kw.bind(py)),
        ),
    };
    let exported = match exported {
        Ok(capsule) => capsule,
        // Producers from before DLPack 1.0 do not know `max_version`.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => call_method(obj, names.dlpack.bind(py), &[], None)?,
        Err(e) => return Err(missing_dlpack(obj, names, e)),
    };
    let capsule = exported.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__dlpack__ returned {}, not a DLPack capsule",
            exported.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    // SAFETY: the object is a DLPack producer; its capsule follows the DLPack contract.
    let tensor = unsafe { take_capsule(capsule) }?;
    let actual = tensor.dl_tensor().device;
    if actual != device {
        return Err(PyBufferError::new_err(format!(
            "__dlpack_device__ said ({}, {}) but the tensor is on ({}, {})",
            device.device_type.0, device.device_id, actual.device_type.0, actual.device_id
        )));
    }
    Ok(tensor)
}

/// The names and arguments the consumer passes on every import, made once per interpreter.
struct ConsumerArgs {
    dlpack: Py<PyString>,
    dlpack_device: Py<PyString>,
    /// `(1, 3)`.
    max_version: Py<PyTuple>,
    /// `("max_version",)`.
    max_version_kw: Py<PyTuple>,
    /// `("max_version", "stream")`.
    max_version_stream_kw: Py<PyTuple>,
}

impl ConsumerArgs {
    fn get(py: Python<'_>) -> PyResult<&Self> {
        static ARGS: PyOnceLock<ConsumerArgs> = PyOnceLock::new();
        ARGS.get_or_try_init(py, || {
            Ok(Self {
                dlpack: PyString::intern(py, "__dlpack__").unbind(),
                dlpack_device: PyString::intern(py, "__dlpack_device__").unbind(),
                max_version: PyTuple::new(py, [1u32, 3u32])?.unbind(),
                max_version_kw: PyTuple::new(py, [PyString::intern(py, "max_version")])?.unbind(),
                max_version_stream_kw: PyTuple::new(
                    py,
                    [PyString::intern(py, "max_version"), PyString::intern(py, "stream")],
                )?
                .unbind(),
            })
        })
    }
}

/// `error`, from calling a DLPack method of `obj`, or a `TypeError` saying that `obj` is no
/// DLPack producer at all.
fn missing_dlpack(obj: &Bound<'_, PyAny>, names: &ConsumerArgs, error: PyErr) -> PyErr {
    let py = obj.py();
    if error.is_instance_of::<PyAttributeError>(py) && !obj.hasattr(names.dlpack.bind(py)).unwrap_or(false) {
        let name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return PyTypeError::new_err(format!("{name} has no __dlpack__ method"));
    }
    error
}

/// The `(device_type, device_id)` a `__dlpack_device__` returned.
fn device_of(value: &Bound<'_, PyAny>) -> PyResult<DLDevice> {
    device_pair(value)
        .ok_or_else(|| PyTypeError::new_err("__dlpack_device__ must return a tuple (device_type, device_id)"))
}

/// Calls `obj.name(*args[..n], **dict(zip(kwnames, args[n..])))`, where `n` is `args.len()`
/// less the keyword names, without making a bound method, an argument tuple or a keyword
/// dictionary.
#[cfg(not(windows))]
fn call_method<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    args: &[&Bound<'py, PyAny>],
    kwnames: Option<&Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyAny>> {
    // `PyObject_VectorcallMethod`: part of the stable ABI from Python 3.12, and exported with
    // the same signature by every CPython since 3.9, so abi3 extensions for 3.10 and 3.11 find
    // it too. (Windows' `python3.dll` exports only the stable ABI; there the call goes through
    // `call_method_dict`.)
    unsafe extern "C" {
        fn PyObject_VectorcallMethod(
            name: *mut ffi::PyObject,
            args: *const *mut ffi::PyObject,
            nargsf: usize,
            kwnames: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject;
    }
    /// The callee may use the slot before the first argument.
    const ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);
    const MAX_ARGS: usize = 4;
    let kw = kwnames.map_or(0, |k| k.len());
    if args.len() > MAX_ARGS || kw > args.len() {
        return call_method_dict(obj, name, args, kwnames);
    }
    // Slot 0 is left free for the callee, slot 1 is `self`.
    let mut stack = [core::ptr::null_mut(); MAX_ARGS + 2];
    stack[1] = obj.as_ptr();
    for (slot, arg) in stack[2..].iter_mut().zip(args) {
        *slot = arg.as_ptr();
    }
    let positional = 1 + args.len() - kw;
    // SAFETY: `stack[1..]` holds `self` and the arguments, alive for the call (borrowed from
    // the caller), with the GIL held; slot 0 is ours for the callee to use, as the offset flag
    // says; `kwnames` is a tuple of strings naming the last `kw` arguments.
    let result = unsafe {
        PyObject_VectorcallMethod(
            name.as_ptr(),
            stack.as_ptr().wrapping_add(1),
            positional | ARGUMENTS_OFFSET,
            kwnames.map_or(core::ptr::null_mut(), |k| k.as_ptr()),
        )
    };
    // SAFETY: a new reference, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(obj.py(), result) }
}

#[cfg(windows)]
use call_method_dict as call_method;

/// [`call_method`] through a bound method and a keyword dictionary.
#[cfg_attr(not(windows), allow(dead_code))]
fn call_method_dict<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    args: &[&Bound<'py, PyAny>],
    kwnames: Option<&Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let kw = kwnames.map_or(0, |k| k.len()).min(args.len());
    let (positional, keywords) = args.split_at(args.len() - kw);
    let kwargs = pyo3::types::PyDict::new(py);
    if let Some(kwnames) = kwnames {
        for (key, value) in kwnames.iter().zip(keywords) {
            kwargs.set_item(key, value)?;
        }
    }
    obj.getattr(name)?.call(PyTuple::new(py, positional)?, Some(&kwargs))
}

/// `(device_type, device_id)` of CPU data, for `__dlpack_device__`.
pub fn cpu_device(py: Python<'_>) -> PyResult<Py<PyAny>> {
    (DLDeviceType::CPU.0, 0i32).into_py_any(py)
}
