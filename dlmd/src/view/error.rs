//! Why a view cannot be made over some memory.

use crate::extents::ExtentsError;
use crate::layout::LayoutError;

/// Why a view cannot be made over some memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The slice is shorter than the span the mapping needs.
    #[error("the mapping needs {needed} elements but the slice holds {len}")]
    SliceTooShort {
        /// Elements the mapping reaches.
        needed: usize,
        /// Elements in the slice.
        len: usize,
    },
    /// The mapping is invalid, or aliases where a mutable view must not.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The extents do not fit the static extents of the target type.
    #[error(transparent)]
    Extents(#[from] ExtentsError),
    /// The span in bytes does not fit in `isize`.
    #[error("the view spans more bytes than isize can count")]
    ByteSpanOverflow,
}
