//! The consumer's side of producers' C exchange tables: each Python type's table looked up once
//! and remembered by the type's address, the owning and lending entries called with their
//! failures as Python exceptions, and what a table does not say (an autograd type's
//! `requires_grad`, which its `__dlpack__` refuses to export) asked of the object.

use super::interned::ConsumerArgs;
use super::interned::Remembered;
use crate::dlpack::{DLDataType, DLDataTypeCode, DLDevice, DLPackExchangeAPI, DLPackVersion};
use crate::exchange::{self, EntryError, Resolved, TableError, WorkStream};
use crate::managed::ManagedTensor;
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyInt, PyString, PyType};

/// Whether the consumers take the C exchange table where a producer's type publishes one
/// (the default), or always go through `__dlpack__`.
static EXCHANGE_API: AtomicBool = AtomicBool::new(true);

/// Turns the C exchange table path of every consumer on (the default) or off: off, every import
/// goes through `__dlpack__` and a capsule.
///
/// A benchmark and test aid, process-wide: it lets one process compare the two import paths,
/// and test a producer's `__dlpack__` where its type also publishes a table. Applications leave
/// it on; nothing in the library turns it off.
pub fn set_exchange_api_enabled(enabled: bool) {
    EXCHANGE_API.store(enabled, Ordering::Relaxed);
}

/// Whether the consumers take producers' C exchange tables ([`set_exchange_api_enabled`]).
pub fn exchange_api_enabled() -> bool {
    EXCHANGE_API.load(Ordering::Relaxed)
}

/// What a type's exchange table lookup found.
#[derive(Clone, Copy)]
enum Table {
    /// No table: the type publishes none (or the switch is off).
    None,
    /// A table of a version dlmd reads.
    Usable(Usable),
    /// A table whose chain holds no major version 1.
    Unknown(DLPackVersion),
}

/// A table dlmd reads, and what it knows of the type that published it.
#[derive(Clone, Copy)]
pub(super) struct Usable {
    pub(super) api: &'static DLPackExchangeAPI,
    /// The type's objects have `requires_grad` (autograd frameworks: torch), which their
    /// `__dlpack__` refuses to export and their table does not say.
    pub(super) autograd: bool,
}

/// The tables found per type, by the type's address: `0` for none, the table's address (which
/// is aligned) with [`AUTOGRAD`] set for a type with `requires_grad`. Each type remembered is
/// kept alive for good, so its address stays its own.
static TABLES: Remembered<usize, 64> = Remembered::new();

/// The bit of a remembered table address that says the type has `requires_grad`.
const AUTOGRAD: usize = 1;

/// Why a tensor of an object that requires grad must not be written.
pub(super) const REQUIRES_GRAD: &str = "it requires grad (requires_grad=True), which its __dlpack__ refuses to export: \
                             writing it in place would go behind autograd's back; pass tensor.detach()";

/// Whether data of type `dtype` can require grad: autograd differentiates floating-point and
/// complex tensors only (torch refuses `requires_grad` on integer and `bool` tensors), so those
/// skip the attribute read.
pub(super) fn differentiable(dtype: DLDataType) -> bool {
    ![DLDataTypeCode::INT.0, DLDataTypeCode::UINT.0, DLDataTypeCode::BOOL.0].contains(&dtype.code)
}

/// Whether `obj.requires_grad` is `True`.
pub(super) fn requires_grad(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let names = ConsumerArgs::get(obj.py())?;
    obj.getattr(names.requires_grad.bind(obj.py()))?.is_truthy()
}

/// The exchange table of `obj`'s type that dlmd can use; `None` where there is none (or it is of
/// an unknown version and `obj` has `__dlpack__` to fall back on).
pub(super) fn usable_table(obj: &Bound<'_, PyAny>) -> PyResult<Option<Usable>> {
    if !exchange_api_enabled() {
        return Ok(None);
    }
    // SAFETY: `obj` is a live object; its type pointer is read, not a new reference.
    let ty = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
    match TABLES.find(ty.cast()) {
        Some(0) => Ok(None),
        Some(found) => Ok(Some(Usable {
            // SAFETY: only addresses of tables that `exchange_table` accepted are remembered
            // (with the `AUTOGRAD` bit, cleared here); tables live as long as the process.
            api: unsafe { &*((found & !AUTOGRAD) as *const DLPackExchangeAPI) },
            autograd: found & AUTOGRAD != 0,
        })),
        None => look_up_table(obj),
    }
}

