//! A TMA tensor map as a kernel parameter: [`TensorMap`], the kernel's handle on a tensor of
//! rank 2 to 5 in global memory that the copy engine moves box by box into shared memory.
//!
//! Hopper's tensor memory accelerator (TMA) copies a whole box of a tensor between global and
//! shared memory with one instruction, issued by one thread, swizzling it on the way in. It learns the tensor's shape from a *tensor map*: 128 bytes the
//! driver encodes on the host (`cuTensorMapEncodeTiled`) from the tensor's address, extents
//! and strides, the box's extents, the element size and the swizzle. The kernel receives
//! the map's device address and names it in each copy, with the coordinates of the box's
//! first element.
//!
//! The host side is `cuda::TiledMap` (feature `cuda`), which checks the view against the
//! copy engine's rules before the driver sees it and owns the encoded map in device memory;
//! its `map()` is the [`TensorMap`] a launch passes. What the type fixes at compile time:
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

/// The parameter form of a [`TensorMap`] of rank `RANK`: the device address of the encoded
/// map, and the tensor it describes (its first element's address, extents, strides and
/// device), which the launch checks against its other arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TensorMapParam<const RANK: usize = 2> {
    /// The device address of the 128-byte encoded `CUtensorMap`, 64-aligned.
    map: *const u64,
    /// The device address of element `[0, …, 0]`.
    data: u64,
    /// The extents, outermost first: `[…, rows, cols]`.
    extents: [u64; RANK],
    /// The strides, in elements, outermost first; the last (the columns') is 1.
    strides: [u64; RANK],
    /// The CUDA device ordinal of the tensor and the map.
    device: i32,
}

// One layout on the host and on nvptx64: a pointer and `u64`s at 8-byte steps, the device last.
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<*const u64>() == 8 && align_of::<TensorMapParam>() == 8);
    assert!(offset_of!(TensorMapParam, data) == 8);
    assert!(offset_of!(TensorMapParam, extents) == 16);
    assert!(offset_of!(TensorMapParam, strides) == 32);
    assert!(offset_of!(TensorMapParam, device) == 48);
    assert!(size_of::<TensorMapParam>() == 56);
    assert!(offset_of!(TensorMapParam<4>, strides) == 48);
    assert!(offset_of!(TensorMapParam<4>, device) == 80);
    assert!(size_of::<TensorMapParam<4>>() == 88);
};

impl<const RANK: usize> TensorMapParam<RANK> {
    /// The parameter of a map at `map` over the tensor whose element `[0, …, 0]` is at `data`.
    #[cfg(feature = "cuda")]
    pub(crate) fn new(map: u64, data: u64, extents: [u64; RANK], strides: [u64; RANK], device: i32) -> Self {
        TensorMapParam {
            map: map as usize as *const u64,
            data,
            extents,
            strides,
            device,
        }
    }
}

/// A tensor of `T` of rank `RANK` (2 to 5; `[…, rows, cols]`, each row's elements contiguous)
/// in device memory, copied by the TMA in tiles of `B = (Const<ROWS>, Const<COLS>)` elements
/// of one matrix (its last two dimensions) into shared memory swizzled by `S`, each tile as
/// [`BOXES`](Self::BOXES) boxes of one swizzled row's width: what a kernel receives for a
/// `cuda::TiledMap`.
///
/// The map is borrowed from the `TiledMap` that owns it for `'a`, which borrows the tensor;
/// the kernel only reads the tensor through it (a launch refuses an argument it writes that
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
    param: TensorMapParam<RANK>,
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
    #[cfg(feature = "cuda")]
    pub(crate) fn from_checked(param: TensorMapParam<RANK>) -> Self {
        let () = Self::CHECK;
        TensorMap {
            param,
            _marker: PhantomData,
        }
    }

    /// The tensor's extents, outermost first: `[…, rows, cols]`.
    #[inline(always)]
    pub fn extents(&self) -> [usize; RANK] {
        // The extents are at most 2^31 − 1 (checked on the host): they fit `usize`.
        self.param.extents.map(|e| e as usize)
    }

    /// The generic address of the encoded map, which the copy instructions name.
    #[doc(hidden)]
    #[inline(always)]
    pub fn map(&self) -> *const u64 {
        self.param.map
    }
}

impl<T, B, S, const RANK: usize> fmt::Debug for TensorMap<'_, T, B, S, RANK>
where
    B: Extents<Index = [usize; 2]>,
    S: Swizzle,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("extents", &self.param.extents)
            .field("strides", &self.param.strides)
            .field("tile", &[Self::ROWS, Self::COLS])
            .field("boxes", &Self::BOXES)
            .field("swizzle_bytes", &S::BYTES)
            .field("device", &self.param.device)
            .finish_non_exhaustive()
    }
}

// SAFETY: `TensorMapParam` is `#[repr(C)]` of a pointer, `u64`s and an `i32` (its layout is
// asserted above, on both targets); `from_param` keeps the parameter whole, so it returns the
// value `to_param` was given.
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
        let hash = signature::mix_str(hash, "tensor map");
        let hash = signature::mix(hash, B::FINGERPRINT);
        let hash = signature::mix(hash, RANK as u64);
        signature::mix(hash, S::BYTES as u64)
    };

    #[inline(always)]
    fn to_param(&self) -> TensorMapParam<RANK> {
        self.param
    }

    #[inline(always)]
    unsafe fn from_param(param: TensorMapParam<RANK>) -> Self {
        let () = Self::CHECK;
        TensorMap {
            param,
            _marker: PhantomData,
        }
    }

    fn device_ordinal(&self) -> Option<i32> {
        Some(self.param.device)
    }

    fn footprint(&self) -> Option<Footprint> {
        // The span from element `[0, …, 0]` to the last: memory that exists (the host checked
        // the view), so the products fit; saturating all the same.
        let mut elements = 1u64;
        for d in 0..RANK {
            let steps = self.param.extents[d].saturating_sub(1);
            elements = elements.saturating_add(steps.saturating_mul(self.param.strides[d]));
        }
        Some(Footprint {
            start: self.param.data as usize,
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
        let param = TensorMapParam::new(0x1000, 0x20_0000, [3, 64], [80, 1], 2);
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
        // SAFETY: `param` came from `to_param` of a live value; nothing is dereferenced.
        let back = unsafe { Bf16Tile::from_param(map.to_param()) };
        assert_eq!(back.map(), 0x1000 as *const u64);
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
