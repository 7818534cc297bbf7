//! A TMA tensor map as a kernel parameter: [`TensorMap`], the kernel's handle on a tensor of
//! rank 2 to 5 in global memory that the copy engine moves box by box into shared memory.
//!
//! Hopper's tensor memory accelerator (TMA) copies a whole box of a tensor between global and
//! shared memory with one instruction, issued by one thread, swizzling it on the way in. It learns the tensor's shape from a *tensor map*: 128 bytes the
//! driver encodes on the host (`cuTensorMapEncodeTiled`) from the tensor's address, extents
//! and strides, the box's extents, the element size and the swizzle. The kernel receives
//! the map in its parameter ([`TensorMapParam`], 64-byte aligned, read in place as CUDA C++
//! reads a `__grid_constant__` one) and names the parameter's address in each copy, with the
//! coordinates of the box's first element.
//!
//! The host side is `cuda::TiledMap` (feature `cuda`), which checks the view against the
//! copy engine's rules before the driver sees it and keeps the encoded map; its `map()` is the
//! [`TensorMap`] a launch passes. What the type fixes at compile time:
//!
//! - the tile a kernel fills from the map, `ROWS × COLS`, is static, each extent `1..=256`
//!   (the copy engine's limit);
//! - a tile row is a whole number of rows of the swizzle `S` (`COLS × size_of::<T>()` a
//!   multiple of `S::BYTES`): the copy engine's box is one swizzled row wide, so a tile is
//!   copied as [`BOXES`](TensorMap::BOXES) boxes of `ROWS × BOX_COLS`, side by side in the
//!   tensor, one after another in shared memory, each `ROWS` swizzled rows (the layout
//!   [`Swizzle`] describes): a `k × n` operand tile, `n` contiguous, is its column panels;
//! - elements are 1, 2, 4 or 8 bytes, which the copy engine moves without interpreting them;
//! - the tensor's rank `RANK` is 2 to 5: a tile is a `ROWS × COLS` box of its last two
//!   dimensions (rows and columns) at one index of the ones before (a matrix of a batch: the
//!   `s × d` of one head of a `b × h × s × d` tensor, whatever the strides of `b` and `h`).
//!
//! Boxes that reach past the tensor's extents (the ragged edge of a matrix) are filled with
//! zeros there by the hardware, so a kernel copies whole boxes and never reads out of bounds;
//! in a tensor of rank 3 or more, a box never reaches into the next matrix of the batch: rows
//! past one matrix's last arrive as zeros, not as the next one's first.

use super::KernelParam;
use super::disjoint::{Footprint, Use};
use super::param::dtype_fingerprint;
use super::signature;
use super::swizzle::Swizzle;
use crate::dtype::DlElement;
use crate::extents::Extents;
use core::fmt;
use core::marker::PhantomData;

/// The parameter form of a [`TensorMap`] of rank `RANK`: the encoded map itself, which the
/// kernel reads in place (the parameter is declared 64-byte aligned, as CUDA C++ declares a
/// `__grid_constant__ CUtensorMap`), and the tensor it describes, which the launch checks
/// against its other arguments.
///
/// Passing the map in the parameter, not in device memory, is what lets a launch need no copy
/// to the device, no wait and no memory of the map's own: a launch queued on any stream, or
/// captured into a CUDA graph, carries its map.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug)]
pub struct TensorMapParam<const RANK: usize = 2> {
    /// The 128-byte `CUtensorMap` the driver encoded (`cuTensorMapEncodeTiled`), as 16 words.
    encoded: [u64; 16],
    /// The tensor it describes.
    tensor: MappedTensor<RANK>,
}

/// The tensor a [`TensorMapParam`] describes: its first element's address, extents, strides
/// and device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct MappedTensor<const RANK: usize> {
    /// The device address of element `[0, …, 0]`.
    data: u64,
    /// The extents, outermost first: `[…, rows, cols]`.
    extents: [u64; RANK],
    /// The strides, in elements, outermost first; the last (the columns') is 1.
    strides: [u64; RANK],
    /// The CUDA device ordinal of the tensor.
    device: i32,
}

