//! NCCL loaded at run time: whether it is there, its version, and calls that turn its result
//! codes (and a missing library or symbol) into [`NcclError`]s.

use super::{NcclElement, NcclError};
use cudarc::nccl::sys;
use std::ffi::{CStr, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

/// Whether NCCL can be used here: it loads, or the program links it.
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| crate::cuda::library_usable(&["nccl"], b"ncclGetVersion\0"))
}

/// Calls into NCCL through cudarc: `NoLibrary` where it cannot be loaded, `MissingSymbol` where
/// the function is missing (cudarc panics then), NCCL's error where it returns one.
pub(super) fn call(
    name: &'static str,
    comm: Option<sys::ncclComm_t>,
    f: impl FnOnce() -> sys::ncclResult_t,
) -> Result<(), NcclError> {
    if !available() {
        return Err(NcclError::NoLibrary);
    }
    let code = catch_unwind(AssertUnwindSafe(f)).map_err(|_| NcclError::MissingSymbol(name))?;
    match code {
        sys::ncclResult_t::ncclSuccess => Ok(()),
        code => {
            // SAFETY: takes a result code by value.
            let text = catch_unwind(|| unsafe { sys::ncclGetErrorString(code) }).unwrap_or(core::ptr::null());
            let mut message = if text.is_null() {
                String::new()
            } else {
                // SAFETY: NCCL returns a static NUL-terminated string for every result code.
                unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
            };
            if let Some(comm) = comm {
                // SAFETY: `comm` is a live communicator; the last error is a NUL-terminated
                // string NCCL keeps (possibly empty), or NULL.
                let last = catch_unwind(|| unsafe { sys::ncclGetLastError(comm) }).unwrap_or(core::ptr::null());
                if !last.is_null() {
                    // SAFETY: non-NULL, NUL-terminated, as above.
                    let last = unsafe { CStr::from_ptr(last) }.to_string_lossy();
                    if !last.is_empty() {
                        message = format!("{message}: {last}");
                    }
                }
            }
            Err(NcclError::Nccl {
                call: name,
                code,
                message,
            })
        }
    }
}

/// The loaded NCCL's version number (`ncclGetVersion`: 22809 for 2.28.9).
pub fn version() -> Result<i32, NcclError> {
    static VERSION: OnceLock<i32> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let mut v: c_int = 0;
    // SAFETY: writes one `int` through a valid pointer.
    call("ncclGetVersion", None, || unsafe { sys::ncclGetVersion(&mut v) })?;
    Ok(*VERSION.get_or_init(|| v))
}

/// Checks that the loaded NCCL has `T`'s data type.
pub(super) fn supported<T: NcclElement>() -> Result<(), NcclError> {
    let needs = T::DATA_TYPE.min_version();
    if needs > 0 {
        let version = version()?;
        if version < needs {
            return Err(NcclError::Unsupported {
                data_type: T::DATA_TYPE,
                version,
                needs,
            });
        }
    }
    Ok(())
}

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd`: the calls of one thread to several
/// communicators, or send/receive pairs, then start together. The group is ended also when
/// `f` fails; its error comes first.
pub fn group<R>(f: impl FnOnce() -> Result<R, NcclError>) -> Result<R, NcclError> {
    // SAFETY: no arguments.
    call("ncclGroupStart", None, || unsafe { sys::ncclGroupStart() })?;
    crate::cuda::group_started();
    let out = catch_unwind(AssertUnwindSafe(f));
    // SAFETY: no arguments; ends the group started above.
    let ended = call("ncclGroupEnd", None, || unsafe { sys::ncclGroupEnd() });
    // The collectives of the group are queued now: their scopes' events are recorded after.
    let recorded = crate::cuda::group_ended();
    let out = out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    ended?;
    recorded?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::UniqueId;
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "loads NCCL, a foreign library Miri cannot run")]
    fn no_library_is_an_error_not_a_panic() {
        if available() {
            return;
        }
        assert!(matches!(UniqueId::new(), Err(NcclError::NoLibrary)));
        assert!(matches!(version(), Err(NcclError::NoLibrary)));
        assert!(matches!(group(|| Ok(())), Err(NcclError::NoLibrary)));
    }
}
