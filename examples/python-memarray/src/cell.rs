//! [`GilCell`]: a `RefCell` that only code holding the GIL reaches.

use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use std::cell::{Ref, RefCell, RefMut};

/// Data that only code holding the GIL touches, borrowed like a `RefCell` (a second mutable
/// borrow, say from a producer's Python code that calls back into the array while it is being
/// filled, is a `BufferError`, not undefined behaviour). Every access needs a `Python` token;
/// this module loads only into interpreters with a GIL (checked when it is imported), so the
/// GIL orders all of them, and a plain `RefCell` needs no atomic operations.
pub struct GilCell<T>(RefCell<T>);

// SAFETY: the value is reached only through `borrow`/`borrow_mut`, which take a `Python` token:
// the calling thread holds the GIL, and the GIL orders every access (see the type).
unsafe impl<T: Send> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub fn new(value: T) -> Self {
        Self(RefCell::new(value))
    }

    pub fn borrow<'a>(&'a self, _py: Python<'a>) -> PyResult<Ref<'a, T>> {
        self.0
            .try_borrow()
            .map_err(|_| PyBufferError::new_err("the MemArray is being changed"))
    }

    pub fn borrow_mut<'a>(&'a self, _py: Python<'a>) -> PyResult<RefMut<'a, T>> {
        self.0
            .try_borrow_mut()
            .map_err(|_| PyBufferError::new_err("the MemArray is in use"))
    }
}