// One layout on the host and on nvptx64: the map's 16 words, then `u64`s at 8-byte steps and
// the device last, 16-aligned (the most rustc's kernel ABI declares; `dlmd-build` declares the
// parameter 64-aligned).
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(align_of::<TensorMapParam>() == 16 && offset_of!(TensorMapParam, encoded) == 0);
    assert!(offset_of!(TensorMapParam, tensor) == 128);
    assert!(offset_of!(MappedTensor<2>, extents) == 8);
    assert!(offset_of!(MappedTensor<2>, strides) == 24);
    assert!(offset_of!(MappedTensor<2>, device) == 40);
    assert!(size_of::<TensorMapParam>() == 176);
    assert!(offset_of!(MappedTensor<4>, strides) == 40);
    assert!(offset_of!(MappedTensor<4>, device) == 72);
    assert!(size_of::<TensorMapParam<4>>() == 208);
};

impl<const RANK: usize> TensorMapParam<RANK> {
    /// The parameter of the map `encoded` over the tensor whose element `[0, …, 0]` is at
    /// `data`.
    #[cfg(feature = "cuda")]
    pub(crate) fn new(encoded: [u64; 16], data: u64, extents: [u64; RANK], strides: [u64; RANK], device: i32) -> Self {
        TensorMapParam {
            encoded,
            tensor: MappedTensor {
                data,
                extents,
                strides,
                device,
            },
        }
    }
}

/// A tensor of `T` of rank `RANK` (2 to 5; `[…, rows, cols]`, each row's elements contiguous)
/// in device memory, copied by the TMA in tiles of `B = (Const<ROWS>, Const<COLS>)` elements
/// of one matrix (its last two dimensions) into shared memory swizzled by `S`, each tile as
/// [`BOXES`](Self::BOXES) boxes of one swizzled row's width: what a kernel receives for a
/// `cuda::TiledMap`.
///
/// The map borrows the tensor for `'a`, as the `TiledMap` it came from does; the kernel only
/// reads the tensor through it (a launch refuses an argument it writes that
/// shares memory with the tensor).
///
/// Using the type checks the box at compile time (when a kernel takes it, or a map is made):
///
/// ```compile_fail,E0080
/// # use dlmd::extents::Const;
/// # use dlmd::kernel::swizzle::Swizzle128;
/// # use dlmd::kernel::tensor_map::TensorMap;
/// // 48 `f32`s are 192 bytes: one and a half rows of the 128-byte swizzle.
/// let _ = TensorMap::<f32, (Const<8>, Const<48>), Swizzle128>::TILE_BYTES;
/// ```
///
/// ```
/// # use dlmd::extents::Const;
/// # use dlmd::kernel::swizzle::Swizzle128;
/// # use dlmd::kernel::tensor_map::TensorMap;
/// type Tile<'a> = TensorMap<'a, u16, (Const<64>, Const<64>), Swizzle128>;
/// assert_eq!((Tile::ROWS, Tile::COLS, Tile::BOXES, Tile::TILE_BYTES), (64, 64, 1, 8192));
/// // A `64 × 256` tile of `u16`: four boxes of `64 × 64`.
/// type Panels<'a> = TensorMap<'a, u16, (Const<64>, Const<256>), Swizzle128>;
/// assert_eq!((Panels::BOX_COLS, Panels::BOXES, Panels::BOX_BYTES), (64, 4, 8192));
/// ```
pub struct TensorMap<'a, T, B, S, const RANK: usize = 2> {
    tensor: MappedTensor<RANK>,
    /// On the host, the encoded map, which a launch passes in the parameter.
    #[cfg(not(target_arch = "nvptx64"))]
    encoded: [u64; 16],
    /// In a kernel, the generic address of the parameter's map.
    #[cfg(target_arch = "nvptx64")]
    at: *const u64,
    _marker: PhantomData<(&'a T, B, S)>,
}

