//! `DLTensor` → view: [`Mdspan::from_dlpack`], one entry for every view type, whose type says
//! what is checked (CCCL's `cuda::to_host_mdspan` is `HostMdspan::<T, E, L>::from_dlpack`,
//! `to_device_mdspan` is `DeviceMdspan`'s, `to_managed_mdspan` is `ManagedMdspan`'s; an
//! owned [`ManagedTensor`](crate::managed::ManagedTensor) is viewed with its `view` and
//! `view_mut`, which take the same view types).
//!
//! The import is `unsafe` only because a `DLTensor` cannot prove its pointers valid. Every
//! other property is checked, and each failure is its own [`ImportError`]:
//!
//! - the device type (and for device views, a non-negative ordinal);
//! - `ndim` against the view's rank, the data type against the element type;
//! - NULL `shape` (rank > 0), negative extents, static extents;
//! - NULL `data` with elements (NULL `data` with no elements is accepted);
//! - `byte_offset` a multiple of the element size, and `data + byte_offset` aligned;
//! - NULL `strides`: compact row-major for a tensor older than DLPack 1.2 or of unknown version,
//!   refused for 1.2 and later;
//! - strides against the layout (strides of dimensions of extent ≤ 1 are ignored, as numpy and
//!   PyTorch emit arbitrary ones there), positive strides for `layout_stride`, no overlap for a
//!   mutable view, negative strides that would reach address 0 or below; strides of a tensor
//!   without elements are not checked (they describe nothing);
//! - element counts and byte spans that overflow `isize`;
//! - `bool` elements of host-readable memory that are not 0 or 1.
//!
//! ```
//! use dlmd::dlpack::{DLDataType, DLDataTypeCode, DLDevice, DLTensor};
//! use dlmd::{Dims, HostMdspan, LayoutRight};
//!
//! let mut data = [1i32, 2, 3, 4, 5, 6];
//! let mut shape = [2i64, 3];
//! let mut strides = [3i64, 1];
//! let t = DLTensor {
//!     data: data.as_mut_ptr().cast(),
//!     device: DLDevice::CPU,
//!     ndim: 2,
//!     dtype: DLDataType::new(DLDataTypeCode::INT, 32, 1),
//!     shape: shape.as_mut_ptr(),
//!     strides: strides.as_mut_ptr(),
//!     byte_offset: 0,
//! };
//! // SAFETY: `t` describes `data`, which outlives the view and is not written meanwhile.
//! let md = unsafe { HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
//! assert_eq!(md[[1, 2]], 6);
//! ```

use crate::dlpack::{DLDataType, DLDataTypeCode, DLPackVersion, DLTensor};
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::{Extents, ExtentsError, IndexArray};
use crate::layout::{Layout, LayoutError, Mapping, compact_strides, for_each_reached, negative_reach};
use crate::space::{MemorySpace, SpaceError};
use crate::view::{Access, Mdspan};
use core::ptr::NonNull;

