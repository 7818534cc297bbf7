//! Typed n-dimensional views that speak [DLPack].
//!
//! dlmd maps Rust element types to DLPack data types ([`DlElement`]) and defines the DLPack 1.3
//! C ABI ([`dlpack`]), so tensors can cross between Rust, C++/CUDA kernels and Python frameworks
//! without copies and with every misuse the type system can see refused at compile time.
//!
//! ```
//! use dlmd::{DlElement, dlpack::{DLDataType, DLDataTypeCode}};
//!
//! #[derive(Clone, Copy, DlElement)]
//! #[repr(C)]
//! struct Float4 {
//!     x: f32,
//!     y: f32,
//!     z: f32,
//!     w: f32,
//! }
//!
//! assert_eq!(Float4::DTYPE, DLDataType::new(DLDataTypeCode::FLOAT, 32, 4));
//! assert_eq!(<half::bf16 as DlElement>::DTYPE.to_string(), "bfloat16");
//! ```
//!
//! # Features
//!
//! - `std` (default): `std::error::Error` for the error types, and what needs an allocator:
//!   owned exchange of managed tensors ([`managed`]), [`Array`], the bitmap that checks
//!   overlapping `bool` tensors.
//! - `derive` (default): `#[derive(DlElement)]` and [`dlmd!`], from `dlmd-derive`.
//! - `python`: DLPack for Python through pyo3 ([`python`]: `__dlpack__`
//!   producers, `from_dlpack` consumers, the C exchange table both ways). Implies `std`.
//! - `cuda`: CUDA through cudarc ([`cuda`]: device and managed views over cudarc
//!   allocations, kernel arguments, stream ordering for DLPack). Builds without a CUDA toolkit;
//!   the driver and NVRTC are loaded at run time unless another crate of the build links them.
//!   Implies `std`.
//! - `nccl`: NCCL collectives over device views ([`nccl`]). Implies `cuda`.
//! - `ndarray`: [`ndarray`](mod@ndarray) interop: array views ⇄ host views without a copy,
//!   owned arrays exported as managed tensors. Implies `std`.
//! - `oneapi`: oneAPI (SYCL) USM as dpctl exchanges it ([`oneapi`]): dpctl's C interface
//!   library, loaded at run time, tells host and shared USM (viewed on the host) from device
//!   USM. Implies `std`.
//! - `xla`: XLA FFI handlers in Rust ([`xla`]). Implies `std`.
//! - `torch`: torch operators in Rust ([`torch`](mod@torch)), registered with torch's
//!   dispatcher through its stable C ABI, found in the process at run time. Implies `std`.
//! - `candle`: [`candle`](mod@candle) interop: candle-core 0.11 CPU tensors as host views and
//!   managed tensors without a copy, DLPack tensors as candle tensors. Implies `std`.
//!
//! Without default features the crate is `#![no_std]` and needs no allocator: the C ABI, element
//! types, extents, layouts, views, and conversion of views to and from `DLTensor`.
//!
//! # Modules
//!
//! - The C ABI and the types of a view: [`dlpack`] is the C ABI (with one trait over both
//!   managed-tensor structs), [`dtype`] maps element types to data types, and [`extents`],
//!   [`layout`] (all index arithmetic), [`space`] (memory spaces and the DLPack devices behind
//!   them) and the access markers ([`Shared`], [`Unique`], [`Atomic`], [`Aliased`],
//!   [`AliasedMut`]: how a view reaches its elements) make up a view's type.
//! - Views and exchange: [`view`] is the view, [`export`] and [`import`] convert views to and
//!   from `DLTensor`, [`managed`] exchanges owned tensors, [`array`](mod@array) owns host
//!   memory behind a view, and [`exchange`] consumes a producer's DLPack C exchange table
//!   without Python.
//! - Kernels: [`kernel`](mod@kernel) is what a `#[dlmd::kernel]` receives (element-wise
//!   [`kernel::Thread`]s, cooperative [`kernel::Block`]s with block-shared tiles), and
//!   [`cuda`] loads and launches kernels, holds device views and orders work on streams.
//! - Runtimes and crates: [`python`] (pyo3), [`nccl`] (collectives over device views),
//!   [`oneapi`] (SYCL USM as dpctl places it), [`ndarray`](mod@ndarray) and
//!   [`candle`](mod@candle).
//!
//! The [`guide`] walks through them, a chapter a topic, from element types to kernels on tensor
//! cores.
//!
//! [DLPack]: https://dmlc.github.io/dlpack/latest/
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![deny(
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
#![doc(test(attr(deny(warnings))))]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Kernels: the thread registers and PTX's atomics (`asm!`) are nightly-only, and nightly is
// what builds for nvptx64.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        allow_internal_unstable,
        cfg_target_has_atomic
    )
)]
// Warp shuffles are LLVM's convergent intrinsics (`core::arch::nvptx` has none yet), and the
// address of a kernel parameter read in place is an `asm!` that `#[dlmd::kernel]` expands in
// the kernel's crate (which then needs no `asm` feature of its own): internal features, used
// for exactly those.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

