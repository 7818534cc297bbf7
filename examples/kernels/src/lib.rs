//! Kernels written in Rust over dlmd's typed views, one source for both sides: compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point, compiled for the host it
//! is the typed launcher of that entry point, and [`PTX`] holds the kernels for
//! [`Kernels::load`](dlmd::cuda::Kernels::load).
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)
)]

use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::kernel::{Block, Thread};
use dlmd::{Const, DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, Dims, LayoutLeft};

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// Adds `i + j + k` to the element at `[i, j, k]`: the `add_index` of `examples/add_index.rs`,
/// whose C++ kernel takes the same view.
#[dlmd::kernel]
pub fn add_index(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<3>>) {
    thread.for_each_mut(&mut out, |[i, j, k], x| *x += (i + j + k) as f32);
}

/// Copies a row-major matrix into a column-major one: `dst[[i, j]] = src[[i, j]]`, which in
/// memory is a transpose. The threads walk `dst` in its own order (`i` on the `x` threads), so
/// the writes are coalesced and the reads strided, through the layouts' index arithmetic.
#[dlmd::kernel]
pub fn transpose(
    thread: Thread,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    mut dst: DeviceMdspanMut<'_, f32, Dims<2>, LayoutLeft>,
) {
    thread.for_each_mut(&mut dst, |index, x| *x = src[index]);
}

/// Adds each row of `x` into `sums` (zeroed by the caller): each thread adds up the elements
/// of the rows it owns in the partition (columns on the `x` threads, four neighbours read at
/// once; rows on `y`) and adds each partial sum to its row's with one atomic addition.
#[dlmd::kernel]
pub fn row_sums(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, sums: DeviceMdspanAtomic<'_, f32, Dims<1>>) {
    let (mut row, mut sum) = (usize::MAX, 0.0f32);
    thread.for_each(&x, |[i, _], &value| {
        if i != row {
            if row != usize::MAX {
                thread.atomic_add(&sums, [row], sum);
            }
            (row, sum) = (i, 0.0);
        }
        sum += value;
    });
    if row != usize::MAX {
        thread.atomic_add(&sums, [row], sum);
    }
}

/// The tile of [`transpose_tiled`]: 32 × 32 elements, rows 33 apart, so that a warp reading a
/// column touches 32 different banks of shared memory.
pub type TransposeTile = TileOf<f32, (Const<32>, Const<32>), RightPadded<1>>;

/// `dst[[i, j]] = src[[j, i]]` for row-major matrices, through a block-shared tile: each block
/// reads a 32 × 32 chunk of `src` along its rows (coalesced) into the tile, and after a barrier
/// writes it transposed along the rows of `dst` (coalesced too). Launch with blocks of 256
/// threads, one block per 32 × 32 chunk of `dst` or fewer.
#[dlmd::kernel]
pub fn transpose_tiled(
    block: Block<'_, 256, TransposeTile>,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, mut tile) = block.split();
    for mut chunk in block.chunks(dst, [32, 32]) {
        let [i0, j0] = chunk.origin();
        let written = block.write(tile, |[a, b]| src.get([j0 + a, i0 + b]).copied().unwrap_or(0.0));
        let readable = block.sync(written);
        block.store(&mut chunk, |[i, j]| readable[[j - j0, i - i0]]);
        tile = block.sync(readable);
    }
}

/// `sums[[i]] = Σ_j x[[i, j]]`, one block per row: each thread adds up its share of the row
/// (four neighbours per vector load), and the block adds up the threads' sums with warp
/// shuffles and one barrier. No atomics: each sum is written once. Launch with blocks of 256
/// threads, one block per row or fewer.
#[dlmd::kernel]
pub fn row_sums_block(
    block: Block<'_, 256>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let mut block = block;
    for mut chunk in block.chunks(sums, [1]) {
        let [row] = chunk.origin();
        let Ok(row) = x.submdspan((row, ..)) else { return };
        let partial = block.each(|lane| {
            let mut sum = 0.0f32;
            lane.for_each(&row, |_, &value| sum += value);
            sum
        });
        let total = block.sum(partial);
        block.store(&mut chunk, |_| total);
    }
}

