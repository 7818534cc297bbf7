//! The safe Hopper products (`examples/hopper-kernels`' `linear_*`, `matmul_*` and
//! `gemm_bf16`, written with `dlmd::kernel::warpgroup`: tensor maps, a four-stage pipeline, a
//! producer and two consumer warpgroups of `wgmma`), checked against the CPU on aligned and
//! ragged shapes (`bf16`, `f16`, FP8 E4M3 with scales, the fused bias and activations,
//! `α · x · wᵀ + β · c`, `x · b` with a row-major `b`) and against cuBLAS at 4096³; with
//! `--bench`, timed at 4096³ and 8192³ against cuBLAS (`cublasGemmEx`, same process) and
//! against the raw twins (`wgmma_nt_256_tma4`, `wgmma_nn_256_tma4`), in alternated rounds
//! (medians of 20 rounds after 3 warm-up ones, CUDA events). The safe kernels run on a
//! persistent grid (a block a multiprocessor).
//!
//! Run with `cargo run --release --features hopper-kernels,tensor-kernels --example warpgroup [-- --bench]`
//! on a machine with an `sm_90a` GPU (H100, H200) and cuBLAS.

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use dlmd::cuda::{self, Kernels, TiledMap};
use dlmd::dtype::{DlElement, F8E4M3FN};
use dlmd::half::{bf16, f16};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_examples::blas::{against_cublas, cublas};
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

mod any_shape;
mod bench;

const ROUNDS: usize = 23;
const WARM_UP: usize = 3;

/// The safe kernels run on a persistent grid ([`grid`]); the guide's kernel with a block a
/// chunk.
pub(crate) const PERSISTENT: bool = true;

/// Blocks of 384 threads, one per `128 × 256` chunk, or (`persistent`) at most one per
/// multiprocessor, each taking chunks `b`, `b + blocks`, … in turn: its producer then fills the
/// stages of its next chunk while its consumers write the last.
fn grid(stream: &Arc<CudaStream>, m: usize, n: usize, persistent: bool) -> Result<LaunchConfig, Box<dyn Error>> {
    let chunks = (m.div_ceil(128) * n.div_ceil(256)).max(1) as u32;
    let blocks = if persistent {
        use cudarc::driver::sys::CUdevice_attribute;
        let sms = stream
            .context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        chunks.min(sms.max(1) as u32)
    } else {
        chunks
    };
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (384, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// The kernels, by their inputs and epilogue.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bf16,
    F16,
    /// FP8 E4M3 with these per-tensor scales of `x` and `w`.
    Fp8(f32, f32),
    /// `bf16` with a bias and this activation.
    Bias(hk::Activation),
    /// `c = α · x · wᵀ + β · c`, `f32` `c`.
    Gemm(f32, f32),
    /// `y = x · b` on `bf16`, `b` row-major `k × n`.
    MatmulBf16,
    /// `y = x · b` on `f16`.
    MatmulF16,
}

/// The tensor map of a matrix with boxes of `R × C` in the 128-byte swizzle.
type Map<'a, T, const R: usize, const C: usize> = TiledMap<'a, T, (Const<R>, Const<C>), Swizzle128>;

/// A device matrix of `rows × cols`, row-major, its tensor map of box `(R, C)` made here.
fn map<'a, T: DlElement + DeviceRepr, const R: usize, const C: usize>(
    data: &'a CudaSlice<T>,
    [rows, cols]: [usize; 2],
) -> Result<Map<'a, T, R, C>, Box<dyn Error>> {
    let view = cuda::device_view::<_, Dims<2>, LayoutRight>(data, Dims::new([rows, cols]))?;
    Ok(TiledMap::new(&view)?)
}

