//! A `scale` of another signature than `dlmd-test-kernels-real`'s: launched through the other
//! crate's module, each must be refused.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::kernel::Thread;
use dlmd::{DeviceMdspanMut, Dims};

/// The kernels' PTX.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// Multiplies every element of a matrix by `factor`.
#[dlmd::kernel]
pub fn scale(thread: Thread, mut x: DeviceMdspanMut<'_, i32, Dims<2>>, factor: i32) {
    thread.for_each_mut(&mut x, |_, v| *v *= factor);
}
