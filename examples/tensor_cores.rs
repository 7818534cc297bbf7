//! Tensor-core matrix products written in Rust (`examples/tensor-kernels`), checked against the
//! CPU and cuBLAS; with `--bench`, timed against their raw twin and cuBLAS (`cublasGemmEx`,
//! `bf16` in and out, `f32` compute, as `torch.matmul` asks of it) in alternated rounds (medians
//! of 20 rounds after 3 warm-up ones, CUDA events, each span after a device copy that covers the
//! launch), at 4096³ and 8192³, on pseudo-random operands in [-1, 1): `c = a · b` (both
//! row-major) and `y = x · wᵀ` (a `Linear` layer's product).
//!
//! Run with `cargo run --release --features tensor-kernels --example tensor_cores [-- --bench]`
//! on a machine with an NVIDIA GPU of `sm_80` or later and cuBLAS (`libcublas.so.*` where the
//! dynamic loader finds it).

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, Kernels};
use dlmd::half::bf16;
use dlmd::{Dims, LayoutLeft, LayoutRight};
use dlmd_example_tensor_kernels as tc;
use dlmd_examples::Sides;
use dlmd_examples::blas::cublas;
use dlmd_examples::timing::{Cover, time};
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

const ROUNDS: usize = 23;
const WARM_UP: usize = 3;

/// One block of `threads` threads per `128 × 128` chunk of an `m × n` result.
fn grid(m: usize, n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((m.div_ceil(128) * n.div_ceil(128)).max(1) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `c = a · b` by a safe kernel or a raw twin ([`Side`]).
fn rust(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    (m, k, n): (usize, usize, usize),
    side: Side,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    c: &mut CudaSlice<bf16>,
) -> Result<(), Box<dyn Error>> {
    let av = cuda::device_view::<_, Dims<2>, LayoutRight>(a, Dims::new([m, k]))?;
    let mut cv = cuda::device_view_mut::<_, Dims<2>, LayoutRight>(c, Dims::new([m, n]))?;
    let threads = match side {
        Side::Safe | Side::SafeWeight | Side::Raw => tc::GEMM_THREADS,
        _ => 256,
    };
    let config = grid(m, n, threads);
    cuda::scope(|s| {
        let c = cv.as_view_mut();
        if side == Side::SafeWeight {
            let bv = cuda::device_view::<_, Dims<2>, LayoutLeft>(b, Dims::new([k, n]))?;
            return tc::gemm_bf16_nt(s.launch(stream, kernels, config), av, bv, c);
        }
        let bv = cuda::device_view::<_, Dims<2>, LayoutRight>(b, Dims::new([k, n]))?;
        match side {
            Side::Safe => tc::matmul_bf16(
                s.launch(stream, kernels, config),
                tc::MatmulBf16Args { a: av, b: bv, c },
            ),
            Side::SafeTwoStages => tc::matmul_bf16_two_stages(
                s.launch(stream, kernels, config),
                tc::MatmulBf16TwoStagesArgs { a: av, b: bv, c },
            ),
            _ => {
                // The raw twins take their shared memory as the launch's dynamic shared memory.
                let shared_mem_bytes = match side {
                    Side::Raw => tc::MATMUL_RAW_SHARED,
                    _ => tc::GEMM_RAW_SHARED,
                };
                let config = LaunchConfig {
                    shared_mem_bytes,
                    ..config
                };
                let launch = s.launch(stream, kernels, config);
                match side {
                    Side::Raw => tc::matmul_bf16_raw(launch, tc::MatmulBf16RawArgs { a: av, b: bv, c }),
                    _ => tc::gemm_bf16_raw(launch, tc::GemmBf16RawArgs { a: av, b: bv, c }),
                }
            }
        }
    })?;
    Ok(())
}

/// The kernels timed and checked: the safe ones and their raw twins.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    /// `matmul_bf16`: 4 warps of `64 × 64`, steps of 64, three stages.
    Safe,
    /// `gemm_bf16_nt`: `matmul_bf16`'s loop with a column-major `b` (`x · wᵀ`).
    SafeWeight,
    /// `matmul_bf16_two_stages`, the guide's kernel: 8 warps of `64 × 32`, steps of 32.
    SafeTwoStages,
    /// `matmul_bf16_raw`, the twin of `matmul_bf16`.
    Raw,
    /// `gemm_bf16_raw`, the twin of `matmul_bf16_two_stages`.
    RawTwoStages,
}

/// Small integers: every product and sum is exact in `f32`, so each result is the one `bf16`
/// its exact value rounds to, whichever way it was summed.
fn operand(len: usize, mul: usize, modulo: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32((i * mul % modulo) as f32 - (modulo / 2) as f32))
        .collect()
}

