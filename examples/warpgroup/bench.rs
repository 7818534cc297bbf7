//! The timed side of the example: the safe kernels, their raw twins and cuBLAS, in alternated
//! rounds.

use super::{Kind, Operands, ROUNDS, WARM_UP, random, raw, safe, simple, upload};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;
use dlmd::cuda::Kernels;
use dlmd::dtype::F8E4M3FN;
use dlmd::half::{bf16, f16};
use dlmd_example_hopper_kernels as hk;
use dlmd_examples::Sides;
use dlmd_examples::blas::{cublas, tensor_maps};
use dlmd_examples::timing::Cover;
use std::error::Error;
use std::sync::Arc;

/// The sides of the bench.
const SIDES: [&str; 17] = [
    "cuBLAS bf16",
    "safe linear_bf16",
    "raw twin wgmma_nt_256_tma4",
    "cuBLAS f16",
    "safe linear_f16",
    "safe linear_fp8 (e4m3, scaled)",
    "safe linear_bias_bf16 (GELU)",
    "safe linear_bias_bf16 (bias only)",
    "safe linear_bf16_simple (README's, memory order, a block a chunk)",
    "safe linear_bf16_simple (README's, memory order, persistent)",
    "raw twin wgmma_nt_256_tma4, persistent",
    "cuBLAS bf16, b row-major",
    "safe matmul_bf16 (b row-major)",
    "raw twin wgmma_nn_256_tma4, persistent",
    "cuBLAS f16, b row-major",
    "safe matmul_f16 (b row-major)",
    "safe linear_bf16, registers as at launch (no setmaxnreg)",
];

/// The kernels and cuBLAS at `size`³ in alternated rounds.
pub(super) fn bench(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    size: usize,
) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    let (x, w) = (random(size * size, 0x1234_5678), random(size * size, 0x8765_4321));
    let (xb, wb) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &w, bf16::from_f32)?);
    let (xh, wh) = (upload(stream, &x, f16::from_f32)?, upload(stream, &w, f16::from_f32)?);
    let (x8, w8) = (
        upload(stream, &x, F8E4M3FN::from_f32)?,
        upload(stream, &w, F8E4M3FN::from_f32)?,
    );
    let bias = upload(stream, &random(size, 0x55), bf16::from_f32)?;
    let mut yb = stream.alloc_zeros::<bf16>(size * size)?;
    let mut yh = stream.alloc_zeros::<f16>(size * size)?;
    let maps = tensor_maps(stream, shape, false, &xb, &wb)?;
    // The row-major `b` of `x · b`: `w`'s data read as `k × n` (square).
    let maps_nn = tensor_maps(stream, shape, true, &xb, &wb)?;
    let mut sides = Sides::new(SIDES.len(), WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut times = vec![0.0; SIDES.len()];
        for turn in 0..SIDES.len() {
            let which = (turn + round) % SIDES.len();
            times[which] = cover.time(stream, || match which {
                0 => cublas(blas, shape, true, &xb, &wb, &mut yb),
                1 => safe(
                    stream,
                    kernels,
                    shape,
                    Kind::Bf16,
                    Operands::Bf16(&xb, &wb, &bias, &mut yb),
                ),
                2 => raw(stream, kernels, shape, (false, false), &xb, &wb, &maps, &mut yb),
                3 => cublas(blas, shape, true, &xh, &wh, &mut yh),
                4 => safe(stream, kernels, shape, Kind::F16, Operands::F16(&xh, &wh, &mut yh)),
                5 => safe(
                    stream,
                    kernels,
                    shape,
                    Kind::Fp8(0.5, 2.0),
                    Operands::Fp8(&x8, &w8, &mut yb),
                ),
                6 => {
                    let kind = Kind::Bias(hk::Activation::GELU_TANH);
                    safe(stream, kernels, shape, kind, Operands::Bf16(&xb, &wb, &bias, &mut yb))
                }
                7 => {
                    let kind = Kind::Bias(hk::Activation::NONE);
                    safe(stream, kernels, shape, kind, Operands::Bf16(&xb, &wb, &bias, &mut yb))
                }
                8 => simple(stream, kernels, shape, (false, false), &xb, &wb, &mut yb),
                9 => simple(stream, kernels, shape, (true, false), &xb, &wb, &mut yb),
                10 => raw(stream, kernels, shape, (true, false), &xb, &wb, &maps, &mut yb),
                11 => cublas(blas, shape, false, &xb, &wb, &mut yb),
                12 => safe(
                    stream,
                    kernels,
                    shape,
                    Kind::MatmulBf16,
                    Operands::Bf16(&xb, &wb, &bias, &mut yb),
                ),
                13 => raw(stream, kernels, shape, (true, true), &xb, &wb, &maps_nn, &mut yb),
                14 => cublas(blas, shape, false, &xh, &wh, &mut yh),
                15 => safe(
                    stream,
                    kernels,
                    shape,
                    Kind::MatmulF16,
                    Operands::F16(&xh, &wh, &mut yh),
                ),
                _ => simple(stream, kernels, shape, (true, true), &xb, &wb, &mut yb),
            })?;
        }
        sides.push(round, &times);
    }
    let t = sides.medians();
    let tflops = |ms: f64| 2.0 * (size as f64).powi(3) / ms / 1e9;
    for (i, name) in SIDES.iter().enumerate() {
        println!(
            "bench {size}³ x·wᵀ: {name} {:.4} ms ({:.0} TFLOP/s)",
            t[i],
            tflops(t[i])
        );
    }
    println!(
        "bench {size}³ ratios: bf16 safe/cuBLAS {:.3}, safe/raw {:.3}; f16 safe/cuBLAS {:.3}; fp8 safe/cuBLAS-bf16 {:.3}; \
         plain/bias+GELU {:.3}; plain/bias {:.3}; README's/cuBLAS {:.3} (persistent {:.3}); \
         safe/raw, both persistent {:.3}; x·b (b row-major): bf16 safe/cuBLAS {:.3}, safe/raw {:.3}, f16 \
         safe/cuBLAS {:.3}; linear_bf16 with setmaxnreg / without {:.3}",
        t[0] / t[1],
        t[2] / t[1],
        t[3] / t[4],
        t[0] / t[5],
        t[1] / t[6],
        t[1] / t[7],
        t[0] / t[8],
        t[0] / t[9],
        t[10] / t[1],
        t[11] / t[12],
        t[13] / t[12],
        t[14] / t[15],
        t[16] / t[1],
    );
    Ok(())
}
