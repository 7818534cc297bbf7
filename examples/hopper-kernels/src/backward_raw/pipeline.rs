//! The twins' pipeline: the block's shared-memory layout, its barrier objects, and the producer
//! thread that fills the resident and streamed tiles.

use super::stages;
use crate::attention::AttentionMap;
use crate::backward::HalfMap;
use core::arch::nvptx;
use dlmd::kernel::warpgroup::raw::{
    fence_mbarrier_init, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, tma_load_4d,
};
/// What a chunk of 128 resident rows covers: its batch entry, the resident tiles' head and
/// first row, the heads of the streamed tiles, and the streamed tiles of 64 rows of each.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    pub(super) b: usize,
    pub(super) head: usize,
    pub(super) row0: usize,
    pub(super) heads: (usize, usize),
    pub(super) tiles: (usize, usize),
}

/// The block's shared memory: tiles and barrier objects, by address.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    base: u32,
    pub(super) stages: usize,
    pub(super) resident: u32,
    pub(super) half: u32,
}

impl Layout {
    /// The layout at head dimension `D`, where the launch fits it: one row of blocks of 384
    /// threads, the dynamic shared memory large enough. The same answer for every thread.
    #[inline(always)]
    pub(super) fn of<const D: usize>() -> Option<Layout> {
        // SAFETY: a special register, no precondition.
        let threads = unsafe { nvptx::_block_dim_x() };
        // SAFETY: as above.
        let threads_y = unsafe { nvptx::_block_dim_y() };
        // SAFETY: as above.
        let threads_z = unsafe { nvptx::_block_dim_z() };
        // SAFETY: as above.
        let rows = unsafe { nvptx::_grid_dim_y() };
        // SAFETY: as above.
        let layers = unsafe { nvptx::_grid_dim_z() };
        let stages = stages(D);
        let (resident, half) = ((128 * D * 2) as u32, (64 * D * 2) as u32);
        let (start, bytes) = crate::gemm::device::shared();
        let base = start.next_multiple_of(1024);
        let needed =
            (base - start) as usize + 2 * resident as usize + stages * 2 * half as usize + 8 * (2 + 4 * stages);
        // Blocks are numbered along `x` alone: a grid of several rows or layers would give
        // two blocks one chunk.
        let fits = threads == 384 && threads_y == 1 && threads_z == 1 && rows == 1 && layers == 1;
        (fits && bytes >= needed).then_some(Layout {
            base,
            stages,
            resident,
            half,
        })
    }
    /// Resident tile `i` (0 or 1).
    pub(super) fn res(&self, i: u32) -> u32 {
        self.base + self.resident * i
    }
    /// Streamed tile `i` (0 or 1) of stage `s`.
    pub(super) fn tile(&self, i: u32, s: usize) -> u32 {
        self.base + 2 * self.resident + self.half * (2 * s as u32 + i)
    }
    pub(super) fn bars(&self) -> u32 {
        self.base + 2 * self.resident + self.half * 2 * self.stages as u32
    }
    /// The residents' full and empty barrier objects.
    pub(super) fn res_full(&self) -> u32 {
        self.bars()
    }
    pub(super) fn res_empty(&self) -> u32 {
        self.bars() + 8
    }
    /// Stage `s`'s full barrier object of streamed tile `i`.
    pub(super) fn full(&self, i: usize, s: usize) -> u32 {
        self.bars() + 16 + (8 * (self.stages * i + s)) as u32
    }
    /// Stage `s`'s empty barrier object of streamed tile `i`.
    pub(super) fn empty(&self, i: usize, s: usize) -> u32 {
        self.bars() + 16 + (8 * (self.stages * (2 + i) + s)) as u32
    }
}

