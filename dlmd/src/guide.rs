//! The guide: dlmd's walkthroughs, a chapter a module, from element types and views to kernels
//! on tensor cores and several GPUs. Read them in order, or start where your tensors are.
//!
//! 1. [Element types](element_types): Rust types as DLPack data types, and the derive.
//! 2. [Views and DLPack](views_and_dlpack): views to `DLTensor`s and back, what an import
//!    checks, and CCCL's `cuda::mdspan` names in dlmd's.
//! 3. [Owned exchange and Python](owned_exchange_and_python): managed tensors and their aliased
//!    views, `__dlpack__` producers and consumers, DLPack's C exchange table.
//! 4. [CUDA](cuda): device, managed and pinned views, the kernel view `view.cuh` shares, and
//!    how an application chooses cudarc's linking and CUDA version.
//! 5. [A first kernel](first_kernel): a whole kernel crate in four files.
//! 6. [Kernels in Rust](kernels_in_rust): `#[dlmd::kernel]`, what it checks, and how
//!    `dlmd-build` compiles a kernel crate.
//! 7. [Cooperative kernels](cooperative_kernels): blocks, block-shared tiles whose phase is a
//!    type, collectives.
//! 8. [Tensor cores](tensor_cores): `mma.sync` products and, on Hopper, TMA pipelines and
//!    `wgmma`.
//! 9. [From a framework's tensor to a Rust kernel](from_a_framework): a torch, cupy or jax
//!    tensor to a kernel on its producer's stream, attention as a torch operator, and Rust XLA FFI
//!    handlers for JAX inside `jax.jit`.
//! 10. [Several GPUs](several_gpus): views that know their device, peer copies and NCCL.
//! 11. [candle]: candle's tensors as views and managed tensors.
//!
//! Each chapter is a Markdown file in the crate's `guide/` folder. Its code is checked as it is
//! printed: host code runs as doctests of this crate (code that needs a feature, where the
//! feature is on), and the kernel crates and launches, which a doctest cannot build, are built
//! by `scripts/first-kernel.sh`, which also compares them with the examples they come from.

#[doc = include_str!("../guide/01-element-types.md")]
pub mod element_types {}

#[doc = include_str!("../guide/02-views-and-dlpack.md")]
pub mod views_and_dlpack {}

#[doc = include_str!("../guide/03-owned-exchange-and-python.md")]
pub mod owned_exchange_and_python {}

#[doc = include_str!("../guide/04-cuda.md")]
pub mod cuda {}

#[doc = include_str!("../guide/05-first-kernel.md")]
pub mod first_kernel {}

#[doc = include_str!("../guide/06-kernels-in-rust.md")]
pub mod kernels_in_rust {}

#[doc = include_str!("../guide/07-cooperative-kernels.md")]
pub mod cooperative_kernels {}

#[doc = include_str!("../guide/08-tensor-cores.md")]
pub mod tensor_cores {}

#[doc = include_str!("../guide/09-from-a-framework.md")]
pub mod from_a_framework {}

#[doc = include_str!("../guide/10-several-gpus.md")]
pub mod several_gpus {}

#[doc = include_str!("../guide/11-candle.md")]
pub mod candle {}
