//! The fast `__dlpack__`: a method in CPython's vectorcall convention that reads its keywords
//! without pyo3's general argument handling, remembering the objects it has seen.

use super::interned::Remembered;
use super::producer::DlpackExport;
use super::request::DlpackRequest;
use core::ffi::CStr;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyString, PyTuple};
use pyo3::{PyClass, ffi};

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
///     fn dlpack(slf: &Bound<'_, Self>, request: &DlpackRequest) -> PyResult<DlpackExport> {
///         let this = slf.borrow();
///         export_cpu(request, Dims::new([this.len()]), || /* an owner */, || /* a copy */)
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
    /// The body of `__dlpack__`: exports `slf` for `request` (see [`export_cpu`](super::export_cpu)).
    /// The exchange table ([`publish_exchange_api`](super::publish_exchange_api)) calls it too,
    /// with [`DlpackRequest::exchange`].
    ///
    /// It runs with the GIL held but outside pyo3's call bookkeeping: a `Py` dropped here is
    /// released by pyo3 at its next call rather than at once (a `Bound` is released at once).
    fn dlpack(slf: &Bound<'_, Self>, request: &DlpackRequest) -> PyResult<DlpackExport>;
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
    let descriptor = unsafe { ffi::PyDescr_NewMethod(ty.as_ptr().cast(), def) };
    // SAFETY: a new reference, or NULL with an exception set.
    let descriptor = unsafe { Bound::from_owned_ptr_or_err(py, descriptor) }?;
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
        let slf = unsafe { Borrowed::from_ptr(py, slf) };
        // SAFETY: as above: the object is a `T`.
        let slf = unsafe { slf.cast_unchecked::<T>() };
        let positional = (nargsf as usize) & !(1usize << (usize::BITS - 1));
        if positional != 0 {
            return Err(PyTypeError::new_err(
                "__dlpack__() takes only keyword arguments (stream, max_version, dl_device, copy)",
            ));
        }
        if kwnames.is_null() {
            // A bare `__dlpack__()`, the commonest call: nothing to read.
            return T::dlpack(&slf, &DlpackRequest::default())?.into_capsule(py);
        }
        // Borrowed values of the keywords, in the order of `dlpack_keywords`; NULL: not given.
        let mut values = [core::ptr::null_mut(); 4];
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
            values[slot as usize] = unsafe { *args.wrapping_add(positional + i) };
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
        T::dlpack(&slf, &request)?.into_capsule(py)
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(Ok(capsule)) => capsule.into_ptr(),
        Ok(Err(e)) => {
            e.restore(py);
            core::ptr::null_mut()
        }
        Err(panic) => {
            panic_error("__dlpack__", panic).restore(py);
            core::ptr::null_mut()
        }
    }
}

/// The exception for a panic caught at the C boundary in `what`.
pub(super) fn panic_error(what: &str, panic: Box<dyn core::any::Any + Send>) -> PyErr {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into());
    pyo3::panic::PanicException::new_err(format!("{what} panicked: {message}"))
}
