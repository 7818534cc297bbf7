//! [candle](candle_core) 0.11 interop (feature `candle`): candle tensors as dlmd views and as
//! DLPack managed tensors without a copy, and DLPack tensors as candle tensors.
//!
//! | from | to | copies? |
//! |---|---|---|
//! | a CPU `Tensor`, any layout | a host view ([`Borrowed::host_view`]) | never: the view reads candle's storage |
//! | a `Tensor`, any layout | a [`DLManagedTensorVersioned`](crate::dlpack::DLManagedTensorVersioned) ([`export`]) | never: the tensor is kept alive until the deleter runs |
//! | a managed tensor that [`export`] made | a `Tensor` ([`import`]) | never: the same candle tensor comes back |
//! | any other CPU managed tensor | a CPU `Tensor` ([`import`]) | once, into candle's own storage (candle owns its memory as a `Vec`) |
//! | a CUDA `Tensor` (feature `candle-cuda`) | a device view (`Borrowed::device_view`) | never |
//! | a CUDA managed tensor (feature `candle-cuda`) | a CUDA `Tensor` ([`import`]) | once, on the device (candle frees its allocations itself and cannot hold another's) |
//!
//! Every candle dtype with a dlmd element type maps ([`CandleElement`], [`dl_dtype`]): `U8`,
//! `U32`, `I16`, `I32`, `I64`, `BF16`, `F16`, `F32`, `F64`, `F8E4M3` ([`F8E4M3FN`]),
//! `F8E8M0` ([`F8E8M0FNU`]) and `F4` (two values a byte, [`F4E2M1FNx2`], as torch's
//! `float4_e2m1fn_x2`). candle's `F6E2M3` and `F6E3M2` keep FP6 values packed four to three
//! bytes, which no dlmd element describes: they are refused ([`CandleError::Unsupported`]), as
//! are DLPack types candle has no dtype for ([`CandleError::NoCandleDtype`]).
//!
//! ## Who may write
//!
//! candle tensors share their storage (a `narrow`, a `transpose` or a clone is the same memory),
//! and candle writes in place (`slice_set`, `Var::set`, in-place custom ops). So:
//! - a view is read-only and holds candle's read lock ([`borrow`]): candle cannot write while
//!   it lives;
//! - an export is flagged `READ_ONLY`, and a legacy `DLManagedTensor`, which cannot say so, is
//!   not made. The consumer must not write, and code that keeps using candle must not write the
//!   tensor in place while the export lives (dlmd cannot hold candle's lock across threads).
//!   An in-place custom op that *replaces* the storage frees the memory under the consumer.
//!
//! ```
//! use candle_core::{Device, Tensor};
//! use dlmd::{Dims, LayoutRight, LayoutStride};
//!
//! let t = Tensor::arange(0f32, 12.0, &Device::Cpu)?.reshape((3, 4))?;
//! let borrowed = dlmd::candle::borrow(&t);
//! let view = borrowed.host_view::<f32, Dims<2>, LayoutRight>()?;
//! assert_eq!(view[[2, 1]], 9.0);
//!
//! // A transpose is a strided view of the same storage.
//! let tt = t.t()?;
//! let borrowed = dlmd::candle::borrow(&tt);
//! assert!(borrowed.host_view::<f32, Dims<2>, LayoutRight>().is_err());
//! let view = borrowed.host_view::<f32, Dims<2>, LayoutStride>()?;
//! assert_eq!(view[[1, 2]], 9.0);
//!
//! // Out as DLPack and back: the same tensor, no copy.
//! let raw = dlmd::candle::export(&tt)?;
//! // SAFETY: `raw` was just made by dlmd and is handed over here.
//! let managed = unsafe { dlmd::managed::ManagedTensor::from_raw(raw) }?;
//! let back = dlmd::candle::import(managed, &Device::Cpu)?;
//! assert_eq!(back.to_vec2::<f32>()?, tt.to_vec2::<f32>()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "candle-cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle-cuda")))]
pub mod cuda;
mod element;
mod export;
mod import;

use crate::dlpack::DLDataType;
use crate::extents::{Extents, IndexArray};
use crate::layout::{Layout, LayoutError, Mapping};
use crate::space::Host;
use crate::view::{Mdspan, Shared, ViewError};
#[cfg(doc)]
use crate::{F4E2M1FNx2, F8E4M3FN, F8E8M0FNU};
use candle_core::{DType, Storage, StorageRef, Tensor};

pub use element::CandleElement;
use element::Visit;
pub use export::export;
pub use import::{MAX_RANK, import};

