//! `y = x · wᵀ` and `y = x · b` on `bf16` by `wgmma`, raw, with the bulk copy engine (TMA) for
//! the producer of a warp-specialised block: the raw twins of the safe `linear_bf16` and
//! `matmul_bf16`. One thread of the producer warpgroup starts the tensor copies of each stage
//! (`cp.async.bulk.tensor`, the 128-byte swizzle), which complete the stage's barrier object
//! as they land; two consumer warpgroups multiply (`64 × 256` each, `128 × 256` chunks).

use crate::linear::{BMap, WMap, XMap};
use dlmd::half::bf16;
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspanMut, Dims};

#[cfg(target_arch = "nvptx64")]
mod device {
    use crate::gemm::device::{chunk, shared, store};
    use crate::gemm::stage_bytes;
    use crate::wgmma::{
        Accumulators, descriptor, descriptor_128_mn, fence_mbarrier_init, mbarrier_arrive_expect_tx,
        mbarrier_arrive_where, mbarrier_init, mbarrier_wait, tma_load_2d,
    };
    use core::arch::nvptx;
    use dlmd::half::bf16;
    use dlmd::{DeviceMdspanMut, Dims};

    /// `y = x · wᵀ` as [`product_ws`](crate::gemm::device::product_ws), its producer the bulk copy engine (TMA): thread 0 of
    /// warpgroup 0 alone, each step, waits for the stage's `empty`, announces its bytes to
    /// `full` (`mbarrier.arrive.expect_tx`, one arrival a phase) and starts two tensor copies
    /// (`x`'s `128 × 64` box, `w`'s `BN × 64` box, both in the 128-byte swizzle the maps ask
    /// for), which complete `full` as they land. `x` and `w` are the generic addresses of the
    /// two tensor maps, with their tensors' extents. Persistent where the grid is
    /// smaller than the chunks: block `b` takes chunks `b`, `b + blocks`, … in turn, its
    /// producer filling the stages of the next chunk while its consumers store the last.
    ///
    /// With `B_MN`, `w` is `b`, row-major `k × n` (`y = x · b`), its map's box `64 × 64`
    /// (columns × rows): a stage's `b` is `BN / 64` boxes, column panels of 64 rows of 128
    /// bytes, read MN-major.
    ///
    /// # Safety
    ///
    /// In a kernel launched with blocks of 384 threads, one-dimensional, on a grid of one row of
    /// blocks, on an `sm_90a` GPU, with at least
    /// [`shared_bytes_ws`](crate::shared_bytes_ws)`(BN, STAGES)` bytes of dynamic shared memory;
    /// `x` and `w` address valid tensor maps (64-aligned, not written during the kernel) of
    /// `bf16` row-major tensors of the extents given, with the 128-byte swizzle: `x`'s box
    /// `64 × 128` (columns × rows), `w`'s `64 × BN`, or `64 × 64` with `B_MN`.
    #[inline(always)]
    pub unsafe fn product_tma<A: Accumulators, const STAGES: usize, const B_MN: bool>(
        (x, [m, k]): (*const u64, [usize; 2]),
        (w, w_extents): (*const u64, [usize; 2]),
        y: &DeviceMdspanMut<'_, bf16, Dims<2>>,
    ) {
        let bn = A::N;
        let [n, kw] = if B_MN { [w_extents[1], w_extents[0]] } else { w_extents };
        if kw != k || y.extent(0) != m || y.extent(1) != n {
            return;
        }
        if !m.is_multiple_of(128) || !n.is_multiple_of(bn) || !k.is_multiple_of(64) || k == 0 {
            return;
        }
        let py = y.data_handle().cast::<u16>();
        // The paired stores of `y`'s rows (whole chunks of `bn` elements) ask for 4 bytes.
        if !(py as usize).is_multiple_of(16) {
            return;
        }
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() } as usize;
        // SAFETY: as above.
        let blocks = unsafe { nvptx::_grid_dim_x() } as usize;
        if chunk(block, m, n, bn).is_none() {
            return;
        }
        let (start, bytes) = shared();
        let base = start.next_multiple_of(1024);
        if bytes < (base - start) as usize + STAGES * stage_bytes(bn) + 16 * STAGES {
            return;
        }
        let steps = k / 64;
        // Stages, barrier objects and phases by the block's running step count `g`, which goes
        // on from one chunk to the next.
        let stage = |g: usize| base + (g % STAGES * stage_bytes(bn)) as u32;
        let bars = base + (STAGES * stage_bytes(bn)) as u32;
        let full = |g: usize| bars + (8 * (g % STAGES)) as u32;
        let empty = |g: usize| bars + (8 * (STAGES + g % STAGES)) as u32;
        let parity = |g: usize| (g / STAGES % 2) as u32;
        if t < STAGES {
            // SAFETY: 8-aligned words past the stages, used as nothing else; the barrier below
            // orders this before every use.
            unsafe { mbarrier_init(full(t), 1) };
            // SAFETY: as above.
            unsafe { mbarrier_init(empty(t), 8) };
            // SAFETY: sm_90.
            unsafe { fence_mbarrier_init() };
        }
        // SAFETY: every thread of the block, before any role diverges.
        unsafe { nvptx::_syncthreads() };
        let (wg, tw) = (t / 128, t % 128);
        if wg == 0 {
            if tw != 0 {
                return;
            }
            let (mut tile, mut g0) = (block, 0);
            while let Some((i0, j0)) = chunk(tile, m, n, bn) {
                for s in 0..steps {
                    let g = g0 + s;
                    if g >= STAGES {
                        // The consumers are done with step `g - STAGES`, this stage's last.
                        // SAFETY: an initialised barrier object.
                        unsafe { mbarrier_wait(empty(g), parity(g - STAGES)) };
                    }
                    let sa = stage(g);
                    // SAFETY: an initialised barrier object, whose phase expects this thread's
                    // one arrival a step.
                    unsafe { mbarrier_arrive_expect_tx(full(g), stage_bytes(bn) as u32) };
                    // SAFETY: the maps as the caller says; the boxes inside the tensors (whole
                    // tiles); the stage 1024-aligned, released by its readers (above), read
                    // next once `full`'s phase completes, which waits for these bytes.
                    unsafe { tma_load_2d(sa, x, (64 * s) as i32, i0 as i32, full(g)) };
                    if B_MN {
                        for p in 0..bn / 64 {
                            // SAFETY: as above, `b`'s map: panel `p`, 64 rows of `k` from `64 s`
                            // and 64 columns from `j0 + 64 p`, at its place.
                            unsafe {
                                tma_load_2d(
                                    sa + 128 * 128 + (p * 64 * 128) as u32,
                                    w,
                                    (j0 + 64 * p) as i32,
                                    (64 * s) as i32,
                                    full(g),
                                )
                            };
                        }
                    } else {
                        // SAFETY: as above, `w`'s map.
                        unsafe { tma_load_2d(sa + 128 * 128, w, (64 * s) as i32, j0 as i32, full(g)) };
                    }
                }
                (tile, g0) = (tile + blocks, g0 + steps);
            }
            return;
        }
        let cw = wg - 1;
        let (mut tile, mut g0) = (block, 0);
        while let Some((i0, j0)) = chunk(tile, m, n, bn) {
            let mut acc = A::zero();
            for s in 0..steps {
                let g = g0 + s;
                // SAFETY: an initialised barrier object.
                unsafe { mbarrier_wait(full(g), parity(g)) };
                let sa = stage(g);
                let da = descriptor(sa + (cw * 64 * 128) as u32);
                if B_MN {
                    // SAFETY: all 128 threads of warpgroup `wg` (uniform code); the stage landed
                    // (the copy engine writes through the async proxy, as `wgmma` reads); it is
                    // refilled only after both warpgroups released it (below); `b` laid out as
                    // its descriptor says (panels of 64 rows of 128 bytes, 8192 apart).
                    unsafe { acc.mma_k64_mn(da, descriptor_128_mn(sa + 128 * 128, 64 * 128)) };
                } else {
                    // SAFETY: as above, `w`'s rows of 128 bytes K-major.
                    unsafe { acc.mma_k64(da, descriptor(sa + 128 * 128)) };
                }
                // SAFETY: the warpgroup's threads together.
                unsafe { acc.wait::<1>() };
                if s > 0 {
                    // Step `g - 1`'s group is done: its stage can be refilled. (A predicated
                    // arrival, not a branch on the lane beside `wgmma`'s aligned waits.)
                    // SAFETY: an initialised barrier object whose phase expects one arrival
                    // from each of the 8 consumer warps: their first lanes'.
                    unsafe { mbarrier_arrive_where(empty(g - 1), tw % 32 == 0) };
                }
            }
            // SAFETY: the warpgroup's threads together; the last group done.
            unsafe { acc.wait::<0>() };
            // The chunk's last step is released too.
            // SAFETY: as above.
            unsafe { mbarrier_arrive_where(empty(g0 + steps - 1), tw % 32 == 0) };
            // SAFETY: this warpgroup's 64 rows of the chunk, inside `y` (whole tiles), `j0` and
            // `n` even, `y` 16-aligned (checked above); each element one thread's.
            unsafe { store(&acc, tw, py, n, i0 + 64 * cw, j0) };
            (tile, g0) = (tile + blocks, g0 + steps);
        }
    }
}

