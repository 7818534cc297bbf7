//! The raw twins of attention's backward kernels ([`attention_delta_bf16`](crate::attention_delta_bf16),
//! [`attention_dq_bf16_d128`](crate::attention_dq_bf16_d128),
//! [`attention_dkv_bf16_d128`](crate::attention_dkv_bf16_d128) and the others): the same work,
//! block for block and product for product, written the CUDA C++ way over
//! `dlmd::kernel::warpgroup::raw`, as [the forward pass's twins](crate::attention_raw_bf16_d128)
//! are. Every precondition of their `unsafe` code is checked at run time (the views' extents,
//! the launch's grid, threads and shared memory), so they are safe to launch.
//!
//! Shared memory of the gradients' twins, from the first 1024-aligned address: the two resident
//! tiles (`q` and `do` for the queries' gradient, `k` and `v` for the keys' and values'), each
//! `128 × D`, then for each stage the two streamed tiles (`k` and `v`, or `q` and `do`), each `64
//! × D`, all in panels of 64 columns in the 128-byte swizzle; then the barrier objects: the
//! residents' full and empty, each stage's two full and two empty.

use crate::attention::{AttentionLse, AttentionMap, AttentionOut};
use crate::backward::{AttentionRead, HalfMap, RowStat};
use dlmd::half::{bf16, f16};
use dlmd::kernel::Thread;

/// The stages of the streamed tiles at head dimension `d`: as the safe kernels'.
const fn stages(d: usize) -> usize {
    if d == 64 { 4 } else { 3 }
}

