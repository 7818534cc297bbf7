//! TMA tensor maps made on the host: [`TiledMap`] checks a device view against the copy
//! engine's rules, has the driver encode its map (`cuTensorMapEncodeTiled`) and keeps the map
//! in device memory, where a kernel's copies read it through the [`TensorMap`] parameter.
//!
//! A tensor map describes a 2-D tensor in global memory (`rows × cols`, each row contiguous)
//! and the box the copy engine moves at a time (see [`kernel::tensor_map`](crate::kernel::tensor_map)).
//! The copy engine addresses memory in 16-byte pieces and computes each row's address from one
//! stride, so a view is refused, each rule by its own [`TensorMapError`], where:
//!
//! - element `[0, 0]` is not 16-byte aligned ([`Alignment`](TensorMapError::Alignment)): the
//!   engine reads whole 16-byte pieces from the tensor's start;
//! - the elements of a row are not contiguous ([`InnerStride`](TensorMapError::InnerStride)):
//!   the map has no stride for the innermost dimension, which is always one element;
//! - the row stride is not a positive multiple of 16 bytes below 2^40, or is shorter than a row
//!   ([`RowStride`](TensorMapError::RowStride)): strides are encoded in 16-byte units, in a
//!   field of that width, and rows are read forwards, one after another (dlmd's views may
//!   have negative or zero strides, which a map cannot express);
//! - an extent is 0 or above 2^31 − 1 ([`Extent`](TensorMapError::Extent)): the copy
//!   instructions address a box by signed 32-bit coordinates, so a row or column past
//!   `i32::MAX` could not be reached, and a map names at least one element;
//! - the view is on another device than the stream ([`Device`](TensorMapError::Device)).
//!
//! Elements are copied as unsigned integers of their size, uninterpreted: where a box reaches
//! past the tensor's extents (the ragged edge of a matrix whose extents are not multiples of
//! the box), the hardware fills those elements with zeros (all bits clear), and reads nothing
//! outside the tensor.

use super::arg::{ArgInfo, KernelArg, sealed};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelParam;
use crate::kernel::swizzle::Swizzle;
use crate::kernel::tensor_map::{TensorMap, TensorMapParam};
use crate::layout::{Layout, Mapping};
use crate::space::{Device, MemorySpace};
use crate::view::{Mdspan, Shared};
use core::fmt;
use core::marker::PhantomData;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError, sys};
use std::sync::Arc;

/// The most elements a tensor map's extent may hold: 2^31 − 1, the largest coordinate of a
/// copy (`i32`; the driver itself takes up to 2^32).
const MAX_EXTENT: u64 = i32::MAX as u64;
/// A row stride must be below this many bytes: 2^40.
const MAX_ROW_STRIDE: i128 = 1 << 40;

/// Why a [`TiledMap`] could not be made: the view breaks one of the copy engine's rules, or the
/// driver refused.
#[derive(Debug, thiserror::Error)]
pub enum TensorMapError {
    /// Element `[0, 0]` is not 16-byte aligned.
    #[error(
        "the view's element [0, 0] is at {address:#x}, and a tensor map needs a 16-byte aligned start: begin the view at a 16-byte boundary"
    )]
    Alignment {
        /// The address of element `[0, 0]`.
        address: usize,
    },
    /// The elements of a row are not contiguous: dimension 1's stride is not 1.
    #[error(
        "dimension 1 has stride {stride}, and a tensor map reads each row's elements contiguously (stride 1): pass a row-major view (layout_right, or a strided one whose last stride is 1)"
    )]
    InnerStride {
        /// Dimension 1's stride, in elements.
        stride: isize,
    },
    /// The row stride in bytes is not a positive multiple of 16 below 2^40, or is shorter than a
    /// row.
    #[error(
        "the row stride is {bytes} bytes, and a tensor map needs a positive multiple of 16 below 2^40, at least a row ({row_bytes} bytes): pad the rows to a multiple of 16 bytes"
    )]
    RowStride {
        /// Dimension 0's stride, in bytes (negative for a view that walks rows backwards).
        bytes: i128,
        /// The bytes of a row: its extent times the element's size.
        row_bytes: u128,
    },
    /// An extent is 0 or above 2^31 − 1.
    #[error(
        "dimension {dim} has extent {extent}, and a tensor map's extents are 1..=2^31-1 (the copies' coordinates are i32)"
    )]
    Extent {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: usize,
    },
    /// The view is on another device than the stream.
    #[error(
        "the view is on device {view} and the stream on device {stream}: make the map with a stream of the view's device"
    )]
    Device {
        /// The view's device ordinal.
        view: i32,
        /// The stream's device ordinal.
        stream: usize,
    },
    /// The map's device memory is not 64-byte aligned, as the copy instructions need.
    #[error("the tensor map's device memory is at {address:#x}, which is not 64-byte aligned")]
    MapAlignment {
        /// The map's device address.
        address: u64,
    },
    /// The driver refused the map (`cuTensorMapEncodeTiled`), or its copy to the device.
    #[error("CUDA driver error while making a tensor map: {0}")]
    Driver(#[from] DriverError),
}

