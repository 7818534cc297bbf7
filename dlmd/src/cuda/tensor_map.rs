//! TMA tensor maps made on the host: [`TiledMap`] checks a device view against the copy
//! engine's rules and has the driver encode its map (`cuTensorMapEncodeTiled`); a launch
//! passes the map itself in the kernel's [`TensorMap`] parameter, where the kernel's copies
//! read it in place (as CUDA C++ passes a `__grid_constant__ CUtensorMap`). A map takes no
//! device memory, no copy and no wait: it is made on the host alone, and a launch on any
//! stream, or captured into a CUDA graph, carries it.
//!
//! A tensor map describes a tensor of rank 2 to 5 in global memory (`[…, rows, cols]`, each
//! row contiguous) and the box the copy engine moves at a time (see
//! [`kernel::tensor_map`](crate::kernel::tensor_map)). The map gives the copy engine the
//! tensor's start and its strides in 16-byte units, and the engine computes each row's address
//! from one stride a dimension, so a view is refused, each rule by its own [`TensorMapError`],
//! where:
//!
//! - its rank is not 2 to 5 ([`Rank`](TensorMapError::Rank));
//! - element `[0, …, 0]` is not 16-byte aligned ([`Alignment`](TensorMapError::Alignment)):
//!   the map cannot encode another start;
//! - the elements of a row are not contiguous ([`InnerStride`](TensorMapError::InnerStride)):
//!   the map has no stride for the innermost dimension, which is always one element;
//! - the row stride is not a positive multiple of 16 bytes below 2^40, or is shorter than a row
//!   ([`RowStride`](TensorMapError::RowStride)): strides are encoded in 16-byte units, in a
//!   field of that width, and rows are read forwards, one after another (dlmd's views may
//!   have negative or zero strides, which a map cannot express);
//! - the stride of a dimension before the rows (a batch's: `b` and `h` of `b × h × s × d`) is
//!   not a positive multiple of 16 bytes below 2^40 ([`Stride`](TensorMapError::Stride)), in
//!   any order: the heads of a `b × s × h × d` tensor seen as `b × h × s × d` (torch's
//!   `transpose(1, 2)`) lie closer together than its rows, and that is a map;
//! - an extent is 0 or above 2^31 − 1 ([`Extent`](TensorMapError::Extent)): the copy
//!   instructions address a box by signed 32-bit coordinates, so a row or column past
//!   `i32::MAX` could not be reached, and a map names at least one element.
//!
//! The map names the view's device: a launch on a stream of another device refuses it, as it
//! refuses such a view.
//!
//! A dimension of extent 1, but the innermost, takes any stride (no element is reached by it,
//! and producers such as torch give those dimensions strides of their own choosing); the
//! innermost's is 1 whatever its extent.
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
use crate::view::{Access, Mdspan, Shared};
use core::fmt;
use core::marker::PhantomData;
use cudarc::driver::{DriverError, sys};

mod import;
mod rules;