/// Why a `DLTensor` cannot be viewed as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The tensor lives on a device this kind of view cannot reach, or on a negative ordinal.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// `ndim` differs from the view's rank.
    #[error("ndim {found} does not match the view's rank {expected}")]
    Rank {
        /// The view's rank.
        expected: usize,
        /// The tensor's `ndim`.
        found: i32,
    },
    /// The data type differs from the element type's.
    #[error(
        "data type {found} (code {}, bits {}, lanes {}) does not match the element type's {expected}",
        found.code, found.bits, found.lanes
    )]
    DataType {
        /// The element type's data type.
        expected: DLDataType,
        /// The tensor's data type.
        found: DLDataType,
    },
    /// `data` is NULL but the tensor has elements.
    #[error("data is NULL but the tensor has {elements} elements")]
    NullData {
        /// The number of elements.
        elements: usize,
    },
    /// `shape` is NULL for a tensor of rank > 0.
    #[error("shape is NULL for a tensor of ndim {ndim}")]
    NullShape {
        /// The tensor's `ndim`.
        ndim: i32,
    },
    /// An extent is negative.
    #[error("extent {extent} of dimension {dim} is negative")]
    NegativeExtent {
        /// The dimension.
        dim: usize,
        /// The extent.
        extent: i64,
    },
    /// An extent differs from the view type's static extent.
    #[error(transparent)]
    StaticExtent(#[from] ExtentsError),
    /// `byte_offset` is not a multiple of the element size.
    #[error("byte_offset {byte_offset} is not a multiple of the element size {element_size}")]
    ByteOffset {
        /// The tensor's `byte_offset`.
        byte_offset: u64,
        /// The element size in bytes.
        element_size: usize,
    },
    /// `data + byte_offset` is not aligned for the element type.
    #[error("element 0 at address {address:#x} is not aligned to {alignment} bytes")]
    Misaligned {
        /// The address of element 0.
        address: usize,
        /// The element type's alignment.
        alignment: usize,
    },
    /// `strides` is NULL in a tensor of DLPack 1.2 or later, which must always set it.
    #[error("strides is NULL, which DLPack {}.{} does not allow for ndim > 0", version.major, version.minor)]
    NullStrides {
        /// The tensor's DLPack version.
        version: DLPackVersion,
    },
    /// The strides do not fit the layout, the span overflows, or the view would alias.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The elements the tensor describes would lie below address 0 or past the end of the address
    /// space.
    #[error("the tensor's elements would wrap around the address space")]
    AddressOverflow,
    /// The negative strides reach back from element 0 to address 0 exactly, where no allocation
    /// lies.
    #[error(
        "element 0 at address {address:#x} with negative strides reaching {back} bytes back puts an element at address 0"
    )]
    SpanAtNull {
        /// The address of element 0.
        address: usize,
        /// How many bytes the negative strides reach back.
        back: usize,
    },
    /// The producer forbids writes (`READ_ONLY`), and a mutable view was asked for.
    #[error("the tensor is read-only (DLPack flag READ_ONLY); ask for a read-only view")]
    ReadOnly,
    /// The producer forbids writes in a way the tensor does not carry (the reason, as the
    /// consumer that learned it says), and a mutable view was asked for: see
    /// [`ManagedTensor::refuse_writes`](crate::managed::ManagedTensor::refuse_writes).
    #[error("the tensor must not be written: {0}")]
    WritesRefused(&'static str),
    /// Sub-byte elements in a tensor that does not declare them padded one per byte.
    #[error("{dtype} elements are packed unless IS_SUBBYTE_TYPE_PADDED is set; dlmd views them one per byte")]
    PackedSubbyte {
        /// The tensor's data type.
        dtype: DLDataType,
    },
    /// Sub-byte elements declared padded one per byte, viewed as an element type that packs them
    /// ([`F4E2M1FNx2`](crate::F4E2M1FNx2)).
    #[error("{dtype} elements are padded one per byte (IS_SUBBYTE_TYPE_PADDED) but the view's element type packs them")]
    PaddedSubbyte {
        /// The tensor's data type.
        dtype: DLDataType,
    },
    /// A `bool` element's byte is neither 0 nor 1.
    #[error("bool element at offset {offset} holds {value}, not 0 or 1")]
    InvalidBool {
        /// The element offset from the span's start.
        offset: usize,
        /// The byte found.
        value: u8,
    },
    /// `bool` elements of an import in memory the host does not read (device memory), for a
    /// kernel or a copy into memory Rust owns: their bytes cannot be checked to be 0 or 1 before
    /// Rust reads them as `bool`, and any other byte there is undefined behaviour.
    #[error(
        "{dtype} elements in device memory cannot be checked to be 0 or 1 before Rust reads them (in a kernel, or \
         copied into memory Rust owns); pass the tensor's bytes as `u8` instead (torch: `x.view(torch.uint8)`)"
    )]
    UncheckedBool {
        /// The tensor's data type.
        dtype: DLDataType,
    },
}

/// The first DLPack version in which `strides` may not be NULL.
const STRIDES_REQUIRED_SINCE: DLPackVersion = DLPackVersion { major: 1, minor: 2 };

/// A stride as `isize`: the identity on 64-bit targets.
#[inline(always)]
fn to_isize(value: i64) -> Result<isize, LayoutError> {
    isize::try_from(value).map_err(|_| LayoutError::SpanOverflow)
}