mod access;
mod aligned;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod array;
#[cfg(feature = "candle")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle")))]
pub mod candle;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub mod cuda;
pub mod dlpack;
pub mod dtype;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod exchange;
pub mod export;
pub mod extents;
mod fingerprint;
// The walkthroughs: documentation only, whose examples are doctests.
#[cfg(any(doc, doctest))]
pub mod guide;
pub mod import;
pub mod kernel;
pub mod layout;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod managed;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub mod nccl;
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub mod ndarray;
#[cfg(feature = "oneapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "oneapi")))]
pub mod oneapi;
#[cfg(any(feature = "xla", feature = "torch"))]
mod panic;
#[cfg(feature = "python")]
#[cfg_attr(docsrs, doc(cfg(feature = "python")))]
pub mod python;
pub mod space;
#[cfg(feature = "torch")]
#[cfg_attr(docsrs, doc(cfg(feature = "torch")))]
pub mod torch;
pub mod view;
#[cfg(feature = "xla")]
#[cfg_attr(docsrs, doc(cfg(feature = "xla")))]
pub mod xla;

/// The `half` crate dlmd's `f16` and `bf16` elements come from.
pub use half;
/// The `num-complex` crate dlmd's complex elements come from.
pub use num_complex;

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use array::Array;
pub use dtype::{
    ByteExact, DlElement, DlLane, DlScalar, ElementStorage, F4E2M1FN, F4E2M1FNx2, F6E2M3FN, F6E3M2FN, F8E4M3FN, F8E5M2,
    F8E8M0FNU, Packed, PlainStorage, SubbytePadded, dtype_of,
};
pub use export::{DLTensorRef, DlpackTensor, to_dlpack_tensor};
pub use extents::{Const, Dims, Dyn, Extents};
pub use import::ImportError;
pub use layout::{LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, Mapping};
pub use space::{Device, Host, Managed, Opaque};
pub use view::{
    Aliased, AliasedMut, Atomic, DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, HostMdspan, HostMdspanAliased,
    HostMdspanAliasedMut, HostMdspanMut, ManagedMdspan, ManagedMdspanMut, Mdspan, OpaqueMdspan, OpaqueMdspanMut,
    OutOfBounds, Shared, Unique, ViewError,
};

