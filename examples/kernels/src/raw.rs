//! The raw twins of the cooperative kernels: the same work written the CUDA C++ way, with a
//! block-shared array of their own, bare barriers and shuffles, and raw pointers, all `unsafe`.
//! They exist to measure what the safe kernels cost (`examples/cooperative.rs --bench`).

#[cfg(target_arch = "nvptx64")]
use crate::outer_product_add;
use dlmd::kernel::Thread;
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

/// The dynamic shared memory [`transpose_tiled_raw`] needs: a 64 × 65 `f32` array.
pub const TRANSPOSE_TILED_RAW_SHARED: u32 = 64 * 65 * 4;

/// The dynamic shared memory [`row_sums_block_raw`] and [`row_sums_block_wide_raw`] need: two
/// turns of one `f32` a warp, for up to 32 warps.
pub const ROW_SUMS_BLOCK_RAW_SHARED: u32 = 2 * 32 * 4;

/// The dynamic shared memory [`softmax_rows_raw`] and [`softmax_rows_short_raw`] need: two turns
/// of one `f32` a warp, for up to 32 warps.
pub const SOFTMAX_ROWS_RAW_SHARED: u32 = 2 * 32 * 4;

/// The dynamic shared memory [`matmul_raw`] needs: an `8 × 128` `f32` array with rows 132
/// apart, and one with rows 128 apart.
pub const MATMUL_RAW_SHARED: u32 = (8 * 132 + 8 * 128) * 4;

// The raw kernels' `block_threads`, written as numbers, are the safe kernels' block sizes.
const _: () = assert!(
    crate::ROW_SUMS_THREADS == 128
        && crate::ROW_SUMS_WIDE_THREADS == 512
        && crate::SOFTMAX_THREADS == 512
        && crate::SOFTMAX_SHORT_THREADS == 128
);

/// What the raw kernels share: their block-shared array, the thread's indices, shuffles and
/// reductions, written with inline assembly and bare intrinsics.
#[cfg(target_arch = "nvptx64")]
mod ops {
    use core::arch::{asm, nvptx};
    use dlmd::kernel::Thread;

    /// Four `f32` as CUDA's `float4`: 16-aligned, moved by one vector load.
    #[repr(C, align(16))]
    pub struct Float4(pub [f32; 4]);

