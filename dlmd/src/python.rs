//! DLPack for Python through pyo3: a producer helper for `__dlpack__` and a consumer,
//! [`from_dlpack`], following the Python array API standard.
//!
//! Producer: a `#[pyclass]` implements [`DlpackExporter`] and gets its `__dlpack__` from
//! [`add_dlpack_method`] (or forwards the arguments of its own `#[pymethods]` `__dlpack__` to
//! [`DlpackRequest::parse`]), and hands its data to [`export_cpu`], which picks the capsule kind (`"dltensor"` for consumers
//! that ask for no version or version 0, `"dltensor_versioned"` 1.3 for version 1), copies only
//! for `copy=True` (setting `IS_COPIED`), refuses a copy it would need with `copy=False`, and
//! refuses devices and streams CPU data cannot honour with `BufferError`.
//!
//! The capsule's destructor calls the tensor's deleter only while no consumer took the tensor
//! (renamed the capsule `used_…`), keeps any exception in flight, and frees unconsumed exports
//! while the interpreter shuts down too.
//!
//! Consumer: [`from_dlpack`] asks `__dlpack_device__`, calls
//! `__dlpack__(max_version=(1, 3))` (again without arguments on `TypeError`, for producers that
//! predate it), checks the capsule's name and version, renames it `used_…` and returns the
//! owning [`ManagedTensor`], whose views check everything else.

use crate::dlpack::{DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, IS_COPIED, READ_ONLY};
use crate::extents::Extents;
use crate::managed::{
    ExportError, ManagedError, ManagedTensor, Release, TensorOwner, export_legacy_on, export_versioned_on,
};
use core::ffi::CStr;
use core::ptr::NonNull;
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyCapsule, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, PyClass, ffi};
use std::sync::OnceLock;

/// Name of an unconsumed versioned capsule.
pub const VERSIONED_CAPSULE: &CStr = c"dltensor_versioned";
/// Name of an unconsumed legacy capsule.
pub const LEGACY_CAPSULE: &CStr = c"dltensor";
/// Name of a versioned capsule a consumer took.
pub const USED_VERSIONED_CAPSULE: &CStr = c"used_dltensor_versioned";
/// Name of a legacy capsule a consumer took.
pub const USED_LEGACY_CAPSULE: &CStr = c"used_dltensor";

/// The arguments of `__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`,
/// checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlpackRequest {
    /// The stream, as the consumer passed it (`None` when not given).
    pub stream: Option<isize>,
    /// Whether the consumer reads versioned capsules (`max_version` with major ≥ 1).
    pub versioned: bool,
    /// The device the consumer wants the data on, if it said.
    pub dl_device: Option<DLDevice>,
    /// `Some(true)`: copy; `Some(false)`: never copy; `None`: copy only if needed.
    pub copy: Option<bool>,
}