/// Derives [`DlElement`] for a newtype or a vector struct.
///
/// - A `#[repr(transparent)]` (or `#[repr(C)]`) struct with one field has the field's data type:
///   `struct Meters(f64)` is `{FLOAT, 64, 1}`, `struct Half2([f16; 2])` is `{FLOAT, 16, 2}`.
///   Only such a newtype may be generic, and it is then an element when its field is and it is
///   `Copy + Send + Sync + 'static` (`struct Wrap<T>(T)` gets
///   `impl<T> DlElement for Wrap<T> where T: DlElement, Self: Copy + …`). `PhantomData` fields
///   beside the one data field are markers and take no lane: `struct Quantity<U>(f32,
///   PhantomData<U>)` is `{FLOAT, 32, 1}`. A newtype of a scalar is a [`DlLane`], so it can make
///   up vectors: `[Meters; 4]` is `{FLOAT, 64, 4}`.
/// - A `#[repr(C)]` struct of 2 to 16 fields of one lane type `S` (a scalar, or a newtype of
///   one) is the vector `{S.code, S.bits, fields}`: `struct Float4 { x: f32, y: f32, z: f32, w:
///   f32 }` is `{FLOAT, 32, 4}`.
///
/// Refused at compile time, each with a message pointing at the cause: a struct without
/// `#[repr(C)]` or `#[repr(transparent)]`, enums, unions, structs without data fields, fields
/// of different types, fields that are not lanes in a vector struct, padding (for
/// example `#[repr(C, align(16))]` over three `f32`), `#[repr(packed)]` that lowers the
/// alignment below the scalar's, lifetimes, and generic vector structs.
///
/// `#[dlmd(crate = path)]` names the dlmd crate where it is not reachable as `::dlmd`, for
/// example after renaming it in `Cargo.toml`.
///
/// ```
/// use dlmd::DlElement;
///
/// #[derive(Clone, Copy, DlElement)]
/// #[repr(transparent)]
/// struct Meters(f64);
///
/// #[derive(Clone, Copy, DlElement)]
/// #[repr(C)]
/// struct Half2([half::f16; 2]);
///
/// assert_eq!(Meters::DTYPE.to_string(), "float64");
/// assert_eq!(Half2::DTYPE.to_string(), "float16x2");
/// ```
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use dlmd_derive::DlElement;

/// Makes a function a GPU kernel, and on the host its typed launcher: one source states the
/// signature for both sides.
///
/// A kernel crate is compiled twice. For `nvptx64-nvidia-cuda` without atomics (by `dlmd-build`, on
/// nightly), the function becomes a PTX entry point of its name: each parameter arrives as its
/// [`KernelParam::Param`](kernel::KernelParam::Param) and is rebuilt into exactly the declared type
/// before the body runs. For the host (with the `cuda` feature), the function becomes a
/// launcher with the same parameters, preceded by a [`cuda::Launch`] (a scope, a stream, the
/// loaded module and a grid):
///
/// ```text
/// // In the kernel crate (`examples/kernels`):
/// #[dlmd::kernel]
/// pub fn add_index(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<3>>) {
///     thread.for_each_mut(&mut out, |[i, j, k], x| *x += (i + j + k) as f32);
/// }
///
/// // On the host (`examples/rust_kernels.rs`):
/// let kernels = cuda::Kernels::load(&ctx, dlmd_example_kernels::PTX)?;
/// cuda::scope(|s| dlmd_example_kernels::add_index(s.launch(&stream, &kernels, grid), view.as_view_mut()))?;
/// ```
///
/// A launch does not compile when an argument differs from the parameter in element type,
/// rank, static extents, layout, memory space or access: the launcher's parameters are the
/// kernel's types. Views must outlive the launch's [`cuda::scope`], which waits for the kernel;
/// a view on another device than the stream's is an error, as is a module whose kernel of this
/// name was built from another signature (the PTX carries a digest of it).
///
/// The body is compiled for `nvptx64` only; a host build with `--cfg dlmd_kernel_check`
/// type-checks it too, so that `cargo check` and rust-analyzer show its errors in place
/// ([`kernel::check`]). Helpers it calls that the host cannot compile are [`device`] items.
///
/// The first parameter is the kernel's context, which the entry point makes and the launcher
/// does not pass: a [`kernel::Thread`] (element-wise) or a [`kernel::Block`] (cooperative),
/// told apart by its type's [`kernel::Context`] impl, so an alias or a renamed import works the
/// same. The other parameters are device and managed views ([`DeviceMdspan`],
/// [`DeviceMdspanMut`], …) and [`DlElement`] scalars, by value, with `'_` for a view's lifetime. Refused at compile time:
/// generics, a return value, `async`, `const`, `unsafe`, an ABI, references and named lifetimes.
/// `#[dlmd::kernel(crate = path)]` names dlmd where it is not `::dlmd`.
///
/// A cooperative kernel (a [`Block`](kernel::Block) first) declares its block's size in its
/// type, and `dlmd-build` writes it into the entry point (PTX `.reqntid`), as CUDA C++'s
/// `__launch_bounds__` does. `#[dlmd::kernel(min_blocks_per_sm = N)]` also asks that `N` blocks
/// fit on one multiprocessor at once (`.minnctapersm N`), which caps the registers a thread may
/// use: the tiled matrix product of `examples/kernels` keeps two blocks of 256 threads per
/// multiprocessor this way (128 registers a thread). An element-wise kernel, whose blocks may be
/// of any size, takes no bounds (`ui-tests/ui/kernel/min_blocks_without_block.rs`).
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use dlmd_derive::kernel;