/// The three products against the CPU and cuBLAS, element for element, at `(m, k, n)`.
fn check(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    (m, k, n): (usize, usize, usize),
) -> Result<(), Box<dyn Error>> {
    let (a, b) = (operand(m * k, 7, 9), operand(k * n, 5, 7));
    let (da, db) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
    for (side, weight) in [
        (None, false),
        (None, true),
        (Some(Side::Safe), false),
        (Some(Side::SafeWeight), true),
        (Some(Side::SafeTwoStages), false),
        (Some(Side::Raw), false),
        (Some(Side::RawTwoStages), false),
    ] {
        let expected: Vec<bf16> = (0..m * n)
            .map(|i| {
                let (r, j) = (i / n, i % n);
                let b_at = |p: usize| if weight { b[j * k + p] } else { b[p * n + j] };
                bf16::from_f32((0..k).map(|p| a[r * k + p].to_f32() * b_at(p).to_f32()).sum())
            })
            .collect();
        let mut dc = stream.alloc_zeros::<bf16>(m * n)?;
        match side {
            None => cublas(blas, (m, k, n), weight, &da, &db, &mut dc)?,
            Some(side) => rust(stream, kernels, (m, k, n), side, &da, &db, &mut dc)?,
        }
        let got = stream.clone_dtoh(&dc)?;
        let wrong = got.iter().zip(&expected).filter(|(g, e)| g != e).count();
        let name = side.map_or("cuBLAS".to_string(), |s| format!("{s:?}"));
        if wrong != 0 {
            return Err(format!(
                "{name} {m}x{k}x{n} (weight: {weight}): {wrong} of {} elements differ from the CPU",
                m * n
            )
            .into());
        }
        println!(
            "{name} {m}x{k}x{n} (weight: {weight}): all {} elements match the CPU",
            m * n
        );
    }
    Ok(())
}

/// `c = a · b` and `y = x · wᵀ` at `size`³: the safe kernels, the raw twin and cuBLAS in
/// alternated rounds.
fn bench(stream: &Arc<CudaStream>, kernels: &Kernels, blas: &CudaBlas, size: usize) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    // Pseudo-random operands in [-1, 1), as torch.randn's and the Hopper benchmark's: the
    // tensor cores' clocks follow their operands' bits.
    let random = |seed: u64| -> Vec<bf16> {
        dlmd_examples::uniform(size * size, seed ^ size as u64)
            .into_iter()
            .map(bf16::from_f32)
            .collect()
    };
    let (a, b) = (
        stream.clone_htod(&random(0x9e37_79b9))?,
        stream.clone_htod(&random(0x7f4a_7c15))?,
    );
    let mut c = stream.alloc_zeros::<bf16>(size * size)?;
    let list: [(&str, Option<Side>, bool); 7] = [
        ("cuBLAS a·b", None, false),
        ("matmul_bf16 (safe)", Some(Side::Safe), false),
        ("matmul_bf16_raw", Some(Side::Raw), false),
        ("matmul_bf16_two_stages (safe)", Some(Side::SafeTwoStages), false),
        ("gemm_bf16_raw (two stages)", Some(Side::RawTwoStages), false),
        ("cuBLAS x·wᵀ", None, true),
        ("gemm_bf16_nt x·wᵀ (safe)", Some(Side::SafeWeight), true),
    ];
    let count = list.len();
    let mut sides = Sides::new(count, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut times = vec![0.0; count];
        // Alternated: the order of the sides turns each round.
        for turn in 0..count {
            let which = (turn + round) % count;
            let (_, side, weight) = list[which];
            times[which] = cover.time(stream, || match side {
                None => cublas(blas, shape, weight, &a, &b, &mut c),
                Some(side) => rust(stream, kernels, shape, side, &a, &b, &mut c),
            })?;
        }
        sides.push(round, &times);
    }
    let m = sides.medians();
    let tflops = |ms: f64| 2.0 * (size as f64).powi(3) / ms / 1e9;
    for (i, (name, _, weight)) in list.iter().enumerate() {
        let blas = if *weight { m[5] } else { m[0] };
        println!(
            "bench bf16 {size}³ {name}: {:.4} ms ({:.0} TFLOP/s), / cuBLAS = {:.3}",
            m[i],
            tflops(m[i]),
            blas / m[i]
        );
    }
    println!(
        "bench bf16 {size}³ safe / raw: matmul_bf16 {:.3}, matmul_bf16_two_stages {:.3}",
        m[2] / m[1],
        m[4] / m[3]
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, tc::PTX)?;
    let blas = CudaBlas::new(stream.clone())?;
    check(&stream, &kernels, &blas, (256, 512, 512))?;
    // Time once through the helper, so that a missing cuBLAS is an error here, not mid-bench.
    time(&stream, || Ok(()))?;
    if std::env::args().any(|a| a == "--bench") {
        for size in [4096, 8192] {
            bench(&stream, &kernels, &blas, size)?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tensor_cores: {e}");
            ExitCode::FAILURE
        }
    }
}
