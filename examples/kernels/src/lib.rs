//! Kernels written in Rust over dlmd's typed views, one source for both sides: compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point, compiled for the host it
//! is the typed launcher of that entry point, and [`PTX`] holds the kernels for
//! [`Kernels::load`](dlmd::cuda::Kernels::load).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

#[cfg(target_arch = "nvptx64")]
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims, LayoutLeft};

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Adds `i + j + k` to the element at `[i, j, k]`: the `add_index` of `examples/add_index.rs`,
/// whose C++ kernel takes the same view.
#[dlmd::kernel]
pub fn add_index(mut out: DeviceMdspanMut<'_, f32, Dims<3>>) {
    Thread::current().for_each_mut(&mut out, |[i, j, k], x| *x += (i + j + k) as f32);
}

/// Copies a row-major matrix into a column-major one: `dst[[i, j]] = src[[i, j]]`, which in
/// memory is a transpose. The threads walk `dst` in its own order (`i` on the `x` threads), so
/// the writes are coalesced and the reads strided, through the layouts' index arithmetic.
#[dlmd::kernel]
pub fn transpose(src: DeviceMdspan<'_, f32, Dims<2>>, mut dst: DeviceMdspanMut<'_, f32, Dims<2>, LayoutLeft>) {
    Thread::current().for_each_mut(&mut dst, |index, x| *x = src[index]);
}
