//! Kernel bodies with mistakes, each reported in place by a host build with
//! `--cfg dlmd_kernel_check` (`tests/kernel-launch/tests/check.rs` runs `cargo check` so); a
//! plain host build, which makes only the launchers, compiles.
//! Each mistaken line carries an `error:` comment naming the message; every other line is
//! accepted, among them what only a kernel may do (index a read-only device view, call
//! `kernel::math`).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::kernel::{Block, Thread};
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims};
// What only kernels use, imported for them (a plain host build has no `kernel::math`).
#[dlmd::device]
use dlmd::kernel::math;

/// A read-only view read (a kernel may) into a variable of the wrong type.
#[dlmd::kernel]
pub fn wrong_type(thread: Thread, x: DeviceMdspan<'_, f32, Dims<1>>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let first: u32 = x[[0]]; // error: mismatched types
    thread.for_each_mut(&mut out, |_, y| *y = first as f32);
}

/// A mutable view indexed: every thread holds it.
#[dlmd::kernel]
pub fn index_a_mutable_view(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let first = out[[0]]; // error: cannot be reached through references in a kernel
    thread.for_each_mut(&mut out, |_, y| *y += first);
}

/// A helper of the kernels with a mistake of its own.
#[dlmd::device]
fn shifted(x: DeviceMdspan<'_, f32, Dims<1>>, i: usize) -> f32 {
    math::exp(x[[i]]) + 1u8 // error: cannot add `u8` to `f32`
}

/// A kernel calling the helper, rightly.
#[dlmd::kernel]
pub fn through_a_helper(thread: Thread, x: DeviceMdspan<'_, f32, Dims<1>>, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    thread.for_each_mut(&mut out, |[i], y| *y = shifted(x, i));
}

/// A kernel that finds its thread itself rather than through its context, rightly
/// (`Thread::current` exists in kernels only).
#[dlmd::kernel]
pub fn current_thread(_: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    // SAFETY: an element-wise kernel, not a cooperative one.
    let thread = unsafe { Thread::current() };
    thread.for_each_mut(&mut out, |[i], y| *y = i as f32);
}

/// A read-only view written.
#[dlmd::kernel]
pub fn write_a_read_only_view(_: Thread, x: DeviceMdspan<'_, f32, Dims<1>>) {
    x[[0]] = 1.0; // error: cannot assign to data in an index of
}

/// A read-only view handed out for writing.
#[dlmd::kernel]
pub fn write_through_for_each_mut(thread: Thread, mut x: DeviceMdspan<'_, f32, Dims<1>>) {
    thread.for_each_mut(&mut x, |_, y| *y = 0.0); // error: `for_each_mut` writes a mutable view
}

/// Block-wide work started from per-thread code: a per-thread closure that holds the `Block`
/// (the host's `Block` is no more `Sync` than the GPU's).
#[dlmd::kernel]
pub fn block_in_a_per_thread_closure(block: Block<'_, 64>) {
    let _ = block.each(|lane| block.each(|other| other.index() + lane.index())); // error: cannot be shared between threads safely
}

/// A cooperative kernel without a mistake: the largest element of each row of up to 256.
#[dlmd::kernel]
pub fn row_maxima(
    block: Block<'_, 64, (), (Const<1>,)>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    maxima: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let mut block = block;
    for chunk in block.chunks(maxima) {
        let [i] = chunk.origin();
        let own = block.each(|lane| {
            let values: [f32; 4] = lane.gather(x.extent(1), f32::NEG_INFINITY, |j| x[[i, j]]);
            values.into_iter().fold(f32::NEG_INFINITY, f32::max)
        });
        let largest = block.max(own);
        block.store(chunk, |_| largest);
    }
}
