//! Hopper `wgmma` products written in Rust (`examples/hopper-kernels`), `y = x · wᵀ` on `bf16`:
//! checked against the CPU (small integers, element for element) and cuBLAS (at 4096³: small
//! integers element for element, and random values by relative error); with `--bench`, timed
//! against cuBLAS (`cublasGemmEx`, `bf16` in and out, `f32` compute) in alternated rounds
//! (medians of 20 rounds after 3 warm-up ones, CUDA events, each span after a device copy that
//! covers the launch), at 4096³ and 8192³.
//!
//! Run with `cargo run --release --features hopper-kernels --example hopper [-- --bench]` on a
//! machine with an `sm_90a` GPU (H100, H200) and cuBLAS (`libcublas.so.*` where the dynamic
//! loader finds it).

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, Kernels};
use dlmd::half::bf16;
use dlmd::{Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_examples::Sides;
use dlmd_examples::blas::{Map, against_cublas, cublas, tensor_map};
use dlmd_examples::timing::{Cover, time};
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

const ROUNDS: usize = 23;
const WARM_UP: usize = 3;

/// The kernels: `(name, chunk columns, stages)`; the first [`CHECKED`] compute the product, the
/// others are measurements of its parts.
const VARIANTS: [(&str, usize, usize); 10] = [
    ("wgmma 128x256 s4", 256, 4),
    ("wgmma 128x256 s4 sync", 256, 4),
    ("wgmma 128x128 s4", 128, 4),
    ("wgmma 128x128 s3", 128, 3),
    ("wgmma 128x256 s4 mma first", 256, 4),
    ("wgmma 128x256 warp-specialised s4", 256, 4),
    ("wgmma 128x256 TMA s4", 256, 4),
    ("wgmma 128x256 TMA s4 persistent", 256, 4),
    ("(no loop loads) 128x256 s4", 256, 4),
    ("(no wgmma) 128x256 s4", 256, 4),
];

/// The variants that compute the product.
const CHECKED: usize = 8;

/// The tensor maps of `x` and `w` that the copy-engine variants take.
type Maps<'a> = (Map<'a, 128, 64>, Map<'a, 256, 64>);

/// The tensor maps of `x` (`m × k`) and `w` (`n × k`).
fn maps<'a>(
    x: &'a CudaSlice<bf16>,
    w: &'a CudaSlice<bf16>,
    (m, k, n): (usize, usize, usize),
) -> Result<Maps<'a>, Box<dyn Error>> {
    Ok((tensor_map(x, [m, k])?, tensor_map(w, [n, k])?))
}

