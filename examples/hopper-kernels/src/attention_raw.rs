//! The raw twins of attention's forward kernels ([`attention_bf16_d128`](crate::attention_bf16_d128)
//! and the others): the same work, written the CUDA C++ way, over `dlmd::kernel::warpgroup::raw`
//! and addresses of the block's shared memory: the safe kernels block for block (the chunks of
//! [`forward_chunk`](crate::forward_chunk): 128 query rows and two consumer warpgroups at head
//! dimension 128, 192 rows and three at 64, each head's last rows first) and instruction for
//! instruction, so each row's work is the same, in the same order (the same bits). The block
//! lays out its own tiles and barrier objects, its producer thread counts their phases, each
//! consumer warpgroup keeps its statistics in arrays of registers and writes its rows of `o`
//! through the pointer. Every precondition of its `unsafe` code is checked at
//! run time (the views' extents, the launch's threads and shared memory), so the kernels are
//! safe to launch; what they do not have is the types that make each step of the safe
//! kernels' code checked by the compiler.
//!
//! Shared memory, from the first 1024-aligned address: `q`'s tile (the chunk's rows `× D`), then
//! for each stage a tile of `k` and one of `v` (each `128 × D`; every tile in panels of 64
//! columns, 128-byte swizzle), then the barrier objects: `q`'s full and empty, each stage's full
//! `k`, full `v`, empty `k` and empty `v`.

use crate::attention::{AttentionLse, AttentionMap, AttentionOut, QueryMap};
use dlmd::half::{bf16, f16};
use dlmd::kernel::Thread;

/// The bytes of one `128 × d` tile of a 2-byte element.
const fn tile_bytes(d: usize) -> usize {
    128 * d * 2
}

/// The bytes of `q`'s tile at head dimension `d`: the chunk's rows of a 2-byte element.
const fn q_bytes(d: usize) -> usize {
    crate::forward_chunk(d).rows * d * 2
}

/// The dynamic shared memory of a raw twin of head dimension `d` (64 or 128): the slack to
/// align the tiles, `q`'s tile, the stages' (4 at `d` 64, 2 at 128) and the barrier objects.
pub const fn raw_attention_shared_bytes(d: usize) -> u32 {
    let stages = stages(d);
    let bytes = 1024 + q_bytes(d) + 2 * stages * tile_bytes(d) + 8 * (2 + 4 * stages);
    bytes.next_multiple_of(128) as u32
}

/// The registers of each consumer thread in a block of `threads` (one block a multiprocessor)
/// once the producer's warpgroup is down to [`PRODUCER_REGS`](device::PRODUCER_REGS): what
/// that frees dealt to the consumers, a multiple of 8, at most 240 (the split the safe
/// kernels' blocks make; 232 in blocks of 384, 152 in blocks of 512).
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
const fn consumer_regs(threads: usize) -> u32 {
    let launch = 65536 / threads / 8 * 8;
    let consumer = (launch * threads - 128 * 40) / (threads - 128) / 8 * 8;
    if consumer > 240 { 240 } else { consumer as u32 }
}