    /// The four `f32` at `p` by one non-coherent load: with `STREAMING`, as CUDA C++'s `__ldcs`
    /// on read-only data (`ld.global.cs.nc`: the line is evicted first), the load the safe
    /// kernels' partitions use; otherwise as `__ldg` of a `float4`.
    ///
    /// # Safety
    ///
    /// `p` is 16-aligned global memory that nothing writes during the kernel.
    #[inline(always)]
    pub unsafe fn load4<const STREAMING: bool>(p: *const f32) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        macro_rules! load {
            ($hint:literal) => {
                // SAFETY: sixteen readable bytes at `p`, aligned and not written meanwhile
                // (caller).
                unsafe {
                    asm!(
                        concat!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; ld.global.", $hint, "nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [g]; }}"),
                        p = in(reg64) p,
                        a = out(reg32) a,
                        b = out(reg32) b,
                        c = out(reg32) c,
                        d = out(reg32) d,
                        options(pure, readonly, nostack),
                    )
                }
            };
        }
        if STREAMING {
            load!("cs.");
        } else {
            load!("");
        }
        [a, b, c, d]
    }

    /// The four `f32` to `p` by one vector store to global memory, as CUDA C++'s store of a
    /// `float4` through a kernel's pointer (`st.global.v4`).
    ///
    /// # Safety
    ///
    /// `p` is 16-aligned global memory that no other thread reads or writes meanwhile.
    #[inline(always)]
    pub unsafe fn store4(p: *mut f32, [a, b, c, d]: [f32; 4]) {
        // SAFETY: sixteen writable bytes at `p`, aligned, this thread's alone (caller).
        unsafe {
            asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; st.global.v4.f32 [g], {{{a}, {b}, {c}, {d}}}; }}",
                p = in(reg64) p,
                a = in(reg32) a,
                b = in(reg32) b,
                c = in(reg32) c,
                d = in(reg32) d,
                options(nostack),
            )
        }
    }

    /// The launch's dynamic shared memory, as CUDA C++'s `extern __shared__` array, where it
    /// holds `BYTES` bytes; `None` (the same answer in every thread) where the launch gave it
    /// fewer.
    #[inline(always)]
    pub fn shared<const BYTES: usize>() -> Option<*mut f32> {
        let size: u32;
        // SAFETY: reads a special register; no memory is read or written.
        unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack)) };
        ((size as usize) >= BYTES)
            .then(|| core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Float4>().cast::<f32>())
    }

    /// The thread's index in its block (of `x` alone, as the launcher checks the block of a
    /// kernel built for one size), its block's index and the number of blocks, where the grid
    /// is one row of blocks ([`Thread::block_in_row`]); `None` on any other grid.
    #[inline(always)]
    pub fn ids(thread: &Thread) -> Option<(usize, usize, usize)> {
        let (block, blocks) = thread.block_in_row()?;
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() };
        Some((t as usize, block, blocks))
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
        // SAFETY: a special register, no precondition.
        let t = unsafe { nvptx::_thread_idx_x() } as usize;
        // SAFETY: every lane runs it (caller).
        let warp = unsafe { warp_reduce(value, &op) };
        if t.is_multiple_of(32) {
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

/// [`transpose_tiled`](crate::transpose_tiled) written raw: a 64 × 65 shared array, each of
/// the 256 threads moving four runs of four neighbours (`float4` loads and stores where the
/// rows are 16-aligned), bare barriers. Launch with blocks of 256 threads (the launcher refuses
/// others) and [`TRANSPOSE_TILED_RAW_SHARED`] bytes of dynamic shared memory, on a grid of one
/// row of blocks; on another grid, with less shared memory, or where `dst` is not `src`'s
/// transpose in shape, it writes nothing.
#[dlmd::kernel(block_threads = 256)]
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
        let Some((t, block, blocks)) = ops::ids(&thread) else {
            return;
        };
        if dst.extent(0) != cols || dst.extent(1) != rows {
            return;
        }
        let (a0, b) = (t / 16, t % 16 * 4);
        let (chunk_rows, chunk_cols) = (cols.div_ceil(64), rows.div_ceil(64));
        // Whole rows of both matrices start 16-aligned.
        let vector = cols.is_multiple_of(4)
            && rows.is_multiple_of(4)
            && (s as usize).is_multiple_of(16)
            && (d as usize).is_multiple_of(16);
        let Some(tile) = ops::shared::<{ TRANSPOSE_TILED_RAW_SHARED as usize }>() else {
            return;
        };
        let mut c = block;
        while c < chunk_rows * chunk_cols {
            let (i0, j0) = (c / chunk_cols * 64, c % chunk_cols * 64);
            let mut v = [[0.0f32; 4]; 4];
            for (m, run) in v.iter_mut().enumerate() {
                let (r, k) = (j0 + a0 + 16 * m, i0 + b);
                if vector && r < rows && k + 3 < cols {
                    // SAFETY: four elements inside `src`'s extents, row-major, 16-aligned
                    // (`vector`), which nothing writes during the kernel.
                    *run = unsafe { ops::load4::<false>(s.wrapping_add(r * cols + k)) };
                } else {
                    for (q, x) in run.iter_mut().enumerate() {
                        if r < rows && k + q < cols {
                            // SAFETY: inside `src`'s extents, row-major.
                            *x = unsafe { *s.wrapping_add(r * cols + k + q) };
                        }
                    }
                }
            }
            for (m, run) in v.iter().enumerate() {
                for (q, &x) in run.iter().enumerate() {
                    // SAFETY: element (a0 + 16 m, b + q) of the 64 × 65 array, this thread's in
                    // this phase.
                    unsafe { *tile.wrapping_add((a0 + 16 * m) * 65 + b + q) = x };
                }
            }
            // SAFETY: every thread of the block reaches it (uniform loop).
            unsafe { core::arch::nvptx::_syncthreads() };
            for m in 0..4 {
                let a = a0 + 16 * m;
                let (i, j) = (i0 + a, j0 + b);
                // SAFETY: the tile elements (b + q, a), written before the barrier.
                let w: [f32; 4] = core::array::from_fn(|q| unsafe { *tile.wrapping_add((b + q) * 65 + a) });
                if i < cols {
                    if vector && j + 3 < rows {
                        // SAFETY: four elements inside `dst`'s extents (cols × rows), 16-aligned
                        // (`vector`), written by this thread alone.
                        unsafe { ops::store4(d.wrapping_add(i * rows + j), w) };
                    } else {
                        for (q, &x) in w.iter().enumerate() {
                            if j + q < rows {
                                // SAFETY: inside `dst`'s extents, written by this thread alone.
                                unsafe { *d.wrapping_add(i * rows + j + q) = x };
                            }
                        }
                    }
                }
            }
            // SAFETY: as above.
            unsafe { core::arch::nvptx::_syncthreads() };
            c += blocks;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (src, dst);
}

/// [`row_sums_block`](crate::row_sums_block) written raw: four neighbours a thread with 16-byte
/// loads, shuffles, a shared array of the warps' sums and a bare barrier. Launch with blocks of
/// [`ROW_SUMS_THREADS`](crate::ROW_SUMS_THREADS) (the launcher refuses others) and
/// [`ROW_SUMS_BLOCK_RAW_SHARED`] bytes of dynamic shared memory, on a grid of one row of blocks.
/// The rows must start 16-aligned (`x` 16-aligned, `cols % 4 == 0`) and `sums` have a row's
/// length; otherwise, on another grid or with less shared memory, it writes nothing.
#[dlmd::kernel(block_threads = 128)]
pub fn row_sums_block_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, sums: DeviceMdspanMut<'_, f32, Dims<1>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    row_sums_raw::<{ crate::ROW_SUMS_THREADS }>(&thread, x, sums);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, sums);
}

