//! Kernels written in Rust (`examples/kernels`), launched through their typed launchers: each is
//! checked against the CPU, and with `--bench` timed against the C++ kernel over `view.cuh` of
//! the same work (NVRTC, on the same grid) and a device-to-device copy of the same bytes,
//! alternated in one run (medians of 25 rounds, CUDA events, each span after a device copy that
//! keeps the GPU busy while the host launches: `timing::Cover`).
//!
//! Run with `cargo run --release --features kernels --example rust_kernels [-- --bench]` on a
//! machine with an NVIDIA GPU; building needs the nightly toolchain with `rust-src` (for the
//! PTX). `--bench-row-sums` times the row sums alone, for `scripts/bench_row_sums_torch.py` to
//! alternate with torch's.

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use dlmd::cuda::{self, CudaError, Kernels};
use dlmd::{Dims, LayoutLeft, LayoutRight, dlmd};
use dlmd_example_kernels as rust;
use dlmd_examples::cxx::{ADD_INDEX, TRANSPOSE, add_index_grid, compile};
use dlmd_examples::median;
use dlmd_examples::timing::Cover;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

/// The grid of a transpose of `rows × cols`: 32 × 8 threads a block, `i` on `x`.
fn transpose_grid(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((rows as u32).div_ceil(32), (cols as u32).div_ceil(8), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    }
}

fn check_add_index(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    let extents = [64, 33, 19];
    let mut host: Vec<f32> = (0..64 * 33 * 19).map(|x| (x % 7) as f32).collect();
    let mut expected = host.clone();
    dlmd!(&mut expected, [64, 33, 19]).for_each_mut(|[i, j, k], x| *x += (i + j + k) as f32);
    let mut device = stream.clone_htod(&host)?;
    let mut view = cuda::device_view_mut::<f32, Dims<3>, LayoutRight>(&mut device, Dims::new(extents))?;
    cuda::scope(|s| rust::add_index(s.launch(stream, kernels, add_index_grid(extents)), view.as_view_mut()))?;
    stream.memcpy_dtoh(&device, &mut host)?;
    compare("add_index 64x33x19", &host, &expected)
}

fn check_transpose(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    let (rows, cols) = (300, 71);
    let host: Vec<f32> = (0..rows * cols).map(|x| x as f32).collect();
    let mut expected = vec![0.0f32; rows * cols];
    let src = dlmd!(&host, [rows, cols]);
    dlmd!(&mut expected, [rows, cols], layout_left).for_each_mut(|index, x| *x = src[index]);
    let a = stream.clone_htod(&host)?;
    let mut b = stream.alloc_zeros::<f32>(rows * cols)?;
    let src = cuda::device_view::<f32, Dims<2>, LayoutRight>(&a, Dims::new([rows, cols]))?;
    let mut dst = cuda::device_view_mut::<f32, Dims<2>, LayoutLeft>(&mut b, Dims::new([rows, cols]))?;
    // A grid smaller than the matrix: the partition's grid-stride loops cover the rest.
    let grid = transpose_grid(rows / 8, cols / 2);
    cuda::scope(|s| rust::transpose(s.launch(stream, kernels, grid), src, dst.as_view_mut()))?;
    let got = stream.clone_dtoh(&b)?;
    compare("transpose 300x71 into layout_left", &got, &expected)
}