/// Marks an item of a kernel crate that kernels use and the host does not: a helper function
/// over device views, a shared body of several kernels, a module of them, or a `use` of what
/// only kernels have (`#[dlmd::device] use dlmd::kernel::math;`). It is compiled for
/// `nvptx64`, left out of the host build, and kept where a host build type-checks kernel
/// bodies ([`kernel::check`]), in place of a `#[cfg(target_arch = "nvptx64")]` that would hide
/// it from that check:
///
/// ```text
/// #[dlmd::device]
/// fn product(x: DeviceMdspan<'_, f32, Dims<1>>, y: DeviceMdspan<'_, f32, Dims<1>>, i: usize) -> f32 {
///     x[[i]] * y[[i]] // a read-only device view indexes in a kernel, not on the host
/// }
/// ```
///
/// `#[dlmd::device(crate = path)]` names dlmd where it is not `::dlmd`.
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use dlmd_derive::device;

/// Builds a host view over an array, a slice or a `Vec` in one line, checking at compile time
/// what it can see.
///
/// `dlmd!(data, [extents] [, layout] [, strides = [..]])`:
///
/// - `data` is `&x` for a read-only view ([`HostMdspan`]) or `&mut x` for a read-write one
///   ([`HostMdspanMut`]), where `x` is an array, a slice or a `Vec` of [`DlElement`]s;
/// - each extent is an integer literal (a static extent, `Const<N>`), `_` (dynamic, inferred
///   from the length of `data`; at most one), or any other `usize` expression (dynamic);
/// - the layout is `layout_right` (the default), `layout_left` or `layout_stride`, which takes
///   `strides = [..]`;
/// - `[]` makes a rank-0 view of `&x` where `x` is a single element.
///
/// Compile errors: static extents whose product differs from an array's length, an unknown
/// layout, `[]` over data that is not one element, strides that contradict `layout_right` or
/// `layout_left`, more than one `_`.
///
/// ```
/// use dlmd::{Const, HostMdspan, dlmd};
///
/// let data = [1, 2, 3, 4, 5, 6];
/// let md: HostMdspan<'_, i32, (Const<2>, Const<3>)> = dlmd!(&data, [2, 3]);
/// assert_eq!(md[[1, 0]], 4);
///
/// let mut buf = vec![0.0f32; 12];
/// let rows = 3;
/// let mut m = dlmd!(&mut buf, [rows, _], layout_left);
/// m[[2, 3]] = 1.0;
/// assert_eq!(m.extent(1), 4);
/// assert_eq!(buf[11], 1.0);
///
/// let x = 2.5f64;
/// let scalar = dlmd!(&x, []);
/// assert_eq!(scalar[[]], 2.5);
/// ```
///
/// # Panics
///
/// When a run-time extent does not fit the data (an array whose length is known at compile time
/// with static extents never panics). Use [`Mdspan::from_slice`] for a `Result`.
///
/// Every mistake the macro sees is reported at once, each at the tokens that caused it. The
/// expansion names dlmd through `$crate`, so it works with the crate renamed in `Cargo.toml`
/// and under `#![no_implicit_prelude]`.
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
#[macro_export]
macro_rules! dlmd {
    ($($input:tt)*) => {
        $crate::__private::view! { @crate $crate; $($input)* }
    };
}