/// `y = x · wᵀ` by variant `v` of [`VARIANTS`].
fn rust(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    (m, k, n): (usize, usize, usize),
    v: usize,
    (x, w, maps): (&CudaSlice<bf16>, &CudaSlice<bf16>, &Maps<'_>),
    y: &mut CudaSlice<bf16>,
) -> Result<(), Box<dyn Error>> {
    let (_, bn, stages) = VARIANTS[v];
    let xv = cuda::device_view::<_, Dims<2>, LayoutRight>(x, Dims::new([m, k]))?;
    let wv = cuda::device_view::<_, Dims<2>, LayoutRight>(w, Dims::new([n, k]))?;
    let mut yv = cuda::device_view_mut::<_, Dims<2>, LayoutRight>(y, Dims::new([m, n]))?;
    let ws = (5..=7).contains(&v);
    let chunks = (m / 128 * (n / bn)).max(1) as u32;
    let config = LaunchConfig {
        grid_dim: (
            if v == 7 {
                persistent_grid(stream, chunks)?
            } else {
                chunks
            },
            1,
            1,
        ),
        block_dim: (if ws { 384 } else { 256 }, 1, 1),
        shared_mem_bytes: if ws {
            hk::shared_bytes_ws(bn, stages)
        } else {
            hk::shared_bytes(bn, stages)
        },
    };
    cuda::scope(|s| {
        let launch = s.launch(stream, kernels, config);
        let y = yv.as_view_mut();
        match v {
            0 => hk::wgmma_nt_256_s4(launch, hk::WgmmaNt256S4Args { x: xv, w: wv, y }),
            1 => hk::wgmma_nt_256_s4_sync(launch, hk::WgmmaNt256S4SyncArgs { x: xv, w: wv, y }),
            2 => hk::wgmma_nt_128_s4(launch, hk::WgmmaNt128S4Args { x: xv, w: wv, y }),
            3 => hk::wgmma_nt_128_s3(launch, hk::WgmmaNt128S3Args { x: xv, w: wv, y }),
            4 => hk::wgmma_nt_256_s4_mma_first(launch, hk::WgmmaNt256S4MmaFirstArgs { x: xv, w: wv, y }),
            5 => hk::wgmma_nt_256_ws4(launch, hk::WgmmaNt256Ws4Args { x: xv, w: wv, y }),
            6 | 7 => hk::wgmma_nt_256_tma4(launch, maps.0.map(), maps.1.map(), y),
            8 => hk::wgmma_nt_256_s4_no_loads(launch, hk::WgmmaNt256S4NoLoadsArgs { x: xv, w: wv, y }),
            _ => hk::wgmma_nt_256_s4_no_mma(launch, hk::WgmmaNt256S4NoMmaArgs { x: xv, w: wv, y }),
        }
    })?;
    Ok(())
}

/// The blocks of the persistent variant: one a multiprocessor, or a third of the chunks where
/// that is fewer (so that small checks too run blocks of several chunks).
fn persistent_grid(stream: &Arc<CudaStream>, chunks: u32) -> Result<u32, Box<dyn Error>> {
    Ok(multiprocessors(stream)?.min((chunks / 3).max(1)))
}

/// The device's multiprocessors.
fn multiprocessors(stream: &Arc<CudaStream>) -> Result<u32, Box<dyn Error>> {
    use cudarc::driver::sys::CUdevice_attribute;
    let count = stream
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    Ok(count.max(1) as u32)
}

/// Small integers: every product and sum is exact in `f32`, so each result is the one `bf16`
/// its exact value rounds to, whichever way it was summed.
fn operand(len: usize, mul: usize, modulo: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32((i * mul % modulo) as f32 - (modulo / 2) as f32))
        .collect()
}

/// Random values in `[-1, 1)` from `seed` ([`dlmd_examples::uniform`]), as `bf16`.
fn random(len: usize, seed: u64) -> Vec<bf16> {
    dlmd_examples::uniform(len, seed)
        .into_iter()
        .map(bf16::from_f32)
        .collect()
}

/// A `bf16` NaN, written over outputs before each run: an element left unwritten stays NaN.
const POISON: bf16 = bf16::from_bits(0x7fc1);

/// Runs variant `v` (or cuBLAS) on poisoned output and returns it.
fn product(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    shape: (usize, usize, usize),
    v: Option<usize>,
    x: &CudaSlice<bf16>,
    w: &CudaSlice<bf16>,
) -> Result<Vec<bf16>, Box<dyn Error>> {
    let (m, _, n) = shape;
    let mut y = stream.clone_htod(&vec![POISON; m * n])?;
    match v {
        None => cublas(blas, shape, true, x, w, &mut y)?,
        Some(v) => {
            let maps = maps(x, w, shape)?;
            rust(stream, kernels, shape, v, (x, w, &maps), &mut y)?
        }
    }
    Ok(stream.clone_dtoh(&y)?)
}

