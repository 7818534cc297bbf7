//! The layout the bulk copy engine gives a swizzled tile, raw: one box of a tensor map copied
//! into block-shared memory, then the tile's bytes copied out in memory order, so that a test
//! can compare them with `dlmd::kernel::swizzle::Swizzle::offset`.

use dlmd::extents::Const;
use dlmd::kernel::Thread;
use dlmd::kernel::swizzle::{Swizzle32, Swizzle64, Swizzle128};
use dlmd::kernel::tensor_map::TensorMap;
use dlmd::{DeviceMdspanMut, Dims};

/// The rows of a probe's box: 4 periods of the 128-byte swizzle, 16 of the 32-byte one.
pub const PROBE_ROWS: usize = 32;

/// The dynamic shared memory of a probe: its tile of at most `32 · 128` bytes, aligned to 1024,
/// and a barrier object.
pub const PROBE_SHARED: u32 = (PROBE_ROWS * 128 + 1024 + 8) as u32;

macro_rules! probes {
    ($($(#[$doc:meta])* $name:ident, $bytes:literal, $swizzle:ty;)*) => {
        $(
            $(#[$doc])*
            #[dlmd::kernel(block_threads = 128, min_blocks_per_sm = 1)]
            pub fn $name(
                thread: Thread,
                map: TensorMap<'_, u8, (Const<PROBE_ROWS>, Const<$bytes>), $swizzle>,
                out: DeviceMdspanMut<'_, u8, Dims<1>>,
            ) {
                let _ = thread;
                // One block: on a grid of more, every block would write all of `out`.
                #[cfg(target_arch = "nvptx64")]
                if thread.block_in_row() == Some((0, 1)) {
                    // SAFETY: one block (checked here) of 128 threads (the launcher checks
                    // `block_threads`) with `PROBE_SHARED` bytes (checked by the probe: it
                    // writes nothing with less); the map is a valid tensor map of a tensor the
                    // kernel only reads (`TensorMap`), of this box and swizzle.
                    unsafe { device::probe(map.map(), PROBE_ROWS * $bytes, &out) }
                }
                #[cfg(not(target_arch = "nvptx64"))]
                let _ = (map, out);
            }
        )*
    };
}

probes! {
    /// Copies the `32 × 32`-byte box at the origin of `map`'s tensor into shared memory with
    /// the 32-byte swizzle (the copy engine's layout), then the tile's bytes in memory order
    /// into `out` (at least 1024 bytes). Launch one block of 128 threads with
    /// [`PROBE_SHARED`] bytes of dynamic shared memory; on a grid of more blocks it writes
    /// nothing.
    swizzle_probe_32, 32, Swizzle32;
    /// [`swizzle_probe_32`] with the 64-byte swizzle, a `32 × 64`-byte box.
    swizzle_probe_64, 64, Swizzle64;
    /// [`swizzle_probe_32`] with the 128-byte swizzle, a `32 × 128`-byte box.
    swizzle_probe_128, 128, Swizzle128;
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use core::arch::nvptx;
    use dlmd::kernel::mma::raw::shared_address;
    use dlmd::kernel::warpgroup::raw::{
        fence_mbarrier_init, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_inval, mbarrier_wait, tma_load_2d,
    };
    use dlmd::{DeviceMdspanMut, Dims};

    /// A probe's body: the box of `bytes` of the map at `map` into shared memory, then out.
    ///
    /// # Safety
    ///
    /// One block of 128 threads; `map` the address of a valid tensor map of a tensor the
    /// kernel only reads, whose box is `bytes` long, at most 4096.
    #[inline(always)]
    pub(super) unsafe fn probe(map: *const u64, bytes: usize, out: &DeviceMdspanMut<'_, u8, Dims<1>>) {
        if out.extent(0) < bytes || bytes > 4096 {
            return;
        }
        let base = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u8>();
        let dynamic: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {d}, %dynamic_smem_size;", d = out(reg32) dynamic) };
        if (dynamic as usize) < bytes + 1024 + 8 {
            return;
        }
        // SAFETY: the block's shared memory.
        let start = unsafe { shared_address(base) };
        let tile = start.next_multiple_of(1024);
        let bar = tile + bytes as u32;
        // SAFETY: a special register.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        if t == 0 {
            // SAFETY: 8 aligned bytes past the tile, used as nothing else.
            unsafe { mbarrier_init(bar, 1) };
            // SAFETY: sm_90.
            unsafe { fence_mbarrier_init() };
            // SAFETY: the barrier's phase 0 expects this arrival and these bytes.
            unsafe { mbarrier_arrive_expect_tx(bar, bytes as u32) };
            // SAFETY: the map is valid (caller), its box `bytes` long, the tile 1024-aligned
            // and read only after the barrier completes.
            unsafe { tma_load_2d(tile, map, 0, 0, bar) };
        }
        if t == 0 {
            // The box has landed once the barrier's phase 0 completes.
            // SAFETY: an initialised barrier object.
            unsafe { mbarrier_wait(bar, 0) };
        }
        // SAFETY: every thread of the block: the tile's bytes, landed (above), are seen by all
        // after it.
        unsafe { nvptx::_syncthreads() };
        let src = base.wrapping_add((tile - start) as usize);
        let dst = out.data_handle();
        let mut i = t;
        while i < bytes {
            // SAFETY: inside the landed tile (`i < bytes`), read by every thread and written
            // by none since the barrier.
            let byte = unsafe { src.wrapping_add(i).read() };
            // SAFETY: inside `out` (at least `bytes` long), each byte by one thread.
            unsafe { dst.wrapping_add(i).write(byte) };
            i += 128;
        }
        // SAFETY: every thread of the block, past its last use of the barrier.
        unsafe { nvptx::_syncthreads() };
        if t == 0 {
            // SAFETY: no one uses the barrier any more.
            unsafe { mbarrier_inval(bar) };
        }
    }
}