/// [`row_sums_block_wide`](crate::row_sums_block_wide) written raw, as [`row_sums_block_raw`]
/// is. Launch with blocks of [`ROW_SUMS_WIDE_THREADS`](crate::ROW_SUMS_WIDE_THREADS) and
/// [`ROW_SUMS_BLOCK_RAW_SHARED`] bytes of dynamic shared memory.
#[dlmd::kernel(block_threads = 512)]
pub fn row_sums_block_wide_raw(
    thread: Thread,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    row_sums_raw::<{ crate::ROW_SUMS_WIDE_THREADS }>(&thread, x, sums);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, sums);
}

/// The body of the raw row sums, for blocks of `THREADS`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn row_sums_raw<const THREADS: usize>(
    thread: &Thread,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    sums: DeviceMdspanMut<'_, f32, Dims<1>>,
) {
    let (rows, cols) = (x.extent(0), x.extent(1));
    let (p, out) = (x.data_handle(), sums.data_handle());
    let Some((t, block, blocks)) = ops::ids(thread) else {
        return;
    };
    if sums.extent(0) != rows || !cols.is_multiple_of(4) || !(p as usize).is_multiple_of(16) {
        return;
    }
    // Two turns of 32 slots: a block of at most 32 warps.
    const { assert!(THREADS.is_multiple_of(32) && THREADS <= 32 * 32) };
    let Some(partials) = ops::shared::<{ ROW_SUMS_BLOCK_RAW_SHARED as usize }>() else {
        return;
    };
    let mut r = block;
    let mut turn = 0;
    while r < rows {
        let row = p.wrapping_add(r * cols);
        let mut sum = 0.0f32;
        let mut j = 4 * t;
        while j + 4 <= cols {
            // SAFETY: four elements of row `r`, 16-aligned (`cols % 4 == 0`, caller), which
            // nothing writes during the kernel (`x` is read-only).
            let v = unsafe { ops::load4::<true>(row.wrapping_add(j)) };
            sum += (v[0] + v[1]) + (v[2] + v[3]);
            j += 4 * THREADS;
        }
        // SAFETY: every lane runs the shuffles; the block is whole warps.
        let sum = unsafe { ops::warp_reduce(sum, &|a, b| a + b) };
        let slots = partials.wrapping_add(turn * 32);
        if t % 32 == 0 {
            // SAFETY: this warp's slot, read after the barrier.
            unsafe { *slots.wrapping_add(t / 32) = sum };
        }
        // SAFETY: reached by every thread (uniform loop).
        unsafe { core::arch::nvptx::_syncthreads() };
        let total = if t % 32 < THREADS / 32 {
            // SAFETY: one of the warps' slots written before the barrier.
            unsafe { *slots.wrapping_add(t % 32) }
        } else {
            0.0
        };
        // SAFETY: every lane runs the shuffles.
        let total = unsafe { ops::warp_reduce(total, &|a, b| a + b) };
        if t == 0 {
            // SAFETY: element `r` of `sums`, written by this block's thread 0 alone.
            unsafe { *out.wrapping_add(r) = total };
        }
        turn ^= 1;
        r += blocks;
    }
}

