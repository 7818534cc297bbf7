//! Hopper (`sm_90a`) tensor-core kernels written in Rust, raw (`unsafe`, the CUDA C++ way):
//! matrix products on `bf16` with `f32` accumulators by `wgmma`, warpgroups of 128 threads
//! multiplying operands brought into block-shared memory in the 128-byte swizzle several
//! stages ahead, by `cp.async` from every thread ([`wgmma_nt_256_s4`] and its variants), by a
//! producer warpgroup handing stages over through barrier objects ([`wgmma_nt_256_ws4`]), or by
//! the bulk tensor copy engine (TMA, [`wgmma_nt_256_tma4`]). Compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point; for the host, its typed
//! launcher.
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(
        abi_ptx,
        asm_experimental_arch,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    ),
    allow(internal_features)
)]

mod attention;
mod attention_raw;
mod backward;
mod backward_raw;
#[cfg(not(target_arch = "nvptx64"))]
mod forward;
mod fused;
mod gemm;
#[cfg(not(target_arch = "nvptx64"))]
mod gradients;
#[cfg(not(target_arch = "nvptx64"))]
mod imported;
mod linear;
mod probe;
mod sequences;
mod simple;
mod tma;
#[cfg(not(target_arch = "nvptx64"))]
mod varlen;
#[cfg(target_arch = "nvptx64")]
pub mod wgmma;

pub use attention::*;
pub use attention_raw::*;
pub use backward::*;
pub use backward_raw::*;
#[cfg(not(target_arch = "nvptx64"))]
pub use forward::*;
pub use fused::*;
pub use gemm::*;
#[cfg(not(target_arch = "nvptx64"))]
pub use gradients::*;
#[cfg(not(target_arch = "nvptx64"))]
pub use imported::*;
pub use linear::*;
pub use probe::*;
pub use simple::*;
pub use tma::*;
#[cfg(not(target_arch = "nvptx64"))]
pub use varlen::*;

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();
