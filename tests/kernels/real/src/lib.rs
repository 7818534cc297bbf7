//! `scale` over `Real`, which the `single` feature makes `f32` and its absence `f64`: the
//! launcher and the kernel must agree on it, whatever features a dependant chose.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::kernel::Thread;
use dlmd::{DeviceMdspanMut, Dims};

/// The element type, chosen by the `single` feature.
#[cfg(feature = "single")]
pub type Real = f32;
/// The element type, chosen by the `single` feature.
#[cfg(not(feature = "single"))]
pub type Real = f64;

/// The kernels' PTX.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// Multiplies every element by `factor`.
#[dlmd::kernel]
pub fn scale(thread: Thread, mut x: DeviceMdspanMut<'_, Real, Dims<1>>, factor: Real) {
    thread.for_each_mut(&mut x, |_, v| *v *= factor);
}