/// `y = x · wᵀ` (or `c = α · x · wᵀ + β · c`) by the safe kernel of `kind`, `x` of `m × k`,
/// `w` of `n × k` (for the `Matmul` kinds, `b` of `k × n`: `y = x · b`), `y` of `m × n`, each
/// with the kernel's element type ([`Operands`]).
fn safe(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    (m, k, n): (usize, usize, usize),
    kind: Kind,
    operands: Operands<'_>,
) -> Result<(), Box<dyn Error>> {
    let config = grid(stream, m, n, PERSISTENT)?;
    macro_rules! maps {
        ($x:expr, $w:expr, $d:literal) => {
            (map::<_, 128, $d>($x, [m, k])?, map::<_, 256, $d>($w, [n, k])?)
        };
    }
    macro_rules! out {
        ($y:expr) => {
            cuda::device_view_mut::<_, Dims<2>, LayoutRight>($y, Dims::new([m, n]))?
        };
    }
    match (kind, operands) {
        (Kind::Bf16, Operands::Bf16(x, w, _, y)) => {
            let ((xm, wm), mut yv) = (maps!(x, w, 64), out!(y));
            cuda::scope(|s| hk::linear_bf16(s.launch(stream, kernels, config), xm.map(), wm.map(), yv.as_view_mut()))?
        }
        (Kind::MatmulBf16, Operands::Bf16(x, b, _, y)) => {
            let (xm, bm) = (map::<_, 128, 64>(x, [m, k])?, map::<_, 64, 256>(b, [k, n])?);
            let mut yv = out!(y);
            cuda::scope(|s| hk::matmul_bf16(s.launch(stream, kernels, config), xm.map(), bm.map(), yv.as_view_mut()))?
        }
        (Kind::MatmulF16, Operands::F16(x, b, y)) => {
            let (xm, bm) = (map::<_, 128, 64>(x, [m, k])?, map::<_, 64, 256>(b, [k, n])?);
            let mut yv = out!(y);
            cuda::scope(|s| hk::matmul_f16(s.launch(stream, kernels, config), xm.map(), bm.map(), yv.as_view_mut()))?
        }
        (Kind::Bias(activation), Operands::Bf16(x, w, bias, y)) => {
            let ((xm, wm), mut yv) = (maps!(x, w, 64), out!(y));
            let bias = cuda::device_view::<_, Dims<1>, LayoutRight>(bias, Dims::new([n]))?;
            cuda::scope(|s| {
                let launch = s.launch(stream, kernels, config);
                hk::linear_bias_bf16(launch, activation, xm.map(), wm.map(), bias, yv.as_view_mut())
            })?
        }
        (Kind::F16, Operands::F16(x, w, y)) => {
            let ((xm, wm), mut yv) = (maps!(x, w, 64), out!(y));
            cuda::scope(|s| hk::linear_f16(s.launch(stream, kernels, config), xm.map(), wm.map(), yv.as_view_mut()))?
        }
        (Kind::Fp8(scale_x, scale_w), Operands::Fp8(x, w, y)) => {
            let ((xm, wm), mut yv) = (maps!(x, w, 128), out!(y));
            cuda::scope(|s| {
                let args = hk::LinearFp8Args {
                    scale_x,
                    scale_w,
                    x: xm.map(),
                    w: wm.map(),
                    y: yv.as_view_mut(),
                };
                hk::linear_fp8(s.launch(stream, kernels, config), args)
            })?
        }
        (Kind::Gemm(alpha, beta), Operands::Gemm(x, w, c)) => {
            let ((xm, wm), mut cv) = (maps!(x, w, 64), out!(c));
            cuda::scope(|s| {
                let args = hk::GemmBf16Args {
                    alpha,
                    beta,
                    x: xm.map(),
                    w: wm.map(),
                    c: cv.as_view_mut(),
                };
                hk::gemm_bf16(s.launch(stream, kernels, config), args)
            })?
        }
        (kind, _) => return Err(format!("{kind:?}: operands of another type").into()),
    }
    Ok(())
}

/// The device buffers of a product: `x`, `w` (and `bias`), and the output.
enum Operands<'a> {
    Bf16(
        &'a CudaSlice<bf16>,
        &'a CudaSlice<bf16>,
        &'a CudaSlice<bf16>,
        &'a mut CudaSlice<bf16>,
    ),
    F16(&'a CudaSlice<f16>, &'a CudaSlice<f16>, &'a mut CudaSlice<f16>),
    Fp8(
        &'a CudaSlice<F8E4M3FN>,
        &'a CudaSlice<F8E4M3FN>,
        &'a mut CudaSlice<bf16>,
    ),
    Gemm(&'a CudaSlice<bf16>, &'a CudaSlice<bf16>, &'a mut CudaSlice<f32>),
}

/// Small integers (`-h ..= h`, `h = modulo / 2`) in a pattern of `mul`: exact in every input
/// type, products and sums exact in `f32`.
fn ints(len: usize, mul: usize, modulo: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (i * mul % modulo) as f32 - (modulo / 2) as f32)
        .collect()
}