/// The longest row [`softmax_rows`] keeps in registers: 8 elements for each of 1024 threads.
pub const SOFTMAX_COLS: usize = 8 * 1024;

/// The longest row [`softmax_rows_short`] keeps in registers: 8 elements for each of 256
/// threads.
pub const SOFTMAX_SHORT_COLS: usize = 8 * 256;

/// `y[[i, j]] = exp(x[[i, j]] − max_i) / Σ_j exp(x[[i, j]] − max_i)`, the numerically stable
/// softmax of each row of `x`, one block per row: the row is read once into registers (8
/// elements a thread), its maximum and its sum of exponentials are block reductions, and it is
/// written once. Rows longer than [`SOFTMAX_COLS`] are left as they are (the launcher's caller
/// checks the width). Launch with blocks of 1024 threads, one per row or fewer.
#[dlmd::kernel]
pub fn softmax_rows(block: Block<'_, 1024>, x: DeviceMdspan<'_, f32, Dims<2>>, y: DeviceMdspanMut<'_, f32, Dims<2>>) {
    softmax::<1024, 8>(block, x, y);
}

/// [`softmax_rows`] for rows of at most [`SOFTMAX_SHORT_COLS`] (longer ones are left as they
/// are), in blocks of 256 threads, six of them on each multiprocessor (`min_blocks_per_sm`, 40
/// registers a thread): six rows in flight where [`softmax_rows`] has one, which short rows
/// need (a row of 1024 is one element a thread in a block of 1024, whose reductions then cost
/// more than its loads). Launch with blocks of 256 threads, one per row or fewer.
#[dlmd::kernel(min_blocks_per_sm = 6)]
pub fn softmax_rows_short(
    block: Block<'_, 256>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    softmax::<256, 8>(block, x, y);
}

/// The body of the softmax kernels: rows of up to `K × THREADS` elements, `K` a thread.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn softmax<const THREADS: usize, const K: usize>(
    block: Block<'_, THREADS>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let mut block = block;
    let cols = x.extent(1);
    for mut chunk in block.chunks(y, [1, cols]) {
        let [row, _] = chunk.origin();
        let Ok(row) = x.submdspan((row, ..)) else { return };
        let values = block.each(|lane| lane.gather::<f32, K>(cols, f32::NEG_INFINITY, |j| row[[j]]));
        let max = block.max(values.map(|v| v.into_iter().fold(f32::NEG_INFINITY, f32::max)));
        let exps = values.map(|v| v.map(|x| dlmd::kernel::math::exp(x - max)));
        let inverse = 1.0 / block.sum(exps.map(|e| e.into_iter().sum::<f32>()));
        let scaled = exps.map(|e| e.map(|x| x * inverse));
        if !block.store_array(&mut chunk, scaled) {
            return;
        }
    }
}

/// The rows and columns of `c` each block of [`matmul`] computes, and the depth of a step.
pub const MATMUL_TILE: [usize; 3] = [128, 128, 8];

/// The tiles of [`matmul`]: a `128 × 8` slice of `a` and an `8 × 128` slice of `b`, both
/// row-major.
pub type MatmulTiles = (TileOf<f32, (Const<128>, Const<8>)>, TileOf<f32, (Const<8>, Const<128>)>);

/// `acc[m][n] += x[m] · y[n]`, fused multiply-adds in registers (the loops unroll: their
/// counts are known when the kernel is compiled).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn outer_product_add<const M: usize, const N: usize>(acc: &mut [[f32; N]; M], x: &[f32; M], y: &[f32; N]) {
    for m in 0..M {
        for n in 0..N {
            acc[m][n] = dlmd::kernel::math::mul_add(x[m], y[n], acc[m][n]);
        }
    }
}