/// [`wgmma_nt_256_ws4`] with the bulk copy engine (TMA) for the producer: one thread starts two
/// tensor copies a step (`cp.async.bulk.tensor`, 128-byte swizzle), which complete the stage's
/// barrier object as they land. It takes the tensor maps of the safe
/// [`linear_bf16`](crate::linear_bf16) (`x`'s boxes `64 × 128`, `w`'s `64 × 256`). Launch as
/// [`wgmma_nt_256_ws4`], or with fewer blocks (one a multiprocessor, say): each then takes
/// chunks `b`, `b + blocks`, … in turn. Extents that do not fit together or are not multiples
/// of 128 (`m`), 256 (`n`) and 64 (`k`), `y` not 16-aligned, or a grid of more than one row
/// leave `y` as it is.
#[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
pub fn wgmma_nt_256_tma4(
    thread: Thread,
    x: XMap<'_, bf16, 64>,
    w: WMap<'_, bf16, 64>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    if thread.block_in_row().is_some() {
        // SAFETY: blocks of 384 threads along `x` (the launcher checks `block_threads`) on a grid
        // of one row (checked here), built for `sm_90a`; the shared memory is checked by the
        // product (it leaves `y` as it is with less); the maps are the parameters' own, encoded
        // on the host from views of these extents, with these boxes and swizzle (their types).
        unsafe { device::product_tma::<[f32; 128], 4, false>((x.map(), x.extents()), (w.map(), w.extents()), &y) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, w, y);
}

/// [`wgmma_nt_256_tma4`] for `y = x · b` with `b` row-major (`k × n`, read MN-major by
/// `wgmma`): the raw twin of the safe [`matmul_bf16`](crate::matmul_bf16), with its tensor maps
/// (`b`'s boxes `64 × 64`, 64 columns of 64 rows). `m`, `n`, `k` multiples of 128, 256 and 64
/// (others leave `y` as it is).
#[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
pub fn wgmma_nn_256_tma4(
    thread: Thread,
    x: XMap<'_, bf16, 64>,
    b: BMap<'_, bf16>,
    y: DeviceMdspanMut<'_, bf16, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    if thread.block_in_row().is_some() {
        // SAFETY: as in `wgmma_nt_256_tma4`; `BMap`'s boxes are `64 × 64`.
        unsafe { device::product_tma::<[f32; 128], 4, true>((x.map(), x.extents()), (b.map(), b.extents()), &y) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, b, y);
}
