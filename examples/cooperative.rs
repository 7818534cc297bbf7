//! Cooperative Rust kernels (`examples/kernels`: block-shared tiles, barriers, block
//! reductions), each checked against the CPU with its raw twin; with `--bench`, each timed
//! against its raw twin (the same work, `unsafe`, written the CUDA C++ way), the C++ kernel of
//! the same tiling over `view.cuh` (NVRTC) and a device-to-device copy of the same bytes,
//! alternated in one run (medians of 25 rounds, CUDA events, each span after a device copy that
//! keeps the GPU busy while the host launches: `timing::Cover`); the row softmax against the copy
//! alone, and the tiled matrix product against its raw twin (`scripts/bench_cooperative_torch.py`
//! times `torch.matmul`, cuBLAS, on the same shape).
//!
//! The row sums are also timed against CUB's `BlockReduce` (`examples/cuda/row_sums_cub.cu`,
//! built by nvcc) when `--cub` names that module.
//!
//! Run with `cargo run --release --features kernels --example cooperative [-- --bench [--cub
//! row_sums_cub.cubin]]` on a machine with an NVIDIA GPU; `scripts/bench_cooperative_torch.py`
//! times torch on the same shapes.

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::{Dims, LayoutRight};
use dlmd_example_kernels as rust;
use dlmd_examples::Sides;
use dlmd_examples::cxx::{ROW_SUMS, RowSumsCub, TRANSPOSE_CLASSIC, TRANSPOSE_TILED, compile};
use dlmd_examples::timing::Cover;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

