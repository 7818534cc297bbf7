//! The producer side of DLPack 1.3's C exchange table (`DLPackExchangeAPI`): a Python type
//! publishes a process-lifetime table of C functions as its type attribute
//! `__dlpack_c_exchange_api__`, and consumers written in C (torch, tvm-ffi, dlmd's own
//! [`from_dlpack`](super::from_dlpack)) exchange its objects through direct calls, without
//! `__dlpack__`, capsules or keyword arguments.
//!
//! Every entry returns 0, or -1 with a Python exception set (the allocator reports through its
//! `SetError` callback instead). None unwinds into C: a panic becomes a `PanicException`. Every
//! pointer a caller passes is checked for NULL and every object for its type before use. The
//! entries that take or make Python objects rely on their caller holding the GIL, as DLPack
//! specifies; the allocator and `current_work_stream` take it where the caller does not hold it.

use super::method::{DlpackExporter, panic_error};
use super::producer::DlpackExport;
use super::request::DlpackRequest;
use crate::dlpack::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackDLTensorFromPyObjectNoSync, DLPackExchangeAPI,
    DLPackExchangeAPIHeader, DLPackSetError, DLPackVersion, DLTensor,
};
use crate::managed::{ManagedError, ManagedTensor};
use core::ffi::{CStr, c_char, c_int, c_void};
use core::ptr::NonNull;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

/// A [`DlpackExporter`] that publishes DLPack's C exchange table
/// ([`publish_exchange_api`]): besides `__dlpack__`'s export, the table allocates objects of
/// this type and wraps foreign tensors in them.
///
/// ```ignore
/// // SAFETY: the work stream is the default one (NULL), valid for every device.
/// unsafe impl DlpackExchange for MyArray {
///     fn allocate<'py>(py: Python<'py>, prototype: &TensorPrototype<'_>) -> PyResult<Bound<'py, Self>> {
///         Bound::new(py, MyArray::zeros(prototype.shape, prototype.dtype)?)
///     }
///     fn from_tensor<'py>(py: Python<'py>, tensor: ManagedTensor) -> PyResult<Bound<'py, Self>> {
///         Bound::new(py, MyArray::wrapping(tensor)?)
///     }
/// }
/// // In the module's init, after `add_class` and `add_dlpack_method`:
/// publish_exchange_api::<MyArray>(m.py())?;
/// ```
///
/// # Safety
///
/// [`current_work_stream`](Self::current_work_stream) returns NULL or a stream handle of the
/// device it is asked about (a `CUstream` of that device's current context, for CUDA) that
/// stays valid for as long as a consumer may queue work on it: every consumer of the table
/// (torch, tvm-ffi, dlmd) hands the pointer to the driver, which dereferences it.
pub unsafe trait DlpackExchange: DlpackExporter {
    /// The stream this type queues its work on for `device`: the table's
    /// `current_work_stream`, on which a consumer of an export runs its own work. NULL, the
    /// default, is the CPU's answer and, for CUDA, the legacy default stream. What it returns
    /// is the implementation's promise (the trait's `# Safety`).
    fn current_work_stream(py: Python<'_>, device: DLDevice) -> PyResult<*mut c_void> {
        let _ = (py, device);
        Ok(core::ptr::null_mut())
    }

    /// A new object of this type with `prototype`'s shape, data type and device (the table's
    /// allocator, which then exports it). Raise `BufferError` for what the type cannot hold.
    fn allocate<'py>(py: Python<'py>, prototype: &TensorPrototype<'_>) -> PyResult<Bound<'py, Self>>;

    /// An object of this type holding `tensor`, handed over (the table's
    /// `managed_tensor_to_py_object_no_sync`): wrapped, or copied and released.
    fn from_tensor<'py>(py: Python<'py>, tensor: ManagedTensor) -> PyResult<Bound<'py, Self>>;
}