impl DlpackRequest {
    /// Reads the keyword arguments of `__dlpack__`.
    pub fn parse(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Self> {
        let stream = match stream {
            // `bool` is an `int` to Python, but `stream=True` names no stream.
            Some(s) if s.is_instance_of::<PyBool>() => {
                return Err(PyTypeError::new_err("stream must be None or an integer, not a bool"));
            }
            Some(s) if !s.is_none() => Some(
                s.extract::<isize>()
                    .map_err(|_| PyTypeError::new_err("stream must be None or an integer"))?,
            ),
            _ => None,
        };
        let versioned = match max_version {
            Some(v) if !v.is_none() => match MAX_VERSIONS.find(v.as_ptr()) {
                Some(versioned) => versioned,
                None => max_version_versioned(v)?,
            },
            _ => false,
        };
        let dl_device =
            match dl_device {
                Some(d) if !d.is_none() => Some(device_pair(d).ok_or_else(|| {
                    PyTypeError::new_err("dl_device must be None or a tuple (device_type, device_id)")
                })?),
                _ => None,
            };
        Ok(Self {
            stream,
            versioned,
            dl_device,
            copy,
        })
    }

    /// Checks the request against data on the CPU: only `stream=None`, and no other device
    /// (a copy to another device is not something CPU code can make).
    pub fn check_cpu(&self) -> PyResult<()> {
        if let Some(stream) = self.stream {
            return Err(PyBufferError::new_err(format!(
                "stream must be None for CPU data, got {stream}"
            )));
        }
        if let Some(device) = self.dl_device {
            // The CPU is device 0; any other ordinal names no device.
            if device.device_type != DLDeviceType::CPU || device.device_id != 0 {
                let how = if self.copy == Some(false) {
                    "without a copy (copy=False)"
                } else {
                    "by this producer"
                };
                return Err(PyBufferError::new_err(format!(
                    "the data is on the CPU and cannot be exported to device ({}, {}) {how}",
                    device.device_type.0, device.device_id
                )));
            }
        }
        Ok(())
    }
}

/// Whether a `max_version` asks for versioned tensors (major version 1 or more).
fn max_version_versioned(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    match int_pair(v) {
        Some((major, minor)) if u32::try_from(major).is_ok() && u32::try_from(minor).is_ok() => {
            let versioned = major >= 1;
            // SAFETY: `v` is a live object; the checks read only type pointers.
            let constant = unsafe {
                ffi::PyTuple_CheckExact(v.as_ptr()) != 0
                    && (0..2).all(|i| ffi::PyLong_CheckExact(ffi::PyTuple_GetItem(v.as_ptr(), i)) != 0)
            };
            if constant {
                MAX_VERSIONS.remember(v, versioned);
            }
            Ok(versioned)
        }
        _ => Err(PyTypeError::new_err(
            "max_version must be None or a tuple (major, minor)",
        )),
    }
}

/// A `#[pyclass]` that exports its data through DLPack: [`add_dlpack_method`] gives the class a
/// `__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)` that reads its
/// keyword arguments without pyo3's general argument handling (names are matched by identity
/// first, as CPython interns them) and calls [`DlpackExporter::dlpack`] with the checked
/// request. Exports are the hottest path of an array type: with this method numpy's
/// `from_dlpack` takes a MemArray (`examples/python-memarray`) as fast as its own arrays.
///
/// `__dlpack_device__` stays an ordinary `#[pymethods]` method.
///
/// ```ignore
/// impl DlpackExporter for MyArray {
///     fn dlpack<'py>(slf: &Bound<'py, Self>, request: &DlpackRequest) -> PyResult<Bound<'py, PyCapsule>> {
///         let this = slf.borrow();
///         export_cpu(slf.py(), request, Dims::new([this.len()]), || /* an owner */, || /* a copy */)
///     }
/// }
///
/// #[pymodule]
/// fn my_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     m.add_class::<MyArray>()?;
///     add_dlpack_method::<MyArray>(m.py())
/// }
/// ```
pub trait DlpackExporter: PyClass {
    /// The body of `__dlpack__`: exports `slf` for `request` (see [`export_cpu`]).
    ///
    /// It runs with the GIL held but outside pyo3's call bookkeeping: a `Py` dropped here is
    /// released by pyo3 at its next call rather than at once (a `Bound` is released at once).
    fn dlpack<'py>(slf: &Bound<'py, Self>, request: &DlpackRequest) -> PyResult<Bound<'py, PyCapsule>>;
}

/// Adds the `__dlpack__` method of [`DlpackExporter`] to the Python class of `T` (replacing
/// any `__dlpack__` defined before). Call it once the class exists, after
/// `PyModule::add_class`.
pub fn add_dlpack_method<T: DlpackExporter>(py: Python<'_>) -> PyResult<()> {
    // Python keeps a pointer to the definition for good: one small leak per call.
    let def: &'static mut ffi::PyMethodDef = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"__dlpack__".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: dlpack_method::<T>,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: DLPACK_DOC.as_ptr(),
    }));
    let ty = py.get_type::<T>();
    // SAFETY: `ty` is a live type object; `def` lives for good; the descriptor made is a new
    // reference, handed to `Bound` (or NULL with an exception set).
    let descriptor = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(ty.as_ptr().cast(), def)) }?;
    ty.setattr("__dlpack__", descriptor)
}

/// The docstring of `__dlpack__`, with the signature `inspect` reads.
const DLPACK_DOC: &CStr = c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)
--