/// A view that passed the rules, as the driver takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checked {
    /// The address of element `[0, 0]`.
    address: u64,
    /// `[rows, cols]`.
    extents: [u64; 2],
    /// The row stride, in elements.
    row_stride: u64,
    /// The row stride, in bytes.
    row_stride_bytes: u64,
}

/// The rules of the module docs, for a view whose element `[0, 0]` is at `address`, with
/// `extents` and `strides` (in elements) and elements of `element_bytes` bytes: no driver
/// involved, and no panic whatever the numbers.
fn check(
    address: usize,
    extents: [usize; 2],
    strides: [isize; 2],
    element_bytes: usize,
) -> Result<Checked, TensorMapError> {
    for (dim, &extent) in extents.iter().enumerate() {
        if extent == 0 || extent as u64 > MAX_EXTENT {
            return Err(TensorMapError::Extent { dim, extent });
        }
    }
    if strides[1] != 1 {
        return Err(TensorMapError::InnerStride { stride: strides[1] });
    }
    // Exact in `i128`: both factors fit 64 bits.
    let bytes = strides[0] as i128 * element_bytes as i128;
    let row_bytes = extents[1] as u128 * element_bytes as u128;
    if bytes <= 0 || bytes % 16 != 0 || bytes >= MAX_ROW_STRIDE || (bytes as u128) < row_bytes {
        return Err(TensorMapError::RowStride { bytes, row_bytes });
    }
    if !address.is_multiple_of(16) {
        return Err(TensorMapError::Alignment { address });
    }
    // The stride is positive and below 2^40 bytes: it fits `u64`, in elements and in bytes.
    Ok(Checked {
        address: address as u64,
        extents: extents.map(|e| e as u64),
        row_stride: strides[0] as u64,
        row_stride_bytes: bytes as u64,
    })
}

/// The driver's data type for elements of `bytes` bytes: unsigned integers, which the copy
/// engine moves uninterpreted (the type's check allows 1, 2, 4 and 8 only).
fn data_type(bytes: usize) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as D;
    match bytes {
        1 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        4 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        _ => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
    }
}

