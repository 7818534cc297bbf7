//! A `scale` of another signature than `dlmd-test-kernels-real`'s: launched through the other
//! crate's module, each must be refused. Beside it, `own_names`, whose parameters are named like
//! the locals `#[dlmd::kernel]` makes beside them.
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

/// Writes its scalars into `__dlmd_param0`, element `i` the `i % 8`-th: parameters named like
/// the macro's own locals, each of which must still arrive as itself.
#[dlmd::kernel]
#[allow(clippy::too_many_arguments)]
pub fn own_names(
    thread: Thread,
    mut __dlmd_param0: DeviceMdspanMut<'_, i32, Dims<1>>,
    __dlmd_param2: i32,
    __dlmd_param1: i32,
    __dlmd_anchor: i32,
    __dlmd_kernel_body: i32,
    launch: i32,
    args: i32,
    params: i32,
    infos: i32,
) {
    let values = [
        __dlmd_param2,
        __dlmd_param1,
        __dlmd_anchor,
        __dlmd_kernel_body,
        launch,
        args,
        params,
        infos,
    ];
    thread.for_each_mut(&mut __dlmd_param0, |[i], v| *v = values[i % 8]);
}