/// The dynamic shared memory of a raw twin of the queries', keys' and values' gradients of head
/// dimension `d` (64 or 128): the slack to align the tiles, the resident tiles, the stages and
/// the barrier objects.
pub const fn raw_backward_shared_bytes(d: usize) -> u32 {
    let stages = stages(d);
    let bytes = 1024 + 2 * 128 * d * 2 + stages * 2 * 64 * d * 2 + 8 * (2 + 4 * stages);
    bytes.next_multiple_of(128) as u32
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::stages;
    use crate::attention::{AttentionMap, AttentionOut};
    use crate::attention_raw::device::{CONSUMER_REGS, PRODUCER_REGS, Pair};
    use crate::backward::{HalfMap, RowStat, fits};
    use core::arch::nvptx;
    use dlmd::kernel::math::{exp2, mul_add};
    use dlmd::kernel::warpgroup::raw::{
        descriptor_128, descriptor_128_mn, fence_mbarrier_init, mbarrier_arrive_expect_tx, mbarrier_arrive_where,
        mbarrier_init, mbarrier_wait, pack, setmaxnreg_dec, setmaxnreg_inc, tma_load_4d, wgmma_rs_64, wgmma_ss,
        wgmma_wait_acc, wgmma_wait_rs_64,
    };
    use dlmd::kernel::warpgroup::{Cols, KMajor, Keys, Product, ProductRs, Queries, Visible, Width};
    use dlmd::{DlElement, unroll};

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
        stages: usize,
        resident: u32,
        half: u32,
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
        fn res(&self, i: u32) -> u32 {
            self.base + self.resident * i
        }
        /// Streamed tile `i` (0 or 1) of stage `s`.
        fn tile(&self, i: u32, s: usize) -> u32 {
            self.base + 2 * self.resident + self.half * (2 * s as u32 + i)
        }
        fn bars(&self) -> u32 {
            self.base + 2 * self.resident + self.half * 2 * self.stages as u32
        }
        /// The residents' full and empty barrier objects.
        fn res_full(&self) -> u32 {
            self.bars()
        }
        fn res_empty(&self) -> u32 {
            self.bars() + 8
        }
        /// Stage `s`'s full barrier object of streamed tile `i`.
        fn full(&self, i: usize, s: usize) -> u32 {
            self.bars() + 16 + (8 * (self.stages * i + s)) as u32
        }
        /// Stage `s`'s empty barrier object of streamed tile `i`.
        fn empty(&self, i: usize, s: usize) -> u32 {
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

    /// Pairs of a row of `view` in one store: contiguous rows, each pair 4-aligned.
    #[inline(always)]
    fn pairs<T: DlElement>(view: &AttentionOut<'_, T>) -> bool {
        view.stride(3) == 1
            && (0..3).all(|d| view.stride(d) % 2 == 0)
            && (view.data_handle() as usize).is_multiple_of(4)
    }

    /// Writes a warpgroup's `64 × D` accumulators to rows `row0 ..` of head `head` of batch
    /// entry `b` of `view`, as `out(value)`, those below `rows`.
    ///
    /// # Safety
    ///
    /// `view`'s extents are `[> b, > head, rows, D]`; the 64 rows from `row0` of that head are
    /// written by no other thread while the kernel runs (each element by the thread of this
    /// warpgroup that holds it).
    #[inline(always)]
    unsafe fn store<T: DlElement, const D: usize, const R: usize>(
        view: &AttentionOut<'_, T>,
        [b, head, row0, rows]: [usize; 4],
        acc: &[f32; R],
        out: impl Fn(f32) -> T,
        thread: usize,
    ) {
        let (warp, lane) = (thread / 32, thread % 32);
        let (ptr, pairs) = (view.data_handle(), pairs(view));
        let st = [view.stride(0), view.stride(1), view.stride(2), view.stride(3)];
        unroll!(2, |half| {
            let row = row0 + 16 * warp + lane / 4 + 8 * half;
            if row < rows {
                let at_row = b as isize * st[0] + head as isize * st[1] + row as isize * st[2];
                unroll!(16, |j| {
                    if j < D / 8 {
                        let col = 8 * j + 2 * (lane % 4);
                        let i = 4 * j + 2 * half;
                        let values = [out(acc[i]), out(acc[i + 1])];
                        let at = at_row + col as isize * st[3];
                        if pairs {
                            // SAFETY: `row` and `col + 1` inside the view (`row < rows`, `col + 1
                            // < D`, the caller's extents), the pair 4-aligned (the pointer, the
                            // strides and `col` even); this thread's alone (the caller).
                            unsafe { ptr.wrapping_offset(at).cast::<Pair<T>>().write(Pair(values)) };
                        } else {
                            // SAFETY: as above, element by element.
                            unsafe { ptr.wrapping_offset(at).write(values[0]) };
                            // SAFETY: as above.
                            unsafe { ptr.wrapping_offset(at + st[3]).write(values[1]) };
                        }
                    }
                });
            }
        });
    }

    /// `stat[b, h, i]`, or `default` where `i` is past `rows`.
    ///
    /// # Safety
    ///
    /// `stat`'s extents are `[> b, > h, rows]`.
    #[inline(always)]
    unsafe fn stat(stat: &RowStat<'_>, [b, h, i, rows]: [usize; 4], default: f32) -> f32 {
        if i < rows {
            let at = b as isize * stat.stride(0) + h as isize * stat.stride(1) + i as isize * stat.stride(2);
            // SAFETY: inside the view (the caller's extents, `i < rows`); read only.
            unsafe { stat.data_handle().wrapping_offset(at).read() }
        } else {
            default
        }
    }

    /// The statistic of each of the thread's 16 columns of a `64 × 64` tile of accumulators
    /// whose columns are `view[b, h, i0 ..]`: column `8 (j / 2) + 2 (l % 4) + j % 2` in place
    /// `j`, `default` past `rows`. Where the 64 are inside and neighbours, from one address.
    ///
    /// # Safety
    ///
    /// `view`'s extents are `[> b, > h, rows]`.
    #[inline(always)]
    unsafe fn cols(view: &RowStat<'_>, [b, h, i0, rows]: [usize; 4], default: f32, lane: usize) -> [f32; 16] {
        let mut values = [default; 16];
        if i0 + 64 <= rows && view.stride(2) == 1 {
            let at = b as isize * view.stride(0) + h as isize * view.stride(1) + i0 as isize + 2 * (lane % 4) as isize;
            let first = view.data_handle().wrapping_offset(at);
            unroll!(16, |j| {
                // SAFETY: `[b, h, i0 + 8 (j / 2) + 2 (l % 4) + j % 2]`, inside the view (the
                // caller's extents, the column below `i0 + 64 ≤ rows`), its elements neighbours;
                // read only.
                values[j] = unsafe { first.wrapping_add(8 * (j / 2) + j % 2).read() };
            });
        } else {
            unroll!(16, |j| {
                let col = 8 * (j / 2) + 2 * (lane % 4) + j % 2;
                // SAFETY: the caller's extents.
                values[j] = unsafe { stat(view, [b, h, i0 + col, rows], default) };
            });
        }
        values
    }

    /// The blocks' chunks (`b · heads · ⌈rows / 128⌉`), the block's first and the blocks, and
    /// the thread's index in the block.
    #[inline(always)]
    fn place(b: usize, heads: usize, rows: usize) -> Option<((usize, usize, usize), usize)> {
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() };
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() };
        // SAFETY: as above.
        let blocks = unsafe { nvptx::_grid_dim_x() };
        let chunks = b.checked_mul(heads)?.checked_mul(rows.div_ceil(128))?;
        Some(((block as usize, chunks, blocks as usize), t as usize))
    }

    /// The packed `A` fragment of a `64 × 64` tile of the accumulators.
    #[inline(always)]
    fn fragment<T: ProductRs<Cols<128>>>(x: &[f32; 32]) -> [u32; 16] {
        let mut a = [0u32; 16];
        unroll!(8, |i| {
            a[2 * i] = pack::<T>(x[4 * i], x[4 * i + 1]);
            a[2 * i + 1] = pack::<T>(x[4 * i + 2], x[4 * i + 3]);
        });
        a
    }

    /// The queries' gradient of [`attention_dq_bf16_d128`](crate::attention_dq_bf16_d128) and
    /// the others, raw: `dq` left as it is where the extents do not fit together, the scale is
    /// not positive and finite, the grid is not one row of blocks, the block is not of 384
    /// threads, or its dynamic shared memory is less than
    /// [`raw_backward_shared_bytes`](super::raw_backward_shared_bytes).
    ///
    /// # Safety
    ///
    /// Run by every thread of the block, on `sm_90a`; `dq` is written by no other block's rows
    /// and by nothing else while the kernel runs, the maps' and views' tensors are not written
    /// (kernel parameters of these types).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn dq<T, const D: usize, const R: usize>(
        [q, d_o]: [&AttentionMap<'_, T, D>; 2],
        [k, v]: [&HalfMap<'_, T, D>; 2],
        [lse, delta]: [&RowStat<'_>; 2],
        dq: &AttentionOut<'_, T>,
        scale: f32,
        causal: bool,
        out: impl Fn(f32) -> T,
    ) where
        T: DlElement + Product<Cols<64>, KMajor> + ProductRs<Cols<D>, Cols<64>> + ProductRs<Cols<128>>,
        Cols<D>: Width<Regs = [f32; R]>,
    {
        let (qe, ke) = (q.extents(), k.extents());
        let stats = [
            [lse.extent(0), lse.extent(1), lse.extent(2)],
            [delta.extent(0), delta.extent(1), delta.extent(2)],
        ];
        let fits = fits::<D>(qe, ke, v.extents(), stats, scale)
            && (0..4).all(|d| dq.extent(d) == qe[d] && d_o.extents()[d] == qe[d]);
        let [batch, heads_q, s_q, _] = qe;
        let [_, heads_kv, s_k, _] = ke;
        let (Some(layout), Some(((first, chunks, blocks), t))) = (Layout::of::<D>(), place(batch, heads_q, s_q)) else {
            return;
        };
        // Uniform across the block: no thread goes on without the others.
        if !fits {
            return;
        }
        let group = heads_q / heads_kv;
        let scale_log2 = scale * core::f32::consts::LOG2_E;
        let m_tiles = s_q.div_ceil(128);
        let chunk = |c: usize| {
            let (m, bh) = (c % m_tiles, c / m_tiles);
            let (b, h, m0) = (bh / heads_q, bh % heads_q, 128 * m);
            Chunk {
                b,
                head: h,
                row0: m0,
                heads: (h / group, h / group + 1),
                tiles: (0, Keys::tiles_of(64, m0, 128, s_q, s_k, causal)),
            }
        };
        // SAFETY: every thread of the block, in uniform code, once.
        unsafe { init(&layout, t) };
        let (role, thread) = (t / 128, t % 128);
        if role == 0 {
            // SAFETY: the producer warpgroup, converged, at its registers at launch (the entry
            // point declares 384 threads and one block a multiprocessor); it needs fewer.
            unsafe { setmaxnreg_dec::<PRODUCER_REGS>() };
            if thread == 0 {
                // SAFETY: the producer's first thread, after `init`; the maps are parameters of
                // tensors nothing writes; the consumers loop over the same chunks.
                unsafe { produce(&layout, [q, d_o], [k, v], (first, chunks, blocks), chunk) };
            }
            return;
        }
        // SAFETY: a consumer warpgroup, converged, at its registers at launch; the producer's
        // release leaves the pool enough for both consumers (40 + 2 · 232 ≤ 3 · 168).
        unsafe { setmaxnreg_inc::<CONSUMER_REGS>() };
        let (cw, warp, lane) = (role - 1, thread / 32, thread % 32);
        let (mut c, mut takes_res, mut takes) = (first, 0usize, 0usize);
        while c < chunks {
            let ch = chunk(c);
            let row0 = ch.row0 + 64 * cw;
            // SAFETY: an initialised barrier object; phase `takes_res` is this chunk's fill.
            unsafe { mbarrier_wait(layout.res_full(), (takes_res % 2) as u32) };
            takes_res += 1;
            let (mut lse_rows, mut delta_rows) = ([0.0f32; 2], [0.0f32; 2]);
            unroll!(2, |h| {
                let row = row0 + 16 * warp + lane / 4 + 8 * h;
                // SAFETY: `lse` and `Δ` of `q`'s extents but the last (checked); `ch.b` and
                // `ch.head` inside them.
                lse_rows[h] = unsafe { stat(lse, [ch.b, ch.head, row, s_q], f32::INFINITY) };
                // SAFETY: as above.
                delta_rows[h] = unsafe { stat(delta, [ch.b, ch.head, row, s_q], 0.0) };
            });
            let mut acc = <Cols<D> as Width>::zero();
            for n in ch.tiles.0..ch.tiles.1 {
                let (s, parity) = (takes % layout.stages, ((takes / layout.stages) % 2) as u32);
                // `S = Q · Kᵀ` and `dP = dO · Vᵀ`, issued together.
                let mut x = <Cols<64> as Width>::zero();
                let mut y = <Cols<64> as Width>::zero();
                // SAFETY: an initialised barrier object; this phase is the stage's fill `takes`.
                unsafe { mbarrier_wait(layout.full(0, s), parity) };
                for p in 0..D / 64 {
                    let a = descriptor_128(layout.res(0) + (p * 128 * 128 + cw * 64 * 128) as u32);
                    let b = descriptor_128(layout.tile(0, s) + (p * 64 * 128) as u32);
                    // SAFETY: all 128 threads of the warpgroup, converged; `q`'s and `k`'s tiles
                    // landed (their full phases, through the async proxy), K-major in the
                    // 128-byte swizzle, this warpgroup's 64 rows of panel `p` and the 64 keys;
                    // neither is refilled before this warpgroup releases it below.
                    unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut x, a, b) };
                }
                // SAFETY: as above, for `v`'s tile.
                unsafe { mbarrier_wait(layout.full(1, s), parity) };
                for p in 0..D / 64 {
                    let a = descriptor_128(layout.res(1) + (p * 128 * 128 + cw * 64 * 128) as u32);
                    let b = descriptor_128(layout.tile(1, s) + (p * 64 * 128) as u32);
                    // SAFETY: as above, `do`'s rows and `v`'s tile.
                    unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut y, a, b) };
                }
                // SAFETY: the warpgroup's threads together.
                unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut x) };
                // `P`, 0 where the row does not see the key (`Keys`, as the safe kernels mask).
                let visible = Keys::new(row0, 64 * n, s_q, s_k, causal);
                let mut bounds = [(0u32, 0u32); 2];
                unroll!(2, |h| {
                    bounds[h] = visible.columns(16 * warp + lane / 4 + 8 * h, 64);
                });
                unroll!(8, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                        let (lo, hi) = bounds[(i / 2) % 2];
                        let base = lse_rows[(i / 2) % 2] * core::f32::consts::LOG2_E;
                        x[i] = if col >= lo && col < hi {
                            exp2(mul_add(x[i], scale_log2, -base))
                        } else {
                            0.0
                        };
                    });
                });
                // SAFETY: as above (done already).
                unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut y) };
                // SAFETY: an initialised barrier object whose phase counts one arrival from each
                // consumer warp: this warp's first lane's; the products that read `v`'s tile
                // are done (above).
                unsafe { mbarrier_arrive_where(layout.empty(1, s), lane == 0) };
                // `dS = P ∘ (dP − Δ)`, then `dQ += dS · K` (`k`'s tile read MN-major).
                unroll!(8, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        y[i] = x[i] * (y[i] - delta_rows[(i / 2) % 2]);
                    });
                });
                let mut a = fragment::<T>(&y);
                // SAFETY: the warpgroup's threads together; `k`'s tile landed (above), `64 × D`
                // read MN-major (panels of 64 rows of 128 bytes, 8 KiB apart); `a` and `acc`
                // are left alone until the wait below.
                unsafe { wgmma_rs_64::<T, Cols<D>>(&mut acc, &a, descriptor_128_mn(layout.tile(0, s), 64 * 128)) };
                // SAFETY: as above.
                unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc, &mut a) };
                // SAFETY: as for `v`'s release: the products that read `k`'s tile are done.
                unsafe { mbarrier_arrive_where(layout.empty(0, s), lane == 0) };
                takes += 1;
            }
            // SAFETY: as above: the products that read the resident tiles are done.
            unsafe { mbarrier_arrive_where(layout.res_empty(), lane == 0) };
            // SAFETY: `dq` of `q`'s extents (checked), the chunk's batch entry and head inside
            // them; the warpgroup's 64 rows of the chunk are its own (each chunk one block's).
            unsafe { store::<T, D, R>(dq, [ch.b, ch.head, row0, s_q], &acc, |x| out(x * scale), thread) };
            c += blocks;
        }
    }

    /// The keys' and values' gradients of [`attention_dkv_bf16_d128`](crate::attention_dkv_bf16_d128)
    /// and the others, raw: `dk` and `dv` left as they are where the extents do not fit
    /// together, or the launch does not, as for [`dq`].
    ///
    /// # Safety
    ///
    /// As [`dq`], for `dk` and `dv`, each written by nothing else (the launcher refuses two
    /// written views that overlap).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn dkv<T, const D: usize, const R: usize>(
        [k, v]: [&AttentionMap<'_, T, D>; 2],
        [q, d_o]: [&HalfMap<'_, T, D>; 2],
        [lse, delta]: [&RowStat<'_>; 2],
        [dk, dv]: [&AttentionOut<'_, T>; 2],
        scale: f32,
        causal: bool,
        out: impl Fn(f32) -> T,
    ) where
        T: DlElement + Product<Cols<64>, KMajor> + ProductRs<Cols<D>, Cols<64>> + ProductRs<Cols<128>>,
        Cols<D>: Width<Regs = [f32; R]>,
    {
        let (qe, ke) = (q.extents(), k.extents());
        let stats = [
            [lse.extent(0), lse.extent(1), lse.extent(2)],
            [delta.extent(0), delta.extent(1), delta.extent(2)],
        ];
        let fits = fits::<D>(qe, ke, v.extents(), stats, scale)
            && (0..4).all(|d| dk.extent(d) == ke[d] && dv.extent(d) == ke[d] && d_o.extents()[d] == qe[d]);
        let [batch, heads_q, s_q, _] = qe;
        let [_, heads_kv, s_k, _] = ke;
        let (Some(layout), Some(((first, chunks, blocks), t))) = (Layout::of::<D>(), place(batch, heads_kv, s_k))
        else {
            return;
        };
        if !fits {
            return;
        }
        let group = heads_q / heads_kv;
        let scale_log2 = scale * core::f32::consts::LOG2_E;
        let n_tiles = s_k.div_ceil(128);
        let chunk = |c: usize| {
            let (n, bh) = (c % n_tiles, c / n_tiles);
            let (b, hk, n0) = (bh / heads_kv, bh % heads_kv, 128 * n);
            Chunk {
                b,
                head: hk,
                row0: n0,
                heads: (hk * group, (hk + 1) * group),
                tiles: Queries::tiles(n0, 64, s_q, s_k, causal),
            }
        };
        // SAFETY: every thread of the block, in uniform code, once.
        unsafe { init(&layout, t) };
        let (role, thread) = (t / 128, t % 128);
        if role == 0 {
            // SAFETY: as in `dq`.
            unsafe { setmaxnreg_dec::<PRODUCER_REGS>() };
            if thread == 0 {
                // SAFETY: as in `dq`.
                unsafe { produce(&layout, [k, v], [q, d_o], (first, chunks, blocks), chunk) };
            }
            return;
        }
        // SAFETY: as in `dq`.
        unsafe { setmaxnreg_inc::<CONSUMER_REGS>() };
        let (cw, warp, lane) = (role - 1, thread / 32, thread % 32);
        let (mut c, mut takes_res, mut takes) = (first, 0usize, 0usize);
        while c < chunks {
            let ch = chunk(c);
            let key0 = ch.row0 + 64 * cw;
            // SAFETY: an initialised barrier object; phase `takes_res` is this chunk's fill.
            unsafe { mbarrier_wait(layout.res_full(), (takes_res % 2) as u32) };
            takes_res += 1;
            let mut acc_k = <Cols<D> as Width>::zero();
            let mut acc_v = <Cols<D> as Width>::zero();
            for h in ch.heads.0..ch.heads.1 {
                for m in ch.tiles.0..ch.tiles.1 {
                    let q0 = 64 * m;
                    let (s, parity) = (takes % layout.stages, ((takes / layout.stages) % 2) as u32);
                    // `Sᵀ = K · Qᵀ` and `dPᵀ = V · dOᵀ`, issued together.
                    let mut x = <Cols<64> as Width>::zero();
                    let mut y = <Cols<64> as Width>::zero();
                    // SAFETY: an initialised barrier object; this phase is the stage's fill.
                    unsafe { mbarrier_wait(layout.full(0, s), parity) };
                    for p in 0..D / 64 {
                        let a = descriptor_128(layout.res(0) + (p * 128 * 128 + cw * 64 * 128) as u32);
                        let b = descriptor_128(layout.tile(0, s) + (p * 64 * 128) as u32);
                        // SAFETY: as in `dq`: `k`'s rows and `q`'s tile.
                        unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut x, a, b) };
                    }
                    // SAFETY: as above, `do`'s tile.
                    unsafe { mbarrier_wait(layout.full(1, s), parity) };
                    for p in 0..D / 64 {
                        let a = descriptor_128(layout.res(1) + (p * 128 * 128 + cw * 64 * 128) as u32);
                        let b = descriptor_128(layout.tile(1, s) + (p * 64 * 128) as u32);
                        // SAFETY: as above, `v`'s rows and `do`'s tile.
                        unsafe { wgmma_ss::<T, Cols<64>, KMajor>(&mut y, a, b) };
                    }
                    // Each column's `lse` while the products run, its `Δ` while the
                    // probabilities are computed; columns past the queries read as a query that
                    // sees no key.
                    // SAFETY: `lse` and `Δ` of `q`'s extents but the last (checked); `ch.b` and
                    // `h` (a query head of the group) inside them.
                    let lse_cols = unsafe { cols(lse, [ch.b, h, q0, s_q], f32::INFINITY, lane) };
                    // SAFETY: the warpgroup's threads together.
                    unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut x) };
                    // SAFETY: as for `lse`.
                    let delta_cols = unsafe { cols(delta, [ch.b, h, q0, s_q], 0.0, lane) };
                    let visible = Queries::new(key0, q0, s_q, s_k, causal);
                    let mut bounds = [(0u32, 0u32); 2];
                    unroll!(2, |half| {
                        bounds[half] = visible.columns(16 * warp + lane / 4 + 8 * half, 64);
                    });
                    unroll!(8, |ia| {
                        unroll!(4, |ib| {
                            let i = 4 * ia + ib;
                            let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                            let (lo, hi) = bounds[(i / 2) % 2];
                            let base = lse_cols[2 * (i / 4) + i % 2] * core::f32::consts::LOG2_E;
                            x[i] = if col >= lo && col < hi {
                                exp2(mul_add(x[i], scale_log2, -base))
                            } else {
                                0.0
                            };
                        });
                    });
                    // SAFETY: as above (done already).
                    unsafe { wgmma_wait_acc::<Cols<64>, 0>(&mut y) };
                    unroll!(8, |ia| {
                        unroll!(4, |ib| {
                            let i = 4 * ia + ib;
                            y[i] = x[i] * (y[i] - delta_cols[2 * (i / 4) + i % 2]);
                        });
                    });
                    // `dV += Pᵀ · dO` and `dK += dSᵀ · Q`, issued together (`do`'s and `q`'s
                    // tiles read MN-major).
                    let (mut a_p, mut a_ds) = (fragment::<T>(&x), fragment::<T>(&y));
                    // SAFETY: the warpgroup's threads together; `do`'s and `q`'s tiles landed
                    // (above), `64 × D` read MN-major (panels of 64 rows of 128 bytes); the
                    // fragments and accumulators are left alone until the waits below.
                    unsafe {
                        wgmma_rs_64::<T, Cols<D>>(&mut acc_v, &a_p, descriptor_128_mn(layout.tile(1, s), 64 * 128))
                    };
                    // SAFETY: as above.
                    unsafe {
                        wgmma_rs_64::<T, Cols<D>>(&mut acc_k, &a_ds, descriptor_128_mn(layout.tile(0, s), 64 * 128))
                    };
                    // SAFETY: as above.
                    unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc_v, &mut a_p) };
                    // SAFETY: as above.
                    unsafe { wgmma_wait_rs_64::<T, Cols<D>>(&mut acc_k, &mut a_ds) };
                    // SAFETY: initialised barrier objects counting one arrival from each
                    // consumer warp; the products that read the stage's tiles are done.
                    unsafe { mbarrier_arrive_where(layout.empty(1, s), lane == 0) };
                    // SAFETY: as above.
                    unsafe { mbarrier_arrive_where(layout.empty(0, s), lane == 0) };
                    takes += 1;
                }
            }
            // SAFETY: as above: the products that read the resident tiles are done.
            unsafe { mbarrier_arrive_where(layout.res_empty(), lane == 0) };
            // SAFETY: `dk` and `dv` of `k`'s extents (checked), the chunk's batch entry and
            // key-value head inside them; the warpgroup's 64 rows of the chunk are its own.
            unsafe { store::<T, D, R>(dk, [ch.b, ch.head, key0, s_k], &acc_k, |x| out(x * scale), thread) };
            // SAFETY: as above.
            unsafe { store::<T, D, R>(dv, [ch.b, ch.head, key0, s_k], &acc_v, &out, thread) };
            c += blocks;
        }
    }
}