/// The driver's swizzle for [`Swizzle::TENSOR_MAP`].
fn swizzle<S: Swizzle>() -> sys::CUtensorMapSwizzle {
    use sys::CUtensorMapSwizzle as W;
    match S::TENSOR_MAP {
        1 => W::CU_TENSOR_MAP_SWIZZLE_32B,
        2 => W::CU_TENSOR_MAP_SWIZZLE_64B,
        _ => W::CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

/// A TMA tensor map of a 2-D device view of `T`, copied in tiles `B = (Const<ROWS>,
/// Const<COLS>)` swizzled by `S` (each tile as boxes one swizzled row wide,
/// [`TensorMap::BOXES`]): the encoded map in device memory, and the borrow of the view's
/// memory for `'a`. [`map`](Self::map) is the kernel parameter.
///
/// ```no_run
/// use dlmd::cuda::{TiledMap, context, device_view};
/// use dlmd::kernel::swizzle::Swizzle128;
/// use dlmd::{Const, Dims};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let stream = context(0)?.default_stream();
/// let a = stream.alloc_zeros::<dlmd::half::bf16>(1000 * 4096)?;
/// let view = device_view::<_, _, dlmd::LayoutRight>(&a, Dims([1000, 4096]))?;
/// // Tiles of 64 rows of 64 `bf16`s (128 bytes, the swizzle's row: one box each); the last
/// // tile row is ragged, and its rows past 1000 arrive as zeros.
/// let map = TiledMap::<_, (Const<64>, Const<64>), Swizzle128>::new(&stream, &view)?;
/// let _param = map.map(); // passed to a kernel taking `TensorMap<'_, bf16, (Const<64>, Const<64>), Swizzle128>`
/// # Ok(())
/// # }
/// ```
pub struct TiledMap<'a, T, B, S> {
    /// The 128-byte `CUtensorMap`, as 16 words.
    encoded: CudaSlice<u64>,
    param: TensorMapParam,
    checked: Checked,
    device: i32,
    _source: PhantomData<(&'a T, B, S)>,
}

impl<'a, T, B, S> TiledMap<'a, T, B, S>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    /// Checks `view` against the copy engine's rules (the module docs), encodes its map and
    /// copies it to device memory on `stream`, which is then synchronized: launches on any
    /// stream may use the map once this returns.
    ///
    /// The view's extents may be anything within the rules, multiples of the box or not: boxes
    /// that reach past them are filled with zeros there.
    pub fn new<E, L>(
        stream: &Arc<CudaStream>,
        view: &Mdspan<'a, T, E, L, Device, Shared>,
    ) -> Result<Self, TensorMapError>
    where
        E: Extents<Index = [usize; 2]>,
        L: Layout,
    {
        let box_extents = [TensorMap::<T, B, S>::BOX_COLS as u32, TensorMap::<T, B, S>::ROWS as u32];
        let () = TensorMap::<T, B, S>::CHECK;
        let device = view.space().device().device_id;
        let ordinal = stream.context().ordinal();
        if usize::try_from(device).ok() != Some(ordinal) {
            return Err(TensorMapError::Device {
                view: device,
                stream: ordinal,
            });
        }
        let mapping = view.mapping();
        // Element `[0, 0]`: inside the span, or one past an empty one.
        let address = view.data_handle().wrapping_add(mapping.offset()) as usize;
        let checked = check(address, view.extents().to_array(), mapping.strides(), size_of::<T>())?;

        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        // Innermost dimension first, as the driver counts them.
        let dims = [checked.extents[1], checked.extents[0]];
        let strides = [checked.row_stride_bytes];
        let element_strides = [1u32, 1];
        stream.context().bind_to_thread()?;
        let encode = || {
            // SAFETY: the arrays are of the rank the call reads (2; the strides rank − 1);
            // `checked.address` is element `[0, 0]` of a live device view on the stream's
            // device (checked above), 16-aligned, whose rows of `dims[0]` elements lie
            // `strides[0]` bytes apart (positive, multiple of 16, below 2^40); the extents are
            // 1..=2^31 − 1 and the box's 1..=256 (the tile's, the type's check); `map` is only written.
            unsafe {
                sys::cuTensorMapEncodeTiled(
                    &mut map,
                    data_type(size_of::<T>()),
                    2,
                    checked.address as usize as *mut core::ffi::c_void,
                    dims.as_ptr(),
                    strides.as_ptr(),
                    box_extents.as_ptr(),
                    element_strides.as_ptr(),
                    sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                    swizzle::<S>(),
                    sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                )
            }
        };
        // cudarc panics where the driver lacks the symbol (before CUDA 12): keep that inside.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(encode)) {
            Ok(result) => result.result()?,
            Err(_) => return Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED).into()),
        }

        let encoded = stream.clone_htod(&map.opaque)?;
        let (map_address, read) = encoded.device_ptr(stream);
        if map_address % 64 != 0 {
            return Err(TensorMapError::MapAlignment { address: map_address });
        }
        drop(read);
        // Kernels on other streams read the map without waiting for this stream.
        stream.synchronize()?;
        let param = TensorMapParam::new(
            map_address,
            checked.address,
            checked.extents,
            checked.row_stride,
            device,
        );
        Ok(TiledMap {
            encoded,
            param,
            checked,
            device,
            _source: PhantomData,
        })
    }

    /// The kernel parameter: the map's device address and the tensor it describes.
    pub fn map(&self) -> TensorMap<'_, T, B, S> {
        TensorMap::from_checked(self.param)
    }

    /// The tensor's extents, `[rows, cols]`.
    pub fn extents(&self) -> [usize; 2] {
        // At most 2^31 − 1 each (checked): they fit `usize` on a 64-bit host.
        self.checked.extents.map(|e| e as usize)
    }
}