/// `act(x · wᵀ + bias)` (or `α · x · wᵀ + β · c`) on the CPU, in `f64`.
fn expected(kind: Kind, (m, k, n): (usize, usize, usize), x: &[f32], w: &[f32], bias: &[f32], c: &[f32]) -> Vec<f64> {
    (0..m * n)
        .map(|i| {
            let (r, j) = (i / n, i % n);
            let dot: f64 = (0..k).map(|p| f64::from(x[r * k + p]) * f64::from(w[j * k + p])).sum();
            match kind {
                Kind::Fp8(sx, sw) => f64::from(sx * sw) * dot,
                Kind::Bias(act) => {
                    let v = dot + f64::from(bias[j]);
                    match act {
                        hk::Activation::GELU_TANH => {
                            0.5 * v * (1.0 + (0.797_884_560_8 * (v + 0.044_715 * v * v * v)).tanh())
                        }
                        hk::Activation::SILU => v / (1.0 + (-v).exp()),
                        _ => v,
                    }
                }
                Kind::Gemm(alpha, beta) => f64::from(alpha) * dot + f64::from(beta) * f64::from(c[i]),
                _ => dot,
            }
        })
        .collect()
}

/// The largest difference between `got` and `want`, relative to `max(1, |want|)`, and where:
/// NaN (an element left unwritten) is the worst.
fn worst(got: &[f64], want: &[f64]) -> (f64, usize) {
    let mut worst = (0.0, 0);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = ((g - w) / w.abs().max(1.0)).abs();
        if err.is_nan() {
            return (err, i);
        }
        if err > worst.0 {
            worst = (err, i);
        }
    }
    worst
}

/// Runs `kind` at `shape` on small integers and compares with the CPU: exact where the result
/// rounds once (bf16, f16, FP8 with power-of-two scales, `f32` `c`), within the rounding of
/// `bf16` where an activation is applied first.
fn check_cpu(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    shape: (usize, usize, usize),
    kind: Kind,
) -> Result<(), Box<dyn Error>> {
    // FP8 rows need 16 elements for the copy engine's 16 bytes, and a row-major `b` rows of
    // `n` a multiple of 8.
    let (m, k, n) = match kind {
        Kind::Fp8(..) => (shape.0, shape.1.next_multiple_of(16), shape.2),
        Kind::MatmulBf16 | Kind::MatmulF16 => (shape.0, shape.1, shape.2.next_multiple_of(8)),
        _ => shape,
    };
    let shape = (m, k, n);
    // Integers of at most 4 in magnitude: exact in FP8 E4M3 too.
    let (x, w) = (ints(m * k, 7, 9), ints(n * k, 5, 7));
    let bias = ints(n, 3, 11);
    let c0 = ints(m * n, 11, 13);
    let want = expected(kind, shape, &x, &w, &bias, &c0);
    let nan = vec![f32::NAN; m * n];
    // A row-major `b` is `wᵀ`.
    let b = transpose(&w, n, k);
    let got: Vec<f64> = match kind {
        Kind::Fp8(..) => {
            let (dx, dw) = (
                upload(stream, &x, F8E4M3FN::from_f32)?,
                upload(stream, &w, F8E4M3FN::from_f32)?,
            );
            let mut y = upload(stream, &nan, bf16::from_f32)?;
            safe(stream, kernels, shape, kind, Operands::Fp8(&dx, &dw, &mut y))?;
            stream.clone_dtoh(&y)?.iter().map(|v| v.to_f64()).collect()
        }
        Kind::MatmulF16 => {
            let (dx, db) = (upload(stream, &x, f16::from_f32)?, upload(stream, &b, f16::from_f32)?);
            let mut y = upload(stream, &nan, f16::from_f32)?;
            safe(stream, kernels, shape, kind, Operands::F16(&dx, &db, &mut y))?;
            stream.clone_dtoh(&y)?.iter().map(|v| v.to_f64()).collect()
        }
        Kind::F16 => {
            let (dx, dw) = (upload(stream, &x, f16::from_f32)?, upload(stream, &w, f16::from_f32)?);
            let mut y = upload(stream, &nan, f16::from_f32)?;
            safe(stream, kernels, shape, kind, Operands::F16(&dx, &dw, &mut y))?;
            stream.clone_dtoh(&y)?.iter().map(|v| v.to_f64()).collect()
        }
        Kind::Gemm(..) => {
            let (dx, dw) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &w, bf16::from_f32)?);
            let mut c = stream.clone_htod(&c0)?;
            safe(stream, kernels, shape, kind, Operands::Gemm(&dx, &dw, &mut c))?;
            stream.clone_dtoh(&c)?.iter().map(|&v| f64::from(v)).collect()
        }
        _ => {
            let w = if kind == Kind::MatmulBf16 { &b } else { &w };
            let (dx, dw) = (upload(stream, &x, bf16::from_f32)?, upload(stream, w, bf16::from_f32)?);
            let dbias = upload(stream, &bias, bf16::from_f32)?;
            let mut y = upload(stream, &nan, bf16::from_f32)?;
            safe(stream, kernels, shape, kind, Operands::Bf16(&dx, &dw, &dbias, &mut y))?;
            stream.clone_dtoh(&y)?.iter().map(|v| v.to_f64()).collect()
        }
    };
    // Rounded once to the output type: exact for the sums (integers) where they fit its
    // mantissa, and the activations to within half a unit of `bf16` (2⁻⁸ relative).
    let round = |v: f64| match kind {
        Kind::F16 | Kind::MatmulF16 => f16::from_f64(v).to_f64(),
        Kind::Gemm(..) => v as f32 as f64,
        _ => bf16::from_f64(v).to_f64(),
    };
    let want: Vec<f64> = want.into_iter().map(round).collect();
    let tolerance = if matches!(kind, Kind::Bias(a) if a != hk::Activation::NONE) {
        1.0 / 128.0
    } else {
        0.0
    };
    let (err, at) = worst(&got, &want);
    if err.is_nan() || err > tolerance {
        return Err(format!(
            "{kind:?} {m}x{k}x{n}: element {at} is {} where the CPU has {} (relative error {err:e})",
            got[at], want[at]
        )
        .into());
    }
    println!(
        "check {kind:?} {m}x{k}x{n}: all {} elements match the CPU (worst relative error {err:.1e})",
        m * n
    );
    Ok(())
}

