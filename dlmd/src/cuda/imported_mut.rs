//! An import's tensor to change on the host: its mutable views and its write refusal, never the
//! tensor itself, which stays paired with the stream it was imported for.

use crate::import::ImportError;
use crate::managed::{ManagedTensor, TensorView};
use crate::view::AliasedMut;

/// The tensor of an [`Imported`](super::Imported), to change: made by
/// [`Imported::tensor_mut`](super::Imported::tensor_mut) while no launch holds it.
///
/// It reads as the [`ManagedTensor`] (`Deref`) and gives its read-write views
/// ([`view_mut`](Self::view_mut)), but not `&mut ManagedTensor`: the import vouches that its
/// tensor's data is ready on its stream, and a tensor swapped or replaced in place (another
/// import's, a fresh one) would be launched over on a stream that orders nothing for it.
///
/// ```no_run
/// # fn f(mut x: dlmd::cuda::Imported) -> Result<(), dlmd::ImportError> {
/// use dlmd::{Dims, HostMdspanAliasedMut};
/// // A CPU tensor, imported for work on the host: each element set to its index.
/// let mut tensor = x.tensor_mut().expect("no launch holds it");
/// let view = tensor.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
/// view.update(|index, _| index[0] as f32);
/// # Ok(()) }
/// # let _ = f;
/// ```
#[derive(Debug)]
pub struct ImportedMut<'a> {
    tensor: &'a mut ManagedTensor,
}

impl<'a> ImportedMut<'a> {
    pub(super) fn new(tensor: &'a mut ManagedTensor) -> Self {
        Self { tensor }
    }

    /// The tensor as the read-write view `V`, as [`ManagedTensor::view_mut`] gives it (and
    /// refuses it).
    pub fn view_mut<'b, V: TensorView<'b, Access = AliasedMut>>(&'b mut self) -> Result<V, ImportError> {
        self.tensor.view_mut()
    }

    /// Refuses mutable views of the tensor from now on, as [`ManagedTensor::refuse_writes`]
    /// does: `why` is the error's reason. Launches check it too: a kernel that writes the
    /// tensor is refused.
    pub fn refuse_writes(&mut self, why: &'static str) {
        self.tensor.refuse_writes(why);
    }
}

impl core::ops::Deref for ImportedMut<'_> {
    type Target = ManagedTensor;

    fn deref(&self) -> &ManagedTensor {
        self.tensor
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ImportParam, Imported};
    use crate::dlpack::{DLDevice, DLDeviceType, DLManagedTensorVersioned};
    use crate::exchange::WorkStream;
    use crate::import::ImportError;
    use crate::managed::{ManagedTensor, export};
    use crate::{DeviceMdspanMut, Dims, HostMdspanAliased, HostMdspanAliasedMut};

    /// A managed tensor of `values`, labelled as memory of `device_type`'s device 0.
    fn tensor_on(device_type: DLDeviceType, values: Vec<f32>) -> ManagedTensor {
        let n = values.len();
        let raw = export::<DLManagedTensorVersioned>(values, Dims::new([n])).unwrap();
        // SAFETY: a fresh export, not handed over yet: its fields are ours to set.
        unsafe {
            (*raw).dl_tensor.device = DLDevice {
                device_type,
                device_id: 0,
            };
        }
        // SAFETY: a valid managed tensor, handed over once.
        unsafe { ManagedTensor::from_raw(raw) }.unwrap()
    }

    fn tensor(values: Vec<f32>) -> ManagedTensor {
        tensor_on(DLDeviceType::CPU, values)
    }

    #[test]
    fn a_held_import_changes_through_its_views_and_a_lent_one_not_at_all() {
        // SAFETY: host memory nothing else reaches, and no launch is made over it.
        let mut held = unsafe { Imported::new(tensor(vec![0.0; 4]), WorkStream::DEFAULT) };
        {
            let mut t = held.tensor_mut().expect("no launch holds it");
            let view = t.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>().unwrap();
            view.update(|index, _| index[0] as f32);
            t.refuse_writes("its producer reads it");
            let e = t.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>().unwrap_err();
            assert_eq!(e, ImportError::WritesRefused("its producer reads it"));
        }
        let view = held.tensor().view::<HostMdspanAliased<'_, f32, Dims<1>>>().unwrap();
        assert_eq!([0, 1, 2, 3].map(|i| view.load([i])), [0.0, 1.0, 2.0, 3.0]);

        // A refusal made through `ImportedMut` holds for kernels too.
        // SAFETY: as above; its memory is never reached (no launch).
        let mut import = unsafe { Imported::new(tensor_on(DLDeviceType::CUDA, vec![0.0; 2]), WorkStream::DEFAULT) };
        import.tensor_mut().unwrap().refuse_writes("read only here");
        let e = <DeviceMdspanMut<'_, f32, Dims<1>> as ImportParam>::import(import.tensor()).unwrap_err();
        assert!(
            matches!(
                e,
                super::super::CudaError::Import(ImportError::WritesRefused("read only here"))
            ),
            "{e}"
        );

        // SAFETY: as above; an owner that keeps it is all `lent` adds.
        let mut lent = unsafe { Imported::lent(tensor(vec![1.0]), WorkStream::DEFAULT) };
        assert!(lent.tensor_mut().is_none());
    }
}