impl<'a, T, E, L, S, A> Mdspan<'a, T, E, L, S, A>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: MemorySpace,
    A: Access,
{
    /// Views `tensor`, a tensor of unknown DLPack version, checking everything that can be
    /// checked (see the [module docs](crate::import)). Static extents in `E` are checked too.
    ///
    /// # Safety
    ///
    /// - `tensor.shape` and `tensor.strides` (unless NULL) point to `tensor.ndim` readable
    ///   `int64_t`s;
    /// - the elements `tensor` describes lie in one allocation of its device, hold initialised
    ///   values of `T`'s data type, and stay valid for `'a`; where `T`'s scalar is `bool`, every
    ///   byte is 0 or 1, which the import checks only in memory the host can read (a device
    ///   view's `bool` bytes are the caller's promise);
    /// - for a reference view ([`Shared`](crate::view::Shared), [`Unique`](crate::view::Unique)):
    ///   for `'a`, nothing writes them except through this view, and for `Unique` nothing reads
    ///   them either except through it;
    /// - for an aliased view ([`Aliased`](crate::view::Aliased), [`AliasedMut`](crate::view::AliasedMut)):
    ///   others may read and write them for `'a`, but
    ///   not at the same time as this view's loads and stores (on another thread without
    ///   synchronisation), and an `AliasedMut` view is made only over memory its producer lets
    ///   consumers write.
    #[inline]
    pub unsafe fn from_dlpack(tensor: &'a DLTensor) -> Result<Self, ImportError>
    where
        T::Storage: PlainStorage,
    {
        // SAFETY: forwarded from the caller.
        unsafe { Self::from_dlpack_with_version(tensor, None) }
    }

    /// As [`from_dlpack`](Self::from_dlpack), for a tensor produced against DLPack `version`
    /// (`None` when unknown), which decides whether NULL `strides` are allowed.
    ///
    /// # Safety
    ///
    /// As for [`from_dlpack`](Self::from_dlpack).
    #[inline]
    pub unsafe fn from_dlpack_with_version(
        tensor: &'a DLTensor,
        version: Option<DLPackVersion>,
    ) -> Result<Self, ImportError>
    where
        T::Storage: PlainStorage,
    {
        // SAFETY: forwarded from the caller; `PlainStorage` means the data type describes the
        // bytes exactly.
        unsafe { Self::import(tensor, version) }
    }
}

impl<'a, T, E, L, S, A> Mdspan<'a, T, E, L, S, A>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: MemorySpace,
    A: Access,
{
    /// The importer behind every public import, for any element storage.
    ///
    /// # Safety
    ///
    /// As for [`from_dlpack`](Self::from_dlpack); for sub-byte padded elements, in addition,
    /// the producer says the elements are stored one per byte.
    #[inline]
    pub(crate) unsafe fn import(tensor: &'a DLTensor, version: Option<DLPackVersion>) -> Result<Self, ImportError> {
        // SAFETY: forwarded from the caller.
        if let Some(view) = unsafe { Self::import_common(tensor) } {
            return Ok(view);
        }
        // SAFETY: forwarded from the caller.
        unsafe { Self::import_checked(tensor, version) }
    }

    /// The common case in one pass with few branches: a tensor with elements, strides given,
    /// values small enough to add up unchecked, and every check passed. `None` for anything
    /// else, which [`import_checked`](Self::import_checked) then decides and reports; for the
    /// tensors this accepts, it would build the same view.
    ///
    /// # Safety
    ///
    /// As for [`import`](Self::import).
    #[inline(always)]
    unsafe fn import_common(tensor: &'a DLTensor) -> Option<Self> {
        // `bool` bytes need a look at every element: the checked path does it.
        if T::DTYPE.code == DLDataTypeCode::BOOL.0 {
            return None;
        }
        let space = S::from_device(tensor.device).ok()?;
        let rank = E::RANK;
        // `ndim` and `dtype` lie side by side: compared as one 64-bit key.
        let key = |ndim: i32, dtype: DLDataType| {
            u64::from(ndim as u32)
                | u64::from(dtype.code) << 32
                | u64::from(dtype.bits) << 40
                | u64::from(dtype.lanes) << 48
        };
        // Either array NULL: one test.
        let arrays_null = (tensor.shape as usize).min(tensor.strides as usize) == 0;
        let header_bad = (key(tensor.ndim, tensor.dtype) != key(E::RANK as i32, T::DTYPE)) | ((rank > 0) & arrays_null);
        if header_bad {
            return None;
        }
        // SAFETY: for rank > 0 both arrays are not NULL (checked above) and the caller
        // promises `ndim == RANK` readable values in each; for rank 0 nothing is read.
        let (mapping, span) = unsafe { L::read_i64::<E>(tensor.shape, tensor.strides) }?;
        // Element 0 and the end of the span, computed wide so that nothing wraps: both must lie
        // in the address space, element 0 aligned and not NULL, the span within isize.
        let (size, data) = (size_of::<T>(), tensor.data as usize);
        let span_bytes = span as u128 * size as u128;
        let element0 = data as u128 + u128::from(tensor.byte_offset);
        // Each term is nonzero exactly when its check fails; one test for all of them.
        let misplaced = (element0 as usize % align_of::<T>()) | (tensor.byte_offset % size as u64) as usize;
        let placement = misplaced
            | usize::from(data == 0)
            | (span_bytes >> (usize::BITS - 1)) as usize
            | ((element0 + span_bytes) >> usize::BITS) as usize;
        if placement != 0 || (A::MUTABLE && !L::ALWAYS_UNIQUE && !mapping.is_unique()) {
            return None;
        }
        // Keep the producer's pointer provenance: step from `data` rather than forging an
        // address.
        let ptr = tensor
            .data
            .cast::<u8>()
            .wrapping_add(tensor.byte_offset as usize)
            .cast::<T>();
        // SAFETY: `data` is not NULL and `data + byte_offset` does not wrap (both checked above).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // SAFETY: `ptr` (element 0, where the span starts as no stride is negative) is aligned,
        // the span fits in isize and in the address space, and the caller promises it is valid
        // for `'a` and not aliased beyond what the access allows; a mutable mapping is unique.
        Some(unsafe { Self::from_non_null(ptr, mapping, space) })
    }

    /// Every check in order, each failure its own error: the path of empty tensors, NULL strides,
    /// negative strides, very large values, `bool` elements, and every error.
    ///
    /// # Safety
    ///
    /// As for [`import`](Self::import).
    #[cold]
    unsafe fn import_checked(tensor: &'a DLTensor, version: Option<DLPackVersion>) -> Result<Self, ImportError> {
        let space = S::from_device(tensor.device)?;
        if tensor.ndim < 0 || tensor.ndim as usize != E::RANK {
            return Err(ImportError::Rank {
                expected: E::RANK,
                found: tensor.ndim,
            });
        }
        if tensor.dtype != T::DTYPE {
            return Err(ImportError::DataType {
                expected: T::DTYPE,
                found: tensor.dtype,
            });
        }
        let rank = E::RANK;
        if rank > 0 && tensor.shape.is_null() {
            return Err(ImportError::NullShape { ndim: tensor.ndim });
        }
        let null_strides = tensor.strides.is_null();
        if rank > 0
            && null_strides
            && let Some(version) = version.filter(|v| *v >= STRIDES_REQUIRED_SINCE)
        {
            return Err(ImportError::NullStrides { version });
        }
        let mut extents = E::Index::zeros();
        let mut strides = <E::Index as IndexArray>::isize_zeros();
        let mut empty = false;
        for dim in 0..rank {
            // SAFETY: `shape` is not NULL (checked above, as the rank is > 0 here) and the
            // caller promises `ndim == RANK` readable values; unaligned reads are allowed.
            let n = unsafe { tensor.shape.wrapping_add(dim).read_unaligned() };
            if n < 0 {
                return Err(ImportError::NegativeExtent { dim, extent: n });
            }
            extents.as_mut()[dim] = n as usize;
            empty |= n == 0;
        }
        if null_strides {
            // Compact row-major, as DLPack before 1.2 defines NULL strides.
            strides = compact_strides(&extents, true);
        } else {
            for dim in 0..rank {
                // SAFETY: as for `shape`: not NULL, `ndim` readable values.
                strides.as_mut()[dim] = to_isize(unsafe { tensor.strides.wrapping_add(dim).read_unaligned() })?;
            }
        }
        let e = extents;
        let extents = E::from_array(extents)?;
        let size = size_of::<T>();
        if !tensor.byte_offset.is_multiple_of(size as u64) {
            return Err(ImportError::ByteOffset {
                byte_offset: tensor.byte_offset,
                element_size: size,
            });
        }
        if tensor.data.is_null() && !empty {
            let elements = e.as_ref().iter().fold(1usize, |a, &n| a.saturating_mul(n));
            return Err(ImportError::NullData { elements });
        }
        // A relaxed mapping's offset reaches back over the negative strides from element 0.
        let back = if L::HAS_OFFSET {
            negative_reach(e.as_ref(), strides.as_ref())?
        } else {
            0
        };
        let mapping = L::Mapping::<E>::from_strides(extents, &strides, back)?;
        if A::MUTABLE && !L::ALWAYS_UNIQUE && !mapping.is_unique() {
            return Err(LayoutError::Overlapping.into());
        }
        let span_bytes = mapping
            .required_span_size()
            .checked_mul(size)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or(LayoutError::SpanOverflow)?;
        if empty {
            // SAFETY: an empty view never dereferences its pointer.
            return Ok(unsafe { Self::from_raw_parts(core::ptr::null_mut(), mapping, space) });
        }
        // SAFETY: forwarded from the caller; the mapping has elements, `back` is how far its
        // negative strides reach before element 0, and `span_bytes` its span.
        unsafe { Self::place(tensor, mapping, back, span_bytes, space) }
    }

    /// Places a mapping with elements at the tensor's data: element 0 at `data + byte_offset`,
    /// `back` elements after the span's start. Checks the alignment and that the span lies
    /// inside the address space, above address 0, and the `bool` bytes.
    ///
    /// # Safety
    ///
    /// As for [`import`](Self::import); `mapping` has elements, reaches `back` elements before
    /// element 0, and spans `span_bytes` bytes (which fit in `isize`); `data` is not NULL and
    /// `byte_offset` a multiple of the element size.
    #[inline(always)]
    unsafe fn place(
        tensor: &'a DLTensor,
        mapping: L::Mapping<E>,
        back: usize,
        span_bytes: usize,
        space: S,
    ) -> Result<Self, ImportError> {
        let element0 = (tensor.data as usize)
            .checked_add(usize::try_from(tensor.byte_offset).map_err(|_| ImportError::AddressOverflow)?)
            .ok_or(ImportError::AddressOverflow)?;
        if element0 % align_of::<T>() != 0 {
            return Err(ImportError::Misaligned {
                address: element0,
                alignment: align_of::<T>(),
            });
        }
        // Cannot overflow: `back` is inside the span, whose bytes fit in isize.
        let back_bytes = back * size_of::<T>();
        let start = element0.checked_sub(back_bytes).ok_or(ImportError::AddressOverflow)?;
        if start == 0 {
            return Err(ImportError::SpanAtNull {
                address: element0,
                back: back_bytes,
            });
        }
        start.checked_add(span_bytes).ok_or(ImportError::AddressOverflow)?;
        // Keep the producer's pointer provenance: step from `data` rather than forging an
        // address.
        let ptr = tensor
            .data
            .cast::<u8>()
            .wrapping_add(start.wrapping_sub(tensor.data as usize))
            .cast::<T>();

        if S::HOST_READABLE {
            // SAFETY: the caller promises the span holds the tensor's bytes, readable from the
            // host here; the view is built only after every byte is checked.
            unsafe { check_bools::<T, E, L>(ptr, &mapping)? };
        }
        // SAFETY: `ptr` is aligned, not NULL, and the caller promises the span (checked to fit
        // in isize and in the address space) is valid for `'a` and not aliased beyond what the
        // access allows; a mutable mapping was checked unique; bools were checked above.
        Ok(unsafe { Self::from_raw_parts(ptr, mapping, space) })
    }
}

/// Checks every byte of every `bool` element the mapping reaches, each element once: the work
/// is bounded by the span, not by the number of indices (a broadcast tensor is one element).
///
/// # Safety
///
/// Every element `mapping` reaches from `ptr` is readable.
pub(crate) unsafe fn check_bools<T: DlElement, E: Extents, L: Layout>(
    ptr: *const T,
    mapping: &L::Mapping<E>,
) -> Result<(), ImportError> {
    if T::DTYPE.code != DLDataTypeCode::BOOL.0 {
        return Ok(());
    }
    for_each_reached(mapping, |offset| {
        // SAFETY: `offset` is an element the mapping reaches, inside the readable span; its
        // bytes are read as `u8`, which every byte pattern is.
        let bytes = unsafe { core::slice::from_raw_parts(ptr.wrapping_add(offset).cast::<u8>(), size_of::<T>()) };
        match bytes.iter().find(|&&b| b > 1) {
            Some(&value) => Err(ImportError::InvalidBool { offset, value }),
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests;