/// Initialises the barrier objects (thread 0), then syncs the block.
///
/// # Safety
///
/// Every thread of the block, in uniform code, once, before any other use of the layout.
#[inline(always)]
pub(super) unsafe fn init(layout: &Layout, t: usize) {
    if t == 0 {
        let init = |bar: u32, count: u32| {
            // SAFETY: 8-aligned words past the tiles (the shared memory checked by
            // `Layout::of`), used as nothing else; the barrier below orders this before
            // every use.
            unsafe { mbarrier_init(bar, count) }
        };
        // Full objects count the producer's one arrival a phase, empty ones one from each
        // of the 8 consumer warps.
        init(layout.res_full(), 1);
        init(layout.res_empty(), 8);
        for s in 0..layout.stages {
            for i in 0..2 {
                init(layout.full(i, s), 1);
                init(layout.empty(i, s), 8);
            }
        }
        // SAFETY: sm_90.
        unsafe { fence_mbarrier_init() };
    }
    // SAFETY: every thread of the block, in uniform code (the caller).
    unsafe { nvptx::_syncthreads() };
}

/// The producer thread: for each of the block's chunks, the two resident tiles (`128 ×
/// D` of `res`, at the chunk's head and rows), then for each streamed head and tile the two
/// streamed tiles (`64 × D` of `streamed`), each once the consumers released its slot.
///
/// # Safety
///
/// The first thread of the producer warpgroup, alone, after [`init`]; the maps are kernel
/// parameters of tensors nothing writes while the kernel runs; `chunk` gives the same
/// chunks as the consumers' loop.
#[inline(always)]
pub(super) unsafe fn produce<T, const D: usize>(
    layout: &Layout,
    res: [&AttentionMap<'_, T, D>; 2],
    streamed: [&HalfMap<'_, T, D>; 2],
    (first, chunks, blocks): (usize, usize, usize),
    chunk: impl Fn(usize) -> Chunk,
) {
    let (mut c, mut fills_res, mut fills) = (first, 0usize, 0usize);
    while c < chunks {
        let ch = chunk(c);
        let at = |col: usize, row: usize, head: usize| [col as i32, row as i32, head as i32, ch.b as i32];
        if fills_res > 0 {
            // SAFETY: an initialised barrier object; its phase `fills_res - 1` completes once
            // every consumer warp released the last fill.
            unsafe { mbarrier_wait(layout.res_empty(), ((fills_res - 1) % 2) as u32) };
        }
        // SAFETY: an initialised barrier object whose phase expects this one arrival.
        unsafe { mbarrier_arrive_expect_tx(layout.res_full(), 2 * layout.resident) };
        for (i, map) in res.into_iter().enumerate() {
            for p in 0..D / 64 {
                let dst = layout.res(i as u32) + (p * 128 * 128) as u32;
                // SAFETY: a map of boxes `128 × 64` in the 128-byte swizzle (its type), of a
                // tensor nothing writes; panel `p` of resident tile `i`, 1024-aligned,
                // released (above), read once the full phase completes, which waits for
                // these bytes. The coordinates are below 2³¹ (the extents are).
                unsafe { tma_load_4d(dst, map.map(), at(64 * p, ch.row0, ch.head), layout.res_full()) };
            }
        }
        fills_res += 1;
        for head in ch.heads.0..ch.heads.1 {
            for n in ch.tiles.0..ch.tiles.1 {
                let s = fills % layout.stages;
                for (i, map) in streamed.into_iter().enumerate() {
                    if fills >= layout.stages {
                        // SAFETY: an initialised barrier object; its phase `fills / stages -
                        // 1` is the release of this stage's last fill.
                        unsafe { mbarrier_wait(layout.empty(i, s), ((fills / layout.stages - 1) % 2) as u32) };
                    }
                    // SAFETY: as for the residents'.
                    unsafe { mbarrier_arrive_expect_tx(layout.full(i, s), layout.half) };
                    for p in 0..D / 64 {
                        let dst = layout.tile(i as u32, s) + (p * 64 * 128) as u32;
                        // SAFETY: as for the residents', boxes `64 × 64`, the stage's tile.
                        unsafe { tma_load_4d(dst, map.map(), at(64 * p, 64 * n, head), layout.full(i, s)) };
                    }
                }
                fills += 1;
            }
        }
        c += blocks;
    }
}