/// A [`DlpackExchange`] type that also lends its data without an owning export: the table's
/// `dltensor_from_py_object_no_sync`, which fills a consumer's `DLTensor` and allocates
/// nothing ([`publish_exchange_api_borrowing`]).
///
/// # Safety
///
/// The `DLTensor` that [`dltensor`](Self::dltensor) returns describes valid data: `data` plus
/// `byte_offset` reaches every element that `shape` and `strides` (never NULL when `ndim > 0`)
/// index, and the data, the `shape` and `strides` arrays stay valid and unchanged for as long as
/// `slf` is alive and no Python code runs (the exchange table's promise: until control returns
/// to the consumer's caller).
pub unsafe trait DlpackBorrowedExport: DlpackExchange {
    /// The non-owning view of `slf`'s data.
    fn dltensor(slf: &Bound<'_, Self>) -> PyResult<DLTensor>;
}

/// What the table's allocator is asked for: the shape, data type and device of a new tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorPrototype<'a> {
    /// The extents, each checked to be `>= 0`.
    pub shape: &'a [usize],
    /// The element type, unchecked.
    pub dtype: DLDataType,
    /// The device, unchecked.
    pub device: DLDevice,
}

/// Publishes the C exchange table of `T` as `T.__dlpack_c_exchange_api__`, without the
/// non-owning entry. Call it once the class exists, after `PyModule::add_class`; the table lives
/// as long as the process (one small allocation per call).
pub fn publish_exchange_api<T: DlpackExchange>(py: Python<'_>) -> PyResult<()> {
    publish::<T>(py, None)
}

/// As [`publish_exchange_api`], with the non-owning `dltensor_from_py_object_no_sync` entry.
pub fn publish_exchange_api_borrowing<T: DlpackBorrowedExport>(py: Python<'_>) -> PyResult<()> {
    publish::<T>(py, Some(dltensor_from_py_object::<T>))
}

fn publish<T: DlpackExchange>(py: Python<'_>, borrowed: DLPackDLTensorFromPyObjectNoSync) -> PyResult<()> {
    let table: &'static DLPackExchangeAPI = Box::leak(Box::new(DLPackExchangeAPI {
        header: DLPackExchangeAPIHeader {
            version: DLPackVersion::CURRENT,
            prev_api: core::ptr::null_mut(),
        },
        managed_tensor_allocator: Some(allocate::<T>),
        managed_tensor_from_py_object_no_sync: Some(managed_tensor_from_py_object::<T>),
        managed_tensor_to_py_object_no_sync: Some(managed_tensor_to_py_object::<T>),
        dltensor_from_py_object_no_sync: borrowed,
        current_work_stream: Some(current_work_stream::<T>),
    }));
    let pointer = NonNull::from(table).cast::<c_void>();
    // SAFETY: the pointer is valid for good (leaked above); the name is static; no destructor.
    let capsule = unsafe { ffi::PyCapsule_New(pointer.as_ptr(), DLPackExchangeAPI::CAPSULE.as_ptr(), None) };
    // SAFETY: a new reference, or NULL with an exception set.
    let capsule = unsafe { Bound::from_owned_ptr_or_err(py, capsule) }?;
    T::type_object(py).setattr(DLPackExchangeAPI::ATTRIBUTE, capsule)
}

/// Runs an entry's body with the GIL (taken if the caller did not hold it), turning its error or
/// panic into a Python exception and -1: for the entries a caller may call without the GIL.
fn entry(what: &str, body: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    let run = || Python::attach(|py| run_body(py, what, body));
    // A panic outside the body (no interpreter to attach to) has nowhere to report to.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or(-1)
}

/// [`entry`] for the entries that take or make Python objects, which DLPack calls with the GIL
/// held: no GIL bookkeeping at all (pyo3's would take the GIL state again on every call).
///
/// # Safety
///
/// The calling thread holds the GIL.
unsafe fn entry_with_gil(what: &str, body: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    // SAFETY: the GIL is held (caller); the token does not outlive this call.
    let py = unsafe { Python::assume_attached() };
    run_body(py, what, body)
}

/// Runs `body`, turning its error or panic into a Python exception and -1.
fn run_body(py: Python<'_>, what: &str, body: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            e.restore(py);
            -1
        }
        Err(panic) => {
            panic_error(what, panic).restore(py);
            -1
        }
    }
}