/// `c = a · b` for row-major `f32` matrices (`m × k` by `k × n`; other extents leave `c` as it
/// is), each block computing `128 × 128` chunks of `c`: in steps of 8 along `k`, the block
/// copies a slice of `a` and one of `b` into its tiles, and after a barrier each thread adds
/// their products into the `8 × 8` cells of the chunk it keeps in registers
/// ([`Lane::cells`](dlmd::kernel::Lane::cells): rows and columns 16 apart, so that a warp's
/// reads of the tiles meet no bank twice). Two blocks share a multiprocessor
/// (`min_blocks_per_sm`: one loads its tiles while the other multiplies), which keeps a thread
/// to 128 registers. Launch with blocks of 256 threads, one per chunk or fewer.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn matmul(
    block: Block<'_, 256, MatmulTiles>,
    a: DeviceMdspan<'_, f32, Dims<2>>,
    b: DeviceMdspan<'_, f32, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let [bm, bn, bk] = MATMUL_TILE;
    let (mut block, (mut ta, mut tb)) = block.split();
    let depth = a.extent(1);
    if b.extent(0) != depth || a.extent(0) != c.extent(0) || b.extent(1) != c.extent(1) {
        return;
    }
    let cells = block.each(|lane| lane.cells::<8, 8>([bm, bn]));
    for mut chunk in block.chunks(c, [bm, bn]) {
        let [i0, j0] = chunk.origin();
        let mut acc = cells.map(|_| [[0.0f32; 8]; 8]);
        let mut k0 = 0;
        while k0 < depth {
            let wa = block.write(ta, |[i, k]| a.get([i0 + i, k0 + k]).copied().unwrap_or(0.0));
            let wb = block.write(tb, |[k, j]| b.get([k0 + k, j0 + j]).copied().unwrap_or(0.0));
            let (ra, rb) = block.sync((wa, wb));
            acc = acc.zip(cells).map(|(mut acc, cells)| {
                for k in 0..bk {
                    let x: [f32; 8] = core::array::from_fn(|m| ra[[cells.row(m), k]]);
                    let y: [f32; 8] = core::array::from_fn(|n| rb[[k, cells.col(n)]]);
                    outer_product_add(&mut acc, &x, &y);
                }
                acc
            });
            (ta, tb) = block.sync((ra, rb));
            k0 += bk;
        }
        if !block.store_cells(&mut chunk, acc) {
            return;
        }
    }
}

/// The tile of [`reverse_blocks`].
pub type ReverseTile = TileOf<u32, (Const<256>,)>;

/// What [`reverse_blocks`] computes for index `i`: a loop of `i` steps where `i` is a multiple
/// of 3, `i + 1` elsewhere (a branch the compiler cannot turn into a select).
pub fn reverse_blocks_value(i: usize) -> u32 {
    if i.is_multiple_of(3) {
        (0..i as u32).fold(7u32, |a, k| a.wrapping_mul(31).wrapping_add(k))
    } else {
        i as u32 + 1
    }
}

/// Each 256-element chunk of `out`, reversed, of [`reverse_blocks_value`]: the barrier comes
/// right after per-thread code that branches on the thread's index. The compiler must keep it one barrier that every thread reaches (older
/// nightlies copied it into both arms of such a branch, rust#137086): the PTX has one
/// `bar.sync`, and the kernel finishes. Launch with blocks of 256 threads.
#[dlmd::kernel]
pub fn reverse_blocks(block: Block<'_, 256, ReverseTile>, out: DeviceMdspanMut<'_, u32, Dims<1>>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i]| reverse_blocks_value(i));
    let readable = block.sync(written);
    for mut chunk in block.chunks(out, [256]) {
        let [start] = chunk.origin();
        block.store(&mut chunk, |[i]| readable[[255 - (i - start)]]);
    }
}

/// The raw twins of the cooperative kernels: the same work written the CUDA C++ way, with a
/// block-shared array of their own, bare barriers and shuffles, and raw pointers, all `unsafe`.
/// They exist to measure what the safe kernels cost (`examples/cooperative.rs --bench`).
#[cfg(target_arch = "nvptx64")]
mod raw {
    use core::arch::{asm, nvptx};