use rules::{Checked, check};

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
    /// The elements of a row are not contiguous: the last dimension's stride is not 1.
    #[error(
        "dimension {dim} has stride {stride}, and a tensor map reads each row's elements contiguously (stride 1): pass a row-major view (layout_right, or a strided one whose last stride is 1)"
    )]
    InnerStride {
        /// The last dimension.
        dim: usize,
        /// Its stride, in elements.
        stride: isize,
    },
    /// The row stride in bytes is not a positive multiple of 16 below 2^40, or is shorter than a
    /// row.
    #[error(
        "the row stride is {bytes} bytes, and a tensor map needs a positive multiple of 16 below 2^40, at least a row ({row_bytes} bytes): pad the rows to a multiple of 16 bytes"
    )]
    RowStride {
        /// The rows' stride (dimension `RANK − 2`'s), in bytes (negative for a view that walks
        /// rows backwards).
        bytes: i128,
        /// The bytes of a row: its extent times the element's size.
        row_bytes: u128,
    },
    /// A stride of a dimension before the rows (a batch's), in bytes, is not a positive
    /// multiple of 16 below 2^40.
    #[error(
        "dimension {dim} has a stride of {bytes} bytes, and a tensor map needs a positive multiple of 16 below 2^40 (a dimension of extent 1 may take any such stride)"
    )]
    Stride {
        /// The dimension.
        dim: usize,
        /// Its stride, in bytes.
        bytes: i128,
    },
    /// The view's rank is not 2 to 5.
    #[error("the view has rank {rank}, and a tensor map's is 2 to 5 (the copy engine's limit)")]
    Rank {
        /// The view's rank.
        rank: usize,
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
    /// The driver refused the map (`cuTensorMapEncodeTiled`), or has no such call (before
    /// CUDA 12).
    #[error("CUDA driver error while making a tensor map: {0}")]
    Driver(#[from] DriverError),
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

/// Checks the tensor whose element `[0, …, 0]` is at `address` on device `device`, with
/// `extents` and `strides` (in elements, outermost first), against the copy engine's rules (the
/// module docs) and has the driver encode its map for tiles `B` swizzled by `S`: the kernel
/// parameter, and the tensor as checked.
fn encode<T, B, S, const RANK: usize>(
    address: usize,
    extents: [usize; RANK],
    strides: [isize; RANK],
    device: i32,
) -> Result<(TensorMapParam<RANK>, Checked<RANK>), TensorMapError>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    let () = TensorMap::<T, B, S, RANK>::CHECK;
    // The box, innermost first: one swizzled row of `ROWS` rows of one matrix.
    let mut box_extents = [1u32; RANK];
    box_extents[0] = TensorMap::<T, B, S, RANK>::BOX_COLS as u32;
    box_extents[1] = TensorMap::<T, B, S, RANK>::ROWS as u32;
    let checked = check(address, extents, strides, size_of::<T>())?;

    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // Innermost dimension first, as the driver counts them.
    let dims = checked.driver_extents();
    let byte_strides = checked.driver_strides(size_of::<T>());
    let element_strides = [1u32; RANK];
    let encode = || {
        // SAFETY: the arrays hold `RANK` entries (2 to 5, the type's check), of which the call
        // reads `RANK` (the strides `RANK − 1`); `checked.address` is element `[0, …, 0]` of a
        // tensor in device memory, 16-aligned, whose dimensions of `dims` elements lie
        // `byte_strides` bytes apart (each positive, a multiple of 16, below 2^40; the rows' at
        // least a row); the extents are 1..=2^31 − 1 and the box's 1..=256 (the tile's, the
        // type's check); `map` is only written. Encoding reads no device memory.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type(size_of::<T>()),
                RANK as u32,
                checked.address as usize as *mut core::ffi::c_void,
                dims.as_ptr(),
                byte_strides.as_ptr(),
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
    let param = TensorMapParam::new(map.opaque, checked.address, checked.extents, checked.strides, device);
    Ok((param, checked))
}

/// [`encode`] for a device view of any access.
fn encode_view<T, B, S, E, L, A, const RANK: usize>(
    view: &Mdspan<'_, T, E, L, Device, A>,
) -> Result<(TensorMapParam<RANK>, Checked<RANK>), TensorMapError>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
    E: Extents<Index = [usize; RANK]>,
    L: Layout,
    A: Access,
{
    let mapping = view.mapping();
    let mut strides = [0isize; RANK];
    strides.copy_from_slice(mapping.strides().as_ref());
    // Element `[0, …, 0]`: inside the span, or one past an empty one.
    let address = view.data_handle().wrapping_add(mapping.offset()) as usize;
    encode::<T, B, S, RANK>(
        address,
        view.extents().to_array(),
        strides,
        view.space().device().device_id,
    )
}

/// A TMA tensor map of a device view of `T` of rank `RANK` (2 to 5, `[…, rows, cols]`),
/// copied in tiles `B = (Const<ROWS>, Const<COLS>)` of one of its matrices (its last two
/// dimensions), swizzled by `S` (each tile as boxes one swizzled row wide,
/// [`TensorMap::BOXES`]): the encoded map, and the borrow of the view's memory for `'a`.
/// [`map`](Self::map) is the kernel parameter, which carries the map itself.
///
/// ```no_run
/// use dlmd::cuda::{TiledMap, context, device_view};
/// use dlmd::kernel::swizzle::Swizzle128;
/// use dlmd::layout::StrideMapping;
/// use dlmd::{Const, Dims, LayoutStride};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let stream = context(0)?.default_stream();
/// let a = stream.alloc_zeros::<dlmd::half::bf16>(1000 * 4096)?;
/// let view = device_view::<_, _, dlmd::LayoutRight>(&a, Dims([1000, 4096]))?;
/// // Tiles of 64 rows of 64 `bf16`s (128 bytes, the swizzle's row: one box each); the last
/// // tile row is ragged, and its rows past 1000 arrive as zeros.
/// let map = TiledMap::<_, (Const<64>, Const<64>), Swizzle128>::new(&view)?;
/// let _param = map.map(); // passed to a kernel taking `TensorMap<'_, bf16, (Const<64>, Const<64>), Swizzle128>`
///
/// // The same memory as `b × s × h × d = 2 × 250 × 8 × 128`, seen as `b × h × s × d` (heads
/// // 128 elements apart, rows 1024): a rank-4 map, whose tiles are 64 rows of one head.
/// let strides = StrideMapping::new(Dims([2, 8, 250, 128]), [250 * 1024, 128, 1024, 1])?;
/// let heads = dlmd::cuda::device_view_mapped::<_, _, LayoutStride>(&a, strides)?;
/// let map = TiledMap::<_, (Const<64>, Const<128>), Swizzle128, 4>::new(&heads)?;
/// let _param = map.map(); // a `TensorMap<'_, bf16, (Const<64>, Const<128>), Swizzle128, 4>`
/// # Ok(())
/// # }
/// ```
pub struct TiledMap<'a, T, B, S, const RANK: usize = 2> {
    /// The 128-byte `CUtensorMap` and the tensor, as a launch passes them.
    param: TensorMapParam<RANK>,
    checked: Checked<RANK>,
    device: i32,
    _source: PhantomData<(&'a T, B, S)>,
}

impl<'a, T, B, S, const RANK: usize> TiledMap<'a, T, B, S, RANK>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    /// Checks `view` against the copy engine's rules (the module docs) and encodes its map, on
    /// the host: nothing is queued, and launches on any stream of the view's device may pass
    /// the map at once.
    ///
    /// The view's extents may be anything within the rules, multiples of the box or not: boxes
    /// that reach past them are filled with zeros there.
    pub fn new<E, L>(view: &Mdspan<'a, T, E, L, Device, Shared>) -> Result<Self, TensorMapError>
    where
        E: Extents<Index = [usize; RANK]>,
        L: Layout,
    {
        let (param, checked) = encode_view::<T, B, S, E, L, Shared, RANK>(view)?;
        Ok(TiledMap {
            param,
            checked,
            device: view.space().device().device_id,
            _source: PhantomData,
        })
    }

    /// The kernel parameter: the encoded map and the tensor it describes. It borrows the
    /// tensor, not this value: the map travels in the parameter, so a launch may outlive the
    /// `TiledMap` (a CUDA graph that captured it, replayed after it is dropped).
    pub fn map(&self) -> TensorMap<'a, T, B, S, RANK> {
        TensorMap::from_checked(self.param)
    }

    /// The tensor's extents, outermost first: `[…, rows, cols]`.
    pub fn extents(&self) -> [usize; RANK] {
        // At most 2^31 − 1 each (checked): they fit `usize` on a 64-bit host.
        self.checked.extents.map(|e| e as usize)
    }
}

impl<T: DlElement, B, S, const RANK: usize> fmt::Debug for TiledMap<'_, T, B, S, RANK>
where
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TiledMap")
            .field("dtype", &T::DTYPE)
            .field("extents", &self.checked.extents)
            .field("strides", &self.checked.strides)
            .field("data", &format_args!("{:#x}", self.checked.address))
            .field(
                "tile",
                &[TensorMap::<T, B, S, RANK>::ROWS, TensorMap::<T, B, S, RANK>::COLS],
            )
            .field("boxes", &TensorMap::<T, B, S, RANK>::BOXES)
            .field("swizzle_bytes", &S::BYTES)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl<T, B, S, const RANK: usize> sealed::Sealed<TensorMap<'_, T, B, S, RANK>> for TensorMap<'_, T, B, S, RANK> {}

/// A tensor-map parameter takes a tensor map of its type ([`TiledMap::map`]).
impl<'a, T, B, S, N, const RANK: usize> KernelArg<TensorMap<'a, T, B, S, RANK>, N> for TensorMap<'a, T, B, S, RANK>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    #[inline]
    fn to_param(&self) -> TensorMapParam<RANK> {
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
