//! The MemArray's `add_index` on the GPU, written in Rust: each element gains the sum of its
//! indices, for every element type a MemArray holds and ranks 0 to 4, over any strides
//! (negative ones included). One source for both sides: compiled for `nvptx64-nvidia-cuda`
//! each `#[dlmd::kernel]` is a PTX entry point; compiled for the host it is the typed launcher,
//! and [`add_index`] picks the kernel of an imported tensor's element type and rank.
//! [`accumulate`] (`out += x`) is the two-argument kernel, whose launch checks its arguments
//! against each other.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::half::f16;
use dlmd::kernel::Thread;
use dlmd::num_complex::Complex;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims, F4E2M1FNx2, LayoutStrideRelaxed};

/// The seed's kernel on one element: add the sum of its indices, as the element type adds
/// (integers wrap, complex numbers gain it in their real part, FP4 pairs round and saturate).
/// `bool` elements are taken as their bytes ([`add_index_bool_bytes`]).
pub trait AddIndex: Copy {
    /// Adds `sum`.
    fn add_index(&mut self, sum: usize);
}

macro_rules! add_index_int {
    ($($t:ty),*) => {$(
        impl AddIndex for $t {
            #[inline(always)]
            fn add_index(&mut self, sum: usize) {
                *self = self.wrapping_add(sum as $t);
            }
        }
    )*};
}
add_index_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl AddIndex for f16 {
    #[inline(always)]
    fn add_index(&mut self, sum: usize) {
        *self = f16::from_f32(self.to_f32() + sum as f32);
    }
}
/// Floats gain the sum as a float; complex numbers in their real part.
macro_rules! add_index_float {
    ($($t:ty => $f:ty $(, $re:ident)?);*) => {$(
        impl AddIndex for $t {
            #[inline(always)]
            fn add_index(&mut self, sum: usize) {
                (*self)$(.$re)? += sum as $f;
            }
        }
    )*};
}
add_index_float!(f32 => f32; f64 => f64; Complex<f32> => f32, re; Complex<f64> => f64, re);

impl AddIndex for F4E2M1FNx2 {
    #[inline(always)]
    fn add_index(&mut self, sum: usize) {
        let (lo, hi) = self.to_f32_pair();
        *self = F4E2M1FNx2::from_f32_pair(lo + sum as f32, hi + sum as f32);
    }
}

/// One kernel per element type and rank (`#[dlmd::kernel]`s are not generic: each is one PTX
/// entry point), and on the host the dispatch to them.
macro_rules! kernels {
    ($($t:ty => [$k0:ident, $k1:ident, $k2:ident, $k3:ident, $k4:ident];)*) => {
        kernels!(@each $($t, $k0, 0; $t, $k1, 1; $t, $k2, 2; $t, $k3, 3; $t, $k4, 4;)*);

        /// Queues `add_index` over `x` on its producer's stream and returns without waiting:
        /// the kernel of its element type and rank, with a grid that follows the view's
        /// partition ([`grid`]). Every check of the launch applies ([`dlmd::cuda::Imported`]).
        #[cfg(not(target_arch = "nvptx64"))]
        pub fn add_index(kernels: &dlmd::cuda::Kernels, x: &dlmd::cuda::Imported) -> Result<(), Error> {
            add_index_batched(kernels, x, 0)
        }

        /// [`add_index`] over a batch: the first `batch` dimensions index the batch and are left
        /// out of each element's index sum (a batch of `n` arrays gains what each would alone).
        /// `batch` past the rank is refused ([`Error::Batch`]).
        #[cfg(not(target_arch = "nvptx64"))]
        pub fn add_index_batched(kernels: &dlmd::cuda::Kernels, x: &dlmd::cuda::Imported, batch: u32) -> Result<(), Error> {
            let t = x.tensor().dl_tensor();
            // A NULL shape is refused by `arg` below, with the import's error.
            let shape = x.tensor().shape().unwrap_or(&[]);
            if batch as usize > shape.len() {
                return Err(Error::Batch { batch, ndim: t.ndim });
            }
            if shape.contains(&0) {
                return Ok(());
            }
            let config = grid(shape);
            // A kernel cannot trust device `bool`s to be 0 or 1: it takes their bytes.
            if t.dtype == <bool as dlmd::DlElement>::DTYPE {
                let launch = x.launch(kernels, config)?;
                return Ok(match t.ndim {
                    0 => add_index_bool_0(launch, batch, x.arg_bool_bytes()?),
                    1 => add_index_bool_1(launch, batch, x.arg_bool_bytes()?),
                    2 => add_index_bool_2(launch, batch, x.arg_bool_bytes()?),
                    3 => add_index_bool_3(launch, batch, x.arg_bool_bytes()?),
                    4 => add_index_bool_4(launch, batch, x.arg_bool_bytes()?),
                    _ => return Err(Error::Unsupported { dtype: t.dtype, ndim: t.ndim }),
                }?);
            }
            $(
                if t.dtype == <$t as dlmd::DlElement>::DTYPE {
                    let launch = x.launch(kernels, config)?;
                    return Ok(match t.ndim {
                        0 => $k0(launch, batch, x.arg()?),
                        1 => $k1(launch, batch, x.arg()?),
                        2 => $k2(launch, batch, x.arg()?),
                        3 => $k3(launch, batch, x.arg()?),
                        4 => $k4(launch, batch, x.arg()?),
                        _ => return Err(Error::Unsupported { dtype: t.dtype, ndim: t.ndim }),
                    }?);
                }
            )*
            Err(Error::Unsupported { dtype: t.dtype, ndim: t.ndim })
        }
    };
    (@each $($t:ty, $name:ident, $rank:literal;)*) => {$(
        #[doc = concat!("`add_index` over a rank-", stringify!($rank), " view of `", stringify!($t), "`.")]
        #[dlmd::kernel]
        pub fn $name(thread: Thread, batch: u32, mut x: DeviceMdspanMut<'_, $t, Dims<$rank>, LayoutStrideRelaxed>) {
            thread.for_each_mut(&mut x, |index, x| x.add_index(batch_sum(index, batch)));
        }
    )*};
}

