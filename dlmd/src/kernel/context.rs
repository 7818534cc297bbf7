//! A kernel's context: what its entry point makes for its first parameter, a [`Thread`] for
//! element-wise kernels or a [`Block`] for cooperative ones, and the block shape and shared
//! memory the launcher enforces for it. `#[dlmd::kernel]` asks the first parameter's type
//! through this trait, never by its name: an alias or a renamed import is the same context.

use super::Thread;
use super::block::{Block, TileSet};

/// What a kernel's entry point makes for its context parameter: a [`Thread`]
/// for element-wise kernels, a [`Block`] for cooperative ones.
///
/// # Safety
///
/// [`BLOCK_THREADS`](Self::BLOCK_THREADS) is the block size the context's code assumes, which
/// the launcher enforces; where [`COOPERATIVE`](Self::COOPERATIVE) is true,
/// [`SHARED_BYTES`](Self::SHARED_BYTES) is the dynamic shared memory it uses, which the
/// launcher reserves; where it is false, the context uses no dynamic shared memory.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel context",
    label = "a kernel's first parameter is its context",
    note = "take a `Thread` (element-wise) or a `Block<'_, THREADS>` (cooperative) first; the views and elements \
            the launcher passes follow it"
)]
pub unsafe trait Context<'k>: Sized {
    /// Whether the kernel is cooperative: its threads share the [`SHARED_BYTES`](Self::SHARED_BYTES)
    /// the launcher reserves, and its block size is the context's (`#[dlmd::kernel(block_threads
    /// = N)]` is refused). Element-wise kernels leave dynamic shared memory to the launch.
    const COOPERATIVE: bool;

    /// The block size the kernel needs (`(n, 1, 1)`), or `None` for any.
    const BLOCK_THREADS: Option<u32>;

    /// The bytes of dynamic shared memory the launcher reserves for each block: a cooperative
    /// kernel's tiles and reduction scratch, 0 for element-wise kernels (whose launch config
    /// gives what it asks for).
    const SHARED_BYTES: u32;

    /// The context of the running thread.
    ///
    /// `min_blocks` is the kernel's `min_blocks_per_sm` (0 where it has none): with the block
    /// size, what `ptxas` sizes a thread's registers by.
    ///
    /// # Safety
    ///
    /// Called once, first, in a kernel's entry point, by every thread, with the kernel's
    /// `min_blocks_per_sm` as its entry point declares it (`.minnctapersm`).
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn enter(anchor: &'k (), min_blocks: u32) -> Self;

    /// What the thread does once the kernel's body has returned: nothing, for most contexts.
    ///
    /// # Safety
    ///
    /// Called once, last, in a kernel's entry point, built for `sm_80` or later.
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn leave() {}
}

/// `C::leave`, for the entry point `#[dlmd::kernel]` writes, which names its context's type
/// only through the value.
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
#[inline(always)]
pub fn leave_of<'k, C: Context<'k>>(_: &C) -> unsafe fn() {
    C::leave
}

// SAFETY: a `Thread` works in any block shape, and uses no dynamic shared memory.
unsafe impl<'k> Context<'k> for Thread {
    const COOPERATIVE: bool = false;
    const BLOCK_THREADS: Option<u32> = None;
    const SHARED_BYTES: u32 = 0;

    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn enter(_: &'k (), _: u32) -> Self {
        // SAFETY: a kernel's entry point, which takes a `Thread` (caller).
        unsafe { Thread::current() }
    }
}

// SAFETY: the launcher enforces `THREADS`, the block's size everywhere in its code, and
// reserves `SHARED_BYTES` (it is cooperative), what `Block::enter` takes for its scratch and
// tiles.
unsafe impl<'k, const THREADS: usize, S: TileSet, C> Context<'k> for Block<'k, THREADS, S, C> {
    const COOPERATIVE: bool = true;
    const BLOCK_THREADS: Option<u32> = {
        assert!(
            Self::SHARED_BYTES <= super::block::MAX_SHARED_BYTES,
            "a block's tiles and reduction scratch take at most 227 KiB of shared memory (the most any GPU gives a block; 48 KiB run everywhere, more where the device allows it)"
        );
        Some(Self::THREADS)
    };
    // At most 227 KiB (checked above), so the cast keeps it.
    const SHARED_BYTES: u32 = Self::SHARED_BYTES as u32;

    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn enter(anchor: &'k (), min_blocks: u32) -> Self {
        // SAFETY: first in the kernel's entry point, by every thread, with its bounds (caller).
        unsafe { Block::enter(anchor, min_blocks) }
    }

    /// Waits for the thread's asynchronous copies ([`Block::fetch`]), so that none is in
    /// flight when the block's shared memory goes: a `Fetching` tile waits when it is dropped,
    /// but safe code may leak one (`mem::forget`).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn leave() {
        // SAFETY: the entry point calls this only where the kernel crate is built for sm_80 or
        // later (`#[dlmd::kernel]`'s `cfg(target_feature = "sm_80")`: the copies exist there).
        unsafe { super::mma::raw::cp_async_wait::<0>() };
    }
}

/// The contexts' auto traits, the same on every target, so that a host build that type-checks
/// kernel bodies refuses what the GPU build refuses: a [`Thread`] is `Send` and `Sync`, a
/// [`Block`] neither (per-thread closures, `Fn + Sync`, cannot capture it). A negative bound is
/// checked as an ambiguity: where `Block` were `Sync`, both impls of `NotSync` would apply and
/// `_` would have no single answer.
const _: () = {
    trait NotSync<A> {
        fn check() {}
    }
    impl<T: ?Sized> NotSync<()> for T {}
    impl<T: ?Sized + Sync> NotSync<u8> for T {}
    trait NotSend<A> {
        fn check() {}
    }
    impl<T: ?Sized> NotSend<()> for T {}
    impl<T: ?Sized + Send> NotSend<u8> for T {}
    fn send_sync<T: Send + Sync>() {}

    #[allow(dead_code)]
    fn checks() {
        <Block<'static, 32> as NotSync<_>>::check();
        <Block<'static, 32> as NotSend<_>>::check();
        send_sync::<Thread>();
    }
};
