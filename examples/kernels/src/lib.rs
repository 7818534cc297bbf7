//! Kernels written in Rust over dlmd's typed views, one source for both sides: compiled for
//! `nvptx64-nvidia-cuda` each `#[dlmd::kernel]` is a PTX entry point, compiled for the host it
//! is the typed launcher of that entry point, and [`PTX`] holds the kernels for
//! [`Kernels::load`](dlmd::cuda::Kernels::load).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

use dlmd::kernel::block::TileOf;
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

/// The tile of [`transpose_tiled`]: 32 × 32 elements, each row padded to 33 so that a warp
/// reading a column touches 32 different banks of shared memory.
pub type TransposeTile = TileOf<f32, (Const<32>, Const<33>)>;

/// `dst[[i, j]] = src[[j, i]]` for row-major matrices, through a block-shared tile: each block
/// reads a 32 × 32 chunk of `src` along its rows (coalesced) into the tile, and after a barrier
/// writes it transposed along the rows of `dst` (coalesced too). Launch with blocks of 256
/// threads, one block per 32 × 32 chunk of `dst` or fewer.
#[dlmd::kernel]
pub fn transpose_tiled(
    block: Block<'_, 256, TransposeTile>,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    mut dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, mut tile) = block.split();
    for mut chunk in block.chunks_mut(&mut dst, [32, 32]) {
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
    mut sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let mut block = block;
    for mut chunk in block.chunks_mut(&mut sums, [1]) {
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

/// The tile of [`reverse_blocks`].
pub type ReverseTile = TileOf<u32, (Const<256>,)>;

/// Each 256-element chunk of `out`, reversed, of `f(i) = 3 i` where `i` is a multiple of 3 and
/// `i + 1` elsewhere: the barrier comes right after per-thread code that branches on the
/// thread's index. The compiler must keep it one barrier that every thread reaches (older
/// nightlies copied it into both arms of such a branch, rust#137086): the PTX has one
/// `bar.sync`, and the kernel finishes. Launch with blocks of 256 threads.
#[dlmd::kernel]
pub fn reverse_blocks(block: Block<'_, 256, ReverseTile>, mut out: DeviceMdspanMut<'_, u32, Dims<1>>) {
    let (mut block, tile) = block.split();
    let written = block.write(tile, |[i]| if i % 3 == 0 { 3 * i as u32 } else { i as u32 + 1 });
    let readable = block.sync(written);
    for mut chunk in block.chunks_mut(&mut out, [256]) {
        let [start] = chunk.origin();
        block.store(&mut chunk, |[i]| readable[[255 - (i - start)]]);
    }
}
