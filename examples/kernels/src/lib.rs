//! Kernels written in Rust over dlmd's typed views, one source for both sides: compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point, compiled for the host it
//! is the typed launcher of that entry point, and [`PTX`] holds the kernels for
//! [`Kernels::load`](dlmd::cuda::Kernels::load).
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(
        abi_ptx,
        asm_experimental_arch,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    ),
    allow(internal_features)
)]

use dlmd::kernel::block::{RightPadded, TileOf, Whole};
use dlmd::kernel::{Block, Thread};
use dlmd::{Const, DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, Dims, LayoutLeft};

mod raw;

pub use raw::{
    MATMUL_RAW_SHARED, MatmulRawArgs, ROW_SUMS_BLOCK_RAW_SHARED, SOFTMAX_ROWS_RAW_SHARED, TRANSPOSE_TILED_RAW_SHARED,
    matmul_raw, row_sums_block_raw, row_sums_block_wide_raw, softmax_rows_raw, softmax_rows_short_raw,
    transpose_tiled_raw,
};

/// The kernels' PTX, built by `dlmd-build` from this crate.
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

/// Adds `i + j + k` to the element at `[i, j, k]`: the `add_index` of `examples/add_index.rs`,
/// whose C++ kernel takes the same view.
#[dlmd::kernel]
pub fn add_index(thread: Thread, mut out: DeviceMdspanMut<'_, f32, Dims<3>>) {
    thread.for_each_mut(&mut out, |[i, j, k], x| *x += (i + j + k) as f32);
}

/// Three `f32` lanes, a derived element type: with dlmd's `cuda` feature the derive also makes
/// it cudarc's `DeviceRepr` and `ValidAsZeroBits`, so it goes to the device and back with no
/// `unsafe` (`Gpu::to_device`, `DeviceArray::to_vec`).
#[derive(Clone, Copy, Debug, PartialEq, dlmd::DlElement)]
#[repr(C)]
pub struct Vec3 {
    /// The first lane.
    pub x: f32,
    /// The second lane.
    pub y: f32,
    /// The third lane.
    pub z: f32,
}