/// The grid of a row sum: 16 threads across each row's columns (four neighbours a thread), 16
/// rows a block.
fn row_sums_grid(rows: usize) -> LaunchConfig {
    // Threads a row against the atomic additions into the row's sum: on an H100, 16 a row were
    // 7% faster than 8 or 32, and 128 a quarter slower than 32.
    LaunchConfig {
        grid_dim: (1, (rows as u32).div_ceil(16), 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    }
}

fn check_row_sums(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    // Small integers: every partial sum is exact in f32, whatever the order of the additions.
    let (rows, cols) = (37, 1001);
    let host: Vec<f32> = (0..rows * cols).map(|x| (x % 13) as f32).collect();
    let m = dlmd!(&host, [rows, cols]);
    let expected: Vec<f32> = (0..rows).map(|i| (0..cols).map(|j| m[[i, j]]).sum()).collect();
    let a = stream.clone_htod(&host)?;
    let mut sums = stream.alloc_zeros::<f32>(rows)?;
    let x = cuda::device_view::<f32, Dims<2>, LayoutRight>(&a, Dims::new([rows, cols]))?;
    let out = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(&mut sums, Dims::new([rows]))?.into_atomic();
    // Fewer rows of threads than rows: the partition strides over the rest.
    cuda::scope(|s| rust::row_sums(s.launch(stream, kernels, row_sums_grid(rows / 3)), x, out))?;
    compare("row_sums 37x1001", &stream.clone_dtoh(&sums)?, &expected)
}

/// A derived element type (`Vec3`) to the device, through a kernel with a scalar parameter, and
/// back: `Gpu`, `DeviceArray` and `grid_for`, no cudarc.
fn check_scale_vec3(gpu: &cuda::Gpu, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    for n in [0usize, 1, 5, 1003] {
        let host: Vec<rust::Vec3> = (0..n)
            .map(|i| rust::Vec3 {
                x: i as f32,
                y: -(i as f32),
                z: 0.5,
            })
            .collect();
        let mut v = gpu.to_device(&host, Dims::new([n]))?;
        let grid = v.grid();
        cuda::scope(|s| rust::scale_vec3(s.launch(gpu.stream(), kernels, grid), 3.0, v.view_mut()))?;
        let got = v.to_vec()?;
        let expected: Vec<rust::Vec3> = host
            .iter()
            .enumerate()
            .map(|(i, v)| rust::Vec3 {
                x: 3.0 * v.x + i as f32,
                y: 3.0 * v.y,
                z: 3.0 * v.z,
            })
            .collect();
        if got != expected {
            return Err(format!("scale_vec3 over {n} elements: the GPU's result differs from the CPU's").into());
        }
    }
    println!("scale_vec3 (derived Vec3, through Gpu and DeviceArray): lengths 0, 1, 5, 1003 match the CPU");
    Ok(())
}

fn compare(what: &str, got: &[f32], expected: &[f32]) -> Result<(), Box<dyn Error>> {
    let wrong = got.iter().zip(expected).filter(|(a, b)| a != b).count();
    if wrong != 0 {
        return Err(format!("{what}: {wrong} of {} elements differ from the CPU", got.len()).into());
    }
    println!("{what}: all {} elements match the CPU", got.len());
    Ok(())
}

/// Rounds of the three sides, alternated; the first rounds warm up.
const ROUNDS: usize = 30;
const WARM_UP: usize = 5;

fn report(what: &str, bytes: f64, rust: Vec<f64>, cxx: Vec<f64>, copy: Vec<f64>) {
    let (r, c, d) = (median(rust), median(cxx), median(copy));
    let gbs = |ms: f64| bytes / ms / 1e6;
    println!(
        "bench {what}: Rust kernel {r:.3} ms ({:.0} GB/s), C++ kernel {c:.3} ms ({:.0} GB/s), device copy {d:.3} ms ({:.0} GB/s); Rust / C++ = {:.3}, Rust / copy = {:.3} (bandwidth)",
        gbs(r),
        gbs(c),
        gbs(d),
        c / r,
        d / r
    );
}

fn bench_add_index(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    cxx: &CudaFunction,
    a: &mut CudaSlice<f32>,
    b: &mut CudaSlice<f32>,
) -> Result<(), Box<dyn Error>> {
    let extents = [1024usize, 1024, 256];
    let (mut rust_ms, mut cxx_ms, mut copy_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut view = cuda::device_view_mut::<f32, Dims<3>, LayoutRight>(a, Dims::new(extents))?;
        let r = cover.time_scoped(stream, |s| {
            rust::add_index(s.launch(stream, kernels, add_index_grid(extents)), view.as_view_mut())
        })?;
        let kv = view.kernel_view();
        let c = cover.time(stream, || {
            let mut launch = stream.launch_builder(cxx);
            launch.arg(&kv);
            // SAFETY: `kv` is a live device view of `a` on this stream's device, and the event
            // after the launch is waited for before `a` is used again.
            unsafe { launch.launch(add_index_grid(extents)) }?;
            Ok(())
        })?;
        let d = cover.time(stream, || Ok(stream.memcpy_dtod(&*a, &mut *b)?))?;
        if round >= WARM_UP {
            rust_ms.push(r);
            cxx_ms.push(c);
            copy_ms.push(d);
        }
    }
    let bytes = 2.0 * (extents.iter().product::<usize>() * 4) as f64;
    report("add_index 1024x1024x256 f32", bytes, rust_ms, cxx_ms, copy_ms);
    Ok(())
}

fn bench_transpose(stream: &Arc<CudaStream>, kernels: &Kernels, cxx: &CudaFunction) -> Result<(), Box<dyn Error>> {
    let (rows, cols) = (8192usize, 8192usize);
    let a = &stream.alloc_zeros::<f32>(rows * cols)?;
    let b = &mut stream.alloc_zeros::<f32>(rows * cols)?;
    // C++: one element a thread; Rust: four neighbours a thread along `x` (the partition's).
    let (grid, rust_grid) = (transpose_grid(rows, cols), transpose_grid(rows / 4, cols));
    let (mut rust_ms, mut cxx_ms, mut copy_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let src = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([rows, cols]))?;
        let mut dst = cuda::device_view_mut::<f32, Dims<2>, LayoutLeft>(b, Dims::new([rows, cols]))?;
        let r = cover.time_scoped(stream, |s| {
            rust::transpose(s.launch(stream, kernels, rust_grid), src, dst.as_view_mut())
        })?;
        let (ks, kd) = (src.kernel_view(), dst.kernel_view());
        let c = cover.time(stream, || {
            let mut launch = stream.launch_builder(cxx);
            launch.arg(&ks).arg(&kd);
            // SAFETY: `ks` and `kd` are live views of `a` and `b` on this device, waited for
            // before either is used again.
            unsafe { launch.launch(grid) }?;
            Ok(())
        })?;
        let d = cover.time(stream, || Ok(stream.memcpy_dtod(a, &mut *b)?))?;
        if round >= WARM_UP {
            rust_ms.push(r);
            cxx_ms.push(c);
            copy_ms.push(d);
        }
    }
    let bytes = 2.0 * (rows * cols * 4) as f64;
    report(
        "transpose 8192x8192 f32 into layout_left",
        bytes,
        rust_ms,
        cxx_ms,
        copy_ms,
    );
    Ok(())
}