/// `blocks` blocks of 256 threads in a row, as the cooperative kernels take them.
fn blocks(blocks: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks.max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `blocks` blocks of `threads` threads in a row, for the row sums.
fn row_blocks(blocks: usize, threads: usize) -> LaunchConfig {
    LaunchConfig {
        block_dim: (threads as u32, 1, 1),
        ..self::blocks(blocks)
    }
}

/// `config` with `bytes` of dynamic shared memory, which a raw twin's launch passes by hand (a
/// cooperative kernel's launcher reserves its own).
fn raw(config: LaunchConfig, bytes: u32) -> LaunchConfig {
    LaunchConfig {
        shared_mem_bytes: bytes,
        ..config
    }
}

/// Whether `got` is `expected`, element for element.
fn compare(what: &str, got: &[f32], expected: &[f32]) -> Result<(), Box<dyn Error>> {
    let wrong = got.iter().zip(expected).filter(|(a, b)| a != b).count();
    if wrong != 0 || got.len() != expected.len() {
        return Err(format!("{what}: {wrong} of {} elements differ from the CPU", expected.len()).into());
    }
    println!("{what}: all {} elements match the CPU", got.len());
    Ok(())
}

/// `$kernel` (a transpose) over `$src` (`rows × cols`) into a fresh `cols × rows` matrix, read
/// back.
macro_rules! transpose_with {
    ($stream:expr, $kernels:expr, $kernel:path, $src:expr, ($rows:expr, $cols:expr), $grid:expr) => {{
        let (stream, rows, cols) = ($stream, $rows, $cols);
        let mut out = stream.alloc_zeros::<f32>(rows * cols)?;
        {
            let src = cuda::device_view::<f32, Dims<2>, LayoutRight>($src, Dims::new([rows, cols]))?;
            let mut dst = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(&mut out, Dims::new([cols, rows]))?;
            cuda::scope(|s| $kernel(s.launch(stream, $kernels, $grid), src, dst.as_view_mut()))?;
        }
        stream.clone_dtoh(&out)?
    }};
}

/// `$kernel` (row sums) over `$x` (`rows × cols`), read back.
macro_rules! row_sums_with {
    ($stream:expr, $kernels:expr, $kernel:path, $x:expr, ($rows:expr, $cols:expr), $grid:expr) => {{
        let (stream, rows, cols) = ($stream, $rows, $cols);
        let mut out = stream.alloc_zeros::<f32>(rows)?;
        {
            let x = cuda::device_view::<f32, Dims<2>, LayoutRight>($x, Dims::new([rows, cols]))?;
            let mut sums = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(&mut out, Dims::new([rows]))?;
            cuda::scope(|s| $kernel(s.launch(stream, $kernels, $grid), x, sums.as_view_mut()))?;
        }
        stream.clone_dtoh(&out)?
    }};
}

/// `$kernel` (a row softmax) over `$x` (`rows × cols`) into a fresh matrix, read back.
macro_rules! softmax_with {
    ($stream:expr, $kernels:expr, $kernel:path, $x:expr, ($rows:expr, $cols:expr), $grid:expr) => {{
        let (stream, rows, cols) = ($stream, $rows, $cols);
        let mut out = stream.alloc_zeros::<f32>(rows * cols)?;
        {
            let x = cuda::device_view::<f32, Dims<2>, LayoutRight>($x, Dims::new([rows, cols]))?;
            let mut y = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(&mut out, Dims::new([rows, cols]))?;
            cuda::scope(|s| $kernel(s.launch(stream, $kernels, $grid), x, y.as_view_mut()))?;
        }
        stream.clone_dtoh(&out)?
    }};
}

/// `$kernel` (a matrix product) of `$a` (`m × k`) and `$b` (`k × n`) into a fresh `m × n`
/// matrix, read back.
macro_rules! matmul_with {
    ($stream:expr, $kernels:expr, $kernel:path, $args:ident, ($a:expr, $b:expr), ($m:expr, $k:expr, $n:expr), $grid:expr) => {{
        let (stream, m, k, n) = ($stream, $m, $k, $n);
        let mut out = stream.alloc_zeros::<f32>(m * n)?;
        {
            let a = cuda::device_view::<f32, Dims<2>, LayoutRight>($a, Dims::new([m, k]))?;
            let b = cuda::device_view::<f32, Dims<2>, LayoutRight>($b, Dims::new([k, n]))?;
            let mut c = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(&mut out, Dims::new([m, n]))?;
            let c = c.as_view_mut();
            cuda::scope(|s| $kernel(s.launch(stream, $kernels, $grid), rust::$args { a, b, c }))?;
        }
        stream.clone_dtoh(&out)?
    }};
}

/// The blocks of 256 threads that give every `128 × 128` chunk of an `m × n` product its own.
fn matmul_blocks(m: usize, n: usize) -> LaunchConfig {
    let [bm, bn, _] = rust::MATMUL_TILE;
    blocks(m.div_ceil(bm) * n.div_ceil(bn))
}

fn check(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    // Rows of 71 (no run aligned: one element at a time), and rows of whole vector runs; both
    // cut short by the tiles.
    for (rows, cols) in [(300, 71), (260, 132)] {
        let host: Vec<f32> = (0..rows * cols).map(|k| k as f32).collect();
        let expected: Vec<f32> = (0..rows * cols).map(|k| host[(k % rows) * cols + k / rows]).collect();
        let src = stream.clone_htod(&host)?;
        let got = transpose_with!(stream, kernels, rust::transpose_tiled, &src, (rows, cols), blocks(7));
        compare(&format!("transpose_tiled {rows}x{cols}"), &got, &expected)?;
        let config = raw(blocks(7), rust::TRANSPOSE_TILED_RAW_SHARED);
        let got = transpose_with!(stream, kernels, rust::transpose_tiled_raw, &src, (rows, cols), config);
        compare(&format!("transpose_tiled_raw {rows}x{cols}"), &got, &expected)?;
    }
    // Small integers: exact sums in any order. The raw twin needs 16-aligned rows.
    let (rows, cols) = (37, 1000);
    let host: Vec<f32> = (0..rows * cols).map(|k| (k % 13) as f32).collect();
    let expected: Vec<f32> = (0..rows).map(|i| host[i * cols..(i + 1) * cols].iter().sum()).collect();
    let x = stream.clone_htod(&host)?;
    let (narrow, wide) = (rust::ROW_SUMS_THREADS, rust::ROW_SUMS_WIDE_THREADS);
    let got = row_sums_with!(
        stream,
        kernels,
        rust::row_sums_block,
        &x,
        (rows, cols),
        row_blocks(5, narrow)
    );
    compare("row_sums_block 37x1000", &got, &expected)?;
    let got = row_sums_with!(
        stream,
        kernels,
        rust::row_sums_block_raw,
        &x,
        (rows, cols),
        raw(row_blocks(5, narrow), rust::ROW_SUMS_BLOCK_RAW_SHARED)
    );
    compare("row_sums_block_raw 37x1000", &got, &expected)?;
    let got = row_sums_with!(
        stream,
        kernels,
        rust::row_sums_block_wide,
        &x,
        (rows, cols),
        row_blocks(5, wide)
    );
    compare("row_sums_block_wide 37x1000", &got, &expected)?;
    let got = row_sums_with!(
        stream,
        kernels,
        rust::row_sums_block_wide_raw,
        &x,
        (rows, cols),
        raw(row_blocks(5, wide), rust::ROW_SUMS_BLOCK_RAW_SHARED)
    );
    compare("row_sums_block_wide_raw 37x1000", &got, &expected)?;
    // The softmax of each row, against the CPU's within the GPU's `exp` (ex2.approx) error.
    let (rows, cols) = (37, 1000);
    let host: Vec<f32> = (0..rows * cols).map(|k| ((k * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let expected: Vec<f32> = host
        .chunks(cols)
        .flat_map(|row| {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = row.iter().map(|&v| f64::from(v - max).exp()).sum();
            row.iter().map(move |&v| (f64::from(v - max).exp() / sum) as f32)
        })
        .collect();
    let x = stream.clone_htod(&host)?;
    let grid = |threads: usize| LaunchConfig {
        block_dim: (threads as u32, 1, 1),
        ..blocks(5)
    };
    let (long, short) = (grid(rust::SOFTMAX_THREADS), grid(rust::SOFTMAX_SHORT_THREADS));
    let safe = softmax_with!(stream, kernels, rust::softmax_rows, &x, (rows, cols), long);
    let (long_raw, short_raw) = (
        raw(long, rust::SOFTMAX_ROWS_RAW_SHARED),
        raw(short, rust::SOFTMAX_ROWS_RAW_SHARED),
    );
    let long = softmax_with!(stream, kernels, rust::softmax_rows_raw, &x, (rows, cols), long_raw);
    let short_safe = softmax_with!(stream, kernels, rust::softmax_rows_short, &x, (rows, cols), short);
    let short_raw = softmax_with!(
        stream,
        kernels,
        rust::softmax_rows_short_raw,
        &x,
        (rows, cols),
        short_raw
    );
    for (name, got) in [
        ("softmax_rows 37x1000", safe),
        ("softmax_rows_raw 37x1000", long),
        ("softmax_rows_short 37x1000", short_safe),
        ("softmax_rows_short_raw 37x1000", short_raw),
    ] {
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(g, e)| (g - e).abs() / e.max(1e-3))
            .fold(0.0f32, f32::max);
        if worst > 1e-5 {
            return Err(format!("{name}: relative error {worst:e} against the CPU").into());
        }
        println!("{name}: all {} elements within {worst:.1e} of the CPU", got.len());
    }
    // A product of small integers, exact in f32 in any order; ragged in every dimension.
    let (m, k, n) = (300, 77, 200);
    let a: Vec<f32> = (0..m * k).map(|i| (i * 7 % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i * 5 % 7) as f32 - 3.0).collect();
    let expected: Vec<f32> = (0..m * n)
        .map(|i| (0..k).map(|p| a[i / n * k + p] * b[p * n + i % n]).sum())
        .collect();
    let (da, db) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
    let got = matmul_with!(
        stream,
        kernels,
        rust::matmul,
        MatmulArgs,
        (&da, &db),
        (m, k, n),
        matmul_blocks(m, n)
    );
    compare("matmul 300x77 · 77x200", &got, &expected)?;
    let got = matmul_with!(
        stream,
        kernels,
        rust::matmul_raw,
        MatmulRawArgs,
        (&da, &db),
        (m, k, n),
        raw(blocks(3), rust::MATMUL_RAW_SHARED)
    );
    compare("matmul_raw 300x77 · 77x200 (3 blocks)", &got, &expected)?;
    Ok(())
}

/// The block of CUB's row sums that reads long rows fastest on an H100, timed beside the one
/// of the wide Rust kernel's size.
const CUB_WIDEST: usize = 1024;

const ROUNDS: usize = 30;
const WARM_UP: usize = 5;

fn bench_transpose(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    cxx: &CudaFunction,
    classic: &CudaFunction,
) -> Result<(), Box<dyn Error>> {
    let (rows, cols) = (8192usize, 8192usize);
    let a = &stream.alloc_zeros::<f32>(rows * cols)?;
    let b = &mut stream.alloc_zeros::<f32>(rows * cols)?;
    let grid = blocks(rows.div_ceil(64) * cols.div_ceil(64));
    let classic_grid = LaunchConfig {
        block_dim: (32, 8, 1),
        ..blocks(rows.div_ceil(32) * cols.div_ceil(32))
    };
    let mut sides = Sides::new(5, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let src = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([rows, cols]))?;
        let mut dst = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(b, Dims::new([cols, rows]))?;
        let safe = cover.time_scoped(stream, |s| {
            rust::transpose_tiled(s.launch(stream, kernels, grid), src, dst.as_view_mut())
        })?;
        let raw = cover.time_scoped(stream, |s| {
            let grid = raw(grid, rust::TRANSPOSE_TILED_RAW_SHARED);
            rust::transpose_tiled_raw(s.launch(stream, kernels, grid), src, dst.as_view_mut())
        })?;
        let (ks, kd) = (src.kernel_view(), dst.kernel_view());
        let mut launch_cxx = |function: &CudaFunction, config: LaunchConfig| {
            cover.time(stream, || {
                let mut launch = stream.launch_builder(function);
                launch.arg(&ks).arg(&kd);
                // SAFETY: `ks` and `kd` are live views of `a` and `b` on this device, waited
                // for before either is used again.
                unsafe { launch.launch(config) }?;
                Ok(())
            })
        };
        let c = launch_cxx(cxx, grid)?;
        let c_classic = launch_cxx(classic, classic_grid)?;
        let copy = cover.time(stream, || Ok(stream.memcpy_dtod(a, &mut *b)?))?;
        sides.push(round, &[safe, raw, c, c_classic, copy]);
    }
    let m = sides.medians();
    let (safe, raw, c, c_classic, copy) = (m[0], m[1], m[2], m[3], m[4]);
    let bytes = 2.0 * (rows * cols * 4) as f64;
    let gbs = |ms: f64| bytes / ms / 1e6;
    println!(
        "bench transpose 8192x8192 f32: safe {safe:.4} ms ({:.0} GB/s), raw {raw:.4} ms, C++ (view.cuh, the same 64x65 tiling) {c:.4} ms ({:.0} GB/s), C++ (view.cuh, classic 32x33) {c_classic:.4} ms, device copy {copy:.4} ms ({:.0} GB/s); safe / copy bandwidth = {:.3}, safe / C++ = {:.3}, safe / classic C++ = {:.3}, safe / raw = {:.3}",
        gbs(safe),
        gbs(c),
        gbs(copy),
        copy / safe,
        c / safe,
        c_classic / safe,
        raw / safe
    );
    Ok(())
}

fn bench_row_sums(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    cxx: &CudaFunction,
    cub: Option<&RowSumsCub>,
    (rows, cols): (usize, usize),
) -> Result<(), Box<dyn Error>> {
    // Multiples of 1/8 below 1 in magnitude: every partial sum of a row is exact in `f32`, so
    // any order of the additions gives the CPU's sums.
    let host: Vec<f32> = (0..rows * cols).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
    let a = &stream.clone_htod(&host)?;
    let b = &mut stream.alloc_zeros::<f32>(rows * cols)?;
    let mut out = stream.alloc_zeros::<f32>(rows)?;
    // Long rows take the wide blocks; the C++ reference runs on the same block size.
    let wide = cols >= rust::ROW_SUMS_WIDE_COLS;
    let threads = if wide {
        rust::ROW_SUMS_WIDE_THREADS
    } else {
        rust::ROW_SUMS_THREADS
    };
    let grid = row_blocks(rows, threads);
    let cub_at = |threads: usize| {
        cub.map(|cub| {
            cub.function(threads)
                .ok_or("the CUB module has no row sums for this block size")
        })
        .transpose()
    };
    // CUB at the same block size, and at 1024 threads (its fastest on an H100) for long rows.
    let cub_widest = if wide { cub_at(CUB_WIDEST)? } else { None };
    let cub = cub_at(threads)?;
    let shape = (i32::try_from(rows)?, i32::try_from(cols)?);
    let launch_cub =
        |function: &CudaFunction, out: &mut CudaSlice<f32>, threads: usize| -> Result<(), Box<dyn Error>> {
            let mut launch = stream.launch_builder(function);
            launch.arg(a).arg(out).arg(&shape.0).arg(&shape.1);
            // SAFETY: the kernel reads `rows × cols` `f32` of `a` (row-major, rows a multiple of
            // four elements and 16-aligned) and writes `rows` of `out`, both that long; `shape` is
            // those extents; its blocks are of the threads it was built for.
            unsafe { launch.launch(row_blocks(rows, threads)) }?;
            Ok(())
        };
    for (function, threads) in [(cub, threads), (cub_widest, CUB_WIDEST)] {
        if let Some(function) = function {
            launch_cub(function, &mut out, threads)?;
            let expected: Vec<f32> = host.chunks(cols).map(|row| row.iter().sum()).collect();
            compare(
                &format!("CUB row sums {rows}x{cols} ({threads} threads)"),
                &stream.clone_dtoh(&out)?,
                &expected,
            )?;
        }
    }
    let mut sides = Sides::new(6, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let x = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([rows, cols]))?;
        let mut sums = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(&mut out, Dims::new([rows]))?;
        let safe = cover.time_scoped(stream, |s| {
            let launch = s.launch(stream, kernels, grid);
            if wide {
                rust::row_sums_block_wide(launch, x, sums.as_view_mut())
            } else {
                rust::row_sums_block(launch, x, sums.as_view_mut())
            }
        })?;
        let raw = cover.time_scoped(stream, |s| {
            let launch = s.launch(stream, kernels, raw(grid, rust::ROW_SUMS_BLOCK_RAW_SHARED));
            if wide {
                rust::row_sums_block_wide_raw(launch, x, sums.as_view_mut())
            } else {
                rust::row_sums_block_raw(launch, x, sums.as_view_mut())
            }
        })?;
        let (kx, ks) = (x.kernel_view(), sums.kernel_view());
        let c = cover.time(stream, || {
            let mut launch = stream.launch_builder(cxx);
            launch.arg(&kx).arg(&ks);
            // SAFETY: `kx` and `ks` are live views of `a` and `out` on this device, waited for
            // before either is used again.
            unsafe { launch.launch(grid) }?;
            Ok(())
        })?;
        let mut time_cub = |function: Option<&CudaFunction>, threads: usize| match function {
            Some(function) => cover.time(stream, || launch_cub(function, &mut out, threads)),
            None => Ok(f64::NAN),
        };
        let cub = time_cub(cub, threads)?;
        let widest = time_cub(cub_widest, CUB_WIDEST)?;
        let copy = cover.time(stream, || Ok(stream.memcpy_dtod(a, &mut *b)?))?;
        sides.push(round, &[safe, raw, c, cub, widest, copy]);
    }
    let m = sides.medians();
    let (safe, raw, c, cub_ms, widest_ms, copy) = (m[0], m[1], m[2], m[3], m[4], m[5]);
    let read = (rows * cols * 4) as f64;
    let (mut against_cub, mut safe_over_cub) = match cub {
        Some(_) => (
            format!(
                ", CUB (BlockReduce, float4; nvcc) {cub_ms:.4} ms ({:.0} GB/s read)",
                read / cub_ms / 1e6
            ),
            format!(", safe / CUB = {:.3}", cub_ms / safe),
        ),
        None => (", CUB not given (--cub)".to_string(), String::new()),
    };
    if cub_widest.is_some() {
        against_cub += &format!(", CUB at {CUB_WIDEST} threads {widest_ms:.4} ms");
        safe_over_cub += &format!(", safe / CUB at {CUB_WIDEST} = {:.3}", widest_ms / safe);
    }
    println!(
        "bench row_sums {rows}x{cols} f32 ({threads} threads a block): safe {safe:.4} ms ({:.0} GB/s read), raw {raw:.4} ms, C++ (float4, shuffles) {c:.4} ms ({:.0} GB/s read){against_cub}, device copy {copy:.4} ms ({:.0} GB/s); safe read / copy bandwidth = {:.3}, safe / C++ = {:.3}{safe_over_cub}, safe / raw = {:.3}",
        read / safe / 1e6,
        read / c / 1e6,
        2.0 * read / copy / 1e6,
        (read / safe) / (2.0 * read / copy),
        c / safe,
        raw / safe
    );
    Ok(())
}

/// The row softmax of `rows × cols` `f32` (one block per row: of `SOFTMAX_SHORT_THREADS` for
/// rows of at most `SOFTMAX_SHORT_COLS`, of `SOFTMAX_THREADS` for longer ones), against a device copy of the matrix:
/// the kernel reads and writes it once, as the copy does.
fn bench_softmax(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    (rows, cols): (usize, usize),
) -> Result<(), Box<dyn Error>> {
    let host: Vec<f32> = (0..rows * cols).map(|k| ((k * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let a = &stream.clone_htod(&host)?;
    let b = &mut stream.alloc_zeros::<f32>(rows * cols)?;
    let short = cols <= rust::SOFTMAX_SHORT_COLS;
    let grid = LaunchConfig {
        block_dim: (
            if short {
                rust::SOFTMAX_SHORT_THREADS
            } else {
                rust::SOFTMAX_THREADS
            } as u32,
            1,
            1,
        ),
        ..blocks(rows)
    };
    let mut sides = Sides::new(3, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let x = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([rows, cols]))?;
        let mut y = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(b, Dims::new([rows, cols]))?;
        let safe = cover.time_scoped(stream, |s| {
            let launch = s.launch(stream, kernels, grid);
            if short {
                rust::softmax_rows_short(launch, x, y.as_view_mut())
            } else {
                rust::softmax_rows(launch, x, y.as_view_mut())
            }
        })?;
        let raw = cover.time_scoped(stream, |s| {
            let launch = s.launch(stream, kernels, raw(grid, rust::SOFTMAX_ROWS_RAW_SHARED));
            if short {
                rust::softmax_rows_short_raw(launch, x, y.as_view_mut())
            } else {
                rust::softmax_rows_raw(launch, x, y.as_view_mut())
            }
        })?;
        let copy = cover.time(stream, || Ok(stream.memcpy_dtod(a, &mut *b)?))?;
        sides.push(round, &[safe, raw, copy]);
    }
    let m = sides.medians();
    let (safe, raw, copy) = (m[0], m[1], m[2]);
    let bytes = 2.0 * (rows * cols * 4) as f64;
    println!(
        "bench softmax {rows}x{cols} f32 ({} threads a block): safe {safe:.4} ms ({:.0} GB/s), raw {raw:.4} ms, device copy {copy:.4} ms ({:.0} GB/s); safe time / copy time = {:.3}, safe / raw = {:.3}",
        grid.block_dim.0,
        bytes / safe / 1e6,
        bytes / copy / 1e6,
        safe / copy,
        raw / safe
    );
    Ok(())
}

/// The tiled matrix product of two `size × size` `f32` matrices, against its raw twin, in
/// alternated rounds.
fn bench_matmul(stream: &Arc<CudaStream>, kernels: &Kernels, size: usize) -> Result<(), Box<dyn Error>> {
    let host: Vec<f32> = (0..size * size).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
    let (a, b) = (&stream.clone_htod(&host)?, &stream.clone_htod(&host)?);
    let mut out = stream.alloc_zeros::<f32>(size * size)?;
    let grid = matmul_blocks(size, size);
    let mut sides = Sides::new(2, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let av = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([size, size]))?;
        let bv = cuda::device_view::<f32, Dims<2>, LayoutRight>(b, Dims::new([size, size]))?;
        let mut c = cuda::device_view_mut::<f32, Dims<2>, LayoutRight>(&mut out, Dims::new([size, size]))?;
        let safe = cover.time_scoped(stream, |s| {
            let c = c.as_view_mut();
            rust::matmul(s.launch(stream, kernels, grid), rust::MatmulArgs { a: av, b: bv, c })
        })?;
        let raw = cover.time_scoped(stream, |s| {
            let c = c.as_view_mut();
            let grid = raw(grid, rust::MATMUL_RAW_SHARED);
            rust::matmul_raw(s.launch(stream, kernels, grid), rust::MatmulRawArgs { a: av, b: bv, c })
        })?;
        sides.push(round, &[safe, raw]);
    }
    let m = sides.medians();
    let (safe, raw) = (m[0], m[1]);
    let tflops = |ms: f64| 2.0 * (size as f64).powi(3) / ms / 1e9;
    println!(
        "bench matmul {size}x{size}x{size} f32: safe {safe:.4} ms ({:.1} TFLOP/s), raw {raw:.4} ms ({:.1} TFLOP/s); safe / raw = {:.3}",
        tflops(safe),
        tflops(raw),
        raw / safe
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, rust::PTX)?;
    check(&stream, &kernels)?;
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") {
        bench_transpose(
            &stream,
            &kernels,
            &compile(&ctx, TRANSPOSE_TILED, "transpose_tiled")?,
            &compile(&ctx, TRANSPOSE_CLASSIC, "transpose_classic")?,
        )?;
        let row_sums = compile(&ctx, ROW_SUMS, "row_sums")?;
        let cub = match args.iter().position(|a| a == "--cub") {
            Some(at) => {
                let path = args.get(at + 1).ok_or("--cub takes a path")?;
                Some(RowSumsCub::load(
                    &ctx,
                    path,
                    &[rust::ROW_SUMS_THREADS, rust::ROW_SUMS_WIDE_THREADS, CUB_WIDEST],
                )?)
            }
            None => None,
        };
        bench_row_sums(&stream, &kernels, &row_sums, cub.as_ref(), (8192, 8192))?;
        bench_row_sums(&stream, &kernels, &row_sums, cub.as_ref(), (65536, 1024))?;
        bench_softmax(&stream, &kernels, (8192, 8192))?;
        bench_softmax(&stream, &kernels, (65536, 1024))?;
        bench_matmul(&stream, &kernels, 4096)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e.downcast_ref::<CudaError>() {
                Some(CudaError::NoDriver) => eprintln!("cooperative: {e}"),
                _ => eprintln!("cooperative failed: {e}"),
            }
            ExitCode::FAILURE
        }
    }
}