/// `v[i] = s · v[i] + (i, 0, 0)`: a scalar parameter and a derived element type.
#[dlmd::kernel]
pub fn scale_vec3(thread: Thread, s: f32, mut v: DeviceMdspanMut<'_, Vec3, Dims<1>>) {
    thread.for_each_mut(&mut v, |[i], v| {
        *v = Vec3 {
            x: s * v.x + i as f32,
            y: s * v.y,
            z: s * v.z,
        }
    });
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

/// The tile of [`transpose_tiled`]: 64 × 64 elements, rows 65 apart, so that the block's
/// reads down a column meet different banks of shared memory.
pub type TransposeTile = TileOf<f32, (Const<64>, Const<64>), RightPadded<1>>;

/// The chunks of `dst` each block of the tiled transposes writes: 64 × 64, a tile's.
pub type Square64 = (Const<64>, Const<64>);

/// `dst[[i, j]] = src[[j, i]]` for row-major matrices, through a block-shared tile: each block
/// reads a 64 × 64 chunk of `src` along its rows into the tile, four neighbours a vector load
/// ([`Mdspan::get_run`](dlmd::Mdspan::get_run), [`Block::write_runs`]), and after a barrier
/// writes it transposed along the rows of `dst`, four neighbours a vector store
/// ([`Block::store_runs`]). Both sides are coalesced, and each thread has four loads in flight.
/// Launch with blocks of 256 threads, one block per 64 × 64 chunk of `dst` or fewer.
#[dlmd::kernel]
pub fn transpose_tiled(
    block: Block<'_, 256, TransposeTile, Square64>,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, mut tile) = block.split();
    for chunk in block.chunks(dst) {
        let [i0, j0] = chunk.origin();
        // Four neighbours of a row of `src` a thread at a time: one `float4` load.
        let written = block.write_runs(tile, |[a, b]| src.get_run_or::<4>([j0 + a, i0 + b], 0.0));
        let readable = block.sync(written);
        // Four neighbours of a row of `dst`, read down a column of the tile: one `float4` store.
        let stored = block.store_runs::<_, _, _, _, 4>(chunk, |[i, j]| {
            core::array::from_fn(|q| readable.get_or([j - j0 + q, i - i0], 0.0))
        });
        tile = block.sync(readable);
        if !stored {
            return;
        }
    }
}

/// [`transpose_tiled`] with the tile laid out as the chunk of `dst` it becomes: each thread
/// reads its runs of four neighbours of a row of `src` (one vector load each) into registers
/// ([`Lane::stage_transposed`](dlmd::kernel::Lane::stage_transposed),
/// [`Stage::read_runs`](dlmd::kernel::block::Stage::read_runs)), which fill columns of the tile
/// ([`Block::write_staged`]); after a barrier the block writes the tile's rows to `dst` as
/// they are. Launch with blocks of 256 threads, one block per 64 × 64 chunk of `dst` or fewer.
#[dlmd::kernel]
pub fn transpose_staged(
    block: Block<'_, 256, TransposeTile, Square64>,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, mut tile) = block.split();
    for chunk in block.chunks(dst) {
        let [i0, j0] = chunk.origin();
        // `tile[[x, y]] = src[[j0 + y, i0 + x]]`: runs down the tile's columns, along rows of
        // `src`.
        let staged = block.each(|lane| {
            lane.stage_transposed::<TransposeTile>()
                .read_runs::<4, 4>(|[x, y]| src.get_run_or([j0 + y, i0 + x], 0.0))
        });
        let written = block.write_staged(tile, staged);
        let readable = block.sync(written);
        let stored = block.store_runs(chunk, |[i, j]| readable.get_run([i - i0, j - j0]).unwrap_or([0.0; 4]));
        tile = block.sync(readable);
        if !stored {
            return;
        }
    }
}

/// The threads of a block of [`row_sums_block`] and its raw twin.
pub const ROW_SUMS_THREADS: usize = 128;

/// The threads of a block of [`row_sums_block_wide`] and its raw twin.
pub const ROW_SUMS_WIDE_THREADS: usize = 512;

/// The shortest row [`row_sums_block_wide`] is for: two vector loads for each of its threads.
/// Shorter rows leave threads idle there, and [`row_sums_block`] reads them faster.
pub const ROW_SUMS_WIDE_COLS: usize = 8 * ROW_SUMS_WIDE_THREADS;

/// `sums[[i]] = Σ_j x[[i, j]]`, one block per row: each thread adds up its share of the row
/// (four neighbours per vector load), and the block adds up the threads' sums with warp
/// shuffles and one barrier. No atomics: each sum is written once. Blocks of 128 threads: a row
/// of 1024 is two vector loads a thread, and sixteen rows are in flight on a multiprocessor.
/// Launch with blocks of [`ROW_SUMS_THREADS`], one per row or fewer.
#[dlmd::kernel]
pub fn row_sums_block(
    block: Block<'_, 128, (), OneSum>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    block_row_sums(block, x, sums);
}

/// [`row_sums_block`] for rows of [`ROW_SUMS_WIDE_COLS`] or more: blocks of 512 threads, so
/// that a long row is read by more loads at once (at 8192 columns, four a thread in two pairs,
/// where 128 threads take 16). Not 1024: a block's fixed work (its row, the partition, the
/// reduction) then falls on twice the warps for the same bytes, which an H200's bandwidth
/// exposes (1024 threads read 8192² at 0.90× CUB there, 512 at 0.99×; on an H100 both are
/// within 3% of CUB at 1024). Launch with blocks of [`ROW_SUMS_WIDE_THREADS`], one per row or
/// fewer.
#[dlmd::kernel]
pub fn row_sums_block_wide(
    block: Block<'_, 512, (), OneSum>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    block_row_sums(block, x, sums);
}

/// The chunks of `sums` the row sums write: one element, one row's sum.
pub type OneSum = (Const<1>,);

/// The body of the row sums: each chunk of `sums` is one row's sum.
#[dlmd::device]
#[inline(always)]
fn block_row_sums<const THREADS: usize>(
    block: Block<'_, THREADS, (), OneSum>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let mut block = block;
    for chunk in block.chunks(sums) {
        let [row] = chunk.origin();
        let Ok(row) = x.submdspan((row, ..)) else { return };
        let partial = block.each(|lane| {
            let mut sum = 0.0f32;
            lane.for_each(&row, |_, &value| sum += value);
            sum
        });
        let total = block.sum(partial);
        block.store(chunk, |_| total);
    }
}

/// The threads of a block of [`softmax_rows`].
pub const SOFTMAX_THREADS: usize = 512;

/// The longest row [`softmax_rows`] keeps in registers: 16 elements for each of its threads.
pub const SOFTMAX_COLS: usize = 16 * SOFTMAX_THREADS;

/// The threads of a block of [`softmax_rows_short`].
pub const SOFTMAX_SHORT_THREADS: usize = 128;

/// The longest row [`softmax_rows_short`] keeps in registers: 8 elements for each of its
/// threads.
pub const SOFTMAX_SHORT_COLS: usize = 8 * SOFTMAX_SHORT_THREADS;

/// `y[[i, j]] = exp(x[[i, j]] − max_i) / Σ_j exp(x[[i, j]] − max_i)`, the numerically stable
/// softmax of each row of `x`, one block per row: the row is read once into registers (16
/// elements a thread), its maximum and its sum of exponentials are block reductions, and it is
/// written once. Two blocks share a multiprocessor (`min_blocks_per_sm`): one row's loads are in
/// flight while the other's reductions wait at their barriers. Rows longer than
/// [`SOFTMAX_COLS`] are left as they are (the launcher's caller checks the width). Launch with
/// blocks of [`SOFTMAX_THREADS`], one per row or fewer.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn softmax_rows(
    block: Block<'_, 512, (), Rows>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    softmax::<512, 16>(block, x, y);
}