/// The sum of `index` past its first `batch` dimensions. (Dimension by dimension, each kept or
/// not: a runtime count of dimensions skipped would put the index in local memory.)
#[inline(always)]
pub fn batch_sum<const R: usize>(index: [usize; R], batch: u32) -> usize {
    let mut sum = 0;
    for (d, i) in index.into_iter().enumerate() {
        sum += if d < batch as usize { 0 } else { i };
    }
    sum
}

/// `add_index` over the bytes of a `bool` tensor (`Imported::arg_bool_bytes`): true where the
/// element was true (any byte but 0, as the producer may have written) or the index sum is not
/// zero, written back as 0 or 1.
#[inline(always)]
pub fn add_index_bool_bytes(byte: &mut u8, sum: usize) {
    *byte = u8::from(*byte != 0 || sum != 0);
}

/// One kernel per rank over the bytes of a `bool` tensor.
macro_rules! bool_kernels {
    ($($name:ident: $rank:literal),*) => {$(
        #[doc = concat!("`add_index` over a rank-", stringify!($rank), " view of a `bool` tensor's bytes.")]
        #[dlmd::kernel]
        pub fn $name(thread: Thread, batch: u32, mut x: DeviceMdspanMut<'_, u8, Dims<$rank>, LayoutStrideRelaxed>) {
            thread.for_each_mut(&mut x, |index, x| add_index_bool_bytes(x, batch_sum(index, batch)));
        }
    )*};
}
bool_kernels!(add_index_bool_0: 0, add_index_bool_1: 1, add_index_bool_2: 2, add_index_bool_3: 3, add_index_bool_4: 4);

kernels! {
    i8 => [add_index_int8_0, add_index_int8_1, add_index_int8_2, add_index_int8_3, add_index_int8_4];
    i16 => [add_index_int16_0, add_index_int16_1, add_index_int16_2, add_index_int16_3, add_index_int16_4];
    i32 => [add_index_int32_0, add_index_int32_1, add_index_int32_2, add_index_int32_3, add_index_int32_4];
    i64 => [add_index_int64_0, add_index_int64_1, add_index_int64_2, add_index_int64_3, add_index_int64_4];
    u8 => [add_index_uint8_0, add_index_uint8_1, add_index_uint8_2, add_index_uint8_3, add_index_uint8_4];
    u16 => [add_index_uint16_0, add_index_uint16_1, add_index_uint16_2, add_index_uint16_3, add_index_uint16_4];
    u32 => [add_index_uint32_0, add_index_uint32_1, add_index_uint32_2, add_index_uint32_3, add_index_uint32_4];
    u64 => [add_index_uint64_0, add_index_uint64_1, add_index_uint64_2, add_index_uint64_3, add_index_uint64_4];
    f16 => [add_index_float16_0, add_index_float16_1, add_index_float16_2, add_index_float16_3, add_index_float16_4];
    f32 => [add_index_float32_0, add_index_float32_1, add_index_float32_2, add_index_float32_3, add_index_float32_4];
    f64 => [add_index_float64_0, add_index_float64_1, add_index_float64_2, add_index_float64_3, add_index_float64_4];
    Complex<f32> => [add_index_complex64_0, add_index_complex64_1, add_index_complex64_2, add_index_complex64_3,
        add_index_complex64_4];
    Complex<f64> => [add_index_complex128_0, add_index_complex128_1, add_index_complex128_2, add_index_complex128_3,
        add_index_complex128_4];
    F4E2M1FNx2 => [add_index_fp4x2_0, add_index_fp4x2_1, add_index_fp4x2_2, add_index_fp4x2_3, add_index_fp4x2_4];
}