Exports the data as a DLPack capsule (the Python array API's __dlpack__).";

/// `__dlpack__`'s keywords, in the order of [`DlpackRequest::parse`].
const DLPACK_KEYWORDS: [&str; 4] = ["stream", "max_version", "dl_device", "copy"];

/// [`DLPACK_KEYWORDS`], interned.
fn dlpack_keywords(py: Python<'_>) -> &[Py<PyString>; 4] {
    static NAMES: PyOnceLock<[Py<PyString>; 4]> = PyOnceLock::new();
    NAMES.get_or_init(py, || DLPACK_KEYWORDS.map(|name| PyString::intern(py, name).unbind()))
}

/// The slot in [`dlpack_keywords`] of a keyword name that is not one of those objects; the
/// name is remembered in [`KEYWORD_ALIASES`].
fn keyword_slot(name: Borrowed<'_, '_, PyAny>) -> PyResult<usize> {
    let unexpected = || PyTypeError::new_err(format!("__dlpack__() got an unexpected keyword argument {}", *name));
    let string = name.cast::<PyString>().map_err(|_| unexpected())?;
    let text = string.to_str()?;
    let slot = DLPACK_KEYWORDS.iter().position(|k| *k == text).ok_or_else(unexpected)?;
    KEYWORD_ALIASES.remember(&string, slot);
    Ok(slot)
}

/// The slot in [`dlpack_keywords`] of each name of a call's keyword names, and how many there
/// are (no more than four: the names of one call are distinct).
fn keyword_slots(kwnames: Borrowed<'_, '_, PyAny>) -> PyResult<([u8; 4], u8)> {
    let py = kwnames.py();
    let kwnames = kwnames
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err("keyword names must be a tuple"))?;
    let keywords = dlpack_keywords(py);
    let mut slots = [0u8; 4];
    for (i, name) in kwnames.iter_borrowed().enumerate() {
        let slot = match keywords.iter().position(|k| k.as_ptr() == name.as_ptr()) {
            Some(slot) => slot,
            None => match KEYWORD_ALIASES.find(name.as_ptr()) {
                Some(slot) => slot,
                // Made at run time and not seen before: compare the text.
                None => keyword_slot(name)?,
            },
        };
        match slots.get_mut(i) {
            Some(s) => *s = slot as u8,
            None => return Err(PyTypeError::new_err("__dlpack__() takes at most 4 keyword arguments")),
        }
    }
    Ok((slots, kwnames.len() as u8))
}

/// The keyword-name tuples of calls seen before, with their slots ([`keyword_slots`]): a call
/// site passes the same tuple every time (a constant of the calling code, or a C consumer's
/// static tuple), so most calls find their names here without looking at them.
static KWNAMES: Remembered<([u8; 4], u8), 16> = Remembered::new();

/// Keyword-name objects, other than the interned names, that spelled a keyword of `__dlpack__`
/// before, with the keyword's slot: consumers written in C make their own names (numpy's
/// `from_dlpack` passes the same non-interned strings on every call), and comparing their
/// text costs more than the rest of an export.
static KEYWORD_ALIASES: Remembered<usize, 16> = Remembered::new();

/// `max_version` tuples seen before, with whether they ask for versioned tensors: consumers
/// pass the same constant tuple on every call.
static MAX_VERSIONS: Remembered<bool, 8> = Remembered::new();

/// Objects seen before, recognised by address, each with a value worked out from it once.
///
/// Every object remembered keeps a reference for good, so its address is never another
/// object's, and only objects whose value cannot change are remembered (strings, tuples of
/// `int`s, tuples of strings): the same address means the same value. First come, first kept:
/// at most `N`.
struct Remembered<T, const N: usize>([OnceLock<(usize, T)>; N]);

impl<T: Copy, const N: usize> Remembered<T, N> {
    const fn new() -> Self {
        Self([const { OnceLock::new() }; N])
    }

