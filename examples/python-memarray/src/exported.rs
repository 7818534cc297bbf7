//! The owner of an exported tensor, and the count of a MemArray's exports consumers hold.

use crate::array::MemArray;
use dlmd::DlElement;
use dlmd::managed::TensorOwner;
use dlmd::python::PyKeepAlive;
use pyo3::prelude::*;
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

/// The number of a MemArray's exports that consumers hold, touched only with the GIL held: in
/// `__dlpack__`, in `MemArray::data_mut` and the `exports` getter, and when an export is
/// released (`PyKeepAlive::release_with`). This module is built for the stable ABI, which loads
/// only into interpreters with a GIL (checked when the module is imported), so the GIL orders
/// every access and a plain cell does.
#[derive(Default)]
pub struct ExportCount(Cell<usize>);

// SAFETY: every access holds the GIL (see the type), which orders them.
unsafe impl Sync for ExportCount {}

impl ExportCount {
    pub fn get(&self) -> usize {
        self.0.get()
    }
}

/// The owner of an exported MemArray tensor, of the host buffer or of the device copy: keeps the
/// MemArray alive and unchangeable from Rust until the consumer releases it.
pub struct Exported<T> {
    ptr: *mut T,
    len: usize,
    /// The MemArray's count of exports held by consumers, counting this one. It points into the
    /// MemArray's `Arc` rather than sharing it: `array` keeps the MemArray, and so the counter,
    /// alive.
    exports: NonNull<ExportCount>,
    /// Released on any thread, at once (consumers release tensors from anywhere).
    array: ManuallyDrop<PyKeepAlive>,
}

impl<T> Exported<T> {
    /// An owner of `len` elements at `ptr` in `array`, whose export counter is `exports`.
    pub fn new(ptr: *mut T, len: usize, array: Bound<'_, MemArray>, exports: &Arc<ExportCount>) -> Self {
        // The GIL is held: `array` is bound.
        exports.0.set(exports.get() + 1);
        Self {
            ptr,
            len,
            exports: NonNull::from(&**exports),
            array: ManuallyDrop::new(PyKeepAlive::new(array.into_any())),
        }
    }
}

impl<T> Drop for Exported<T> {
    fn drop(&mut self) {
        let exports = self.exports;
        // SAFETY: `array` is not used again after this.
        let array = unsafe { ManuallyDrop::take(&mut self.array) };
        array.release_with(|_| {
            // SAFETY: the counter is alive until the reference `array` holds is released,
            // after this; the GIL is held.
            let exports = unsafe { exports.as_ref() };
            exports.0.set(exports.get() - 1);
        });
    }
}

// SAFETY: the pointer is into the MemArray's buffer, which `array` keeps alive and the count of
// exports keeps from being reallocated or written from Rust; the counter is changed only with
// the GIL held; `PyKeepAlive` may be released on any thread.
unsafe impl<T: DlElement> Send for Exported<T> {}

// SAFETY: `ptr` stays valid for `len` elements for as long as this owner lives (see `Send`), and
// its address does not depend on where the owner moves.
unsafe impl<T: DlElement> TensorOwner for Exported<T> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}