/// Row sums of 8192 × 8192 `f32` (zeroing the sums, then the kernel), against a device copy of
/// the matrix; `scripts/bench_row_sums_torch.py` times `torch.sum(x, dim=1)` on the same shape.
fn bench_row_sums(stream: &Arc<CudaStream>, kernels: &Kernels) -> Result<(), Box<dyn Error>> {
    let (rows, cols) = (8192usize, 8192usize);
    let a = &stream.alloc_zeros::<f32>(rows * cols)?;
    let b = &mut stream.alloc_zeros::<f32>(rows * cols)?;
    let mut sums = stream.alloc_zeros::<f32>(rows)?;
    let (mut rust_ms, mut copy_ms) = (Vec::new(), Vec::new());
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let x = cuda::device_view::<f32, Dims<2>, LayoutRight>(a, Dims::new([rows, cols]))?;
        let r = cover.time_scoped(stream, |s| {
            stream.memset_zeros(&mut sums)?;
            let out = cuda::device_view_mut::<f32, Dims<1>, LayoutRight>(&mut sums, Dims::new([rows]))?;
            rust::row_sums(s.launch(stream, kernels, row_sums_grid(rows)), x, out.into_atomic())
        })?;
        let d = cover.time(stream, || Ok(stream.memcpy_dtod(a, &mut *b)?))?;
        if round >= WARM_UP {
            rust_ms.push(r);
            copy_ms.push(d);
        }
    }
    let (r, d) = (median(rust_ms), median(copy_ms));
    let read = (rows * cols * 4) as f64;
    println!(
        "bench row_sums 8192x8192 f32: Rust kernel {r:.4} ms ({:.0} GB/s read), device copy {d:.4} ms ({:.0} GB/s); Rust read bandwidth / copy bandwidth = {:.3}",
        read / r / 1e6,
        2.0 * read / d / 1e6,
        (read / r) / (2.0 * read / d)
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, rust::PTX)?;
    check_add_index(&stream, &kernels)?;
    check_transpose(&stream, &kernels)?;
    check_row_sums(&stream, &kernels)?;
    check_scale_vec3(&cuda::Gpu::on(stream.clone()), &kernels)?;
    if std::env::args().any(|a| a == "--bench-row-sums") {
        return bench_row_sums(&stream, &kernels);
    }
    if std::env::args().any(|a| a == "--bench") {
        let n = 1024 * 1024 * 256;
        let mut a = stream.alloc_zeros::<f32>(n)?;
        let mut b = stream.alloc_zeros::<f32>(n)?;
        bench_add_index(
            &stream,
            &kernels,
            &compile(&ctx, ADD_INDEX, "add_index")?,
            &mut a,
            &mut b,
        )?;
        drop((a, b));
        bench_transpose(&stream, &kernels, &compile(&ctx, TRANSPOSE, "transpose")?)?;
        bench_row_sums(&stream, &kernels)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e.downcast_ref::<CudaError>() {
                Some(CudaError::NoDriver) => eprintln!("rust_kernels: {e}"),
                _ => eprintln!("rust_kernels failed: {e}"),
            }
            ExitCode::FAILURE
        }
    }
}