    /// The value remembered for the object at `obj`.
    fn find(&self, obj: *mut ffi::PyObject) -> Option<T> {
        for entry in &self.0 {
            match entry.get() {
                Some(&(address, value)) if address == obj as usize => return Some(value),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// Remembers `value` for `obj`, an immutable object, if there is room.
    fn remember(&self, obj: &Bound<'_, PyAny>, value: T) {
        for entry in &self.0 {
            if entry.get().is_none() && entry.set((obj.as_ptr() as usize, value)).is_ok() {
                // The reference that keeps the address this object's, never released.
                core::mem::forget(obj.clone());
                return;
            }
        }
    }
}

/// `__dlpack__` of a [`DlpackExporter`], in CPython's fast calling convention.
///
/// # Safety
///
/// Called by Python, with the GIL held, as a method of `T`'s class: `slf` is the instance,
/// `args` holds `nargsf` positional arguments (with the offset flag maybe set) followed by one
/// per name in `kwnames` (a tuple of strings, or NULL).
unsafe extern "C" fn dlpack_method<T: DlpackExporter>(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: Python calls methods with the GIL held; the token does not outlive this call.
    let py = unsafe { Python::assume_attached() };
    let call = || -> PyResult<Bound<'_, PyCapsule>> {
        // SAFETY: `slf` is a live object, borrowed for this call, of class `T`: the method
        // descriptor checks the type of `self` before it calls this function.
        let slf = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<T>() };
        let positional = (nargsf as usize) & !(1usize << (usize::BITS - 1));
        if positional != 0 {
            return Err(PyTypeError::new_err(
                "__dlpack__() takes only keyword arguments (stream, max_version, dl_device, copy)",
            ));
        }
        // Borrowed values of the keywords, in the order of `dlpack_keywords`; NULL: not given.
        let mut values = [core::ptr::null_mut(); 4];
        if !kwnames.is_null() {
            let (slots, given) = match KWNAMES.find(kwnames) {
                Some(known) => known,
                None => {
                    // SAFETY: `kwnames` is a live tuple of strings (the caller's).
                    let kwnames = unsafe { Borrowed::from_ptr(py, kwnames) };
                    let known = keyword_slots(kwnames)?;
                    KWNAMES.remember(&kwnames, known);
                    known
                }
            };
            for (i, &slot) in slots[..given as usize].iter().enumerate() {
                // SAFETY: `args` holds one value per keyword name after the positional ones,
                // alive for this call (the caller's).
                values[slot as usize] = unsafe { *args.add(positional + i) };
            }
        }
        // SAFETY: each value is NULL or a live object borrowed for this call.
        let [stream, max_version, dl_device, copy] = values.map(|v| unsafe { Borrowed::from_ptr_or_opt(py, v) });
        let copy = match copy {
            Some(c) if !c.is_none() => Some(
                c.extract::<bool>()
                    .map_err(|_| PyTypeError::new_err("copy must be None or a bool"))?,
            ),
            _ => None,
        };
        let request = DlpackRequest::parse(stream.as_deref(), max_version.as_deref(), dl_device.as_deref(), copy)?;
        T::dlpack(&slf, &request)
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(Ok(capsule)) => capsule.into_ptr(),
        Ok(Err(e)) => {
            e.restore(py);
            core::ptr::null_mut()
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic with no message".into());
            pyo3::panic::PanicException::new_err(format!("__dlpack__ panicked: {message}")).restore(py);
            core::ptr::null_mut()
        }
    }
}

/// A device given as a tuple `(device_type, device_id)` of two `i32`s.
fn device_pair(value: &Bound<'_, PyAny>) -> Option<DLDevice> {
    let (device_type, device_id) = int_pair(value)?;
    Some(DLDevice {
        device_type: DLDeviceType(i32::try_from(device_type).ok()?),
        device_id: i32::try_from(device_id).ok()?,
    })
}

/// The two integers of a tuple `(a, b)`, read through the C API (this runs on every exchange);
/// `None` for anything else.
fn int_pair(value: &Bound<'_, PyAny>) -> Option<(i64, i64)> {
    let ptr = value.as_ptr();
    // SAFETY: `ptr` is a live object; the exact check reads only its type pointer.
    if unsafe { ffi::PyTuple_CheckExact(ptr) } == 0 {
        value.cast::<PyTuple>().ok()?;
    }
    // SAFETY: `ptr` is a live tuple; its size and its items, borrowed while it lives, are read
    // with the GIL held. `PyLong_AsLongLong` takes any integer (through `__index__`) and sets
    // an exception for the rest, cleared here.
    unsafe {
        if ffi::PyTuple_Size(ptr) != 2 {
            return None;
        }
        let mut pair = [0i64; 2];
        for (i, part) in pair.iter_mut().enumerate() {
            let item = ffi::PyTuple_GetItem(ptr, i as ffi::Py_ssize_t);
            if item.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            *part = ffi::PyLong_AsLongLong(item);
            if *part == -1 && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
                return None;
            }
        }
        Some((pair[0], pair[1]))
    }
}

