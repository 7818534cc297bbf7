//! Kernels written in Rust over dlmd's typed views, one source for both sides: compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point, compiled for the host it
//! is the typed launcher of that entry point, and [`PTX`] holds the kernels for
//! [`Kernels::load`](dlmd::cuda::Kernels::load).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

#[cfg(target_arch = "nvptx64")]
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, Dims, LayoutLeft};

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

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

/// Adds each row of `x` into `sums` (zeroed by the caller): each thread adds up the elements
/// of the rows it owns in the partition (columns on the `x` threads, four neighbours read at
/// once; rows on `y`) and adds each partial sum to its row's with one atomic addition.
#[dlmd::kernel]
pub fn row_sums(x: DeviceMdspan<'_, f32, Dims<2>>, sums: DeviceMdspanAtomic<'_, f32, Dims<1>>) {
    let thread = Thread::current();
    let (mut row, mut sum) = (usize::MAX, 0.0f32);
    thread.for_each(&x, |[i, _], &value| {
        if i != row {
            if row != usize::MAX {
                thread.atomic_add(&sums, [row], sum);
            }
            (row, sum) = (i, 0.0);
        }
        sum += value;
    });
    if row != usize::MAX {
        thread.atomic_add(&sums, [row], sum);
    }
}
