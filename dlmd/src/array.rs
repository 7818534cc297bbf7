//! [`Array`]: an owned n-dimensional host array that views, and exports as a managed tensor,
//! without copying.

use crate::dlpack::{DLDevice, ManagedTensorAbi};
use crate::dtype::DlElement;
use crate::export::ExportError;
use crate::extents::{Extents, IndexArray};
use crate::layout::{CompactLayout, LayoutRight, Mapping};
use crate::managed::export_with;
use crate::space::Host;
use crate::view::{HostMdspan, HostMdspanMut, Mdspan, ViewError};
use std::vec::Vec;

/// An owned n-dimensional host array: a `Vec` with extents and a compact layout.
///
/// ```
/// use dlmd::Array;
/// use dlmd::{Const, Dyn};
///
/// let mut a = Array::<f64, (Const<2>, Dyn)>::zeros((Const, Dyn(3))).unwrap();
/// a.view_mut()[[1, 2]] = 4.0;
/// assert_eq!(a.view()[[1, 2]], 4.0);
/// assert_eq!(a.as_slice()[5], 4.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Array<T, E: Extents, L: CompactLayout = LayoutRight> {
    data: Vec<T>,
    mapping: L::Mapping<E>,
}

impl<T: DlElement, E: Extents, L: CompactLayout> Array<T, E, L> {
    /// An array of `extents` filled with `T::default()`.
    pub fn zeros(extents: E) -> Result<Self, ViewError>
    where
        T: Default,
    {
        let mapping = L::mapping(extents)?;
        Ok(Self {
            data: vec![T::default(); mapping.required_span_size()],
            mapping,
        })
    }

    /// An array over `data` with `extents`; the lengths must agree.
    pub fn from_vec(data: Vec<T>, extents: E) -> Result<Self, ViewError> {
        let mapping = L::mapping(extents)?;
        let needed = mapping.required_span_size();
        if data.len() != needed {
            return Err(ViewError::SliceTooShort {
                needed,
                len: data.len(),
            });
        }
        Ok(Self { data, mapping })
    }

    /// The extents.
    pub fn extents(&self) -> &E {
        self.mapping.extents()
    }

    /// The elements in layout order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements in layout order, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// A read-only view.
    pub fn view(&self) -> HostMdspan<'_, T, E, L> {
        // SAFETY: the vector holds exactly the mapping's span, borrowed for the view.
        unsafe { Mdspan::from_raw_parts(self.data.as_ptr().cast_mut(), self.mapping, Host) }
    }

    /// A read-write view.
    pub fn view_mut(&mut self) -> HostMdspanMut<'_, T, E, L> {
        // SAFETY: as in `view`; compact mappings are unique and the vector is borrowed mutably.
        unsafe { Mdspan::from_raw_parts(self.data.as_mut_ptr(), self.mapping, Host) }
    }

    /// The vector, giving up the shape.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
}

impl<T: DlElement, E: Extents> Array<T, E, LayoutRight> {
    /// Exports the array as a managed tensor of kind `M` (see [`export`](crate::managed::export)):
    ///
    /// ```
    /// use dlmd::dlpack::DLManagedTensorVersioned;
    /// use dlmd::managed::ManagedTensor;
    /// use dlmd::{Array, Dims, HostMdspanAliased, LayoutRight};
    ///
    /// let a = Array::<i32, Dims<1>>::from_vec(vec![1, 2, 3], Dims::new([3])).unwrap();
    /// let raw = a.into_dlpack::<DLManagedTensorVersioned>().unwrap();
    /// // SAFETY: `raw` was just produced by dlmd and is handed over.
    /// let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    /// assert_eq!(tensor.view::<HostMdspanAliased<'_, i32, Dims<1>, LayoutRight>>().unwrap().load([2]), 3);
    /// ```
    pub fn into_dlpack<M: ManagedTensorAbi>(self) -> Result<*mut M, ExportError> {
        let extents = *self.extents();
        // SAFETY: an array's data is a `Vec` on the host, exported as host memory.
        unsafe { export_with(self.data, extents, 0, DLDevice::CPU) }
    }
}

impl<T: DlElement, E: Extents, L: CompactLayout> Array<T, E, L> {
    /// The strides, in elements.
    pub fn strides(&self) -> <E::Index as IndexArray>::Isize {
        self.mapping.strides()
    }
}