/// `out += x` over `float32` views of one rank and any strides, one kernel per rank.
macro_rules! accumulate {
    ($($name:ident: $rank:literal),*) => {$(
        #[doc = concat!("`out += x` over rank-", stringify!($rank), " `float32` views of any strides.")]
        #[dlmd::kernel]
        pub fn $name(
            thread: Thread,
            mut out: DeviceMdspanMut<'_, f32, Dims<$rank>, LayoutStrideRelaxed>,
            x: DeviceMdspan<'_, f32, Dims<$rank>, LayoutStrideRelaxed>,
        ) {
            thread.for_each_mut(&mut out, |index, o| *o += x[index]);
        }
    )*};
}
accumulate!(accumulate_1: 1, accumulate_2: 2);

/// Queues `out += x` (rank-1 or rank-2 `float32` tensors of one shape) on `out`'s producer's
/// stream, which `x`'s must be too, and returns without waiting. The launch refuses arguments
/// that share memory ([`dlmd::cuda::LaunchError::Arguments`]): `out` and `x` the same
/// tensor, or overlapping views of one.
#[cfg(not(target_arch = "nvptx64"))]
pub fn accumulate(
    kernels: &dlmd::cuda::Kernels,
    out: &dlmd::cuda::Imported,
    x: &dlmd::cuda::Imported,
) -> Result<(), Error> {
    let (o, i) = (out.tensor().dl_tensor(), x.tensor().dl_tensor());
    let shape = out.tensor().shape().unwrap_or(&[]);
    if out.tensor().shape() != x.tensor().shape() {
        return Err(Error::Shapes);
    }
    if shape.contains(&0) {
        return Ok(());
    }
    let f32_dtype = <f32 as dlmd::DlElement>::DTYPE;
    if let Some(&dtype) = [o.dtype, i.dtype].iter().find(|&&d| d != f32_dtype) {
        return Err(Error::Unsupported { dtype, ndim: o.ndim });
    }
    let launch = out.launch(kernels, grid(shape))?;
    Ok(match o.ndim {
        1 => accumulate_1(launch, out.arg()?, x.arg()?),
        2 => accumulate_2(launch, out.arg()?, x.arg()?),
        _ => {
            return Err(Error::Unsupported {
                dtype: o.dtype,
                ndim: o.ndim,
            });
        }
    }?)
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use dlmd::cuda::{CudaError, LaunchConfig};
    use dlmd::dlpack::DLDataType;

    /// The kernels' PTX, built by `dlmd-build` from this crate.
    pub const PTX: &str = dlmd::kernels_ptx!();

    /// Why [`add_index`](super::add_index) did not run.
    #[derive(Debug)]
    pub enum Error {
        /// No kernel takes this element type and rank.
        Unsupported {
            /// The tensor's data type.
            dtype: DLDataType,
            /// The tensor's rank.
            ndim: i32,
        },
        /// Two tensors of an element-wise kernel have different shapes.
        Shapes,
        /// More batch dimensions than the tensor has.
        Batch {
            /// The batch dimensions asked for.
            batch: u32,
            /// The tensor's rank.
            ndim: i32,
        },
        /// The launch was refused, or CUDA failed.
        Cuda(CudaError),
    }

    impl From<CudaError> for Error {
        fn from(e: CudaError) -> Self {
            Error::Cuda(e)
        }
    }

    impl core::fmt::Display for Error {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self {
                Error::Unsupported { dtype, ndim } => {
                    write!(
                        f,
                        "add_index has no GPU kernel for {dtype} tensors of rank {ndim} (ranks 0 to 4)"
                    )
                }
                Error::Shapes => f.write_str("the tensors have different shapes"),
                Error::Batch { batch, ndim } => {
                    write!(f, "{batch} batch dimensions asked of a tensor of rank {ndim}")
                }
                Error::Cuda(e) => e.fmt(f),
            }
        }
    }

    impl std::error::Error for Error {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            match self {
                Error::Cuda(e) => Some(e),
                Error::Unsupported { .. } | Error::Shapes | Error::Batch { .. } => None,
            }
        }
    }

    /// A grid for the partition `for_each_mut` makes of a view of `shape`: the last dimension
    /// on the `x` threads, four neighbours each (a rank-1 view on all threads, four each), the
    /// one before on `y`, the rest flattened on `z`, each thread striding through what its
    /// grid does not cover; 256 threads a block, shaped to the extents so that small last
    /// dimensions do not leave threads idle.
    pub fn grid(shape: &[i64]) -> LaunchConfig {
        let extent = |i: Option<usize>| i.and_then(|i| shape.get(i)).map_or(1, |&e| e.max(1) as u64);
        let rank = shape.len();
        let x = extent(rank.checked_sub(1)).div_ceil(4);
        let y = extent(rank.checked_sub(2));
        let z: u64 = shape[..rank.saturating_sub(2)]
            .iter()
            .map(|&e| e.max(1) as u64)
            .product();
        let bx = x.next_power_of_two().min(256);
        let by = y.next_power_of_two().min(256 / bx);
        LaunchConfig {
            grid_dim: (
                x.div_ceil(bx).min(i32::MAX as u64) as u32,
                y.div_ceil(by).min(65_535) as u32,
                z.min(65_535) as u32,
            ),
            block_dim: (bx as u32, by as u32, 1),
            shared_mem_bytes: 0,
        }
    }
}
