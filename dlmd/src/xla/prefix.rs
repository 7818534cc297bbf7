//! XLA's structs read as far as their sizes say: a struct of an older version is shorter than
//! this one's, and its missing fields read as zero (NULL, `None`, 0), never past its end.

use super::ffi;
use core::mem::{MaybeUninit, size_of};

/// A C struct whose first field is its `size_t struct_size`.
///
/// # Safety
///
/// Its first field is a `usize` holding the size; every field is an integer (or an integer
/// newtype), a raw pointer, an `Option` of a function pointer, or a struct of those: all-zero
/// bytes, and any bytes a C side writes in its place, are a valid value.
pub(crate) unsafe trait Prefixed: Sized {}

// SAFETY: each starts with `struct_size` and holds integers, pointers, `Option`s of function
// pointers and structs of those (`ffi`'s definitions).
unsafe impl Prefixed for ffi::CallFrame {}
// SAFETY: as above.
unsafe impl Prefixed for ffi::Api {}
// SAFETY: as above.
unsafe impl Prefixed for ffi::Buffer {}
// SAFETY: as above.
unsafe impl Prefixed for ffi::ExtensionBase {}
// SAFETY: as above (its first field is an `ExtensionBase`, whose first is the size).
unsafe impl Prefixed for ffi::MetadataExtension {}

/// The struct at `p`, copied as far as its `struct_size` says (at most this version's size),
/// the rest zero; `None` for NULL.
///
/// # Safety
///
/// `p` is NULL, or points to a struct whose first `usize` is readable and holds its size, and
/// whose first `struct_size` bytes are readable.
pub(crate) unsafe fn read<T: Prefixed>(p: *const T) -> Option<T> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the size is the struct's first field, readable (the caller); read without
    // assuming the rest of `T` is there.
    let size = unsafe { p.cast::<usize>().read_unaligned() };
    let mut out = MaybeUninit::<T>::zeroed();
    // SAFETY: `min(size, size_of::<T>())` bytes are readable at `p` (the caller) and writable in
    // `out`; the two do not overlap.
    unsafe { core::ptr::copy_nonoverlapping(p.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), size.min(size_of::<T>())) };
    // SAFETY: zero bytes, partly overwritten by the C side's, are a valid `T` (`Prefixed`).
    Some(unsafe { out.assume_init() })
}