impl<T, B, S, const RANK: usize> Clone for TensorMap<'_, T, B, S, RANK> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, B, S, const RANK: usize> Copy for TensorMap<'_, T, B, S, RANK> {}

// SAFETY: a `TensorMap` is read only: its methods take `&self` and return numbers, and the
// address it holds is handed to the copy engine, which reads through it. Threads that share it
// (a kernel's closures that run on every thread) read the same constant parameter.
unsafe impl<T, B, S, const RANK: usize> Sync for TensorMap<'_, T, B, S, RANK> {}

impl<'a, T, B, S, const RANK: usize> TensorMap<'a, T, B, S, RANK>
where
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    /// The rows of a tile (and of each of its boxes): its first static extent.
    pub const ROWS: usize = match B::STATIC_ENDS.0 {
        Some(rows) => rows,
        None => panic!("a tensor map's box extents must be static: (Const<ROWS>, Const<COLS>)"),
    };
    /// The columns of a tile: its second static extent.
    pub const COLS: usize = match B::STATIC_ENDS.1 {
        Some(cols) => cols,
        None => panic!("a tensor map's box extents must be static: (Const<ROWS>, Const<COLS>)"),
    };
    /// The columns of one box, the copy engine's unit: one swizzled row, `S::BYTES` bytes.
    pub const BOX_COLS: usize = S::BYTES / size_of::<T>();
    /// The boxes of a tile, side by side along its rows: `COLS / BOX_COLS`.
    pub const BOXES: usize = {
        let () = Self::CHECK;
        Self::COLS / Self::BOX_COLS
    };
    /// The bytes of a box, in shared memory: `ROWS × S::BYTES`.
    pub const BOX_BYTES: usize = {
        let () = Self::CHECK;
        Self::ROWS * S::BYTES
    };
    /// The bytes of a tile, in shared memory: `ROWS × COLS × size_of::<T>()`, its boxes one
    /// after another.
    pub const TILE_BYTES: usize = Self::BOXES * Self::BOX_BYTES;

    /// The box and element rules, evaluated wherever the type is used.
    pub(crate) const CHECK: () = {
        assert!(
            RANK >= 2 && RANK <= 5,
            "a tensor map's rank is 2 to 5 (the copy engine's limit): TensorMap<'_, T, B, S, RANK>"
        );
        assert!(
            Self::ROWS >= 1 && Self::ROWS <= 256 && Self::COLS >= 1 && Self::COLS <= 256,
            "each extent of a tensor map's tile must be 1..=256 (the copy engine's limit)"
        );
        assert!(
            matches!(size_of::<T>(), 1 | 2 | 4 | 8),
            "a tensor map's elements must be 1, 2, 4 or 8 bytes"
        );
        assert!(
            (Self::COLS * size_of::<T>()).is_multiple_of(S::BYTES),
            "a tile row must be whole rows of the swizzle (S::BYTES bytes each): COLS * size_of::<T>() a multiple of S::BYTES"
        );
    };

    /// The map over the tensor `param` describes.
    #[cfg(all(feature = "cuda", not(target_arch = "nvptx64")))]
    pub(crate) fn from_checked(param: TensorMapParam<RANK>) -> Self {
        let () = Self::CHECK;
        TensorMap {
            tensor: param.tensor,
            encoded: param.encoded,
            _marker: PhantomData,
        }
    }

    /// The tensor's extents, outermost first: `[…, rows, cols]`.
    #[inline(always)]
    pub fn extents(&self) -> [usize; RANK] {
        // The extents are at most 2^31 − 1 (checked on the host): they fit `usize`.
        self.tensor.extents.map(|e| e as usize)
    }

    /// The generic address of the encoded map, which the copy instructions name: in a kernel,
    /// the kernel parameter's (read in place, 64-byte aligned).
    #[doc(hidden)]
    #[inline(always)]
    pub fn map(&self) -> *const u64 {
        #[cfg(target_arch = "nvptx64")]
        return self.at;
        #[cfg(not(target_arch = "nvptx64"))]
        return self.encoded.as_ptr();
    }
}