/// A strong reference to a Python object that any thread may drop, with or without the GIL: it
/// is released at once, taking the GIL for that as `PyGILState_Ensure` does, never queued for
/// later, and left alone once the interpreter is finalized. The owner of an exported tensor
/// holds one to keep its exporter alive until the consumer, on whatever thread, releases it.
#[derive(Debug)]
pub struct PyKeepAlive(NonNull<ffi::PyObject>);

impl PyKeepAlive {
    /// Keeps `obj` alive until this is dropped.
    pub fn new(obj: Bound<'_, PyAny>) -> Self {
        // `into_ptr` hands over the strong reference, which is never NULL.
        Self(NonNull::new(obj.into_ptr()).expect("a Bound is never NULL"))
    }

    /// Releases the reference, running `f` first in the same hold of the GIL: state that only
    /// code holding the GIL touches can be updated there without atomics. Once the interpreter
    /// is finalized neither happens.
    pub fn release_with(self, f: impl FnOnce(Python<'_>)) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: `drop` does not run for `this`, so the reference is released only here.
        unsafe { release_reference(this.0, f) }
    }

    /// A new reference to the object.
    pub fn bind<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: `self.0` is a live object (this value owns a reference to it) and the GIL is
        // held (`py`).
        unsafe { Bound::from_borrowed_ptr(py, self.0.as_ptr()) }
    }
}

impl Drop for PyKeepAlive {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a strong reference this value owns, released once, here.
        unsafe { release_reference(self.0, |_| {}) }
    }
}

std::thread_local! {
    /// Whether this thread is inside [`destroy`], where Python holds the GIL for it.
    static IN_CAPSULE_DESTRUCTOR: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Releases `obj`, running `f` first in the same hold of the GIL. Once the interpreter is
/// finalizing, a thread that does not hold the GIL may not take it, so neither happens there and
/// the reference is leaked; inside a capsule destructor the GIL is held and both happen.
///
/// # Safety
///
/// `obj` is a strong reference the caller owns and hands over.
unsafe fn release_reference(obj: NonNull<ffi::PyObject>, f: impl FnOnce(Python<'_>)) {
    // SAFETY: the reference is released once, by a thread that holds the GIL for it
    // (`PyGILState_Ensure` is reentrant: a thread that already holds it keeps it); `f` runs
    // with the GIL held, for no longer than this hold of it.
    unsafe {
        if IN_CAPSULE_DESTRUCTOR.get() {
            // Python is destroying one of dlmd's capsules on this thread, which holds the GIL
            // for it, even while the interpreter shuts down (when `Py_IsInitialized` is 0 but
            // objects are still freed): release directly.
            f(Python::assume_attached());
            ffi::Py_DecRef(obj.as_ptr());
            return;
        }
        if ffi::Py_IsInitialized() == 0 {
            return;
        }
        let state = ffi::PyGILState_Ensure();
        f(Python::assume_attached());
        ffi::Py_DecRef(obj.as_ptr());
        ffi::PyGILState_Release(state);
    }
}

// SAFETY: the reference is only released (`release_reference`), and that takes the GIL itself.
unsafe impl Send for PyKeepAlive {}
// SAFETY: `&PyKeepAlive` gives access to the object only through `bind`, which needs the GIL.
unsafe impl Sync for PyKeepAlive {}

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
    if let Some(wanted) = request.dl_device {
        if wanted != device {
            return Err(PyBufferError::new_err(format!(
                "the data is on CUDA device {ordinal} and cannot be exported to device ({}, {})",
                wanted.device_type.0, wanted.device_id
            )));
        }
    }
    if request.copy == Some(true) {
        return Err(PyBufferError::new_err(
            "copy=True: this producer does not copy device data",
        ));
    }
    sync_consumer_stream(stream, request.stream)?;
    capsule_of(py, share()?, extents, request.versioned, 0, device)
}

/// Makes work queued on `producer` visible to the consumer's `stream` (DLPack stream rules).
#[cfg(feature = "cuda")]
fn sync_consumer_stream(producer: &cudarc::driver::CudaStream, stream: Option<isize>) -> PyResult<()> {
    use cudarc::driver::sys;
    let handle = match stream {
        None | Some(1) => 0x1 as sys::CUstream, // CU_STREAM_LEGACY
        Some(2) => 0x2 as sys::CUstream,        // CU_STREAM_PER_THREAD
        Some(-1) => return Ok(()),
        Some(0) => {
            return Err(PyBufferError::new_err(
                "stream=0 is ambiguous for CUDA; use 1 (legacy default) or 2 (per-thread default)",
            ));
        }
        Some(s) if s > 2 => crate::cuda::check_stream(s as usize, producer.context())
            .map_err(|e| PyBufferError::new_err(e.to_string()))?,
        Some(s) => return Err(PyBufferError::new_err(format!("stream {s} is not a CUDA stream"))),
    };
    // The null stream of a context is the legacy default stream: nothing to wait for there.
    if producer.cu_stream().is_null() && handle == 0x1 as sys::CUstream {
        return Ok(());
    }
    let cuda_error = |e: cudarc::driver::DriverError| PyBufferError::new_err(format!("CUDA: {e}"));
    let event = producer.record_event(None).map_err(cuda_error)?;
    // SAFETY: `handle` is a special handle or a stream of this context (`check_stream` asked the
    // driver, after refusing integers that cannot be handles); the event is live, and its
    // destruction after the wait is queued is allowed.
    unsafe { sys::cuStreamWaitEvent(handle, event.cu_event(), 0) }
        .result()
        .map_err(cuda_error)?;
    Ok(())
}

/// Exports `owner`, memory on `device`, as a versioned (with `flags`) or legacy managed tensor
/// in its capsule.
fn capsule_of<'py, O: TensorOwner, E: Extents>(
    py: Python<'py>,
    owner: O,
    extents: E,
    versioned: bool,
    flags: u64,
    device: DLDevice,
) -> PyResult<Bound<'py, PyCapsule>> {
    if versioned {
        let raw = export_versioned_on(owner, extents, flags, device).map_err(export_error)?;
        // SAFETY: `raw` was just made by dlmd and is handed to the capsule.
        unsafe { versioned_capsule(py, raw) }
    } else {
        if flags & READ_ONLY != 0 {
            return Err(export_error(ExportError::ReadOnlyInLegacy));
        }
        let raw = export_legacy_on(owner, extents, device).map_err(export_error)?;
        // SAFETY: as above.
        unsafe { legacy_capsule(py, raw) }
    }
}