/// The transpose of the row-major `rows × cols` matrix `a`.
fn transpose(a: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|i| a[i % rows * cols + i / rows]).collect()
}

/// `values` converted by `f` into a new device buffer.
fn upload<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    values: &[f32],
    f: impl Fn(f32) -> T,
) -> Result<CudaSlice<T>, Box<dyn Error>> {
    Ok(stream.clone_htod(&values.iter().map(|&v| f(v)).collect::<Vec<_>>())?)
}

/// The safe `bf16` kernels (`x · wᵀ` and `x · b`) and their raw twins against cuBLAS at
/// `size`³: on small integers element for element, on random values by
/// `‖y − y_cuBLAS‖ / ‖y_cuBLAS‖`.
fn check_cublas(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    size: usize,
) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    for integers in [true, false] {
        let (x, w) = if integers {
            (ints(size * size, 7, 9), ints(size * size, 5, 7))
        } else {
            (
                dlmd_examples::uniform(size * size, 0x9e37_79b9),
                dlmd_examples::uniform(size * size, 0x7f4a_7c15),
            )
        };
        let (dx, dw) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &w, bf16::from_f32)?);
        let db = upload(stream, &transpose(&w, size, size), bf16::from_f32)?;
        let dbias = stream.alloc_zeros::<bf16>(size)?;
        // `x · wᵀ`, then `x · b` with the row-major `b = wᵀ`: the same product.
        for (weight, kind, name) in [
            (true, Kind::Bf16, "linear_bf16"),
            (false, Kind::MatmulBf16, "matmul_bf16"),
        ] {
            let w = if weight { &dw } else { &db };
            let mut reference = stream.alloc_zeros::<bf16>(size * size)?;
            cublas(blas, shape, weight, &dx, w, &mut reference)?;
            let mut y = upload(stream, &vec![f32::NAN; size * size], bf16::from_f32)?;
            safe(stream, kernels, shape, kind, Operands::Bf16(&dx, w, &dbias, &mut y))?;
            let reference = stream.clone_dtoh(&reference)?;
            against_cublas(
                &format!("{name} {size}³"),
                integers,
                &stream.clone_dtoh(&y)?,
                &reference,
            )?;
            // The raw twin of the product, persistent.
            let (square, xm) = ([size, size], map::<_, 128, 64>(&dx, [size, size])?);
            let mut y = upload(stream, &vec![f32::NAN; size * size], bf16::from_f32)?;
            if weight {
                let wm = map::<_, 256, 64>(w, square)?;
                raw(stream, kernels, (size, size), true, Twin::Nt(&xm, &wm), &mut y)?;
            } else {
                let bm = map::<_, 64, 256>(w, square)?;
                raw(stream, kernels, (size, size), true, Twin::Nn(&xm, &bm), &mut y)?;
            }
            let twin = if weight {
                "wgmma_nt_256_tma4"
            } else {
                "wgmma_nn_256_tma4"
            };
            against_cublas(
                &format!("{twin} {size}³"),
                integers,
                &stream.clone_dtoh(&y)?,
                &reference,
            )?;
        }
    }
    Ok(())
}

