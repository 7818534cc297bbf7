//! Imported tensors as tensor-map parameters: `Imported::arg` encodes the map of a framework's
//! tensor on the host, as [`TiledMap::new`](super::TiledMap::new) does for a view, for a launch
//! on the producer's stream.

use super::encode_view;
use crate::cuda::CudaError;
use crate::cuda::imported::{ImportParam, footprint, sealed};
use crate::dlpack::DLDataTypeCode;
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::{Dims, Extents};
use crate::import::ImportError;
use crate::kernel::swizzle::Swizzle;
use crate::kernel::tensor_map::{TensorMap, TensorMapParam};
use crate::kernel::{Footprint, Use};
use crate::layout::LayoutStride;
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
        Ok((param, footprint(&view, Use::Read), view.space().ordinal()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::TensorMapError;
    use crate::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned};
    use crate::half::bf16;
    use crate::kernel::swizzle::Swizzle128;
    use crate::managed::export;
    use crate::{Const, Dims};

    /// The map of 64-row tiles of `(…, rows, 64)` `bf16`s the tests ask for.
    type Map<const RANK: usize> = TensorMap<'static, bf16, (Const<64>, Const<64>), Swizzle128, RANK>;

    /// A managed tensor labelled as memory of CUDA device 0 at the 16-aligned address `0x1000`,
    /// with `shape` and `strides` (in elements), as a producer hands one over: the import and the
    /// map's rules read its fields, never its memory. `strides` must live as long as the tensor.
    fn on_device<T: DlElement + Default + Clone>(shape: [usize; 4], strides: &'static [i64; 4]) -> ManagedTensor {
        let raw =
            export::<DLManagedTensorVersioned>(vec![T::default(); shape.iter().product()], Dims::new(shape)).unwrap();
        // SAFETY: a fresh export, not handed over yet: its fields are ours to set.
        let t = unsafe { &mut (*raw).dl_tensor };
        t.device = DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: 0,
        };
        t.data = 0x1000 as *mut core::ffi::c_void;
        // `strides` outlives the tensor (`'static`).
        t.strides = strides.as_ptr().cast_mut();
        // SAFETY: a valid managed tensor, handed over once.
        unsafe { ManagedTensor::from_raw(raw) }.unwrap()
    }

    #[test]
    fn an_import_that_breaks_a_copy_engine_rule_is_refused_by_the_rule() {
        // (b, s, h, d) = (1, 4, 2, 64) seen as (b, h, s, d): rows 128 elements apart.
        static TOKENS: [i64; 4] = [512, 64, 128, 1];
        // Each row's elements two apart.
        static SPREAD: [i64; 4] = [1024, 512, 128, 2];
        // Rows 65 elements (130 bytes) apart.
        static ODD_ROWS: [i64; 4] = [520, 260, 65, 1];
        let rule = |strides: &'static [i64; 4]| {
            let tensor = on_device::<bf16>([1, 2, 4, 64], strides);
            // Past the rules, the driver encodes the map (or, with none here, refuses).
            match <Map<4> as ImportParam>::import(&tensor) {
                Err(CudaError::TensorMap(e)) => Some(e),
                _ => None,
            }
        };
        assert!(matches!(
            rule(&SPREAD),
            Some(TensorMapError::InnerStride { dim: 3, stride: 2 })
        ));
        assert!(matches!(
            rule(&ODD_ROWS),
            Some(TensorMapError::RowStride { bytes: 130, .. })
        ));
        // (The driver is a foreign library, which Miri cannot run.)
        if !cfg!(miri) {
            assert!(rule(&TOKENS).is_none_or(|e| matches!(e, TensorMapError::Driver(_))));
        }
    }

    #[test]
    fn an_import_of_another_type_or_rank_or_bools_is_refused_before_any_map() {
        static ROW_MAJOR: [i64; 4] = [512, 256, 64, 1];
        let halves = on_device::<crate::half::f16>([1, 2, 4, 64], &ROW_MAJOR);
        let e = <Map<4> as ImportParam>::import(&halves).unwrap_err();
        assert!(
            matches!(e, CudaError::Import(ImportError::DataType { expected, .. }) if expected == bf16::DTYPE),
            "{e}"
        );
        let tensor = on_device::<bf16>([1, 2, 4, 64], &ROW_MAJOR);
        let e = <Map<3> as ImportParam>::import(&tensor).unwrap_err();
        assert!(matches!(e, CudaError::Import(ImportError::Rank { .. })), "{e}");
        static BOOL_ROWS: [i64; 4] = [1024, 512, 128, 1];
        let bools = on_device::<bool>([1, 2, 4, 128], &BOOL_ROWS);
        type Bools = TensorMap<'static, bool, (Const<64>, Const<128>), Swizzle128, 4>;
        let e = <Bools as ImportParam>::import(&bools).unwrap_err();
        assert!(matches!(e, CudaError::Import(ImportError::UncheckedBool { .. })), "{e}");
        let e = <Map<4> as ImportParam>::import_bool_bytes(&bools).unwrap_err();
        let found = DLDataType::new(crate::dlpack::DLDataTypeCode::BOOL, 8, 1);
        assert!(
            matches!(e, CudaError::Import(ImportError::DataType { found: f, .. }) if f == found),
            "{e}"
        );
    }
}
