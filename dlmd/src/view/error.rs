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

/// An index outside a view's extents: the first dimension where it is, as
/// [`checked_load`](crate::Mdspan::checked_load) and [`checked_store`](crate::Mdspan::checked_store)
/// report it (Python's `IndexError` with the `python` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("index {index} is out of bounds for dimension {dimension} of extent {extent}")]
pub struct OutOfBounds {
    /// The dimension.
    pub dimension: usize,
    /// The index given along it.
    pub index: usize,
    /// The extent there.
    pub extent: usize,
}

impl OutOfBounds {
    /// The first dimension where `index` is outside `extents`, if any.
    pub(crate) fn find(index: &[usize], extents: &[usize]) -> Option<Self> {
        index
            .iter()
            .zip(extents)
            .enumerate()
            .find(|(_, (i, e))| i >= e)
            .map(|(dimension, (&index, &extent))| Self {
                dimension,
                index,
                extent,
            })
    }
}
