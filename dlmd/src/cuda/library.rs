//! Whether a CUDA library can be used, whichever way cudarc reaches it.
//!
//! cudarc loads the libraries at run time (`dynamic-loading`, what dlmd chooses when nothing else
//! does) or the application links them (`dynamic-linking`, `static-linking`, chosen by another
//! crate in the build, candle among them). dlmd cannot see which at compile time, so it asks the
//! process: a library is usable where it opens by one of the names cudarc's loader tries, or where
//! one of its functions is already in the program. Nothing here panics, and only `dlopen` runs.

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};

/// The file names cudarc's loader tries for `name` (`cuda`, `nvrtc`, `nccl`), in its order.
fn candidates(name: &str) -> impl Iterator<Item = String> + '_ {
    let versioned = ["13", "12", "11", "2", "1"]
        .into_iter()
        .map(move |v| format!("{DLL_PREFIX}{name}{DLL_SUFFIX}.{v}"));
    core::iter::once(format!("{DLL_PREFIX}{name}{DLL_SUFFIX}")).chain(versioned)
}

/// Whether one of `names` opens as a shared library.
fn opens(names: &[&str]) -> bool {
    names.iter().flat_map(|name| candidates(name)).any(|file| {
        // SAFETY: opening a CUDA library runs its initialisers, which set up its own state only;
        // the handle is closed at once (the library stays loaded where cudarc or anyone else
        // holds it).
        unsafe { libloading::Library::new(&file) }.is_ok()
    })
}

/// Whether `symbol` (NUL-terminated) resolves in the running program: the library is linked in.
fn linked(symbol: &[u8]) -> bool {
    #[cfg(unix)]
    let this = libloading::os::unix::Library::this();
    #[cfg(windows)]
    let Ok(this) = libloading::os::windows::Library::this() else {
        return false;
    };
    // SAFETY: the symbol is only looked up, never called or read through.
    unsafe { this.get::<*const core::ffi::c_void>(symbol) }.is_ok()
}

/// Whether the library `names` (alternative names of one library) is usable: it opens, or the
/// program links `symbol` (NUL-terminated), one of its functions.
pub(crate) fn usable(names: &[&str], symbol: &[u8]) -> bool {
    linked(symbol) || opens(names)
}

/// The function `symbol` (NUL-terminated) of the library `names`, as `F` (a function pointer
/// type): from the program where it is linked in, or from the library opened by one of the names
/// cudarc's loader tries, which then stays loaded. `None` where neither has it.
///
/// # Safety
///
/// `F` is a function pointer type with the symbol's C signature.
pub(crate) unsafe fn symbol<F: Copy>(names: &[&str], symbol: &[u8]) -> Option<F> {
    #[cfg(unix)]
    let this = Some(libloading::os::unix::Library::this());
    #[cfg(windows)]
    let this = libloading::os::windows::Library::this().ok();
    // SAFETY: `F` is the symbol's type (the caller); the program's own symbols stay loaded.
    if let Some(found) = this.and_then(|this| unsafe { this.get::<F>(symbol) }.ok().map(|f| *f)) {
        return Some(found);
    }
    names.iter().flat_map(|name| candidates(name)).find_map(|file| {
        // SAFETY: as in `opens`: the library's initialisers set up its own state only.
        let library = unsafe { libloading::Library::new(&file) }.ok()?;
        // SAFETY: `F` is the symbol's type (the caller).
        let found = unsafe { library.get::<F>(symbol) }.ok().map(|f| *f)?;
        // The function must stay callable: the library is never closed.
        core::mem::forget(library);
        Some(found)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_the_plain_name_and_try_sonames() {
        let names: Vec<String> = candidates("nvrtc").collect();
        assert_eq!(names[0], format!("{DLL_PREFIX}nvrtc{DLL_SUFFIX}"));
        assert!(names.contains(&format!("{DLL_PREFIX}nvrtc{DLL_SUFFIX}.13")));
        assert!(names.contains(&format!("{DLL_PREFIX}nvrtc{DLL_SUFFIX}.1")));
    }

    #[test]
    #[cfg_attr(miri, ignore = "dlopen is foreign code")]
    fn a_library_that_is_nowhere_is_not_usable() {
        assert!(!usable(&["dlmd_no_such_library"], b"dlmd_no_such_symbol\0"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(miri, ignore = "dlsym is foreign code")]
    fn a_linked_function_makes_its_library_usable() {
        // libc is linked into every Rust program on Linux.
        assert!(usable(&["dlmd_no_such_library"], b"malloc\0"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(miri, ignore = "dlsym is foreign code")]
    fn a_linked_function_is_found_and_a_missing_one_is_not() {
        type Malloc = unsafe extern "C" fn(usize) -> *mut core::ffi::c_void;
        // SAFETY: `Malloc` is `malloc`'s C signature; the pointer is not called.
        let malloc = unsafe { symbol::<Malloc>(&["dlmd_no_such_library"], b"malloc\0") };
        assert!(malloc.is_some());
        // SAFETY: nothing is found, so nothing is called.
        let missing = unsafe { symbol::<unsafe extern "C" fn()>(&["dlmd_no_such_library"], b"dlmd_no_such_symbol\0") };
        assert!(missing.is_none());
    }
}