    /// Four `f32` as CUDA's `float4`: 16-aligned, moved by one vector load.
    #[repr(C, align(16))]
    pub struct Float4(pub [f32; 4]);

    /// A block-shared array of `BYTES` bytes declared in the calling kernel's entry point, as a
    /// generic address.
    ///
    /// # Safety
    ///
    /// Called once, inlined into a kernel's entry point.
    #[inline(always)]
    pub unsafe fn shared<const BYTES: usize>() -> *mut f32 {
        let base: u64;
        // SAFETY: declares the array and takes its address; no memory is read or written.
        unsafe {
            asm!(
                ".shared .align 16 .b8 raw_shared[{bytes}];",
                "cvta.shared.u64 {base}, raw_shared;",
                bytes = const BYTES,
                base = out(reg64) base,
                options(pure, nomem, nostack),
            )
        };
        base as *mut f32
    }

    /// The thread's index in its block, its block's index, and the number of blocks (`x` only).
    #[inline(always)]
    pub fn ids() -> (usize, usize, usize) {
        // SAFETY: a special register, no precondition.
        let thread = unsafe { nvptx::_thread_idx_x() };
        // SAFETY: as above.
        let block = unsafe { nvptx::_block_idx_x() };
        // SAFETY: as above.
        let blocks = unsafe { nvptx::_grid_dim_x() };
        (thread as usize, block as usize, blocks as usize)
    }

    /// `f(m, n)` for every `m` and `n` below 8, written out.
    #[inline(always)]
    pub fn unrolled_8x8(mut f: impl FnMut(usize, usize)) {
        macro_rules! each {
            ($($m:literal)*) => { $( each!(@ $m, 0 1 2 3 4 5 6 7); )* };
            (@ $m:literal, $($n:literal)*) => { $( f($m, $n); )* };
        }
        each!(0 1 2 3 4 5 6 7);
    }

    /// `op` over the values of a block of `THREADS` threads (whole warps), to every thread:
    /// shuffles, the warps' results through `slots` (one a warp), one barrier, shuffles again
    /// (lanes past the warps' count with `identity`); a second barrier before `slots` is
    /// written again.
    ///
    /// # Safety
    ///
    /// Every thread of the block runs it, the block has `THREADS` threads, and `slots` is
    /// `THREADS / 32` `f32` of block-shared memory that nothing else uses meanwhile.
    #[inline(always)]
    pub unsafe fn block_reduce<const THREADS: usize>(
        value: f32,
        identity: f32,
        slots: *mut f32,
        op: impl Fn(f32, f32) -> f32,
    ) -> f32 {
        let (t, _, _) = ids();
        // SAFETY: every lane runs it (caller).
        let warp = unsafe { warp_reduce(value, &op) };
        if t % 32 == 0 {
            // SAFETY: this warp's slot (caller's array).
            unsafe { *slots.wrapping_add(t / 32) = warp };
        }
        // SAFETY: every thread reaches it (caller).
        unsafe { nvptx::_syncthreads() };
        let mine = if t % 32 < THREADS / 32 {
            // SAFETY: a slot written before the barrier.
            unsafe { *slots.wrapping_add(t % 32) }
        } else {
            identity
        };
        // SAFETY: every lane runs it.
        let total = unsafe { warp_reduce(mine, &op) };
        // SAFETY: every thread reaches it; no slot is read after it until it is written again.
        unsafe { nvptx::_syncthreads() };
        total
    }

    /// `op` over the warp's values, to every lane.
    ///
    /// # Safety
    ///
    /// Every lane of the warp runs it.
    #[inline(always)]
    pub unsafe fn warp_reduce(value: f32, op: &impl Fn(f32, f32) -> f32) -> f32 {
        // SAFETY: every lane runs it (caller); as for the four below.
        let value = op(value, unsafe { shuffle_xor(value, 16) });
        // SAFETY: as above.
        let value = op(value, unsafe { shuffle_xor(value, 8) });
        // SAFETY: as above.
        let value = op(value, unsafe { shuffle_xor(value, 4) });
        // SAFETY: as above.
        let value = op(value, unsafe { shuffle_xor(value, 2) });
        // SAFETY: as above.
        op(value, unsafe { shuffle_xor(value, 1) })
    }