/// A managed tensor struct: the two capsule kinds differ only in their names.
trait Managed: Release {
    const NAME: &'static CStr;
}

impl Managed for DLManagedTensorVersioned {
    const NAME: &'static CStr = VERSIONED_CAPSULE;
}

impl Managed for DLManagedTensor {
    const NAME: &'static CStr = LEGACY_CAPSULE;
}

/// Wraps a managed tensor in a capsule of its kind, releasing the tensor if that fails.
///
/// # Safety
///
/// `raw` is a valid managed tensor owned by the caller, who hands it over.
unsafe fn capsule<M: Managed>(py: Python<'_>, raw: *mut M) -> PyResult<Bound<'_, PyCapsule>> {
    // SAFETY: `raw` is valid (caller); the destructor handles exactly this capsule name.
    let capsule = unsafe { ffi::PyCapsule_New(raw.cast(), M::NAME.as_ptr(), Some(destroy::<M>)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so the tensor is still ours to release, once.
        unsafe { M::release(raw) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `capsule` is a new, owned reference to a capsule object.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule).cast_into_unchecked() })
}

/// Wraps a versioned managed tensor in a `"dltensor_versioned"` capsule.
///
/// # Safety
///
/// `raw` is a valid managed tensor owned by the caller, who hands it over.
pub unsafe fn versioned_capsule(py: Python<'_>, raw: *mut DLManagedTensorVersioned) -> PyResult<Bound<'_, PyCapsule>> {
    // SAFETY: forwarded from the caller.
    unsafe { capsule(py, raw) }
}

/// Wraps a legacy managed tensor in a `"dltensor"` capsule.
///
/// # Safety
///
/// As for [`versioned_capsule`].
pub unsafe fn legacy_capsule(py: Python<'_>, raw: *mut DLManagedTensor) -> PyResult<Bound<'_, PyCapsule>> {
    // SAFETY: forwarded from the caller.
    unsafe { capsule(py, raw) }
}

/// The destructor of capsules of kind `M`: releases the tensor if no consumer took it (renamed
/// the capsule `used_…`), keeping any exception in flight, also while the interpreter shuts
/// down (Python holds the GIL for every destructor it runs).
///
/// # Safety
///
/// Called by Python as the destructor of a capsule made by [`capsule`], with the GIL held.
unsafe extern "C" fn destroy<M: Managed>(capsule: *mut ffi::PyObject) {
    // SAFETY: Python calls capsule destructors with the GIL held, on a live capsule.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, M::NAME.as_ptr()) != 1 {
            // Consumed (renamed `used_…`): the consumer releases it.
            return;
        }
        let (mut kind, mut value, mut traceback) =
            (core::ptr::null_mut(), core::ptr::null_mut(), core::ptr::null_mut());
        #[allow(deprecated)]
        ffi::PyErr_Fetch(&mut kind, &mut value, &mut traceback);
        let pointer = ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr());
        if !pointer.is_null() {
            // Owners that hold Python references release them through `PyKeepAlive`, which
            // sees the GIL held here, also while the interpreter shuts down (exports still
            // alive then are freed, not leaked).
            IN_CAPSULE_DESTRUCTOR.set(true);
            M::release(pointer.cast());
            IN_CAPSULE_DESTRUCTOR.set(false);
        }
        #[allow(deprecated)]
        ffi::PyErr_Restore(kind, value, traceback);
    }
}

