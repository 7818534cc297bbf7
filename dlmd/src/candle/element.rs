//! The candle dtypes dlmd maps, written once: each one's dlmd element type, candle's dtype,
//! how candle stores it (CPU and CUDA), and the dispatch from a run-time dtype to code generic
//! over the element type ([`visit`]).

use super::CandleError;
use crate::dtype::DlElement;
use crate::{F4E2M1FNx2, F8E4M3FN, F8E8M0FNU};
use candle_core::{CpuStorage, DType};
use half::{bf16, f16};
use std::vec::Vec;

mod sealed {
    pub trait Sealed {}
}

/// A dlmd element type that candle stores bit for bit: candle's storage of
/// [`CANDLE_DTYPE`](Self::CANDLE_DTYPE) is an array of `Self`. Implemented by dlmd for every
/// candle dtype it maps (see the [module docs](super)); sealed, since views trust it.
pub trait CandleElement: DlElement + sealed::Sealed {
    /// candle's dtype.
    const CANDLE_DTYPE: DType;
    /// candle elements per `Self`: 2 for FP4 pairs, whose candle shape counts values and dlmd's
    /// bytes.
    const PER_ELEMENT: usize;
    /// The type candle's storage holds, of `Self`'s size and bits.
    #[doc(hidden)]
    type Stored: Stored;

    /// candle's CPU storage of `values`.
    #[doc(hidden)]
    fn cpu_storage(values: Vec<Self>) -> CpuStorage;

    /// The start and length (in elements) of `storage` where it holds this dtype.
    #[doc(hidden)]
    fn cpu_parts(storage: &CpuStorage) -> Option<(*const u8, usize)>;

    /// candle's CUDA storage of `slice`.
    #[cfg(feature = "candle-cuda")]
    #[doc(hidden)]
    fn cuda_storage(slice: cudarc::driver::CudaSlice<Self::Stored>) -> candle_core::cuda_backend::CudaStorageSlice;

    /// The device pointer, length (in elements) and ordinal of `storage` where it holds this
    /// dtype.
    #[cfg(feature = "candle-cuda")]
    #[doc(hidden)]
    fn cuda_parts(
        storage: &candle_core::cuda_backend::CudaStorageSlice,
    ) -> Option<(cudarc::driver::sys::CUdeviceptr, usize, usize)>;
}

/// What candle's storage holds: plain values, which the CUDA side allocates and copies.
#[doc(hidden)]
#[cfg(feature = "candle-cuda")]
pub trait Stored: Copy + 'static + cudarc::driver::DeviceRepr {}
#[cfg(feature = "candle-cuda")]
impl<T: Copy + 'static + cudarc::driver::DeviceRepr> Stored for T {}
/// What candle's storage holds: plain values.
#[doc(hidden)]
#[cfg(not(feature = "candle-cuda"))]
pub trait Stored: Copy + 'static {}
#[cfg(not(feature = "candle-cuda"))]
impl<T: Copy + 'static> Stored for T {}

/// Code generic over a candle element type, run by [`visit`] for a dtype known at run time.
pub(super) trait Visit {
    /// What the code returns.
    type Out;
    /// Runs the code for element type `T`.
    fn visit<T: CandleElement>(self) -> Self::Out;
}

/// The pointer, length and ordinal of a cudarc slice.
#[cfg(feature = "candle-cuda")]
fn slice_parts<T>(slice: &cudarc::driver::CudaSlice<T>) -> (cudarc::driver::sys::CUdeviceptr, usize, usize) {
    use cudarc::driver::DevicePtr;
    let (ptr, _record) = slice.device_ptr(slice.stream());
    (ptr, slice.len(), slice.ordinal())
}

macro_rules! candle_elements {
    ($($t:ty => $variant:ident, per $per:literal, stored $stored:ty, as $to:expr;)*) => {
        $(
            impl sealed::Sealed for $t {}
            impl CandleElement for $t {
                const CANDLE_DTYPE: DType = DType::$variant;
                const PER_ELEMENT: usize = $per;
                type Stored = $stored;

                fn cpu_storage(values: Vec<Self>) -> CpuStorage {
                    CpuStorage::$variant(values.into_iter().map($to).collect())
                }

                fn cpu_parts(storage: &CpuStorage) -> Option<(*const u8, usize)> {
                    match storage {
                        CpuStorage::$variant(v) => Some((v.as_ptr().cast::<u8>(), v.len())),
                        _ => None,
                    }
                }

                #[cfg(feature = "candle-cuda")]
                fn cuda_storage(
                    slice: cudarc::driver::CudaSlice<$stored>,
                ) -> candle_core::cuda_backend::CudaStorageSlice {
                    candle_core::cuda_backend::CudaStorageSlice::$variant(slice)
                }

                #[cfg(feature = "candle-cuda")]
                fn cuda_parts(
                    storage: &candle_core::cuda_backend::CudaStorageSlice,
                ) -> Option<(cudarc::driver::sys::CUdeviceptr, usize, usize)> {
                    match storage {
                        candle_core::cuda_backend::CudaStorageSlice::$variant(s) => Some(slice_parts(s)),
                        _ => None,
                    }
                }
            }
        )*

        /// Every candle dtype dlmd maps.
        pub(super) const ALL: &[DType] = &[$(DType::$variant),*];

        /// Runs `code` for the element type of candle's `dtype`, or [`CandleError::Unsupported`]
        /// for the packed FP6 dtypes.
        pub(super) fn visit<V: Visit>(dtype: DType, code: V) -> Result<V::Out, CandleError> {
            match dtype {
                $(DType::$variant => Ok(code.visit::<$t>()),)*
                other => Err(CandleError::Unsupported(other)),
            }
        }
    };
}

candle_elements! {
    u8 => U8, per 1, stored u8, as |x| x;
    u32 => U32, per 1, stored u32, as |x| x;
    i16 => I16, per 1, stored i16, as |x| x;
    i32 => I32, per 1, stored i32, as |x| x;
    i64 => I64, per 1, stored i64, as |x| x;
    bf16 => BF16, per 1, stored bf16, as |x| x;
    f16 => F16, per 1, stored f16, as |x| x;
    f32 => F32, per 1, stored f32, as |x| x;
    f64 => F64, per 1, stored f64, as |x| x;
    F8E4M3FN => F8E4M3, per 1, stored float8::F8E4M3, as |x: F8E4M3FN| float8::F8E4M3::from_bits(x.to_bits());
    F8E8M0FNU => F8E8M0, per 1, stored u8, as F8E8M0FNU::to_bits;
    F4E2M1FNx2 => F4, per 2, stored u8, as F4E2M1FNx2::to_bits;
}

// candle stores each as `Self`'s bytes: the same size, so device copies count alike.
const _: () = {
    assert!(size_of::<float8::F8E4M3>() == size_of::<F8E4M3FN>());
    assert!(size_of::<u8>() == size_of::<F8E8M0FNU>() && size_of::<u8>() == size_of::<F4E2M1FNx2>());
};