/// [`usable_table`] for a type not seen before: looked up, and remembered unless malformed.
#[cold]
fn look_up_table(obj: &Bound<'_, PyAny>) -> PyResult<Option<Usable>> {
    let ty = obj.get_type();
    match exchange_table(&ty)? {
        Table::None => {
            TABLES.remember(ty.as_any(), 0);
            Ok(None)
        }
        Table::Usable(mut table) => {
            let names = ConsumerArgs::get(obj.py())?;
            table.autograd = ty.hasattr(names.requires_grad.bind(obj.py()))?;
            let address = table.api as *const DLPackExchangeAPI as usize;
            TABLES.remember(ty.as_any(), address | (usize::from(table.autograd) * AUTOGRAD));
            Ok(Some(table))
        }
        Table::Unknown(version) => {
            let names = ConsumerArgs::get(obj.py())?;
            if obj.hasattr(names.dlpack.bind(obj.py()))? {
                Ok(None)
            } else {
                Err(PyBufferError::new_err(format!(
                    "{} publishes a DLPack {}.{} exchange table, which dlmd does not read (it reads major version 1), and has no __dlpack__",
                    type_name(&ty),
                    version.major,
                    version.minor
                )))
            }
        }
    }
}

/// Looks up and checks the C exchange table of `ty`, uncached: the DLPack 1.3 capsule
/// `__dlpack_c_exchange_api__`, or DLPack 1.2's integer `__c_dlpack_exchange_api__`, followed
/// through `prev_api` to a table of major version 1, whose required entries must be there.
pub fn exchange_table_of(ty: &Bound<'_, PyType>) -> PyResult<Option<&'static DLPackExchangeAPI>> {
    match exchange_table(ty)? {
        Table::Usable(table) => Ok(Some(table.api)),
        Table::None | Table::Unknown(_) => Ok(None),
    }
}

fn exchange_table(ty: &Bound<'_, PyType>) -> PyResult<Table> {
    let py = ty.py();
    let names = ConsumerArgs::get(py)?;
    let (attribute, value) = match attribute(ty, names.exchange_api.bind(py))? {
        Some(value) => (DLPackExchangeAPI::ATTRIBUTE, value),
        None => match attribute(ty, names.exchange_api_1_2.bind(py))? {
            Some(value) => (DLPackExchangeAPI::ATTRIBUTE_1_2, value),
            None => return Ok(Table::None),
        },
    };
    let name = || format!("{}.{attribute}", type_name(ty));
    let table = if let Ok(capsule) = value.cast::<PyCapsule>() {
        // SAFETY: a live capsule; the name is static.
        let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLPackExchangeAPI::CAPSULE.as_ptr()) };
        if pointer.is_null() {
            // SAFETY: clears the error `PyCapsule_GetPointer` set, with the GIL held.
            unsafe { ffi::PyErr_Clear() };
            // SAFETY: a live capsule; the name is NULL or a string it owns.
            let found = unsafe { ffi::PyCapsule_GetName(capsule.as_ptr()) };
            let found = if found.is_null() {
                "no name".to_string()
            } else {
                // SAFETY: not NULL, NUL-terminated by the capsule API.
                format!("{:?}", unsafe { core::ffi::CStr::from_ptr(found) })
            };
            return Err(PyTypeError::new_err(format!(
                "{} is a capsule with {found}, not one named \"dlpack_exchange_api\"",
                name()
            )));
        }
        pointer.cast_const().cast()
    } else if let Ok(int) = value.cast::<PyInt>() {
        let address: usize = int
            .extract()
            .map_err(|_| PyValueError::new_err(format!("{} is {int}, not an address", name())))?;
        // DLPack 1.2 publishes the table as an integer: its provenance is the producer's.
        core::ptr::with_exposed_provenance(address)
    } else {
        return Err(PyTypeError::new_err(format!(
            "{} is a {}, not a capsule",
            name(),
            type_name(&value.get_type())
        )));
    };
    // SAFETY: the producer publishes the address of a table that lives as long as the process,
    // linked to older ones through `prev_api` (DLPack's contract for the attribute).
    match unsafe { exchange::resolve(table) } {
        Ok(Resolved::Usable(api)) => Ok(Table::Usable(Usable { api, autograd: false })),
        Ok(Resolved::Unknown(version)) => Ok(Table::Unknown(version)),
        Err(e @ TableError::MissingEntry(_)) => Err(PyTypeError::new_err(format!(
            "the exchange table of {} {e}",
            type_name(ty)
        ))),
        Err(e) => Err(PyValueError::new_err(format!("{} {e}", name()))),
    }
}