/// Takes the tensor out of a DLPack capsule, renaming it `used_…` so that no one else takes it
/// and its destructor leaves it alone.
///
/// # Safety
///
/// The capsule's producer keeps the DLPack contract for what the capsule holds: a managed
/// tensor of its name's kind, handed to whoever renames the capsule.
pub unsafe fn take_capsule(capsule: &Bound<'_, PyCapsule>) -> PyResult<ManagedTensor> {
    let ptr = capsule.as_ptr();
    // SAFETY: `ptr` is a live capsule; the name is a NUL-terminated string it owns, or NULL.
    let name = unsafe { ffi::PyCapsule_GetName(ptr) };
    if name.is_null() {
        return Err(PyValueError::new_err(
            "the capsule has no name, so it is not a DLPack capsule",
        ));
    }
    // SAFETY: not NULL, NUL-terminated by the capsule API.
    let name = unsafe { CStr::from_ptr(name) };
    let (used, versioned) = if name == VERSIONED_CAPSULE {
        (USED_VERSIONED_CAPSULE, true)
    } else if name == LEGACY_CAPSULE {
        (USED_LEGACY_CAPSULE, false)
    } else if name == USED_VERSIONED_CAPSULE || name == USED_LEGACY_CAPSULE {
        return Err(PyValueError::new_err(
            "the DLPack capsule was already consumed; call __dlpack__() again for a new one",
        ));
    } else {
        return Err(PyValueError::new_err(format!(
            "a capsule named {name:?} is not a DLPack capsule (expected \"dltensor_versioned\" or \"dltensor\")"
        )));
    };
    // SAFETY: the name checked above is the capsule's.
    let pointer = unsafe { ffi::PyCapsule_GetPointer(ptr, name.as_ptr()) };
    if pointer.is_null() {
        return Err(PyErr::take(capsule.py())
            .unwrap_or_else(|| PyValueError::new_err("the DLPack capsule holds a NULL pointer")));
    }
    // SAFETY: renaming to a static name marks the tensor as ours.
    if unsafe { ffi::PyCapsule_SetName(ptr, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let taken = if versioned {
        // SAFETY: the producer handed this tensor over under the capsule's contract.
        unsafe { ManagedTensor::from_raw_versioned(pointer.cast()) }
    } else {
        // SAFETY: as above.
        unsafe { ManagedTensor::from_raw_legacy(pointer.cast()) }
    };
    taken.map_err(|e| match e {
        ManagedError::Version { .. } => PyBufferError::new_err(e.to_string()),
        ManagedError::Null => PyValueError::new_err(e.to_string()),
    })
}

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
            stack.as_ptr().add(1),
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