/// [`softmax_rows`](crate::softmax_rows) written raw: the row in registers (16 a thread), shuffles
/// and a shared array of the warps' results for the maximum and the sum, bare barriers. Launch with
/// blocks of [`SOFTMAX_THREADS`](crate::SOFTMAX_THREADS) and [`SOFTMAX_ROWS_RAW_SHARED`] bytes of
/// dynamic shared memory; rows of at most [`SOFTMAX_COLS`](crate::SOFTMAX_COLS). The launcher
/// refuses other blocks; on a grid of more than one row of blocks, with less shared memory, for
/// longer rows, or `y` of another shape than `x`, it writes nothing.
#[dlmd::kernel(block_threads = 512)]
pub fn softmax_rows_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, y: DeviceMdspanMut<'_, f32, Dims<2>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    softmax_raw::<{ crate::SOFTMAX_THREADS }, 16>(&thread, x, y);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, y);
}

/// [`softmax_rows_short`](crate::softmax_rows_short) written raw, as [`softmax_rows_raw`] is.
/// Launch with blocks of [`SOFTMAX_SHORT_THREADS`](crate::SOFTMAX_SHORT_THREADS) and
/// [`SOFTMAX_ROWS_RAW_SHARED`] bytes of dynamic shared memory; rows of at most
/// [`SOFTMAX_SHORT_COLS`](crate::SOFTMAX_SHORT_COLS).
#[dlmd::kernel(block_threads = 128)]
pub fn softmax_rows_short_raw(thread: Thread, x: DeviceMdspan<'_, f32, Dims<2>>, y: DeviceMdspanMut<'_, f32, Dims<2>>) {
    let _ = thread;
    #[cfg(target_arch = "nvptx64")]
    softmax_raw::<{ crate::SOFTMAX_SHORT_THREADS }, 8>(&thread, x, y);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (x, y);
}

/// The body of the raw softmax kernels, for blocks of `THREADS` threads and `K` elements a
/// thread.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn softmax_raw<const THREADS: usize, const K: usize>(
    thread: &Thread,
    x: DeviceMdspan<'_, f32, Dims<2>>,
    y: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (rows, cols) = (x.extent(0), x.extent(1));
    let (p, q) = (x.data_handle(), y.data_handle());
    let Some((t, block, blocks)) = ops::ids(thread) else {
        return;
    };
    // Rows of no element leave nothing to write (and an empty view's rows may number up to
    // `usize::MAX`: `r + blocks` could wrap); others number at most `isize::MAX`.
    if y.extent(0) != rows || y.extent(1) != cols || cols == 0 {
        return;
    }
    let Some(partials) = ops::shared::<{ SOFTMAX_ROWS_RAW_SHARED as usize }>() else {
        return;
    };
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
        let max = unsafe { ops::block_reduce::<THREADS>(mine, f32::NEG_INFINITY, partials, f32::max) };
        let e = v.map(|value| dlmd::kernel::math::exp(value - max));
        // SAFETY: as above, in the other half of the shared array.
        let sum = unsafe { ops::block_reduce::<THREADS>(e.iter().sum(), 0.0, partials.wrapping_add(32), |a, b| a + b) };
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