/// Every variant against the CPU, element for element, at `(m, k, n)` (`n` a multiple of 256).
fn check_cpu(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    (m, k, n): (usize, usize, usize),
) -> Result<(), Box<dyn Error>> {
    let (x, w) = (operand(m * k, 7, 9), operand(n * k, 5, 7));
    let (dx, dw) = (stream.clone_htod(&x)?, stream.clone_htod(&w)?);
    let expected: Vec<bf16> = (0..m * n)
        .map(|i| {
            let (r, j) = (i / n, i % n);
            bf16::from_f32((0..k).map(|p| x[r * k + p].to_f32() * w[j * k + p].to_f32()).sum())
        })
        .collect();
    for v in std::iter::once(None).chain((0..CHECKED).map(Some)) {
        let got = product(stream, kernels, blas, (m, k, n), v, &dx, &dw)?;
        let wrong = got
            .iter()
            .zip(&expected)
            .filter(|(g, e)| g.to_bits() != e.to_bits())
            .count();
        let name = v.map_or("cuBLAS", |v| VARIANTS[v].0);
        if wrong != 0 {
            let first = got.iter().zip(&expected).position(|(g, e)| g.to_bits() != e.to_bits());
            return Err(format!(
                "{name} {m}x{k}x{n}: {wrong} of {} elements differ from the CPU (first at {first:?})",
                m * n
            )
            .into());
        }
        println!("check {name} {m}x{k}x{n}: all {} elements match the CPU", m * n);
    }
    Ok(())
}

/// Every variant against cuBLAS at `size`³: on small integers element for element, on random
/// values by `‖y − y_cuBLAS‖ / ‖y_cuBLAS‖`.
fn check_cublas(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    size: usize,
) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    for integers in [true, false] {
        let (x, w) = if integers {
            (operand(size * size, 7, 9), operand(size * size, 5, 7))
        } else {
            (random(size * size, 0x9e37_79b9), random(size * size, 0x7f4a_7c15))
        };
        let (dx, dw) = (stream.clone_htod(&x)?, stream.clone_htod(&w)?);
        let reference = product(stream, kernels, blas, shape, None, &dx, &dw)?;
        for (v, (name, _, _)) in VARIANTS.iter().enumerate().take(CHECKED) {
            let got = product(stream, kernels, blas, shape, Some(v), &dx, &dw)?;
            against_cublas(&format!("{name} {size}³"), integers, &got, &reference)?;
        }
    }
    Ok(())
}

/// `y = x · wᵀ` at `size`³: the variants and cuBLAS in alternated rounds.
fn bench(stream: &Arc<CudaStream>, kernels: &Kernels, blas: &CudaBlas, size: usize) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    let (x, w) = (
        stream.clone_htod(&random(size * size, 0x1234_5678))?,
        stream.clone_htod(&random(size * size, 0x8765_4321))?,
    );
    let mut y = stream.alloc_zeros::<bf16>(size * size)?;
    let maps = maps(&x, &w, shape)?;
    let sides_count = 1 + VARIANTS.len();
    let mut sides = Sides::new(sides_count, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut times = vec![0.0; sides_count];
        // Alternated: the order of the sides turns each round.
        for turn in 0..sides_count {
            let which = (turn + round) % sides_count;
            times[which] = cover.time(stream, || match which {
                0 => cublas(blas, shape, true, &x, &w, &mut y),
                v => rust(stream, kernels, shape, v - 1, (&x, &w, &maps), &mut y),
            })?;
        }
        sides.push(round, &times);
    }
    let m = sides.medians();
    let tflops = |ms: f64| 2.0 * (size as f64).powi(3) / ms / 1e9;
    println!(
        "bench bf16 {size}³ x·wᵀ: cuBLAS {:.4} ms ({:.0} TFLOP/s)",
        m[0],
        tflops(m[0])
    );
    for (v, (name, _, _)) in VARIANTS.iter().enumerate() {
        println!(
            "bench bf16 {size}³ x·wᵀ: {name} {:.4} ms ({:.0} TFLOP/s); / cuBLAS = {:.3}",
            m[v + 1],
            tflops(m[v + 1]),
            m[0] / m[v + 1]
        );
    }
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, hk::PTX)?;
    let blas = CudaBlas::new(stream.clone())?;
    for shape in [(128, 64, 256), (256, 512, 512), (384, 320, 768)] {
        check_cpu(&stream, &kernels, &blas, shape)?;
    }
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--small") {
        return Ok(());
    }
    check_cublas(&stream, &kernels, &blas, 4096)?;
    // Time once through the helper, so that a missing cuBLAS is an error here, not mid-bench.
    time(&stream, || Ok(()))?;
    if args.iter().any(|a| a == "--bench") {
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
            eprintln!("hopper: {e}");
            ExitCode::FAILURE
        }
    }
}