impl<T, B, S, const RANK: usize> fmt::Debug for TensorMap<'_, T, B, S, RANK>
where
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("extents", &self.tensor.extents)
            .field("strides", &self.tensor.strides)
            .field("tile", &[Self::ROWS, Self::COLS])
            .field("boxes", &Self::BOXES)
            .field("swizzle_bytes", &S::BYTES)
            .field("device", &self.tensor.device)
            .finish_non_exhaustive()
    }
}

// SAFETY: `TensorMapParam` is `#[repr(C)]` of `u64`s and an `i32` (its layout is asserted
// above, on both targets); on the host `from_param` keeps the parameter whole, so it returns
// the value `to_param` was given; in a kernel the map is read in place (`IN_PLACE`), from the
// address `from_param_in_place` is given, and the tensor is kept whole (`from_param` there
// traps, as the trait allows for a type read in place).
unsafe impl<T, B, S, const RANK: usize> KernelParam for TensorMap<'_, T, B, S, RANK>
where
    T: DlElement,
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    type Param = TensorMapParam<RANK>;
    const FINGERPRINT: u64 = {
        let () = Self::CHECK;
        let hash = dtype_fingerprint::<T>(signature::param_layout::<Self>());
        let hash = signature::mix_str(hash, "tensor map in place");
        let hash = signature::mix(hash, B::FINGERPRINT);
        let hash = signature::mix(hash, RANK as u64);
        signature::mix(hash, S::BYTES as u64)
    };
    const IN_PLACE: bool = true;

    #[inline(always)]
    fn to_param(&self) -> TensorMapParam<RANK> {
        TensorMapParam {
            #[cfg(not(target_arch = "nvptx64"))]
            encoded: self.encoded,
            // A kernel's map is where its parameter is; a kernel launches nothing.
            #[cfg(target_arch = "nvptx64")]
            encoded: [0; 16],
            tensor: self.tensor,
        }
    }

    #[inline(always)]
    unsafe fn from_param(param: TensorMapParam<RANK>) -> Self {
        let () = Self::CHECK;
        // In a kernel the map is read where its parameter is, which only `from_param_in_place`
        // knows: a map rebuilt from a value would name no map, so the kernel stops instead.
        #[cfg(target_arch = "nvptx64")]
        {
            let _ = param;
            // SAFETY: `trap` ends the kernel with an error; it has no precondition.
            unsafe { core::arch::nvptx::trap() }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        TensorMap {
            tensor: param.tensor,
            encoded: param.encoded,
            _marker: PhantomData,
        }
    }

    #[inline(always)]
    unsafe fn from_param_in_place(param: TensorMapParam<RANK>, at: *const TensorMapParam<RANK>) -> Self {
        let () = Self::CHECK;
        #[cfg(not(target_arch = "nvptx64"))]
        let _ = at;
        TensorMap {
            tensor: param.tensor,
            #[cfg(not(target_arch = "nvptx64"))]
            encoded: param.encoded,
            // The map is the parameter's first field.
            #[cfg(target_arch = "nvptx64")]
            at: at.cast::<u64>(),
            _marker: PhantomData,
        }
    }

    fn device_ordinal(&self) -> Option<i32> {
        Some(self.tensor.device)
    }

    fn footprint(&self) -> Option<Footprint> {
        // The span from element `[0, …, 0]` to the last: memory that exists (the host checked
        // the view), so the products fit; saturating all the same.
        let mut elements = 1u64;
        for d in 0..RANK {
            let steps = self.tensor.extents[d].saturating_sub(1);
            elements = elements.saturating_add(steps.saturating_mul(self.tensor.strides[d]));
        }
        Some(Footprint {
            start: self.tensor.data as usize,
            bytes: (elements as usize).saturating_mul(size_of::<T>()),
            used: Use::Read,
        })
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;
    use crate::extents::Const;
    use crate::kernel::swizzle::{Swizzle32, Swizzle64, Swizzle128};

    type Bf16Tile<'a> = TensorMap<'a, half::bf16, (Const<64>, Const<64>), Swizzle128>;

    #[test]
    fn tensor_map_box_constants() {
        assert_eq!((Bf16Tile::ROWS, Bf16Tile::COLS, Bf16Tile::BOX_BYTES), (64, 64, 8192));
        assert_eq!(
            (Bf16Tile::BOX_COLS, Bf16Tile::BOXES, Bf16Tile::TILE_BYTES),
            (64, 1, 8192)
        );
        assert_eq!(TensorMap::<f32, (Const<256>, Const<8>), Swizzle32>::BOX_BYTES, 8192);
        assert_eq!(TensorMap::<u8, (Const<1>, Const<64>), Swizzle64>::BOX_BYTES, 64);
        type Panels = TensorMap<'static, half::bf16, (Const<64>, Const<256>), Swizzle128>;
        assert_eq!((Panels::BOX_COLS, Panels::BOXES), (64, 4));
        assert_eq!((Panels::BOX_BYTES, Panels::TILE_BYTES), (8192, 32768));
        type Bytes = TensorMap<'static, u8, (Const<128>, Const<256>), Swizzle128>;
        assert_eq!((Bytes::BOX_COLS, Bytes::BOXES, Bytes::TILE_BYTES), (128, 2, 32768));
        type Narrow = TensorMap<'static, f32, (Const<8>, Const<32>), Swizzle32>;
        assert_eq!((Narrow::BOX_COLS, Narrow::BOXES, Narrow::BOX_BYTES), (8, 4, 256));
    }

    #[test]
    fn tensor_map_footprint_is_the_rows_span_read() {
        let encoded = core::array::from_fn(|w| 0x1000 + w as u64);
        let param = TensorMapParam::new(encoded, 0x20_0000, [3, 64], [80, 1], 2);
        let map = Bf16Tile::from_checked(param);
        assert_eq!(map.extents(), [3, 64]);
        assert_eq!(map.device_ordinal(), Some(2));
        let footprint = map.footprint();
        assert_eq!(
            footprint,
            Some(Footprint {
                start: 0x20_0000,
                bytes: (2 * 80 + 64) * 2,
                used: Use::Read,
            })
        );
        // The launch passes the encoded map itself, and the tensor, as they were made.
        let crossed = map.to_param();
        assert_eq!((crossed.encoded, crossed.tensor.data), (encoded, 0x20_0000));
        // SAFETY: `param` came from `to_param` of a live value; nothing is dereferenced.
        let back = unsafe { Bf16Tile::from_param(crossed) };
        assert_eq!(back.to_param().encoded, encoded);
        assert_eq!((back.extents(), back.footprint()), (map.extents(), footprint));
        // On the host the map's address is the words' own (nothing reads it there).
        assert_eq!(back.map(), back.encoded.as_ptr());
    }

    #[test]
    fn tensor_map_fingerprint_tells_boxes_swizzles_and_elements_apart() {
        let a = Bf16Tile::FINGERPRINT;
        let b = TensorMap::<half::bf16, (Const<32>, Const<64>), Swizzle128>::FINGERPRINT;
        let c = TensorMap::<half::bf16, (Const<64>, Const<32>), Swizzle64>::FINGERPRINT;
        let d = TensorMap::<half::f16, (Const<64>, Const<64>), Swizzle128>::FINGERPRINT;
        let e = TensorMap::<u16, (Const<64>, Const<64>), Swizzle128>::FINGERPRINT;
        let all = [a, b, c, d, e];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j], "{i} and {j}");
            }
        }
    }
}
