//! Kernel bodies type-checked on the host, so that `cargo check` and rust-analyzer report their
//! errors where they are, in seconds, on the stable toolchain.
//!
//! A kernel body is compiled for `nvptx64` only, by the nested build of `dlmd-build`; a plain
//! host build of the kernel crate makes the launchers and leaves the bodies out, since the host
//! refuses what a kernel may do (index a read-only device view, for one). A host build with
//! `--cfg dlmd_kernel_check` also compiles each `#[dlmd::kernel]` body, as a function nothing
//! calls, and each helper marked `#[dlmd::device]`:
//!
//! ```text
//! RUSTFLAGS="--cfg dlmd_kernel_check" cargo check --target-dir target/kernel-check
//! ```
//!
//! (`dlmd-build` runs no nested build there, and the target directory of its own keeps the flag
//! from rebuilding the main one.) rust-analyzer does the same with these settings:
//!
//! ```json
//! {
//!     "rust-analyzer.cargo.cfgs": ["debug_assertions", "miri", "dlmd_kernel_check"],
//!     "rust-analyzer.cargo.extraEnv": { "RUSTFLAGS": "--cfg dlmd_kernel_check" },
//!     "rust-analyzer.cargo.targetDir": true
//! }
//! ```
//!
//! Such a build applies the rules of both sides where they differ
//! ([`Reachable`](crate::space::Reachable), [`Reborrow`](crate::space::Reborrow)): it accepts a
//! body the kernel's rules accept, and host code the host's rules accept, so it never reports an
//! error the real builds would not. It can miss one: a body that borrows a mutable device view
//! again, or names an atomic type (the host has them, kernels do not), compiles there, and the
//! `nvptx64` build still refuses it. A view or context of a
//! kernel cannot be made on the host ([`Thread`](super::Thread) and
//! [`Block`](super::Block) have no values there), and what exists only on the GPU
//! (`kernel::math`, `Thread::current`) is a stand-in that refuses to run: the build is for
//! checking. The kernel's rules there let host code index a read-only device view too; doing so
//! refuses to run (it panics before reading), so that a program built this way stays sound.

/// Items compiled for `nvptx64`, and on the host where kernel bodies are type-checked
/// (`--cfg dlmd_kernel_check`); nothing elsewhere. What `#[dlmd::kernel]` and
/// `#[dlmd::device]` expand to.
#[cfg(any(target_arch = "nvptx64", dlmd_kernel_check))]
#[doc(hidden)]
#[macro_export]
macro_rules! __device {
    ($($item:tt)*) => {
        $($item)*
    };
}

/// The other builds' `__device!`, which drops its items (defined twice because the `cfg` is
/// dlmd's: an expansion that tested it would test the user's crate).
#[cfg(not(any(target_arch = "nvptx64", dlmd_kernel_check)))]
#[doc(hidden)]
#[macro_export]
macro_rules! __device {
    ($($item:tt)*) => {};
}

#[cfg(all(test, not(target_arch = "nvptx64"), dlmd_kernel_check))]
mod tests {
    use crate::layout::{LayoutRight, RightMapping};
    use crate::space::Device;
    use crate::{Dims, Mdspan, view::Shared};

    #[test]
    fn a_device_view_indexed_on_the_host_refuses_to_run() {
        // A "device" view over host memory: what the host check's rules let index must still
        // not be read on the host.
        let mut data = [1.0f32, 2.0];
        let mapping = RightMapping::new(Dims::new([2])).expect("two elements");
        // SAFETY: two `f32`s of `data`, which outlives the view and nothing else touches.
        let view: Mdspan<'_, f32, Dims<1>, LayoutRight, Device, Shared> =
            unsafe { Mdspan::from_raw_parts(data.as_mut_ptr(), mapping, Device::new(0)) };
        let get = || {
            std::hint::black_box(view.get([0]));
        };
        let index = || {
            std::hint::black_box(view[[1]]);
        };
        let iterate = || {
            std::hint::black_box(view.iter().count());
        };
        let reads: [&dyn Fn(); 3] = [&get, &index, &iterate];
        for read in reads {
            let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_err();
            let message = refused.downcast_ref::<String>().expect("a formatted message");
            assert!(message.contains("runs in kernels only"), "{message}");
        }
    }
}