/// The stages of `k` and `v` at head dimension `d`: as the safe kernels'.
const fn stages(d: usize) -> usize {
    if d == 64 { 4 } else { 2 }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device {
    use super::{stages, tile_bytes};
    use crate::attention::{AttentionLse, AttentionMap, AttentionOut, QueryMap};
    use core::arch::nvptx;
    use dlmd::kernel::math::{exp2, log2, mul_add, rcp};
    use dlmd::kernel::warpgroup::raw::{
        descriptor_128, descriptor_128_mn, fence_mbarrier_init, mbarrier_arrive_expect_tx, mbarrier_arrive_where,
        mbarrier_init, mbarrier_wait, pack, setmaxnreg_dec, setmaxnreg_inc, shuffle_xor, tma_load_4d, wgmma_rs,
        wgmma_ss, wgmma_wait_acc, wgmma_wait_rs,
    };
    use dlmd::kernel::warpgroup::{Cols, KMajor, Keys, Product, ProductRs, Width};
    use dlmd::{DlElement, unroll};

    /// Registers of the producer warpgroup and of each consumer one while the block runs: the
    /// split the safe kernels' blocks of 384 threads make (one block a multiprocessor).
    pub(crate) const PRODUCER_REGS: u32 = 40;
    pub(crate) const CONSUMER_REGS: u32 = super::consumer_regs(384);

    /// `f` over the four lanes that hold a row of the accumulators.
    #[inline(always)]
    pub(crate) fn quad(value: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
        // SAFETY: every lane of the warp runs this (a consumer warpgroup's uniform code).
        let value = f(value, unsafe { shuffle_xor(value, 1) });
        // SAFETY: as above.
        f(value, unsafe { shuffle_xor(value, 2) })
    }

    /// Two neighbours of a row of `o`, stored with one 4-byte store.
    #[repr(C, align(4))]
    pub(crate) struct Pair<T>(pub(crate) [T; 2]);

    /// The forward pass of [`attention_bf16_d128`](crate::attention_bf16_d128) and the
    /// others, raw, in chunks of `ROWS` query rows (a consumer warpgroup each 64) and blocks
    /// of `THREADS`, each consumer thread at `CONSUMER` registers: `o` and `lse` left as they
    /// are where the extents do not fit together, the scale is not positive and finite, the
    /// grid is not one row of blocks, the block is not of `THREADS` threads, or its dynamic
    /// shared memory is less than [`raw_attention_shared_bytes`](super::raw_attention_shared_bytes).
    ///
    /// # Safety
    ///
    /// Run by every thread of the block, on `sm_90a`, whose entry point declares `THREADS`
    /// threads and one block a multiprocessor; `ROWS` is `64 · (THREADS / 128 − 1)`, `CONSUMER`
    /// at least a thread's registers at launch (`65536 / THREADS`, a multiple of 8) and
    /// `PRODUCER_REGS · 128 + CONSUMER · (THREADS − 128)` at most the block's registers at
    /// launch; `o` and `lse` are written by no other block's rows and by nothing else
    /// while the kernel runs, and the maps' tensors are not written (kernel parameters of
    /// these types).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn forward<
        T,
        const D: usize,
        const R: usize,
        const ROWS: usize,
        const THREADS: usize,
        const CONSUMER: u32,
    >(
        q: &QueryMap<'_, T, ROWS, D>,
        [k, v]: [&AttentionMap<'_, T, D>; 2],
        o: &AttentionOut<'_, T>,
        lse: &AttentionLse<'_>,
        scale: f32,
        causal: bool,
        out: impl Fn(f32) -> T,
    ) where
        T: DlElement + Product<Cols<128>, KMajor> + ProductRs<Cols<D>> + ProductRs<Cols<128>>,
        Cols<D>: Width<Regs = [f32; R]>,
    {
        const {
            assert!(
                THREADS >= 256 && THREADS.is_multiple_of(128) && ROWS == 64 * (THREADS / 128 - 1),
                "a consumer warpgroup for each 64 rows of a chunk, and the producer's"
            );
            // The block holds `65536 / THREADS` registers a thread at launch, a multiple of 8.
            let launch = 65536 / THREADS / 8 * 8;
            assert!(
                CONSUMER as usize >= launch
                    && PRODUCER_REGS as usize * 128 + CONSUMER as usize * (THREADS - 128) <= launch * THREADS,
                "the consumers take no more registers than the producer's leave the block"
            );
        };
        let [batch, heads_q, s_q, depth] = q.extents();
        let [batch_kv, heads_kv, s_k, depth_kv] = k.extents();
        let same = |a: [usize; 4], b: [usize; 4]| (0..4).all(|d| a[d] == b[d]);
        let o_extents = [o.extent(0), o.extent(1), o.extent(2), o.extent(3)];
        let fits = heads_kv > 0
            && heads_q.is_multiple_of(heads_kv)
            && depth == D
            && depth_kv == D
            && batch_kv == batch
            && same(v.extents(), k.extents())
            && same(o_extents, q.extents())
            && lse.extent(0) == batch
            && lse.extent(1) == heads_q
            && lse.extent(2) == s_q
            && scale > 0.0
            && scale.is_finite();
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() } as usize;
        // SAFETY: as above.
        let blocks = unsafe { nvptx::_grid_dim_x() } as usize;
        // SAFETY: as above.
        let threads = unsafe { nvptx::_block_dim_x() } as usize;
        // Blocks are numbered along `x` alone: a grid of several rows or layers would give two
        // blocks one chunk.
        // SAFETY: as above.
        let rows = unsafe { nvptx::_grid_dim_y() };
        // SAFETY: as above.
        let layers = unsafe { nvptx::_grid_dim_z() };
        let flat = rows == 1 && layers == 1;
        let stages = stages(D);
        let tile = tile_bytes(D) as u32;
        // `q`'s tile: the chunk's rows, each panel of 64 columns `ROWS · 128` bytes.
        let (q_bytes, q_panel) = ((ROWS * D * 2) as u32, ROWS * 128);
        // Each consumer warp arrives once on each empty barrier object.
        let consumer_warps = (4 * (THREADS / 128 - 1)) as u32;
        let (start, bytes) = crate::gemm::device::shared();
        let base = start.next_multiple_of(1024);
        let needed = (base - start) as usize + q_bytes as usize + 2 * stages * tile_bytes(D) + 8 * (2 + 4 * stages);
        let m_tiles = s_q.div_ceil(ROWS);
        let Some(chunks) = batch.checked_mul(heads_q).and_then(|bh| bh.checked_mul(m_tiles)) else {
            return;
        };
        // Uniform across the block: no thread goes on without the others.
        if !fits || !flat || threads != THREADS || bytes < needed {
            return;
        }
        let group = heads_q / heads_kv;
        let scale_log2 = scale * core::f32::consts::LOG2_E;
        // Shared addresses: `q`'s tile, stage `s`'s `k` and `v`, the barrier objects.
        let q_tile = base;
        let k_tile = |s: usize| base + q_bytes + tile * (2 * s as u32);
        let v_tile = |s: usize| k_tile(s) + tile;
        let bars = base + q_bytes + tile * (2 * stages as u32);
        let (q_full, q_empty) = (bars, bars + 8);
        let bar = |i: usize, s: usize| bars + 16 + (8 * (stages * i + s)) as u32;
        let (k_full, v_full) = (|s| bar(0, s), |s| bar(1, s));
        let (k_empty, v_empty) = (|s| bar(2, s), |s| bar(3, s));
        // The tiles of 128 keys that the rows `m0 .. m0 + ROWS` see, and the keys query `i`
        // sees (`0 .. seen_by(i)`), as the safe kernels mask them.
        let key_tiles = |m0: usize| Keys::tiles(m0, ROWS, s_q, s_k, causal);
        let seen_by = |i: usize| Keys::new(0, 0, s_q, s_k, causal).seen_by(i);
        // Chunk `c`: its batch entry, query head and first row, each head's last rows first
        // (as the safe kernel's chunks, `LastRowsFirst`).
        let chunk = |c: usize| {
            let (m, bh) = (m_tiles - 1 - c % m_tiles, c / m_tiles);
            (bh / heads_q, bh % heads_q, ROWS * m)
        };
        if t == 0 {
            // Full objects count the producer's one arrival a phase, empty ones one from each
            // consumer warp.
            let init = |bar: u32, count: u32| {
                // SAFETY: 8-aligned words past the tiles (the shared memory checked above), used
                // as nothing else; the barrier below orders this before every use.
                unsafe { mbarrier_init(bar, count) }
            };
            init(q_full, 1);
            init(q_empty, consumer_warps);
            for s in 0..stages {
                init(k_full(s), 1);
                init(v_full(s), 1);
                init(k_empty(s), consumer_warps);
                init(v_empty(s), consumer_warps);
            }
            // SAFETY: sm_90.
            unsafe { fence_mbarrier_init() };
        }
        // SAFETY: every thread of the block, in uniform code.
        unsafe { nvptx::_syncthreads() };
        let (role, thread) = (t / 128, t % 128);
        if role == 0 {
            // SAFETY: the producer warpgroup, converged, at its registers at launch (the entry
            // point declares `THREADS` threads and one block a multiprocessor); it needs fewer.
            unsafe { setmaxnreg_dec::<PRODUCER_REGS>() };
            if thread != 0 {
                return;
            }
            let (mut c, mut fills_q, mut fills) = (block, 0usize, 0usize);
            while c < chunks {
                let (b, h, m0) = chunk(c);
                let at = |col: usize, row: usize, head: usize| [col as i32, row as i32, head as i32, b as i32];
                if fills_q > 0 {
                    // SAFETY: an initialised barrier object; its phase `fills_q - 1` completes
                    // once every consumer warp released the last fill.
                    unsafe { mbarrier_wait(q_empty, ((fills_q - 1) % 2) as u32) };
                }
                // SAFETY: an initialised barrier object whose phase expects this one arrival.
                unsafe { mbarrier_arrive_expect_tx(q_full, q_bytes) };
                for p in 0..D / 64 {
                    // SAFETY: `q`'s map (a kernel parameter: a valid map of a tensor nothing
                    // writes, of boxes `ROWS × 64` in the 128-byte swizzle); panel `p` of the
                    // tile, 1024-aligned (`ROWS · 128` is), released (above), read once `q_full`
                    // completes, which waits for these bytes. The coordinates are below 2³¹
                    // (the extents are).
                    unsafe { tma_load_4d(q_tile + (p * q_panel) as u32, q.map(), at(64 * p, m0, h), q_full) };
                }
                fills_q += 1;
                for n in 0..key_tiles(m0) {
                    let s = fills % stages;
                    let load = |full: u32, empty: u32, dst: u32, map: *const u64| {
                        if fills >= stages {
                            // SAFETY: an initialised barrier object; its phase `fills / stages
                            // - 1` is the release of this stage's last fill.
                            unsafe { mbarrier_wait(empty, ((fills / stages - 1) % 2) as u32) };
                        }
                        // SAFETY: as for `q`'s.
                        unsafe { mbarrier_arrive_expect_tx(full, tile) };
                        for p in 0..D / 64 {
                            // SAFETY: as for `q`'s, `k`'s or `v`'s map and the stage's tile.
                            unsafe {
                                tma_load_4d(dst + (p * 128 * 128) as u32, map, at(64 * p, 128 * n, h / group), full)
                            };
                        }
                    };
                    load(k_full(s), k_empty(s), k_tile(s), k.map());
                    load(v_full(s), v_empty(s), v_tile(s), v.map());
                    fills += 1;
                }
                c += blocks;
            }
            return;
        }
        // SAFETY: a consumer warpgroup, converged, at its registers at launch; the producer's
        // release leaves the pool enough for every consumer (the caller's bound on `CONSUMER`).
        unsafe { setmaxnreg_inc::<CONSUMER>() };
        let (cw, warp, lane) = (role - 1, thread / 32, thread % 32);
        let (po, pl) = (o.data_handle(), lse.data_handle());
        let (so, sl) = (
            [o.stride(0), o.stride(1), o.stride(2), o.stride(3)],
            [lse.stride(0), lse.stride(1), lse.stride(2)],
        );
        // Pairs of `o` in one store: contiguous rows, each pair 4-aligned.
        let pairs = so[3] == 1 && (0..3).all(|d| so[d] % 2 == 0) && (po as usize).is_multiple_of(4);
        let (mut c, mut takes_q, mut takes) = (block, 0usize, 0usize);
        while c < chunks {
            let (b, head, m0) = chunk(c);
            let row0 = m0 + 64 * cw;
            // SAFETY: an initialised barrier object; phase `takes_q` is this chunk's fill.
            unsafe { mbarrier_wait(q_full, (takes_q % 2) as u32) };
            takes_q += 1;
            let (mut max, mut sum) = ([f32::NEG_INFINITY; 2], [0.0f32; 2]);
            let mut acc = <Cols<D> as Width>::zero();
            // The tiles of keys this warpgroup's rows see, as the safe kernels count them: none
            // where its rows are all past the end, and causal, fewer than the chunk's later rows
            // see. The rest it releases unread, once landed.
            let all = key_tiles(m0);
            let mine = if row0 < s_q {
                Keys::tiles(row0, 64, s_q, s_k, causal)
            } else {
                0
            };
            for n in 0..mine.min(all) {
                let (s, parity) = (takes % stages, ((takes / stages) % 2) as u32);
                // SAFETY: an initialised barrier object; this phase is the stage's fill `takes`.
                unsafe { mbarrier_wait(k_full(s), parity) };
                let mut x = <Cols<128> as Width>::zero();
                for p in 0..D / 64 {
                    let a = descriptor_128(q_tile + (p * q_panel + cw * 64 * 128) as u32);
                    let b = descriptor_128(k_tile(s) + (p * 128 * 128) as u32);
                    // SAFETY: all 128 threads of the warpgroup, converged; `q`'s and `k`'s
                    // tiles landed (their full phases, through the async proxy), K-major in the
                    // 128-byte swizzle, this warpgroup's 64 rows of panel `p` and the 128 rows
                    // of `k`'s; neither is refilled before this warpgroup releases it below.
                    unsafe { wgmma_ss::<T, Cols<128>, KMajor>(&mut x, a, b) };
                }
                // SAFETY: the warpgroup's threads together.
                unsafe { wgmma_wait_acc::<Cols<128>, 0>(&mut x) };
                // SAFETY: an initialised barrier object whose phase counts one arrival from
                // each consumer warp: this warp's first lane's; the products that read the
                // tile are done (above).
                unsafe { mbarrier_arrive_where(k_empty(s), lane == 0) };
                // The scores of keys a row does not see are `−∞`: row `i` sees the keys below
                // `seen_by(i)`, those of the tile below `until`.
                let col0 = 128 * n;
                if seen_by(row0) < col0 + 128 {
                    let mut until = [0u32; 2];
                    unroll!(2, |h| {
                        let row = row0 + 16 * warp + lane / 4 + 8 * h;
                        until[h] = seen_by(row).saturating_sub(col0).min(128) as u32;
                    });
                    unroll!(16, |ia| {
                        unroll!(4, |ib| {
                            let i = 4 * ia + ib;
                            let col = (8 * (i / 4) + 2 * (lane % 4) + i % 2) as u32;
                            if col >= until[(i / 2) % 2] {
                                x[i] = f32::NEG_INFINITY;
                            }
                        });
                    });
                }
                let mut new_max = max;
                unroll!(16, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        new_max[(i / 2) % 2] = new_max[(i / 2) % 2].max(x[i]);
                    });
                });
                let (mut base, mut correction) = ([0.0f32; 2], [0.0f32; 2]);
                unroll!(2, |h| {
                    new_max[h] = quad(new_max[h], f32::max);
                    base[h] = if new_max[h] == f32::NEG_INFINITY {
                        0.0
                    } else {
                        new_max[h] * scale_log2
                    };
                    correction[h] = if max[h] == f32::NEG_INFINITY {
                        0.0
                    } else {
                        exp2(mul_add(max[h], scale_log2, -base[h]))
                    };
                });
                let mut p = [0.0f32; 64];
                let mut tile_sum = [0.0f32; 2];
                unroll!(16, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        p[i] = exp2(mul_add(x[i], scale_log2, -base[(i / 2) % 2]));
                        tile_sum[(i / 2) % 2] += p[i];
                    });
                });
                unroll!(2, |h| {
                    sum[h] = mul_add(sum[h], correction[h], tile_sum[h]);
                });
                max = new_max;
                // `P` as `wgmma`'s `A` registers: the scores' accumulators' order, in pairs.
                let mut a = [0u32; 32];
                unroll!(16, |i| {
                    a[2 * i] = pack::<T>(p[4 * i], p[4 * i + 1]);
                    a[2 * i + 1] = pack::<T>(p[4 * i + 2], p[4 * i + 3]);
                });
                unroll!(16, |ia| {
                    unroll!(4, |ib| {
                        let i = 4 * ia + ib;
                        if i < R {
                            acc[i] *= correction[(i / 2) % 2];
                        }
                    });
                });
                // SAFETY: an initialised barrier object; this phase is the stage's fill `takes`.
                unsafe { mbarrier_wait(v_full(s), parity) };
                // SAFETY: the warpgroup's threads together; `v`'s tile landed, `128 × D` read
                // MN-major (panels of 128 rows of 128 bytes, 16 KiB apart); `a` and `acc` are
                // left alone until the wait below.
                unsafe { wgmma_rs::<T, Cols<D>>(&mut acc, &a, descriptor_128_mn(v_tile(s), 128 * 128)) };
                // SAFETY: as above.
                unsafe { wgmma_wait_rs::<T, Cols<D>>(&mut acc, &mut a) };
                // SAFETY: as for `k`'s release.
                unsafe { mbarrier_arrive_where(v_empty(s), lane == 0) };
                takes += 1;
            }
            for _ in mine.min(all)..all {
                let (s, parity) = (takes % stages, ((takes / stages) % 2) as u32);
                // SAFETY: initialised barrier objects; these phases are the stage's fill `takes`
                // (the producer's loads of it started before its arrival, so a release before
                // the wait could let the next fill start under them).
                unsafe { mbarrier_wait(k_full(s), parity) };
                // SAFETY: as above.
                unsafe { mbarrier_wait(v_full(s), parity) };
                // SAFETY: as for `k`'s release in the loop above: no product reads the tiles.
                unsafe { mbarrier_arrive_where(k_empty(s), lane == 0) };
                // SAFETY: as above.
                unsafe { mbarrier_arrive_where(v_empty(s), lane == 0) };
                takes += 1;
            }
            // SAFETY: as for `k`'s: the products that read `q`'s tile are done.
            unsafe { mbarrier_arrive_where(q_empty, lane == 0) };
            let mut inv = [0.0f32; 2];
            let mut lse_rows = [f32::INFINITY; 2];
            unroll!(2, |h| {
                let total = quad(sum[h], |a, b| a + b);
                if total > 0.0 {
                    inv[h] = rcp(total);
                    lse_rows[h] = mul_add(max[h], scale_log2, log2(total)) * core::f32::consts::LN_2;
                }
            });
            // Written out, as every loop over the halves: an index into the accumulators that
            // is not a constant would put them in local memory.
            unroll!(2, |half| {
                let row = row0 + 16 * warp + lane / 4 + 8 * half;
                if row < s_q {
                    let o_row = b as isize * so[0] + head as isize * so[1] + row as isize * so[2];
                    unroll!(16, |j| {
                        if j < D / 8 {
                            let col = 8 * j + 2 * (lane % 4);
                            let i = 4 * j + 2 * half;
                            let values = [out(acc[i] * inv[half]), out(acc[i + 1] * inv[half])];
                            let at = o_row + col as isize * so[3];
                            if pairs {
                                // SAFETY: `row` and `col + 1` inside `o` (`row < s_q`, `col + 1 <
                                // D`, the extents checked), the pair 4-aligned (checked: the
                                // pointer, the strides and `col` even); this thread's alone (each
                                // element of the warpgroup's 64 rows is one thread's, the rows
                                // this block's chunk's, each chunk one block's).
                                unsafe { po.wrapping_offset(at).cast::<Pair<T>>().write(Pair(values)) };
                            } else {
                                // SAFETY: as above, element by element.
                                unsafe { po.wrapping_offset(at).write(values[0]) };
                                // SAFETY: as above.
                                unsafe { po.wrapping_offset(at + so[3]).write(values[1]) };
                            }
                        }
                    });
                    if lane % 4 == 0 {
                        let at = b as isize * sl[0] + head as isize * sl[1] + row as isize * sl[2];
                        // SAFETY: inside `lse` (its extents checked against `q`'s); of the four
                        // lanes that hold the row, the first alone writes it.
                        unsafe { pl.wrapping_offset(at).write(lse_rows[half]) };
                    }
                }
            });
            c += blocks;
        }
    }
}

