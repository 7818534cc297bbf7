//! The kernels; on the host, their launchers and PTX.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

/// The kernels' PTX, built by dlmd-build.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// `y = a·x + y`: each element of `y` to one thread.
#[dlmd::kernel]
pub fn saxpy(thread: Thread, a: f32, x: DeviceMdspan<'_, f32, Dims<1>>, mut y: DeviceMdspanMut<'_, f32, Dims<1>>) {
    thread.for_each_mut(&mut y, |i, y| *y += a * x[i]);
}
