//! Kernel bodies that would race, each refused when the crate is built for `nvptx64`. Every
//! thread of a launch holds the same parameters: a mutable view is split among them once, by
//! `Thread::for_each_mut`, and never borrowed again; managed memory stays shared memory.
//!
//! Each refused line carries a `refused:` comment naming the message the build prints there
//! (`tests/kernel-launch/tests/build.rs` checks them). On the host the crate compiles: the
//! same calls are fine outside a kernel.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]
#![allow(unused_mut)]

use dlmd::kernel::{Block, Thread};
use dlmd::space::{Host, Managed};
use dlmd::view::Atomic;
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims, LayoutRight, ManagedMdspanMut, Mdspan};

/// Every thread reads element 0 while the thread that owns it writes it.
#[dlmd::kernel]
pub fn read_a_mutable_view(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let first = out.as_view()[[0]]; // refused: cannot be borrowed again in a kernel
    thread.for_each_mut(&mut out, |_, x| *x += first);
}

/// A read-only slice of a mutable view: read by every thread, written by one.
#[dlmd::kernel]
pub fn slice_a_mutable_view(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let Ok(head) = out.submdspan((0..1,)) else { return }; // refused: cannot be borrowed again in a kernel
    let first = head[[0]];
    thread.for_each_mut(&mut out, |_, x| *x += first);
}

/// A second partition of a mutable slice: its elements go to other threads than the first
/// partition gave them to, so two threads write one element.
#[dlmd::kernel]
pub fn partition_twice(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    thread.for_each_mut(&mut out, |_, x| *x = 1.0);
    let rest = out.submdspan_mut((1..,)); // refused: cannot be borrowed again in a kernel
    if let Ok(mut rest) = rest {
        thread.for_each_mut(&mut rest, |_, x| *x += 1.0);
    }
}

/// A mutable reborrow of a mutable view, handed on.
#[dlmd::kernel]
pub fn reborrow_a_mutable_view(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let mut again = out.as_view_mut(); // refused: cannot be borrowed again in a kernel
    thread.for_each_mut(&mut again, |_, x| *x = 2.0);
}

/// Each block cuts its own slice of a mutable view into chunks: the slices differ from block to
/// block, so the chunks of two blocks overlap and both write their common elements.
#[dlmd::kernel]
pub fn chunks_of_a_slice_of_each_block(
    block: Block<'_, 256, (), (Const<256>,)>,
    mut out: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let mut block = block;
    let start = block.index();
    let slice = out.submdspan_mut((start..,)); // refused: cannot be borrowed again in a kernel
    let Ok(slice) = slice else { return };
    for chunk in block.chunks(slice) {
        block.store(chunk, |_| 1.0);
    }
}

/// Atomic adds from some threads where others write plainly.
#[dlmd::kernel]
pub fn plain_and_atomic(thread: Thread, out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let sums = out.into_atomic(); // refused: cannot be borrowed again in a kernel
    thread.atomic_add(&sums, [0], 1.0);
}

/// Managed memory as a thread's own host memory: a read-modify-write by every thread.
#[dlmd::kernel]
pub fn managed_as_host(_: Thread, out: ManagedMdspanMut<'_, f32, Dims<1>>) {
    let mut host = out.into_space(Host); // refused: cannot become a `Host` view
    host[[0]] += 1.0;
}

/// An atomic managed view read plainly, as host memory, while other threads add to it.
#[dlmd::kernel]
pub fn atomic_managed_read_as_host(thread: Thread, sums: Mdspan<'_, f32, Dims<1>, LayoutRight, Managed, Atomic>) {
    thread.atomic_add(&sums, [0], 1.0);
    let host = sums.into_space(Host); // refused: cannot become a `Host` view
    let _ = host.load([0]);
}

/// Every thread indexes the mutable view: element 0 read by all while its owner writes it.
#[dlmd::kernel]
pub fn index_a_mutable_view(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let first = out[[0]]; // refused: cannot be reached through references in a kernel
    thread.for_each_mut(&mut out, |_, x| *x += first);
}

/// A read-only view written as if it were mutable.
#[dlmd::kernel]
pub fn write_a_read_only_view(thread: Thread, mut src: DeviceMdspan<'_, f32, Dims<1>>) {
    thread.for_each_mut(&mut src, |_, x| *x = 0.0); // refused: `for_each_mut` writes a mutable view
}