/// [`matmul`](crate::matmul) written raw: two block-shared arrays (`a`'s slice transposed, rows
/// 132 apart) written from registers loaded during the step before (four neighbours of a row of
/// each operand a thread, a `float4` where whole and aligned), the 256 threads as 16 × 16 with
/// `8 × 8` results each (two runs of four rows and of four columns, read as `float4`), raw
/// pointers and bare barriers. Launch with blocks of 256 threads (two to a multiprocessor, as
/// `matmul`'s: `__launch_bounds__(256, 2)`; the launcher refuses others) and
/// [`MATMUL_RAW_SHARED`] bytes of dynamic shared memory, on a grid of one row of blocks; on
/// another grid, with less shared memory, or extents that do not fit together, it writes
/// nothing.
#[dlmd::kernel(block_threads = 256, min_blocks_per_sm = 2)]
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
        let Some((t, block, blocks)) = ops::ids(&thread) else {
            return;
        };
        let (ty, tx) = (t / 16, t % 16);
        let Some(sa) = ops::shared::<{ MATMUL_RAW_SHARED as usize }>() else {
            return;
        };
        let sb = sa.wrapping_add(8 * 132);
        let (chunk_rows, chunk_cols) = (rows.div_ceil(128), cols.div_ceil(128));
        let mut chunk = block;
        while chunk < chunk_rows * chunk_cols {
            let (i0, j0) = (chunk / chunk_cols * 128, chunk % chunk_cols * 128);
            let mut acc = [[0.0f32; 8]; 8];
            // This thread's run of four neighbours of a row of the slice of `a` (along `k`,
            // written down a column of the transposed array) and of the slice of `b`, from
            // `k0`, into registers: one `float4` load each where whole and 16-aligned.
            let (a_run, b_run) = ((t / 2, t % 2 * 4), (t / 32, t % 32 * 4));
            let aligned = |p: *const f32, cols: usize| cols.is_multiple_of(4) && (p as usize).is_multiple_of(16);
            let (a_vector, b_vector) = (aligned(pa, depth), aligned(pb, cols));
            // Elements `[r, c ..][..4]` of the row-major `rows × cols` matrix at `p`, zeros
            // outside it.
            let run = |p: *const f32, vector: bool, (rows, cols): (usize, usize), (r, c): (usize, usize)| {
                if vector && r < rows && c + 3 < cols {
                    // SAFETY: four elements inside the matrix, 16-aligned (`vector`: `p` and
                    // the row length are, and `c` is a multiple of 4), which nothing writes
                    // during the kernel.
                    unsafe { ops::load4::<false>(p.wrapping_add(r * cols + c)) }
                } else {
                    core::array::from_fn(|q| {
                        if r < rows && c + q < cols {
                            // SAFETY: inside the matrix.
                            unsafe { *p.wrapping_add(r * cols + c + q) }
                        } else {
                            0.0
                        }
                    })
                }
            };
            // `b`'s run loaded first, as in `matmul` (measured faster, for both).
            let load = |k0: usize| {
                let b = run(pb, b_vector, (depth, cols), (k0 + b_run.0, j0 + b_run.1));
                let a = run(pa, a_vector, (rows, depth), (i0 + a_run.0, k0 + a_run.1));
                (a, b)
            };
            let mut next = load(0);
            let mut k0 = 0;
            while k0 < depth {
                for q in 0..4 {
                    // SAFETY: element `[a_run.1 + q, a_run.0]` of the `8 × 128` array (`a`
                    // transposed, rows 132 apart), this thread's in this phase.
                    unsafe { *sa.wrapping_add((a_run.1 + q) * 132 + a_run.0) = next.0[q] };
                }
                // SAFETY: elements `[b_run.0, b_run.1 ..][..4]` of the `8 × 128` array, 16-aligned
                // (a multiple of four from its aligned start), this thread's in this phase.
                unsafe { *sb.wrapping_add(b_run.0 * 128 + b_run.1).cast::<ops::Float4>() = ops::Float4(next.1) };
                // SAFETY: reached by every thread of the block (uniform loop).
                unsafe { core::arch::nvptx::_syncthreads() };
                // The next slices' loads, in flight during this step's products.
                if k0 + 8 < depth {
                    next = load(k0 + 8);
                }
                // Four neighbours of row `k` from `at`, 16-aligned: one `float4` load.
                let four = |array: *mut f32, at: usize| {
                    // SAFETY: elements of the arrays written before the barrier; `at` is a
                    // multiple of 4 and the arrays are 16-aligned.
                    unsafe { (*array.wrapping_add(at).cast::<ops::Float4>()).0 }
                };
                let mut step = |k: usize| {
                    let ([x0, x1], [y0, y1]) = (
                        [4 * ty, 64 + 4 * ty].map(|i| four(sa, k * 132 + i)),
                        [4 * tx, 64 + 4 * tx].map(|j| four(sb, k * 128 + j)),
                    );
                    let x = [x0[0], x0[1], x0[2], x0[3], x1[0], x1[1], x1[2], x1[3]];
                    let y = [y0[0], y0[1], y0[2], y0[3], y1[0], y1[1], y1[2], y1[3]];
                    outer_product_add(&mut acc, &x, &y);
                };
                // Two steps of `k` written out (`#pragma unroll 2`): the reads of one in flight
                // during the other's products.
                for k in (0..8).step_by(2) {
                    step(k);
                    step(k + 1);
                }
                // SAFETY: as above; no element is written again before every thread has read.
                unsafe { core::arch::nvptx::_syncthreads() };
                k0 += 8;
            }
            // Written out (`#pragma unroll` in CUDA C++): a loop the compiler kept would index
            // `acc` at run time and put it in local memory.
            ops::unrolled_8x8(|m, n| {
                let (i, j) = (i0 + 4 * ty + m % 4 + 64 * (m / 4), j0 + 4 * tx + n % 4 + 64 * (n / 4));
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
