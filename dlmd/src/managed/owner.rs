//! Owned buffers that can back an exported tensor.

use crate::dtype::DlElement;
use std::boxed::Box;
use std::sync::Arc;
use std::vec::Vec;

/// An owned buffer that can back an exported tensor.
///
/// # Safety
///
/// `data_ptr` returns a pointer valid for `len()` initialised elements for as long as the owner
/// lives (moving the owner must not move the elements), writable unless `READ_ONLY`, and no
/// one else writes them. [`export`](super::export), which is safe, exports it as host memory:
/// an owner whose memory is another device's (a CUDA allocation) is never exported so, only
/// with the `unsafe` [`export_with`](super::export_with) (or `python::export_cuda`), whose
/// caller names that device.
pub unsafe trait TensorOwner: Send + 'static {
    /// The element type.
    type Elem: DlElement;
    /// Whether consumers must not write (a buffer others may share).
    const READ_ONLY: bool;
    /// The first element.
    fn data_ptr(&mut self) -> *mut Self::Elem;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// SAFETY: a `Vec`'s heap buffer does not move with the `Vec` and is owned by it.
unsafe impl<T: DlElement> TensorOwner for Vec<T> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.as_mut_ptr()
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

// SAFETY: as for `Vec`.
unsafe impl<T: DlElement> TensorOwner for Box<[T]> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.as_mut_ptr()
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

// SAFETY: the `Arc`'s allocation does not move and lives while this clone does; other clones
// may read it, so the tensor is exported read-only and no one writes through it.
unsafe impl<T: DlElement> TensorOwner for Arc<[T]> {
    type Elem = T;
    const READ_ONLY: bool = true;
    fn data_ptr(&mut self) -> *mut T {
        self.as_ptr().cast_mut()
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}