/// The operands of a raw twin, as tensor maps: `x` and `w` (`y = x · wᵀ`), or `x` and the
/// row-major `b` (`y = x · b`).
#[derive(Clone, Copy)]
enum Twin<'m, 'a> {
    Nt(&'m Map<'a, bf16, 128, 64>, &'m Map<'a, bf16, 256, 64>),
    Nn(&'m Map<'a, bf16, 128, 64>, &'m Map<'a, bf16, 64, 256>),
}

/// `y` (`m × n`) by the raw twin of `twin`'s product, a block a chunk or on a persistent grid.
fn raw(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    (m, n): (usize, usize),
    persistent: bool,
    twin: Twin<'_, '_>,
    y: &mut CudaSlice<bf16>,
) -> Result<(), Box<dyn Error>> {
    let mut yv = cuda::device_view_mut::<_, Dims<2>, LayoutRight>(y, Dims::new([m, n]))?;
    let config = LaunchConfig {
        shared_mem_bytes: hk::shared_bytes_ws(256, 4),
        ..grid(stream, m, n, persistent)?
    };
    cuda::scope(|s| {
        let launch = s.launch(stream, kernels, config);
        match twin {
            Twin::Nt(x, w) => hk::wgmma_nt_256_tma4(launch, x.map(), w.map(), yv.as_view_mut()),
            Twin::Nn(x, b) => hk::wgmma_nn_256_tma4(launch, x.map(), b.map(), yv.as_view_mut()),
        }
    })?;
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, hk::PTX)?;
    let tensor = Kernels::load(&ctx, dlmd_example_tensor_kernels::PTX)?;
    let blas = CudaBlas::new(stream.clone())?;
    let kinds = [
        Kind::Bf16,
        Kind::F16,
        Kind::Fp8(0.5, 2.0),
        Kind::Bias(hk::Activation::NONE),
        Kind::Bias(hk::Activation::GELU_TANH),
        Kind::Bias(hk::Activation::SILU),
        Kind::Gemm(2.0, -1.0),
        Kind::MatmulBf16,
        Kind::MatmulF16,
    ];
    // Aligned, and ragged on every side (the copies' boxes past the edges bring zeros; the
    // stores stop at the edges); `k` a multiple of 16 bytes, as the copy engine needs.
    for shape in [
        (128, 64, 256),
        (256, 512, 512),
        (100, 72, 300),
        (300, 200, 520),
        (1, 16, 1),
    ] {
        for kind in kinds {
            check_cpu(&stream, &kernels, shape, kind)?;
        }
    }
    let args: Vec<String> = std::env::args().collect();
    // Any shape: `wgmma` where the copy engine can read the operands, `mma.sync` otherwise
    // (left out of `--small`, the Hopper kernels' run under the sanitizers; the `mma.sync`
    // kernels have their own, `tensor-tests`).
    if !args.iter().any(|a| a == "--small") {
        any_shape::check(&stream, (&kernels, &tensor))?;
    }
    if args.iter().any(|a| a == "--fixed-cost") {
        return bench::fixed_cost(&stream, &kernels, &blas, 4096);
    }
    if args.iter().any(|a| a == "--small") {
        return Ok(());
    }
    check_cublas(&stream, &kernels, &blas, 4096)?;
    if args.iter().any(|a| a == "--bench") {
        for size in [4096, 8192] {
            bench::bench(&stream, &kernels, &blas, size)?;
        }
        bench::fixed_cost(&stream, &kernels, &blas, 4096)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("warpgroup: {e}");
            ExitCode::FAILURE
        }
    }
}