    /// `shfl.sync.bfly` of `value` with lane `lane ^ mask`.
    ///
    /// # Safety
    ///
    /// Every lane of the warp runs it.
    #[inline(always)]
    pub unsafe fn shuffle_xor(value: f32, mask: u32) -> f32 {
        let out: f32;
        // SAFETY: every lane runs it (caller); registers only.
        unsafe {
            asm!(
                "shfl.sync.bfly.b32 {out}, {value}, {mask}, 0x1f, 0xffffffff;",
                out = out(reg32) out,
                value = in(reg32) value,
                mask = in(reg32) mask,
                options(nomem, nostack),
            )
        };
        out
    }
}

/// [`transpose_tiled`] written raw: a 32 × 33 shared array, the 256 threads as 32 × 8, bare
/// barriers. Launch with blocks of 256 threads.
#[dlmd::kernel]
pub fn transpose_tiled_raw(
    thread: Thread,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    {
        let (rows, cols) = (src.extent(0), src.extent(1));
        let (s, d) = (src.data_handle(), dst.data_handle());
        let (t, block, blocks) = raw::ids();
        let (tx, ty) = (t % 32, t / 32);
        let (chunk_rows, chunk_cols) = (cols.div_ceil(32), rows.div_ceil(32));
        // SAFETY: once, in this kernel's entry point (the body is inlined into it).
        let tile = unsafe { raw::shared::<{ 32 * 33 * 4 }>() };
        let mut c = block;
        while c < chunk_rows * chunk_cols {
            let (i0, j0) = (c / chunk_cols * 32, c % chunk_cols * 32);
            let mut a = ty;
            while a < 32 {
                let (r, k) = (j0 + a, i0 + tx);
                let value = if r < rows && k < cols {
                    // SAFETY: inside `src`'s extents, row-major.
                    unsafe { *s.wrapping_add(r * cols + k) }
                } else {
                    0.0
                };
                // SAFETY: element (a, tx) of the 32 × 33 array, this thread's in this phase.
                unsafe { *tile.wrapping_add(a * 33 + tx) = value };
                a += 8;
            }
            // SAFETY: every thread of the block reaches it (uniform loop).
            unsafe { core::arch::nvptx::_syncthreads() };
            let mut a = ty;
            while a < 32 {
                let (i, j) = (i0 + a, j0 + tx);
                if i < cols && j < rows {
                    // SAFETY: the tile element (tx, a), written before the barrier.
                    let value = unsafe { *tile.wrapping_add(tx * 33 + a) };
                    // SAFETY: inside `dst`'s extents (cols × rows), written by this thread alone.
                    unsafe { *d.wrapping_add(i * rows + j) = value };
                }
                a += 8;
            }
            // SAFETY: as above.
            unsafe { core::arch::nvptx::_syncthreads() };
            c += blocks;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (src, dst);
}

/// [`row_sums_block`] written raw: four neighbours a thread with 16-byte loads, shuffles, a
/// shared array of the warps' sums and a bare barrier. Launch with blocks of 256 threads; the
/// rows must start 16-aligned (`cols % 4 == 0`).
#[dlmd::kernel]
pub fn row_sums_block_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, sums: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    {
        let (rows, cols) = (x.extent(0), x.extent(1));
        let (p, out) = (x.data_handle(), sums.data_handle());
        let (t, block, blocks) = raw::ids();
        // SAFETY: once, in this kernel's entry point.
        let partials = unsafe { raw::shared::<{ 2 * 8 * 4 }>() };
        let mut r = block;
        let mut turn = 0;
        while r < rows {
            let row = p.wrapping_add(r * cols);
            let mut sum = 0.0f32;
            let mut j = 4 * t;
            while j + 4 <= cols {
                // SAFETY: four elements of row `r`, 16-aligned (`cols % 4 == 0`, caller).
                let raw::Float4(v) = unsafe { row.wrapping_add(j).cast::<raw::Float4>().read() };
                sum += (v[0] + v[1]) + (v[2] + v[3]);
                j += 4 * 256;
            }
            // SAFETY: every lane runs the shuffles; the block is whole warps.
            let sum = unsafe { raw::warp_reduce(sum, &|a, b| a + b) };
            let slots = partials.wrapping_add(turn * 8);
            if t % 32 == 0 {
                // SAFETY: this warp's slot, read after the barrier.
                unsafe { *slots.wrapping_add(t / 32) = sum };
            }
            // SAFETY: reached by every thread (uniform loop).
            unsafe { core::arch::nvptx::_syncthreads() };
            // SAFETY: the 8 slots written before the barrier.
            let total = if t % 32 < 8 {
                // SAFETY: one of the 8 slots written before the barrier.
                unsafe { *slots.wrapping_add(t % 32) }
            } else {
                0.0
            };
            // SAFETY: every lane runs the shuffles.
            let total = unsafe { raw::warp_reduce(total, &|a, b| a + b) };
            if t == 0 {
                // SAFETY: element `r` of `sums`, written by this block's thread 0 alone.
                unsafe { *out.wrapping_add(r) = total };
            }
            turn ^= 1;
            r += blocks;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, sums);
}

/// [`softmax_rows`] written raw: the row in registers (8 a thread), shuffles and a shared
/// array of the warps' results for the maximum and the sum, bare barriers. Launch with blocks
/// of 1024 threads; rows of at most [`SOFTMAX_COLS`].
#[dlmd::kernel]
pub fn softmax_rows_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, y: DeviceMdspanMut<'_, f32, Dims<2>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    softmax_raw::<1024, 8>(x, y);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, y);
}

/// [`softmax_rows_short`] written raw, as [`softmax_rows_raw`] is. Launch with blocks of 256
/// threads; rows of at most [`SOFTMAX_SHORT_COLS`].
#[dlmd::kernel]
pub fn softmax_rows_short_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, y: DeviceMdspanMut<'_, f32, Dims<2>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    softmax_raw::<256, 8>(x, y);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, y);
}

