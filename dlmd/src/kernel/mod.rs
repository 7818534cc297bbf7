//! Kernels in Rust over dlmd's views: what a kernel receives, and how its threads share a
//! mutable view.
//!
//! A crate of kernels is compiled from one source twice: for `nvptx64-nvidia-cuda` without atomic
//! types (by `dlmd-build`, on nightly, `-Zbuild-std=core`; [`block`] says why), where
//! `#[dlmd::kernel]` makes each function a PTX entry point, and for the host, where the same
//! attribute makes it a typed launcher (`dlmd::cuda`). Each parameter crosses as its
//! [`KernelParam::Param`], a `#[repr(C)]` value of fixed-width fields, so it has one layout on both
//! targets; the kernel rebuilds from it a value of exactly the type the host
//! passed: element type, rank, static extents, layout, memory space and access.
//!
//! A kernel's first parameter is its context, which the entry point makes and the launcher
//! does not pass: a [`Thread`] for element-wise kernels, or a [`Block`] for cooperative ones,
//! whose threads share block-shared tiles, barriers and reductions, and write the chunks of a
//! view their block owns, cut by the shape the `Block`'s type names ([`block`]: why safe code
//! cannot race there, nor reach a barrier that part of the block skips). Its type's
//! [`Context`] impl, not its name, says which: an alias of `Block<'_, 256>` or a renamed import
//! is the same context.
//!
//! Inside a kernel (code compiled for `nvptx64`):
//!
//! - read-only device and managed views ([`DeviceMdspan`](crate::DeviceMdspan),
//!   [`ManagedMdspan`](crate::ManagedMdspan)) are indexed as on the host: `a[[i, j]]`, `get`,
//!   `iter`;
//! - a mutable view ([`DeviceMdspanMut`](crate::DeviceMdspanMut)) reaches every thread of the
//!   launch, so it is never indexed: [`Thread::for_each_mut`] hands each of its elements to
//!   exactly one thread, whatever the launch's geometry, and [`Thread::element_mut`] is the
//!   `unsafe` way to any other pattern ([`Thread::for_each`] and [`Thread::for_each_index`]
//!   walk a view in the same partition, to read or reduce it). Nor is it borrowed again: no
//!   read-only borrow or slice of it (other threads write what it would read), no mutable
//!   reborrow or slice (split among the threads again, differently), no atomic view of it
//!   ([`Reborrow`](crate::space::Reborrow)); and a managed view does not become a host view;
//! - an atomic view ([`DeviceMdspanAtomic`](crate::DeviceMdspanAtomic), from
//!   [`Mdspan::into_atomic`](crate::Mdspan::into_atomic)) takes [`Thread::atomic_add`] from any thread, for reductions;
//! - `dlmd!` views over a thread's local arrays are host views, indexed as on the host.
//!
//! On the host, device views stay out of reach: indexing them does not compile, and a
//! [`Thread`] cannot be made.

mod atomic;
pub mod block;
pub mod check;
mod context;
pub mod disjoint;
#[cfg(target_arch = "nvptx64")]
mod geometry;
pub mod mma;
// Documented on the host too, where only a build that type-checks kernels has it.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check, doc))]
pub mod math;
mod param;
#[cfg(target_arch = "nvptx64")]
mod partition;
pub mod signature;
#[cfg(target_arch = "nvptx64")]
mod steps;
pub mod swizzle;
pub mod tensor_map;
mod thread;
#[cfg(target_arch = "nvptx64")]
mod vector;
pub mod warpgroup;

// Kernels have no atomic types (`dlmd_build::TARGET`, its docs say why): an atomic is memory
// that threads write while others read it, and a branch of uniform code on what one holds
// would split a barrier or a warp-wide instruction. A build for an
// `nvptx64` target that has them is refused here, whoever starts it.
#[cfg(target_arch = "nvptx64")]
mod no_atomics {
    #[cfg(target_has_atomic_load_store)]
    compile_error!(
        "dlmd's kernels are compiled for nvptx64 without atomic types: build kernel crates with \
         dlmd-build (`PtxBuild`), or pass the target that `dlmd_build::kernel_target_spec` writes \
         (`-Zjson-target-spec --target PATH -Zbuild-std=core`). An atomic in a kernel's uniform \
         code could differ between its threads and split a barrier."
    );
}

pub use atomic::AtomicElement;
pub use block::MAX_SHARED_BYTES;
pub use block::{Block, Lane, Varying};
pub use context::Context;
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub use context::leave_of;
pub use disjoint::{Footprint, Use};
pub use param::{KernelParam, ViewParam};
pub use thread::{ForEachMut, Thread};

use crate::dtype::DlElement;
use crate::space::{Device, Managed, MemorySpace};
use crate::view::{Access, Atomic, Shared, Unique};

mod sealed {
    pub trait Sealed {}
}

/// Memory a kernel reaches: CUDA device and managed memory.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` view cannot be a kernel parameter",
    label = "the GPU cannot reach this memory",
    note = "kernels take device or managed views and `DlElement` scalars; copy host data to the device first"
)]
pub trait KernelSpace: MemorySpace + sealed::Sealed {
    /// The space of device `id`.
    #[doc(hidden)]
    fn with_id(id: i32) -> Self;
}

impl sealed::Sealed for Device {}
impl sealed::Sealed for Managed {}
impl KernelSpace for Device {
    #[inline(always)]
    fn with_id(id: i32) -> Self {
        Device::new(id)
    }
}
impl KernelSpace for Managed {
    #[inline(always)]
    fn with_id(id: i32) -> Self {
        Managed::new(id)
    }
}

/// The access of a view a kernel takes: [`Shared`] (read), [`Unique`] (each element written by
/// one thread) or [`Atomic`] (atomic updates from any thread). Aliased views, whose memory
/// others write meanwhile, are no kernel parameters.
#[diagnostic::on_unimplemented(
    message = "a view with `{Self}` access cannot be a kernel parameter",
    label = "others may write this memory while the kernel reads it",
    note = "kernels take `Shared`, `Unique` or `Atomic` views"
)]
pub trait KernelAccess: Access + sealed::Sealed {
    /// How a kernel uses a view of this access whose elements are `T`, for the launch's
    /// [disjointness check](disjoint).
    fn used<T: DlElement>() -> Use;
}

impl sealed::Sealed for Shared {}
impl sealed::Sealed for Unique {}
impl sealed::Sealed for Atomic {}
impl KernelAccess for Shared {
    fn used<T: DlElement>() -> Use {
        Use::Read
    }
}
impl KernelAccess for Unique {
    fn used<T: DlElement>() -> Use {
        Use::Write
    }
}
impl KernelAccess for Atomic {
    fn used<T: DlElement>() -> Use {
        Use::atomic::<T>()
    }
}