/// Why a candle tensor and dlmd could not meet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CandleError {
    /// A candle dtype that no dlmd element type describes.
    #[error(
        "candle's {0:?} has no dlmd element type (candle packs FP6 values four to three bytes, which no dlmd element describes)"
    )]
    Unsupported(DType),
    /// A DLPack data type candle has no dtype for.
    #[error(
        "DLPack data type {0} has no candle dtype (candle has u8, u32, i16, i32, i64, bf16, f16, f32, f64, FP8 E4M3 and E8M0, and FP4)"
    )]
    NoCandleDtype(DLDataType),
    /// The tensor's dtype is not the view's element type.
    #[error("the tensor holds candle {found:?} elements, the view's element type is candle {wanted:?}")]
    Dtype {
        /// The tensor's dtype.
        found: DType,
        /// The dtype of the view's element type.
        wanted: DType,
    },
    /// The tensor's rank is not the view's.
    #[error("the tensor has rank {found}, the view rank {wanted}")]
    Rank {
        /// The tensor's rank.
        found: usize,
        /// The view's rank.
        wanted: usize,
    },
    /// The tensor lives where the view cannot reach.
    #[error("the tensor is on candle's {found} device, the view needs {wanted}")]
    Device {
        /// candle's device, as candle prints it.
        found: String,
        /// What the view needs.
        wanted: &'static str,
    },
    /// FP4 pairs are viewed only where two neighbouring values share each byte.
    #[error(
        "candle F4 tensors pack two values a byte: they are viewed and imported only contiguous (row-major), with an even last dimension and offset"
    )]
    PackedLayout,
    /// candle's layout reaches past its storage.
    #[error("candle's layout reaches element {end} of a storage of {len}")]
    OutOfStorage {
        /// One past the last element the layout reaches.
        end: usize,
        /// The storage's length, in elements.
        len: usize,
    },
    /// A tensor of more dimensions than an import handles.
    #[error("rank {0} is above the {max} dimensions an import into candle handles", max = MAX_RANK)]
    RankTooHigh(usize),
    /// The DLPack tensor's memory is not where the candle device asked for can take it.
    #[error(
        "memory of DLPack device type {0} cannot become a tensor on this candle device (the CPU takes memory the host reads; a CUDA device, with the `candle-cuda` feature, CUDA memory of its GPU)"
    )]
    ImportDevice(i32),
    /// A CUDA tensor to copy into candle is not row-major contiguous.
    #[error(
        "a CUDA tensor is copied into candle only when row-major contiguous (call `.contiguous()` on the producer's side)"
    )]
    NotContiguous,
    /// The CUDA driver refused.
    #[cfg(feature = "candle-cuda")]
    #[error(transparent)]
    Cuda(#[from] crate::cuda::CudaError),
    /// The extents or strides do not fit the view's types.
    #[error(transparent)]
    View(#[from] ViewError),
    /// The DLPack tensor could not be read.
    #[error(transparent)]
    Import(#[from] crate::import::ImportError),
    /// candle refused.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

impl From<LayoutError> for CandleError {
    fn from(e: LayoutError) -> Self {
        Self::View(e.into())
    }
}

impl From<crate::extents::ExtentsError> for CandleError {
    fn from(e: crate::extents::ExtentsError) -> Self {
        Self::View(e.into())
    }
}

/// The DLPack data type of candle's `dtype` (FP4 as two values a byte, `{FLOAT4_E2M1FN, 4, 2}`),
/// or [`CandleError::Unsupported`] for the packed FP6 dtypes.
pub fn dl_dtype(dtype: DType) -> Result<DLDataType, CandleError> {
    struct DlDtype;
    impl Visit for DlDtype {
        type Out = DLDataType;
        fn visit<T: CandleElement>(self) -> DLDataType {
            T::DTYPE
        }
    }
    element::visit(dtype, DlDtype)
}

/// candle's dtype for the DLPack data type `dtype`, or [`CandleError::NoCandleDtype`].
pub fn candle_dtype(dtype: DLDataType) -> Result<DType, CandleError> {
    element::ALL
        .iter()
        .copied()
        .find(|&d| dl_dtype(d).is_ok_and(|dl| dl == dtype))
        .ok_or(CandleError::NoCandleDtype(dtype))
}

/// candle's layout in units of `T`: shape, strides and the offset of index 0. FP4 pairs halve
/// the last dimension and need the row-major contiguity that makes that possible.
fn element_layout<T: CandleElement>(
    layout: &candle_core::Layout,
) -> Result<(Vec<usize>, Vec<isize>, usize), CandleError> {
    let mut shape = layout.dims().to_vec();
    let to_isize = |s: usize| isize::try_from(s).map_err(|_| LayoutError::SpanOverflow);
    if T::PER_ELEMENT == 1 {
        let strides = layout.stride().iter().map(|&s| to_isize(s)).collect::<Result<_, _>>()?;
        return Ok((shape, strides, layout.start_offset()));
    }
    let per = T::PER_ELEMENT;
    let last_even = shape.last().is_none_or(|&n| n.is_multiple_of(per));
    if !layout.is_contiguous() || !last_even || !layout.start_offset().is_multiple_of(per) {
        return Err(CandleError::PackedLayout);
    }
    if let Some(n) = shape.last_mut() {
        *n /= per;
    }
    let mut strides = vec![0isize; shape.len()];
    let mut step = 1usize;
    for (d, &n) in shape.iter().enumerate().rev() {
        strides[d] = to_isize(step)?;
        step = step.saturating_mul(n.max(1));
    }
    Ok((shape, strides, layout.start_offset() / per))
}

/// The mapping of candle's `layout` as `T` elements in `L` with extents `E`, checked to stay
/// inside a storage of `len` elements; with the offset of index 0.
fn candle_mapping<T, E, L>(layout: &candle_core::Layout, len: usize) -> Result<(L::Mapping<E>, usize), CandleError>
where
    T: CandleElement,
    E: Extents,
    L: Layout,
{
    let rank = layout.dims().len();
    if rank != E::RANK {
        return Err(CandleError::Rank {
            found: rank,
            wanted: E::RANK,
        });
    }
    let (shape, strides, offset) = element_layout::<T>(layout)?;
    let mut index = <E::Index as IndexArray>::zeros();
    let mut step = <E::Index as IndexArray>::isize_zeros();
    index.as_mut().copy_from_slice(&shape);
    step.as_mut().copy_from_slice(&strides);
    let extents = E::from_array(index)?;
    let mapping = L::Mapping::from_strides(extents, &step, 0)?;
    let span = mapping.required_span_size();
    let end = offset.checked_add(span).ok_or(LayoutError::SpanOverflow)?;
    if span > 0 && end > len {
        return Err(CandleError::OutOfStorage { end, len });
    }
    Ok((mapping, offset))
}

/// A candle tensor's storage held for reading: views of it borrow this, and candle cannot
/// write the storage (in place) while it lives. Made by [`borrow`].
pub struct Borrowed<'t> {
    storage: StorageRef<'t>,
    layout: &'t candle_core::Layout,
    dtype: DType,
}

impl core::fmt::Debug for Borrowed<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Borrowed")
            .field("dtype", &self.dtype)
            .field("layout", self.layout)
            .finish()
    }
}