/// The body of the raw softmax kernels, for blocks of `THREADS` threads and `K` elements a
/// thread.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn softmax_raw<const THREADS: usize, const K: usize>(
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (rows, cols) = (x.extent(0), x.extent(1));
    let (p, q) = (x.data_handle(), y.data_handle());
    let (t, block, blocks) = raw::ids();
    // SAFETY: once, in this kernel's entry point (this body is inlined into it).
    let partials = unsafe { raw::shared::<{ 2 * 32 * 4 }>() };
    let mut r = block;
    while r < rows && cols <= K * THREADS {
        let mut v = [f32::NEG_INFINITY; K];
        for (m, value) in v.iter_mut().enumerate() {
            let j = t + m * THREADS;
            if j < cols {
                // SAFETY: element (r, j) of `x`, row-major.
                *value = unsafe { *p.wrapping_add(r * cols + j) };
            }
        }
        let mine = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // SAFETY: every thread of the block runs both reductions (uniform loop), in blocks of
        // `THREADS` (the launch's); the two halves of the shared array, 32 slots each.
        let max = unsafe { raw::block_reduce::<THREADS>(mine, f32::NEG_INFINITY, partials, f32::max) };
        let e = v.map(|value| dlmd::kernel::math::exp(value - max));
        // SAFETY: as above, in the other half of the shared array.
        let sum = unsafe { raw::block_reduce::<THREADS>(e.iter().sum(), 0.0, partials.wrapping_add(32), |a, b| a + b) };
        let inverse = 1.0 / sum;
        for (m, value) in e.iter().enumerate() {
            let j = t + m * THREADS;
            if j < cols {
                // SAFETY: element (r, j) of `y`, written by this thread alone.
                unsafe { *q.wrapping_add(r * cols + j) = value * inverse };
            }
        }
        r += blocks;
    }
}