impl<T: DlElement, B, S> fmt::Debug for TiledMap<'_, T, B, S>
where
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TiledMap")
            .field("dtype", &T::DTYPE)
            .field("extents", &self.checked.extents)
            .field("row_stride", &self.checked.row_stride)
            .field("data", &format_args!("{:#x}", self.checked.address))
            .field("tile", &[TensorMap::<T, B, S>::ROWS, TensorMap::<T, B, S>::COLS])
            .field("boxes", &TensorMap::<T, B, S>::BOXES)
            .field("swizzle_bytes", &S::BYTES)
            .field("device", &self.device)
            .field("map_words", &self.encoded.len())
            .finish()
    }
}

impl<T, B, S> sealed::Sealed<TensorMap<'_, T, B, S>> for TensorMap<'_, T, B, S> {}

/// A tensor-map parameter takes a tensor map of its type ([`TiledMap::map`]).
impl<'a, T, B, S, N> KernelArg<TensorMap<'a, T, B, S>, N> for TensorMap<'a, T, B, S>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    #[inline]
    fn to_param(&self) -> TensorMapParam {
        KernelParam::to_param(self)
    }

    #[inline]
    fn info(&self) -> ArgInfo<'_> {
        ArgInfo {
            device: self.device_ordinal(),
            footprint: self.footprint(),
            held: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BF16: usize = 2;

    #[test]
    fn tensor_map_check_accepts_a_padded_row_major_matrix() {
        let checked = check(0x7f00_0000_0100, [1000, 100], [104, 1], BF16).unwrap();
        assert_eq!(checked.extents, [1000, 100]);
        assert_eq!((checked.row_stride, checked.row_stride_bytes), (104, 208));
    }

    #[test]
    fn tensor_map_check_refuses_a_misaligned_start() {
        let err = check(0x1002, [4, 64], [64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Alignment { address: 0x1002 }), "{err}");
    }

    #[test]
    fn tensor_map_check_refuses_a_strided_row() {
        let err = check(0x1000, [4, 64], [64, 2], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::InnerStride { stride: 2 }), "{err}");
        // Column-major data: dimension 1 walks whole columns.
        let err = check(0x1000, [64, 4], [1, 64], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::InnerStride { stride: 64 }), "{err}");
    }

    #[test]
    fn tensor_map_check_refuses_bad_row_strides() {
        // (row stride, columns, the stride's bytes)
        let cases: [(isize, usize, i128); 5] = [
            // 100 `bf16`s are 200 bytes, not a multiple of 16.
            (100, 100, 200),
            // Rows walked backwards, and one row repeated.
            (-64, 64, -128),
            (0, 64, 0),
            // Shorter than a row of 64.
            (56, 64, 112),
            // 2^40 bytes.
            (1 << 39, 64, 1 << 40),
        ];
        for (stride, cols, bytes) in cases {
            let err = check(0x1000, [4, cols], [stride, 1], BF16).unwrap_err();
            assert!(
                matches!(err, TensorMapError::RowStride { bytes: b, .. } if b == bytes),
                "stride {stride}: {err}"
            );
        }
    }

    #[test]
    fn tensor_map_check_refuses_empty_and_huge_extents() {
        let err = check(0x1000, [0, 64], [64, 1], BF16).unwrap_err();
        assert!(matches!(err, TensorMapError::Extent { dim: 0, extent: 0 }), "{err}");
        let err = check(0x1000, [4, 1 << 31], [1 << 33, 1], 1).unwrap_err();
        assert!(matches!(err, TensorMapError::Extent { dim: 1, .. }), "{err}");
        // 2^31 − 1 itself is allowed.
        assert!(check(0x1000, [(1 << 31) - 1, 16], [16, 1], 1).is_ok());
    }

    #[test]
    fn tensor_map_errors_name_the_fix() {
        let message = check(0x1000, [4, 100], [100, 1], BF16).unwrap_err().to_string();
        assert!(
            message.contains("200 bytes") && message.contains("multiple of 16"),
            "{message}"
        );
    }

    /// The rules, written out directly.
    fn allowed(address: usize, extents: [usize; 2], strides: [isize; 2], element_bytes: usize) -> bool {
        let extents_ok = extents.iter().all(|&e| (1..=(1u128 << 31) - 1).contains(&(e as u128)));
        let bytes = strides[0] as i128 * element_bytes as i128;
        let row = extents[1] as i128 * element_bytes as i128;
        extents_ok
            && strides[1] == 1
            && bytes > 0
            && bytes % 16 == 0
            && bytes < 1 << 40
            && bytes >= row
            && address.is_multiple_of(16)
    }

    fn extent() -> impl Strategy<Value = usize> {
        prop_oneof![
            0usize..300,
            Just((1 << 31) - 1),
            Just(1 << 31),
            Just((1 << 32) + 1),
            any::<usize>()
        ]
    }

    fn stride() -> impl Strategy<Value = isize> {
        prop_oneof![
            -300isize..300,
            (1isize..40).prop_map(|k| k * 16),
            Just(1 << 39),
            Just((1 << 37) - 8),
            any::<isize>()
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 32 } else { 4096 },
            // Miri's isolation has no working directory for the regression file.
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]

        #[test]
        fn tensor_map_check_accepts_exactly_the_rules(
            address in prop_oneof![(0usize..256).prop_map(|a| a * 16), 0usize..4096, any::<usize>()],
            rows in extent(),
            cols in extent(),
            row_stride in stride(),
            inner in prop_oneof![Just(1isize), stride()],
            element_bytes in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        ) {
            let result = check(address, [rows, cols], [row_stride, inner], element_bytes);
            let expected = allowed(address, [rows, cols], [row_stride, inner], element_bytes);
            prop_assert_eq!(result.is_ok(), expected, "{:?}", result);
            if let Ok(checked) = result {
                prop_assert_eq!(checked.row_stride_bytes, row_stride as u64 * element_bytes as u64);
                prop_assert_eq!(checked.address, address as u64);
            }
        }

        #[test]
        fn tensor_map_check_accepts_padded_row_major_views(
            piece in 0usize..(1 << 40),
            rows in 1usize..=(1 << 31) - 1,
            cols in 1usize..=4096,
            pad in 0usize..8,
            element_bytes in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        ) {
            // Rows padded to a multiple of 16 bytes, then `pad` more pieces.
            let stride_bytes = (cols * element_bytes).div_ceil(16) * 16 + 16 * pad;
            let strides = [(stride_bytes / element_bytes) as isize, 1];
            let checked = check(16 * piece, [rows, cols], strides, element_bytes);
            prop_assert!(checked.is_ok(), "{:?}", checked);
        }
    }
}