macro_rules! raw_kernel {
    ($name:ident, $safe:ident, $t:ty, $d:literal, $threads:literal, $rows:literal, $out:ident) => {
        const _: () = assert!(
            crate::forward_chunk($d).rows == $rows && crate::forward_chunk($d).threads as usize == $threads,
            "a raw twin takes its safe kernel's chunks"
        );

        /// The raw twin of
        #[doc = concat!("[`", stringify!($safe), "`](crate::", stringify!($safe), "),")]
        /// with its parameters and results. Launch with blocks of
        #[doc = concat!(stringify!($threads), " threads and [`raw_attention_shared_bytes`]`(", $d, ")`")]
        /// bytes of dynamic shared memory (with fewer, or other blocks, `o` and `lse` are
        /// left as they are), at most one block a chunk of
        #[doc = concat!(stringify!($rows), " query rows of a head.")]
        #[dlmd::kernel(block_threads = $threads, min_blocks_per_sm = 1)]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            thread: Thread,
            q: QueryMap<'_, $t, $rows, $d>,
            k: AttentionMap<'_, $t, $d>,
            v: AttentionMap<'_, $t, $d>,
            o: AttentionOut<'_, $t>,
            lse: AttentionLse<'_>,
            scale: f32,
            causal: bool,
        ) {
            let _ = thread;
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: every thread of the block runs the kernel's body; its entry point is
            // compiled for sm_90a (the crate's target) and declares `$threads` threads and one
            // block a multiprocessor; `$rows` is 64 for each of its consumer warpgroups, and
            // `consumer_regs` deals out only the registers the producer's 40 leave; `o` and
            // `lse` are writable kernel parameters, which nothing else writes during the
            // kernel, each chunk's rows one block's (`c`, `c + blocks`, …); the maps are
            // parameters of tensors the kernel only reads.
            unsafe {
                device::forward::<$t, $d, { $d / 2 }, $rows, $threads, { consumer_regs($threads) }>(
                    &q,
                    [&k, &v],
                    &o,
                    &lse,
                    scale,
                    causal,
                    dlmd::kernel::math::$out,
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (q, k, v, o, lse, scale, causal);
        }
    };
}

raw_kernel!(attention_raw_bf16_d64, attention_bf16_d64, bf16, 64, 512, 192, to_bf16);
raw_kernel!(
    attention_raw_bf16_d128,
    attention_bf16_d128,
    bf16,
    128,
    384,
    128,
    to_bf16
);
raw_kernel!(attention_raw_f16_d64, attention_f16_d64, f16, 64, 512, 192, to_f16);
raw_kernel!(attention_raw_f16_d128, attention_f16_d128, f16, 128, 384, 128, to_f16);
