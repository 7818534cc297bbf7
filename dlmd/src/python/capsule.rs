//! DLPack capsules: wrapping a managed tensor in one (with a destructor that frees what no
//! consumer took) and taking the tensor out of one.

use super::keep_alive::IN_CAPSULE_DESTRUCTOR;
use crate::dlpack::{DLManagedTensor, DLManagedTensorVersioned, ManagedTensorAbi};
use crate::managed::{ManagedError, ManagedTensor};
use core::ffi::CStr;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// Wraps a managed tensor in a capsule of its kind (`"dltensor_versioned"` or `"dltensor"`),
/// releasing the tensor if that fails.
///
/// # Safety
///
/// `raw` is a valid managed tensor owned by the caller, who hands it over.
pub unsafe fn capsule<M: ManagedTensorAbi>(py: Python<'_>, raw: *mut M) -> PyResult<Bound<'_, PyCapsule>> {
    // SAFETY: `raw` is valid (caller); the destructor handles exactly this capsule name.
    let capsule = unsafe { ffi::PyCapsule_New(raw.cast(), M::CAPSULE.as_ptr(), Some(destroy::<M>)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so the tensor is still ours to release, once.
        unsafe { M::release(raw) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `capsule` is a new, owned reference.
    let capsule = unsafe { Bound::from_owned_ptr(py, capsule) };
    // SAFETY: it is a capsule object.
    Ok(unsafe { capsule.cast_into_unchecked() })
}

/// The destructor of capsules of kind `M`: releases the tensor if no consumer took it (renamed
/// the capsule `used_…`), keeping any exception in flight, also while the interpreter shuts
/// down (Python holds the GIL for every destructor it runs).
///
/// # Safety
///
/// Called by Python as the destructor of a capsule made by [`capsule`], with the GIL held.
unsafe extern "C" fn destroy<M: ManagedTensorAbi>(capsule: *mut ffi::PyObject) {
    // SAFETY (every call below): Python calls capsule destructors with the GIL held, on a live
    // capsule.
    // SAFETY: see above.
    if unsafe { ffi::PyCapsule_IsValid(capsule, M::CAPSULE.as_ptr()) } != 1 {
        // Consumed (renamed `used_…`): the consumer releases it.
        return;
    }
    // An exception in flight (the capsule freed while it unwinds) is set aside while the owner
    // is released, which may run Python code, and put back after.
    // SAFETY: see above.
    let in_flight = !unsafe { ffi::PyErr_Occurred() }.is_null();
    let (mut kind, mut value, mut traceback) = (core::ptr::null_mut(), core::ptr::null_mut(), core::ptr::null_mut());
    if in_flight {
        // SAFETY: see above; the three out-pointers are valid.
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Fetch(&mut kind, &mut value, &mut traceback)
        };
    }
    // SAFETY: the capsule is valid under this name (checked above).
    let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule, M::CAPSULE.as_ptr()) };
    if !pointer.is_null() {
        // Owners that hold Python references release them through `PyKeepAlive`, which sees
        // the GIL held here, also while the interpreter shuts down (exports still alive then
        // are freed, not leaked).
        IN_CAPSULE_DESTRUCTOR.with(|inside| {
            inside.set(true);
            // SAFETY: the capsule still owns the tensor (nobody renamed it), which is released
            // once, here, as it goes away.
            unsafe { M::release(pointer.cast()) };
            inside.set(false);
        });
    }
    if in_flight {
        // SAFETY: restores what was fetched above, handing its references back (an exception
        // the release raised, which a destructor cannot report, is dropped for it).
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Restore(kind, value, traceback)
        };
    } else {
        // A destructor leaves no exception of its own behind.
        // SAFETY: see above.
        if !unsafe { ffi::PyErr_Occurred() }.is_null() {
            // SAFETY: see above.
            unsafe { ffi::PyErr_Clear() };
        }
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
    /// Takes the tensor of a capsule of kind `M`.
    ///
    /// # Safety
    ///
    /// As for `take_capsule`, for a capsule named `M::CAPSULE`.
    unsafe fn take<M: ManagedTensorAbi>(capsule: &Bound<'_, PyCapsule>) -> PyResult<ManagedTensor> {
        let ptr = capsule.as_ptr();
        // SAFETY: the capsule is live and named `M::CAPSULE` (caller).
        let pointer = unsafe { ffi::PyCapsule_GetPointer(ptr, M::CAPSULE.as_ptr()) };
        if pointer.is_null() {
            return Err(PyErr::take(capsule.py())
                .unwrap_or_else(|| PyValueError::new_err("the DLPack capsule holds a NULL pointer")));
        }
        // SAFETY: renaming to a static name marks the tensor as ours.
        if unsafe { ffi::PyCapsule_SetName(ptr, M::USED_CAPSULE.as_ptr()) } != 0 {
            return Err(PyErr::fetch(capsule.py()));
        }
        // SAFETY: the producer handed this tensor over under the capsule's contract.
        unsafe { ManagedTensor::from_raw(pointer.cast::<M>()) }.map_err(|e| match e {
            ManagedError::Version { .. } => PyBufferError::new_err(e.to_string()),
            ManagedError::Null => PyValueError::new_err(e.to_string()),
        })
    }
    if name == DLManagedTensorVersioned::CAPSULE {
        // SAFETY: the name says what the capsule holds (caller).
        unsafe { take::<DLManagedTensorVersioned>(capsule) }
    } else if name == DLManagedTensor::CAPSULE {
        // SAFETY: as above.
        unsafe { take::<DLManagedTensor>(capsule) }
    } else if name == DLManagedTensorVersioned::USED_CAPSULE || name == DLManagedTensor::USED_CAPSULE {
        Err(PyValueError::new_err(
            "the DLPack capsule was already consumed; call __dlpack__() again for a new one",
        ))
    } else {
        Err(PyValueError::new_err(format!(
            "a capsule named {name:?} is not a DLPack capsule (expected \"dltensor_versioned\" or \"dltensor\")"
        )))
    }
}