/// [`softmax_rows`] for rows of at most [`SOFTMAX_SHORT_COLS`] (longer ones are left as they
/// are), in blocks of [`SOFTMAX_SHORT_THREADS`], twelve of them on each multiprocessor
/// (`min_blocks_per_sm`): twelve rows in flight, each thread with eight elements of its row
/// (a row of 1024 in a block of 1024 would be one element a thread, whose reductions then cost
/// more than its loads). Launch with blocks of [`SOFTMAX_SHORT_THREADS`], one per row or fewer.
#[dlmd::kernel(min_blocks_per_sm = 12)]
pub fn softmax_rows_short(
    block: Block<'_, 128, (), Rows>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    softmax::<128, 8>(block, x, y);
}

/// The chunks of `y` the softmax kernels write: each a whole row.
pub type Rows = (Const<1>, Whole);

/// The body of the softmax kernels: rows of up to `K × THREADS` elements, `K` a thread.
#[dlmd::device]
#[inline(always)]
fn softmax<const THREADS: usize, const K: usize>(
    block: Block<'_, THREADS, (), Rows>,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let mut block = block;
    for chunk in block.chunks(y) {
        let [row, _] = chunk.origin();
        let Ok(row) = x.submdspan((row, ..)) else { return };
        // The row's own length bounds the gather: its indexing then checks nothing more.
        let values = block.each(|lane| lane.gather::<f32, K>(row.extent(0), f32::NEG_INFINITY, |j| row[[j]]));
        let max = block.max(values.map(|v| v.into_iter().fold(f32::NEG_INFINITY, f32::max)));
        let exps = values.map(|v| v.map(|x| dlmd::kernel::math::exp(x - max)));
        let inverse = 1.0 / block.sum(exps.map(|e| e.into_iter().sum::<f32>()));
        let scaled = exps.map(|e| e.map(|x| x * inverse));
        if !block.store_array(chunk, scaled) {
            return;
        }
    }
}

/// The rows and columns of `c` each block of [`matmul`] computes, and the depth of a step.
pub const MATMUL_TILE: [usize; 3] = [128, 128, 8];

/// The tiles of [`matmul`]: a `128 × 8` slice of `a`, kept transposed (`k` first, so that a
/// thread's rows of it are neighbours; rows 132 apart, so that the block's writes down its
/// columns meet different banks), and an `8 × 128` slice of `b`.
pub type MatmulTiles = (MatmulTileA, MatmulTileB);

/// The tile of [`MatmulTiles`] that holds `a`'s slice.
pub type MatmulTileA = TileOf<f32, (Const<8>, Const<128>), RightPadded<4>>;

/// The tile of [`MatmulTiles`] that holds `b`'s slice.
pub type MatmulTileB = TileOf<f32, (Const<8>, Const<128>)>;

/// The chunks of `c` each block of [`matmul`] computes: `128 × 128`.
pub type MatmulChunk = (Const<{ MATMUL_TILE[0] }>, Const<{ MATMUL_TILE[1] }>);

/// `acc[m][n] += x[m] · y[n]`, fused multiply-adds in registers (the loops unroll: their
/// counts are known when the kernel is compiled).
#[dlmd::device]
#[inline(always)]
#[allow(clippy::needless_range_loop)]
pub(crate) fn outer_product_add<const M: usize, const N: usize>(acc: &mut [[f32; N]; M], x: &[f32; M], y: &[f32; N]) {
    for m in 0..M {
        for n in 0..N {
            acc[m][n] = dlmd::kernel::math::mul_add(x[m], y[n], acc[m][n]);
        }
    }
}