/// The PTX of the kernel crate this is written in, as `dlmd-build` made it from the crate's
/// `build.rs` (`dlmd_build::PtxBuild::from_env().build_or_exit()`), for
/// [`cuda::Kernels::load`](https://docs.rs/dlmd/latest/dlmd/cuda/struct.Kernels.html#method.load):
///
/// ```text
/// /// The kernels' PTX.
/// #[cfg(not(target_arch = "nvptx64"))]
/// pub const PTX: &str = dlmd::kernels_ptx!();
/// ```
///
/// `dlmd-build` says where the file is (the variable `DLMD_KERNELS_PTX`, which it sets for the
/// crate's compilation): no path is written twice. Without that build script this does not
/// compile, and says so.
#[macro_export]
macro_rules! kernels_ptx {
    () => {
        ::core::include_str!(::core::env!(
            "DLMD_KERNELS_PTX",
            "no kernel PTX: the crate's build.rs must run `dlmd_build::PtxBuild::from_env().build_or_exit()`"
        ))
    };
}

/// `$body` with `$i` bound to `0`, `1`, … `$count - 1` in turn, written out: `$count` is a
/// `usize` constant of at most 16. A count written as a literal (`4`) writes out its steps
/// alone; any other (`N / 2`, a const generic parameter) writes out 16, and every copy past the
/// count is dropped by the compiler after it has checked it (nested, the copies multiply: give
/// literal counts where they are known). Either way the body is checked as one that may run
/// more than once, so a body that moves a value out is refused whatever the count and however
/// it is written. In a kernel this is `#pragma unroll`: each copy indexes register arrays with
/// a constant (an index known only at run time would put them in local memory), and the
/// compiler schedules the copies together (the loads of one step in flight during the
/// arithmetic of the last), where it would keep a loop whose body it judges too large.
///
/// ```
/// let mut squares = [0usize; 4];
/// dlmd::unroll!(4, |i| {
///     squares[i] = i * i;
/// });
/// assert_eq!(squares, [0, 1, 4, 9]);
/// ```
///
/// The steps are not a loop: a `break` or `continue` in `$body` does not compile, where it
/// would otherwise leave or go on with the loop around the macro, not the step (a label says
/// which loop, where that is meant: `continue 'rows`).
///
/// ```compile_fail,E0695
/// for row in 0..2 {
///     dlmd::unroll!(4, |i| {
///         if i == row {
///             continue;
///         }
///     });
/// }
/// ```
#[macro_export]
macro_rules! unroll {
    // Literal counts below 16 write out their steps alone (the doc above says why); `1` a
    // second that never runs, so that its body is checked as one that may run twice. 16 and
    // every other count take the last arm.
    (1, |$i:ident| $body:block) => {
        $crate::unroll!(@ 1, $i, $body, 0usize 1usize)
    };
    (2, |$i:ident| $body:block) => {
        $crate::unroll!(@ 2, $i, $body, 0usize 1usize)
    };
    (3, |$i:ident| $body:block) => {
        $crate::unroll!(@ 3, $i, $body, 0usize 1usize 2usize)
    };
    (4, |$i:ident| $body:block) => {
        $crate::unroll!(@ 4, $i, $body, 0usize 1usize 2usize 3usize)
    };
    (5, |$i:ident| $body:block) => {
        $crate::unroll!(@ 5, $i, $body, 0usize 1usize 2usize 3usize 4usize)
    };
    (6, |$i:ident| $body:block) => {
        $crate::unroll!(@ 6, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize)
    };
    (7, |$i:ident| $body:block) => {
        $crate::unroll!(@ 7, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize)
    };
    (8, |$i:ident| $body:block) => {
        $crate::unroll!(@ 8, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize)
    };
    (9, |$i:ident| $body:block) => {
        $crate::unroll!(@ 9, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize)
    };
    (10, |$i:ident| $body:block) => {
        $crate::unroll!(@ 10, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize)
    };
    (11, |$i:ident| $body:block) => {
        $crate::unroll!(@ 11, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize 10usize)
    };
    (12, |$i:ident| $body:block) => {
        $crate::unroll!(@ 12, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize 10usize 11usize)
    };
    (13, |$i:ident| $body:block) => {
        $crate::unroll!(@ 13, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize 10usize 11usize 12usize)
    };
    (14, |$i:ident| $body:block) => {
        $crate::unroll!(@ 14, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize 10usize 11usize 12usize 13usize)
    };
    (15, |$i:ident| $body:block) => {
        $crate::unroll!(@ 15, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize
            8usize 9usize 10usize 11usize 12usize 13usize 14usize)
    };
    // The steps' indices are typed: an untyped literal compared with a literal count leaves
    // its type open until the end of the function, and rustc checks every such open question
    // again at each new one (quadratic in the copies).
    ($count:expr, |$i:ident| $body:block) => {
        $crate::unroll!(@ $count, $i, $body, 0usize 1usize 2usize 3usize 4usize 5usize 6usize 7usize 8usize 9usize 10usize 11usize 12usize 13usize 14usize 15usize)
    };
    (@ $count:expr, $i:ident, $body:block, $($k:literal)*) => {{
        const { ::core::assert!($count <= 16, "`unroll!` writes out at most 16 steps") };
        $(
            if $k < $count {
                let $i: ::core::primitive::usize = $k;
                // A labeled block: an unlabeled `break` or `continue` in the body is refused
                // (E0695) rather than taken by a loop around the macro.
                #[allow(unused_labels)]
                'step: { $body }
            }
        )*
    }};
}