/// The object a caller passed, which must be a `T`.
///
/// # Safety
///
/// `obj` is NULL or a live Python object borrowed for the call, and the GIL is held (`py`).
unsafe fn object<'a, 'py, T: DlpackExporter>(py: Python<'py>, obj: *mut c_void) -> PyResult<Borrowed<'a, 'py, T>> {
    // SAFETY: forwarded from the caller.
    let obj = unsafe { Borrowed::from_ptr_or_opt(py, obj.cast::<ffi::PyObject>()) }
        .ok_or_else(|| PyValueError::new_err("the exchange table was passed a NULL object"))?;
    obj.cast::<T>().map_err(|_| {
        PyTypeError::new_err(format!(
            "the exchange table of {} was passed a {} object",
            T::NAME,
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// Exports `obj` for the table: a versioned, owning tensor, no stream ordering.
fn export<T: DlpackExporter>(obj: &Bound<'_, T>) -> PyResult<NonNull<DLManagedTensorVersioned>> {
    T::dlpack(obj, &DlpackRequest::exchange())?
        .into_versioned()
        .map_err(|_: DlpackExport| PyBufferError::new_err("the exporter made a legacy tensor for a versioned request"))
}

/// `managed_tensor_from_py_object_no_sync` of `T`.
///
/// # Safety
///
/// Called by C with the GIL held: `obj` is NULL or a live object; `out` is NULL or writable.
unsafe extern "C" fn managed_tensor_from_py_object<T: DlpackExchange>(
    obj: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    let body = |py: Python<'_>| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("the output pointer is NULL"))?;
        // SAFETY: `obj` is NULL or live, and the GIL is held (caller).
        let obj = unsafe { object::<T>(py, obj) }?;
        let tensor = export(&obj)?;
        // SAFETY: `out` is writable (caller); the tensor is handed over to the caller.
        unsafe { out.write(tensor.as_ptr()) };
        Ok(())
    };
    // SAFETY: DLPack calls the entries that take Python objects with the GIL held (caller).
    unsafe { entry_with_gil("managed_tensor_from_py_object_no_sync", body) }
}

/// `dltensor_from_py_object_no_sync` of `T`.
///
/// # Safety
///
/// As for [`managed_tensor_from_py_object`], with `out` a writable `DLTensor`.
unsafe extern "C" fn dltensor_from_py_object<T: DlpackBorrowedExport>(obj: *mut c_void, out: *mut DLTensor) -> c_int {
    let body = |py: Python<'_>| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("the output DLTensor pointer is NULL"))?;
        // SAFETY: as in `managed_tensor_from_py_object`.
        let obj = unsafe { object::<T>(py, obj) }?;
        let tensor = T::dltensor(&obj)?;
        // SAFETY: `out` is writable (caller).
        unsafe { out.write(tensor) };
        Ok(())
    };
    // SAFETY: DLPack calls the entries that take Python objects with the GIL held (caller).
    unsafe { entry_with_gil("dltensor_from_py_object_no_sync", body) }
}

/// `managed_tensor_to_py_object_no_sync` of `T`: takes `tensor` over, whatever happens.
///
/// # Safety
///
/// Called by C with the GIL held: `tensor` is NULL or a managed tensor handed over, with the
/// contract of [`ManagedTensor::from_raw`]; `out` is NULL or writable.
unsafe extern "C" fn managed_tensor_to_py_object<T: DlpackExchange>(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> c_int {
    let body = |py: Python<'_>| {
        // SAFETY: the tensor is handed over (caller); taken first, so that it is released on
        // every error below.
        let tensor = unsafe { ManagedTensor::from_raw(tensor) }.map_err(|e| match e {
            ManagedError::Null => PyValueError::new_err("the tensor pointer is NULL"),
            ManagedError::Version { .. } => PyBufferError::new_err(e.to_string()),
        })?;
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("the output pointer is NULL"))?;
        let obj = T::from_tensor(py, tensor)?;
        // SAFETY: `out` is writable (caller); the new reference is handed over.
        unsafe { out.write(obj.into_ptr().cast()) };
        Ok(())
    };
    // SAFETY: DLPack calls the entries that take Python objects with the GIL held (caller).
    unsafe { entry_with_gil("managed_tensor_to_py_object_no_sync", body) }
}

/// `current_work_stream` of `T`.
///
/// # Safety
///
/// `out` is NULL or writable.
unsafe extern "C" fn current_work_stream<T: DlpackExchange>(
    device_type: DLDeviceType,
    device_id: i32,
    out: *mut *mut c_void,
) -> c_int {
    entry("current_work_stream", |py| {
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("the output stream pointer is NULL"))?;
        let stream = T::current_work_stream(py, DLDevice { device_type, device_id })?;
        // SAFETY: `out` is writable (caller).
        unsafe { out.write(stream) };
        Ok(())
    })
}

/// The most dimensions a prototype may have: more is a malformed request, not a tensor.
const MAX_PROTOTYPE_NDIM: i32 = 1 << 10;

/// `managed_tensor_allocator` of `T`: errors go to `set_error` (or, where that is NULL, stay
/// set as the Python exception).
///
/// # Safety
///
/// Called by C: `prototype` is NULL or a readable `DLTensor` whose `shape` holds `ndim` values;
/// `out` is NULL or writable; `set_error` is NULL or callable with `error_ctx`.
unsafe extern "C" fn allocate<T: DlpackExchange>(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> c_int {
    let status = entry("managed_tensor_allocator", |py| {
        // SAFETY: NULL or readable (caller).
        let prototype =
            unsafe { prototype.as_ref() }.ok_or_else(|| PyValueError::new_err("the prototype DLTensor is NULL"))?;
        let out = NonNull::new(out).ok_or_else(|| PyValueError::new_err("the output pointer is NULL"))?;
        let ndim = prototype.ndim;
        if !(0..=MAX_PROTOTYPE_NDIM).contains(&ndim) {
            return Err(PyValueError::new_err(format!("the prototype has ndim {ndim}")));
        }
        let shape = if ndim == 0 {
            Vec::new()
        } else {
            let first =
                NonNull::new(prototype.shape).ok_or_else(|| PyValueError::new_err("the prototype's shape is NULL"))?;
            (0..ndim as usize)
                .map(|i| {
                    // SAFETY: `shape` holds `ndim` values (caller), checked not NULL above; read
                    // unaligned, as the importer reads a producer's arrays: C callers do not
                    // all align them.
                    let n = unsafe { first.as_ptr().wrapping_add(i).read_unaligned() };
                    usize::try_from(n).map_err(|_| PyValueError::new_err(format!("the prototype has extent {n}")))
                })
                .collect::<PyResult<Vec<usize>>>()?
        };
        let prototype = TensorPrototype {
            shape: &shape,
            dtype: prototype.dtype,
            device: prototype.device,
        };
        let obj = T::allocate(py, &prototype)?;
        let tensor = export(&obj)?;
        // SAFETY: `out` is writable (caller); the tensor is handed over.
        unsafe { out.write(tensor.as_ptr()) };
        Ok(())
    });
    if status != 0
        && let Some(set_error) = set_error
    {
        report(error_ctx, set_error);
    }
    status
}

/// Hands the Python exception set on this thread to an allocator's `SetError`, clearing it.
fn report(error_ctx: *mut c_void, set_error: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)) {
    let report = || {
        Python::attach(|py| {
            let error =
                PyErr::take(py).unwrap_or_else(|| PyBufferError::new_err("the allocator failed without an exception"));
            let kind = error.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
            let message = error.value(py).to_string();
            let c = |s: String| std::ffi::CString::new(s.replace('\0', " ")).unwrap_or_default();
            let (kind, message) = (c(kind), c(message));
            let (kind, message): (&CStr, &CStr) = (&kind, &message);
            // SAFETY: `set_error` is callable with `error_ctx` (the allocator's caller); both
            // strings are NUL-terminated and live across the call.
            unsafe { set_error(error_ctx, kind.as_ptr(), message.as_ptr()) };
        })
    };
    // Nowhere to report a panic of the report itself.
    let _ = std::panic::catch_unwind(report);
}