/// `ty.name`, or `None` where it has none; an error leaves no exception behind.
fn attribute<'py>(ty: &Bound<'py, PyType>, name: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match ty.getattr(name) {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is_instance_of::<PyAttributeError>(ty.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) fn type_name(ty: &Bound<'_, PyType>) -> String {
    ty.name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// A table entry's failure as a Python exception: the one the producer set, or one made where
/// it set none.
#[cold]
pub(super) fn entry_error(obj: &Bound<'_, PyAny>, e: EntryError) -> PyErr {
    let taken = match e {
        EntryError::Status { .. } => PyErr::take(obj.py()),
        _ => None,
    };
    taken.unwrap_or_else(|| {
        let why = match e {
            EntryError::Status { entry, status } => {
                format!("returned {status} from {entry} without setting an exception")
            }
            e => e.to_string(),
        };
        PyBufferError::new_err(format!("the exchange table of {} {why}", type_name(&obj.get_type())))
    })
}

/// The owning export of `obj` through its table, whose writes are refused where `obj` requires
/// grad (as its `__dlpack__` would refuse the export), asked when a mutable view is.
pub(super) fn table_export(obj: &Bound<'_, PyAny>, table: Usable) -> PyResult<ManagedTensor> {
    // SAFETY: `table.api` is the table `type(obj)` published; the entry takes `obj`, borrowed
    // for the call, with the GIL held, and hands over a managed tensor on success (DLPack's
    // contract).
    let mut tensor = unsafe { exchange::export(table.api, obj.as_ptr().cast()) }.map_err(|e| entry_error(obj, e))?;
    if table.autograd && differentiable(tensor.dl_tensor().dtype) {
        // Asked only when a mutable view is: reading pays one reference to `obj`.
        let held: Py<PyAny> = obj.clone().unbind();
        // SAFETY: `Py<PyAny>` has the layout of a non-NULL object pointer (pyo3's promise); the
        // strong reference is released once, by `release_object`.
        let context = unsafe { core::mem::transmute::<Py<PyAny>, NonNull<c_void>>(held) };
        // SAFETY: `ask_requires_grad` attaches to the interpreter before touching the object,
        // from any thread, and `release_object` drops the reference from any thread (pyo3
        // defers the decrement to the next attached thread where none is).
        unsafe { tensor.defer_write_check(context, ask_requires_grad, release_object) };
    }
    Ok(tensor)
}

/// The write check of a tensor exported by an autograd type's table ([`table_export`]).
///
/// # Safety
///
/// `object` is the strong reference `table_export` made, not released yet.
unsafe fn ask_requires_grad(object: NonNull<c_void>) -> Option<&'static str> {
    Python::try_attach(|py| {
        // SAFETY: a live object: the tensor holds a reference to it (caller).
        let obj = unsafe { Bound::from_borrowed_ptr(py, object.as_ptr().cast()) };
        match requires_grad(&obj) {
            Ok(false) => None,
            Ok(true) => Some(REQUIRES_GRAD),
            Err(_) => Some("its requires_grad could not be read"),
        }
    })
    .unwrap_or(Some(
        "the interpreter that made it is gone: whether it requires grad cannot be asked",
    ))
}

/// Releases the reference a write check holds ([`table_export`]).
///
/// # Safety
///
/// `object` is the strong reference `table_export` made, released once.
unsafe fn release_object(object: NonNull<c_void>) {
    // SAFETY: `Py<PyAny>` has the layout of a non-NULL object pointer; this is the reference
    // `table_export` made, given back once (caller). Dropped without the interpreter, pyo3
    // defers the decrement.
    drop(unsafe { core::mem::transmute::<NonNull<c_void>, Py<PyAny>>(object) });
}

/// The producer's current work stream for data on `device` (the default for the CPU).
pub(super) fn table_work_stream(
    obj: &Bound<'_, PyAny>,
    api: &DLPackExchangeAPI,
    device: DLDevice,
) -> PyResult<WorkStream> {
    // SAFETY: `api` is the table `type(obj)` published; the GIL is held.
    unsafe { exchange::work_stream(api, device) }.map_err(|e| entry_error(obj, e))
}