/// Holds `tensor`'s storage for reading (candle's read lock), to view it.
///
/// A thread that holds it and then asks candle to write the same storage in place (`slice_set`
/// on a tensor sharing it) waits for itself: drop the views and this first.
pub fn borrow(tensor: &Tensor) -> Borrowed<'_> {
    let (storage, layout) = tensor.storage_and_layout();
    Borrowed {
        storage,
        layout,
        dtype: tensor.dtype(),
    }
}

impl Borrowed<'_> {
    /// candle's dtype of the tensor.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// candle's layout of the tensor (shape, strides and start offset, in elements).
    pub fn layout(&self) -> &candle_core::Layout {
        self.layout
    }

    /// A read-only host view of a CPU tensor: element type `T` (its candle dtype must be the
    /// tensor's), extents `E` (static ones checked), layout `L` (checked against candle's strides:
    /// a contiguous tensor fits [`LayoutRight`](crate::LayoutRight), a transposed or narrowed one
    /// [`LayoutStride`](crate::LayoutStride), a broadcast one only
    /// [`LayoutStrideRelaxed`](crate::LayoutStrideRelaxed)).
    pub fn host_view<T, E, L>(&self) -> Result<Mdspan<'_, T, E, L, Host, Shared>, CandleError>
    where
        T: CandleElement,
        E: Extents,
        L: Layout,
    {
        self.check_dtype::<T>()?;
        let Storage::Cpu(cpu) = &*self.storage else {
            return Err(CandleError::Device {
                found: format!("{:?}", self.storage.device().location()),
                wanted: "the CPU",
            });
        };
        let Some((start, len)) = T::cpu_parts(cpu) else {
            return Err(CandleError::Dtype {
                found: self.dtype,
                wanted: T::CANDLE_DTYPE,
            });
        };
        let (mapping, offset) = candle_mapping::<T, E, L>(self.layout, len)?;
        let ptr = start.cast::<T>().cast_mut().wrapping_add(offset);
        // SAFETY: candle's storage of `T::CANDLE_DTYPE` is a `Vec` of `len` values with `T`'s size,
        // alignment and bit patterns (`CandleElement`); index 0 sits `offset` elements in and
        // every index stays below `len` (checked by `candle_mapping`). The read lock held by
        // `self` keeps the `Vec` alive and unwritten for the view's borrow of `self`.
        Ok(unsafe { Mdspan::from_raw_parts(ptr, mapping, Host) })
    }

    fn check_dtype<T: CandleElement>(&self) -> Result<(), CandleError> {
        if self.dtype == T::CANDLE_DTYPE {
            Ok(())
        } else {
            Err(CandleError::Dtype {
                found: self.dtype,
                wanted: T::CANDLE_DTYPE,
            })
        }
    }
}