/// `c = a · b` for row-major `f32` matrices (`m × k` by `k × n`; other extents leave `c` as it
/// is), each block computing `128 × 128` chunks of `c`: in steps of 8 along `k`, the block
/// writes a slice of `a` (transposed) and one of `b` into its tiles, and after a barrier each
/// thread adds their products into the `8 × 8` cells of the chunk it keeps in registers
/// ([`Lane::cells_in_runs`](dlmd::kernel::Lane::cells_in_runs): two runs of four rows, two
/// runs of four columns). A step of `k` reads four runs of four neighbours, one vector load
/// each ([`Tile::get_run`](dlmd::kernel::block::Tile::get_run)), for 64 multiply-adds. The
/// next step's slices are read into registers during this step's products (a run of four
/// neighbours in a row of each, one vector load a thread:
/// [`Stage::read_runs`](dlmd::kernel::block::Stage::read_runs); then
/// [`Block::write_staged`], `a`'s down a column of its transposed tile), so their loads wait
/// for no barrier. Two blocks share a multiprocessor (`min_blocks_per_sm`), which keeps a
/// thread to 128 registers. Launch with blocks of 256 threads, one per chunk or fewer.
#[dlmd::kernel(min_blocks_per_sm = 2)]
pub fn matmul(
    block: Block<'_, 256, MatmulTiles, MatmulChunk>,
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
    let cells = block.each(|lane| lane.cells_in_runs::<8, 8, 4>([bm, bn]));
    // Where each thread's two runs of rows, and of columns, start.
    let runs = cells.map(|cells| ([cells.row(0), cells.row(4)], [cells.col(0), cells.col(4)]));
    for chunk in block.chunks(c) {
        let [i0, j0] = chunk.origin();
        let mut acc = cells.map(|_| [[0.0f32; 8]; 8]);
        // Each thread's share of the slices of `a` and `b` from `k0`, read into registers: a
        // run of four neighbours in a row of each (of `a`, along `k`: a column of its
        // transposed tile), one vector load each. The orders of the loads here and of the
        // tiles' reads below are those measured fastest on an H100 (the compiler's register
        // assignment, and so its schedule, follows them).
        let slices = |k0: usize| {
            move |lane: dlmd::kernel::Lane<256>| {
                let b = lane
                    .stage::<MatmulTileB>()
                    .read_runs::<1, 4>(|[k, j]| b.get_run_or([k0 + k, j0 + j], 0.0));
                let a = lane
                    .stage_transposed::<MatmulTileA>()
                    .read_runs::<1, 4>(|[k, i]| a.get_run_or([i0 + i, k0 + k], 0.0));
                (a, b)
            }
        };
        let mut next = block.each(slices(0));
        let mut k0 = 0;
        while k0 < depth {
            let wa = block.write_staged(ta, next.map(|(a, _)| a));
            let wb = block.write_staged(tb, next.map(|(_, b)| b));
            let (ra, rb) = block.sync((wa, wb));
            // The next slices' loads, in flight during this step's products. After the last
            // step they are all past `depth`, fills with no load: unconditional, they cost less
            // than a branch in every step.
            next = block.each(slices(k0 + bk));
            acc = acc.zip(runs).map(|(mut acc, (rows, cols))| {
                // Two steps of `k` written out: the reads of one in flight during the other's
                // products.
                for k2 in (0..bk).step_by(2) {
                    dlmd::unroll!(2, |dk| {
                        let k = k2 + dk;
                        let [y0, y1] = cols.map(|j| rb.get_run::<4>([k, j]).unwrap_or_default());
                        let [x0, x1] = rows.map(|i| ra.get_run::<4>([k, i]).unwrap_or_default());
                        let x = [x0[0], x0[1], x0[2], x0[3], x1[0], x1[1], x1[2], x1[3]];
                        let y = [y0[0], y0[1], y0[2], y0[3], y1[0], y1[1], y1[2], y1[3]];
                        outer_product_add(&mut acc, &x, &y);
                    });
                }
                acc
            });
            (ta, tb) = block.sync((ra, rb));
            k0 += bk;
        }
        if !block.store_cells(chunk, cells, acc) {
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
pub fn reverse_blocks(block: Block<'_, 256, ReverseTile, (Const<256>,)>, out: DeviceMdspanMut<'_, u32, Dims<1>>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i]| reverse_blocks_value(i));
    let readable = block.sync(written);
    for chunk in block.chunks(out) {
        let [start] = chunk.origin();
        block.store(chunk, |[i]| readable[[255 - (i - start)]]);
    }
}

/// Writes one more than the block's index to every element of the chunks of `out` the block
/// owns, each chunk four whole rows (`(Const<4>, Whole)`; a view of fewer rows is one chunk):
/// which block owns which element of a view cut by a shape with a whole side. Launch with blocks
/// of 128 threads.
#[dlmd::kernel]
pub fn mark_row_groups(block: Block<'_, 128, (), (Const<4>, Whole)>, out: DeviceMdspanMut<'_, u32, Dims<2>>) {
    let mut block = block;
    let mark = block.index() as u32 + 1;
    for chunk in block.chunks(out) {
        block.store(chunk, |_| mark);
    }
}
