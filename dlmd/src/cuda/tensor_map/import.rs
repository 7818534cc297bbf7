//! Imported tensors as tensor-map parameters: `Imported::arg` encodes the map of a framework's
//! tensor on the host, as [`TiledMap::new`](super::TiledMap::new) does for a view, for a launch
//! on the producer's stream.

use super::encode_view;
use crate::cuda::CudaError;
use crate::cuda::imported::{ImportParam, sealed};
use crate::dlpack::DLDataTypeCode;
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::{Dims, Extents};
use crate::import::ImportError;
use crate::kernel::swizzle::Swizzle;
use crate::kernel::tensor_map::{TensorMap, TensorMapParam};
use crate::kernel::{Footprint, Use};
use crate::layout::{LayoutStride, Mapping};
use crate::managed::ManagedTensor;
use crate::space::Device;
use crate::view::Aliased;

impl<T, B, S, const RANK: usize> sealed::Sealed for TensorMap<'_, T, B, S, RANK> {}

/// An imported tensor of rank `RANK` as a tensor map: the tensor is viewed as any import is
/// (element type, rank, memory space, strides within its span), read only, and its map is
/// encoded under the copy engine's rules (a row-major tensor whose rows and batches lie
/// 16-byte multiples apart, forwards).
impl<T, B, S, const RANK: usize> ImportParam for TensorMap<'_, T, B, S, RANK>
where
    T: DlElement,
    T::Storage: PlainStorage,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    fn import(tensor: &ManagedTensor) -> Result<(TensorMapParam<RANK>, Footprint, i32), CudaError> {
        // The copy engine moves bytes, but the kernel then reads them as `T`: a `bool` byte
        // other than 0 or 1 would be undefined behaviour there, and no check can see it.
        if T::DTYPE.code == DLDataTypeCode::BOOL.0 {
            return Err(ImportError::UncheckedBool { dtype: T::DTYPE }.into());
        }
        let view = tensor.view_as::<T, Dims<RANK>, LayoutStride, Device, Aliased>()?;
        let (param, _) = encode_view::<T, B, S, _, _, _, RANK>(&view)?;
        let footprint = Footprint {
            start: view.data_handle() as usize,
            // A mapping's span is memory that exists: its bytes fit `usize`.
            bytes: view.mapping().required_span_size() * size_of::<T>(),
            used: Use::Read,
        };
        Ok((param, footprint, view.space().ordinal()))
    }

    fn import_bool_bytes(tensor: &ManagedTensor) -> Result<(TensorMapParam<RANK>, Footprint, i32), CudaError> {
        // A map's copies land in shared memory as `T`; a `bool` tensor's bytes have no map here.
        Err(ImportError::DataType {
            expected: T::DTYPE,
            found: tensor.dl_tensor().dtype,
        }
        .into())
    }
}