/// Runs code generic over a rank known only at run time: `$body` once per rank, with `$R` a
/// `const usize` of that rank, chosen by matching `$rank` (`Dims<R>` views of a tensor whose
/// `ndim` a producer gave).
///
/// `with_rank!(rank, R => body, r => fallback)` covers ranks 0 to 8;
/// `with_rank!(rank, [0, 1, 2], R => body, r => fallback)` the ranks listed (fewer ranks,
/// fewer copies of `body` to compile). Any other rank runs `fallback`, with the rank bound to
/// the pattern `r`. Both arms are expressions of one type.
///
/// ```
/// use dlmd::{Dims, Extents};
///
/// fn volume(shape: &[usize]) -> Result<usize, String> {
///     dlmd::with_rank!(shape.len(), [1, 2, 3], R => {
///         let extents = Dims::<R>::new(shape.try_into().unwrap());
///         Ok(extents.to_array().iter().product())
///     }, r => Err(format!("rank {r} is not 1 to 3")))
/// }
/// assert_eq!(volume(&[2, 3, 4]), Ok(24));
/// assert!(volume(&[]).is_err());
/// ```
#[macro_export]
macro_rules! with_rank {
    ($rank:expr, [$($n:literal),* $(,)?], $R:ident => $body:expr, $other:pat => $fallback:expr $(,)?) => {
        match $rank {
            $($n => {
                const $R: usize = $n;
                $body
            })*
            $other => $fallback,
        }
    };
    ($rank:expr, $R:ident => $body:expr, $other:pat => $fallback:expr $(,)?) => {
        $crate::with_rank!($rank, [0, 1, 2, 3, 4, 5, 6, 7, 8], $R => $body, $other => $fallback)
    };
}

/// Items the macros expand to. Not part of the public API.
#[doc(hidden)]
#[path = "macro_runtime.rs"]
pub mod __private;
