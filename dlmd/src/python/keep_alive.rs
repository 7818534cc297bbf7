//! [`PyKeepAlive`]: a reference to a Python object that any thread may drop.

use core::ptr::NonNull;
use pyo3::ffi;
use pyo3::prelude::*;

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
    /// Whether this thread is inside a capsule destructor, where Python holds the GIL for it.
    pub(super) static IN_CAPSULE_DESTRUCTOR: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Releases `obj`, running `f` first in the same hold of the GIL. Once the interpreter is
/// finalizing, a thread that does not hold the GIL may not take it, so neither happens there and
/// the reference is leaked; inside a capsule destructor the GIL is held and both happen.
///
/// # Safety
///
/// `obj` is a strong reference the caller owns and hands over.
unsafe fn release_reference(obj: NonNull<ffi::PyObject>, f: impl FnOnce(Python<'_>)) {
    // The reference is released once, by a thread that holds the GIL for it
    // (`PyGILState_Ensure` is reentrant: a thread that already holds it keeps it); `f` runs with
    // the GIL held, for no longer than this hold of it.
    if IN_CAPSULE_DESTRUCTOR.get() {
        // Python is destroying one of dlmd's capsules on this thread, which holds the GIL for it,
        // even while the interpreter shuts down (when `Py_IsInitialized` is 0 but objects are
        // still freed): release directly.
        // SAFETY: the GIL is held (above), for the token's whole use in `f`.
        f(unsafe { Python::assume_attached() });
        // SAFETY: the reference is the caller's, handed over, released once with the GIL held.
        unsafe { ffi::Py_DecRef(obj.as_ptr()) };
        return;
    }
    // SAFETY: may be called from any thread at any time.
    if unsafe { ffi::Py_IsInitialized() } == 0 {
        return;
    }
    {
        // SAFETY: the interpreter is initialized; the state is released below, on this thread.
        let state = unsafe { ffi::PyGILState_Ensure() };
        // SAFETY: the GIL is held from here to the release below.
        f(unsafe { Python::assume_attached() });
        // SAFETY: as in the destructor case.
        unsafe { ffi::Py_DecRef(obj.as_ptr()) };
        // SAFETY: releases the state taken above, on the same thread.
        unsafe { ffi::PyGILState_Release(state) };
    }
}

// SAFETY: the reference is only released (`release_reference`), and that takes the GIL itself.
unsafe impl Send for PyKeepAlive {}
// SAFETY: `&PyKeepAlive` gives access to the object only through `bind`, which needs the GIL.
unsafe impl Sync for PyKeepAlive {}