/// Eight neighbours of a row, read with one 16-byte load.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[repr(C, align(16))]
struct Run<T>([T; 8]);

/// `Δ = Σ do ∘ o` over rows of `d` elements, raw: a row a thread, every thread of the grid
/// over the rows in turn; `delta` left as it is where the extents do not fit together.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
fn delta_raw<T: crate::Widen>(o: &AttentionRead<'_, T>, d_o: &AttentionRead<'_, T>, delta: &AttentionLse<'_>) {
    let oe = [o.extent(0), o.extent(1), o.extent(2), o.extent(3)];
    let fits = (0..4).all(|i| d_o.extent(i) == oe[i]) && (0..3).all(|i| delta.extent(i) == oe[i]);
    if !fits {
        return;
    }
    let [b, h, s, d] = oe;
    #[cfg(target_arch = "nvptx64")]
    {
        use core::arch::nvptx;
        // SAFETY: a special register, no precondition.
        let t0 = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let t1 = unsafe { nvptx::_thread_idx_y() } as usize;
        // SAFETY: as above.
        let t2 = unsafe { nvptx::_thread_idx_z() } as usize;
        // SAFETY: as above.
        let d0 = unsafe { nvptx::_block_dim_x() } as usize;
        // SAFETY: as above.
        let d1 = unsafe { nvptx::_block_dim_y() } as usize;
        // SAFETY: as above.
        let d2 = unsafe { nvptx::_block_dim_z() } as usize;
        // SAFETY: as above.
        let g0 = unsafe { nvptx::_grid_dim_x() } as usize;
        // SAFETY: as above.
        let g1 = unsafe { nvptx::_grid_dim_y() } as usize;
        // SAFETY: as above.
        let g2 = unsafe { nvptx::_grid_dim_z() } as usize;
        // SAFETY: as above.
        let bx = unsafe { nvptx::_block_idx_x() } as usize;
        // SAFETY: as above.
        let by = unsafe { nvptx::_block_idx_y() } as usize;
        // SAFETY: as above.
        let bz = unsafe { nvptx::_block_idx_z() } as usize;
        let (t, dims, grid) = ([t0, t1, t2], [d0, d1, d2], [g0, g1, g2]);
        // Below 2³² each, so the block's threads and the thread's index in the grid are below
        // 2⁶⁴; the grid's threads may not be, and saturate (a thread past the rows stops).
        let per_block = dims[0] * dims[1] * dims[2];
        let in_block = (t[2] * dims[1] + t[1]) * dims[0] + t[0];
        let block = (bz * grid[1] + by) * grid[0] + bx;
        let threads = per_block
            .saturating_mul(grid[0])
            .saturating_mul(grid[1])
            .saturating_mul(grid[2]);
        // Rows of no element (`d` 0) may be more than an index holds: nothing is written then.
        let Some(rows) = b.checked_mul(h).and_then(|bh| bh.checked_mul(s)) else {
            return;
        };
        let mut row = block.saturating_mul(per_block).saturating_add(in_block);
        let (po, pg, pd) = (o.data_handle(), d_o.data_handle(), delta.data_handle());
        while row < rows {
            let (bi, hi, i) = (row / (h * s), row / s % h, row % s);
            let at = |v: &AttentionRead<'_, T>| {
                bi as isize * v.stride(0) + hi as isize * v.stride(1) + i as isize * v.stride(2)
            };
            let (ao, ag) = (at(o), at(d_o));
            let mut sum = 0.0f32;
            // Eight elements of each at a time where a row's are neighbours and 16-byte aligned
            // (as the safe kernel reads them), the rest one by one, summed in order.
            let mut j = 0;
            if o.stride(3) == 1 && d_o.stride(3) == 1 {
                while j + 8 <= d {
                    let (a, g) = (po.wrapping_offset(ao + j as isize), pg.wrapping_offset(ag + j as isize));
                    if (a as usize).is_multiple_of(16) && (g as usize).is_multiple_of(16) {
                        // SAFETY: `[bi, hi, i, j .. j + 8]` inside `o` (`j + 8 ≤ d`), neighbours,
                        // 16-byte aligned (tested); read only.
                        let x = unsafe { a.cast::<Run<T>>().read() };
                        // SAFETY: as above, inside `do`.
                        let y = unsafe { g.cast::<Run<T>>().read() };
                        for k in 0..8 {
                            sum += x.0[k].widen() * y.0[k].widen();
                        }
                    } else {
                        for k in 0..8 {
                            // SAFETY: as above, one element at a time.
                            let x = unsafe { a.wrapping_add(k).read() };
                            // SAFETY: as above.
                            let y = unsafe { g.wrapping_add(k).read() };
                            sum += x.widen() * y.widen();
                        }
                    }
                    j += 8;
                }
            }
            for j in j..d {
                // SAFETY: `[bi, hi, i, j]` inside `o` (its extents, checked); read only.
                let x = unsafe { po.wrapping_offset(ao + j as isize * o.stride(3)).read() };
                // SAFETY: as above, inside `do` (of `o`'s extents).
                let g = unsafe { pg.wrapping_offset(ag + j as isize * d_o.stride(3)).read() };
                sum += x.widen() * g.widen();
            }
            let at = bi as isize * delta.stride(0) + hi as isize * delta.stride(1) + i as isize * delta.stride(2);
            // SAFETY: `[bi, hi, i]` inside `delta` (its extents, checked); each row one
            // thread's (`row` steps by the grid's threads), the view written by nothing else.
            unsafe { pd.wrapping_offset(at).write(sum) };
            row = row.saturating_add(threads);
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (b, h, s, d);
}

/// The raw twin of [`attention_delta_bf16`](crate::attention_delta_bf16), with its parameters
/// and results: any launch shape, a thread a row at a time.
#[dlmd::kernel]
pub fn attention_raw_delta_bf16(
    thread: Thread,
    o: AttentionRead<'_, bf16>,
    d_o: AttentionRead<'_, bf16>,
    delta_out: AttentionLse<'_>,
) {
    let _ = thread;
    delta_raw(&o, &d_o, &delta_out);
}

/// The raw twin of [`attention_delta_f16`](crate::attention_delta_f16), as
/// [`attention_raw_delta_bf16`].
#[dlmd::kernel]
pub fn attention_raw_delta_f16(
    thread: Thread,
    o: AttentionRead<'_, f16>,
    d_o: AttentionRead<'_, f16>,
    delta_out: AttentionLse<'_>,
) {
    let _ = thread;
    delta_raw(&o, &d_o, &delta_out);
}

macro_rules! raw_backward {
    ($dq:ident, $dkv:ident, $safe_dq:ident, $safe_dkv:ident, $t:ty, $d:literal, $out:ident) => {
        /// The raw twin of
        #[doc = concat!("[`", stringify!($safe_dq), "`](crate::", stringify!($safe_dq), "),")]
        /// with its parameters and results. Launch with blocks of 384 threads and
        #[doc = concat!("[`raw_backward_shared_bytes`]`(", $d, ")`")]
        /// bytes of dynamic shared memory (with fewer, or other blocks, `dq` is left as it is),
        /// at most one block a chunk of 128 query rows of a head.
        #[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dq(
            thread: Thread,
            q: AttentionMap<'_, $t, $d>,
            k: HalfMap<'_, $t, $d>,
            v: HalfMap<'_, $t, $d>,
            d_o: AttentionMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dq_out: AttentionOut<'_, $t>,
            scale: f32,
            causal: bool,
        ) {
            let _ = thread;
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: every thread of the block runs the kernel's body; its entry point is
            // compiled for sm_90a (the crate's target); `dq_out` is a writable kernel
            // parameter, which nothing else writes during the kernel, each chunk's rows one
            // block's (`c`, `c + blocks`, …); the maps and read views are parameters of tensors
            // the kernel only reads.
            unsafe {
                device::dq::<$t, $d, { $d / 2 }>(
                    [&q, &d_o],
                    [&k, &v],
                    [&lse, &delta],
                    &dq_out,
                    scale,
                    causal,
                    dlmd::kernel::math::$out,
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (q, k, v, d_o, lse, delta, dq_out, scale, causal);
        }

        /// The raw twin of
        #[doc = concat!("[`", stringify!($safe_dkv), "`](crate::", stringify!($safe_dkv), "),")]
        /// with its parameters and results. Launch with blocks of 384 threads and
        #[doc = concat!("[`raw_backward_shared_bytes`]`(", $d, ")`")]
        /// bytes of dynamic shared memory (with fewer, or other blocks, `dk` and `dv` are left
        /// as they are), at most one block a chunk of 128 key rows of a key-value head.
        #[dlmd::kernel(block_threads = 384, min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $dkv(
            thread: Thread,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            q: HalfMap<'_, $t, $d>,
            d_o: HalfMap<'_, $t, $d>,
            lse: RowStat<'_>,
            delta: RowStat<'_>,
            dk_out: AttentionOut<'_, $t>,
            dv_out: AttentionOut<'_, $t>,
            scale: f32,
            causal: bool,
        ) {
            let _ = thread;
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: as for the queries' gradient; `dk_out` and `dv_out` are writable kernel
            // parameters, which the launcher checked do not overlap.
            unsafe {
                device::dkv::<$t, $d, { $d / 2 }>(
                    [&k, &v],
                    [&q, &d_o],
                    [&lse, &delta],
                    [&dk_out, &dv_out],
                    scale,
                    causal,
                    dlmd::kernel::math::$out,
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (q, k, v, d_o, lse, delta, dk_out, dv_out, scale, causal);
        }
    };
}

raw_backward!(
    attention_raw_dq_bf16_d64,
    attention_raw_dkv_bf16_d64,
    attention_dq_bf16_d64,
    attention_dkv_bf16_d64,
    bf16,
    64,
    to_bf16
);
raw_backward!(
    attention_raw_dq_bf16_d128,
    attention_raw_dkv_bf16_d128,
    attention_dq_bf16_d128,
    attention_dkv_bf16_d128,
    bf16,
    128,
    to_bf16
);
raw_backward!(
    attention_raw_dq_f16_d64,
    attention_raw_dkv_f16_d64,
    attention_dq_f16_d64,
    attention_dkv_f16_d64,
    f16,
    64,
    to_f16
);
raw_backward!(
    attention_raw_dq_f16_d128,
    attention_raw_dkv_f16_d128,
    attention_dq_f16_d128,
    attention_dkv_f16_d128,
    f16,
    128,
    to_f16
);
