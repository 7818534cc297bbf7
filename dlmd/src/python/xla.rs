//! XLA FFI handlers as the capsules `jax.ffi.register_ffi_target` takes.

use crate::xla::ffi;
use core::ffi::c_void;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A capsule holding `handler`'s address, as `jax.ffi.register_ffi_target(name, capsule,
/// platform=…)` takes it (a capsule without a name, as `jax.ffi.pycapsule` makes).
///
/// ```no_run
/// # use pyo3::prelude::*;
/// use dlmd::xla::{Call, Handler, HandlerError, Platform};
///
/// struct Noop;
/// impl Handler for Noop {
///     const PLATFORM: Platform = Platform::Host;
///     fn execute(_: &Call<'_>) -> Result<(), HandlerError> {
///         Ok(())
///     }
/// }
///
/// # fn f(py: Python<'_>) -> PyResult<()> {
/// let capsule = dlmd::python::xla_capsule(py, dlmd::xla::entry::<Noop>)?;
/// py.import("jax.ffi")?.call_method1("register_ffi_target", ("noop", capsule, "cpu"))?;
/// # Ok(()) }
/// ```
pub fn xla_capsule(py: Python<'_>, handler: ffi::Handler) -> PyResult<Bound<'_, PyCapsule>> {
    // SAFETY: a capsule of a code address, with no name and no destructor: it owns nothing.
    let capsule = unsafe { pyo3::ffi::PyCapsule_New(handler as *mut c_void, core::ptr::null(), None) };
    // SAFETY: a new reference, or NULL with Python's error set.
    unsafe { Bound::from_owned_ptr_or_err(py, capsule) }.map(|c| {
        // SAFETY: `PyCapsule_New` made a capsule.
        unsafe { c.cast_into_unchecked() }
    })
}