/// [`matmul`] written raw: two block-shared arrays, the 256 threads as 16 × 16 with `8 × 8`
/// results each (rows and columns 16 apart), raw pointers and bare barriers. Launch with blocks
/// of 256 threads.
#[dlmd::kernel]
pub fn matmul_raw(
    thread: Thread,
    a: DeviceMdspan<'_, f32, Dims<2>>,
    b: DeviceMdspan<'_, f32, Dims<2>>,
    c: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    {
        let (rows, depth, cols) = (a.extent(0), a.extent(1), b.extent(1));
        if b.extent(0) != depth || c.extent(0) != rows || c.extent(1) != cols {
            return;
        }
        let (pa, pb, pc) = (a.data_handle(), b.data_handle(), c.data_handle());
        let (t, block, blocks) = raw::ids();
        let (ty, tx) = (t / 16, t % 16);
        // SAFETY: once, in this kernel's entry point.
        let sa = unsafe { raw::shared::<{ 2 * 128 * 8 * 4 }>() };
        let sb = sa.wrapping_add(128 * 8);
        let (chunk_rows, chunk_cols) = (rows.div_ceil(128), cols.div_ceil(128));
        let mut chunk = block;
        while chunk < chunk_rows * chunk_cols {
            let (i0, j0) = (chunk / chunk_cols * 128, chunk % chunk_cols * 128);
            let mut acc = [[0.0f32; 8]; 8];
            let mut k0 = 0;
            while k0 < depth {
                for q in 0..4 {
                    let e = t + 256 * q;
                    let (i, k) = (i0 + e / 8, k0 + e % 8);
                    let x = if i < rows && k < depth {
                        // SAFETY: inside `a`'s extents, row-major.
                        unsafe { *pa.wrapping_add(i * depth + k) }
                    } else {
                        0.0
                    };
                    // SAFETY: element `e` of the `128 × 8` array, this thread's in this phase.
                    unsafe { *sa.wrapping_add(e) = x };
                    let (k, j) = (k0 + e / 128, j0 + e % 128);
                    let y = if k < depth && j < cols {
                        // SAFETY: inside `b`'s extents, row-major.
                        unsafe { *pb.wrapping_add(k * cols + j) }
                    } else {
                        0.0
                    };
                    // SAFETY: element `e` of the `8 × 128` array, this thread's in this phase.
                    unsafe { *sb.wrapping_add(e) = y };
                }
                // SAFETY: reached by every thread of the block (uniform loop).
                unsafe { core::arch::nvptx::_syncthreads() };
                for k in 0..8 {
                    // SAFETY: elements of the arrays written before the barrier.
                    let x: [f32; 8] = core::array::from_fn(|m| unsafe { *sa.wrapping_add((ty + 16 * m) * 8 + k) });
                    // SAFETY: as above.
                    let y: [f32; 8] = core::array::from_fn(|n| unsafe { *sb.wrapping_add(k * 128 + tx + 16 * n) });
                    outer_product_add(&mut acc, &x, &y);
                }
                // SAFETY: as above; no element is written again before every thread has read.
                unsafe { core::arch::nvptx::_syncthreads() };
                k0 += 8;
            }
            // Written out (`#pragma unroll` in CUDA C++): a loop the compiler kept would index
            // `acc` at run time and put it in local memory.
            raw::unrolled_8x8(|m, n| {
                let (i, j) = (i0 + ty + 16 * m, j0 + tx + 16 * n);
                if i < rows && j < cols {
                    // SAFETY: inside `c`'s extents, written by this thread alone.
                    unsafe { *pc.wrapping_add(i * cols + j) = acc[m][n] };
                }
            });
            chunk += blocks;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (a, b, c);
}
