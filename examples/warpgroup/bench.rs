//! The timed side of the example: the safe kernels, their raw twins and cuBLAS, in alternated
//! rounds.

use super::{Kind, Operands, PERSISTENT, ROUNDS, Twin, WARM_UP, grid, map, raw, safe, upload};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;
use dlmd::cuda::{self, Kernels};
use dlmd::dtype::F8E4M3FN;
use dlmd::half::{bf16, f16};
use dlmd::{Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_examples::Sides;
use dlmd_examples::blas::cublas;
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
    "safe linear_bf16_simple (guide's, memory order, a block a chunk)",
    "safe linear_bf16_simple (guide's, memory order, persistent)",
    "raw twin wgmma_nt_256_tma4, persistent",
    "cuBLAS bf16, b row-major",
    "safe matmul_bf16 (b row-major)",
    "raw twin wgmma_nn_256_tma4, persistent",
    "cuBLAS f16, b row-major",
    "safe matmul_f16 (b row-major)",
    "safe linear_bf16, its tensor maps made in the call",
];

/// The kernels and cuBLAS at `size`³ in alternated rounds. The safe kernels' tensor maps are
/// made once, before the rounds, as the raw twins' are: the kernels are timed alone. One side
/// makes them in each call (`TiledMap::new` encodes each map on the host, which the launch
/// passes in the kernel's parameter), which is what a call costs where nothing keeps them.
pub(super) fn bench(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    size: usize,
) -> Result<(), Box<dyn Error>> {
    let shape = (size, size, size);
    let (x, w) = (
        dlmd_examples::uniform(size * size, 0x1234_5678),
        dlmd_examples::uniform(size * size, 0x8765_4321),
    );
    let (xb, wb) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &w, bf16::from_f32)?);
    let (xh, wh) = (upload(stream, &x, f16::from_f32)?, upload(stream, &w, f16::from_f32)?);
    let (x8, w8) = (
        upload(stream, &x, F8E4M3FN::from_f32)?,
        upload(stream, &w, F8E4M3FN::from_f32)?,
    );
    let bias = upload(stream, &dlmd_examples::uniform(size, 0x55), bf16::from_f32)?;
    let mut yb = stream.alloc_zeros::<bf16>(size * size)?;
    let mut yh = stream.alloc_zeros::<f16>(size * size)?;
    let m = [size, size];
    let (xm, wm, bm) = (
        map::<_, 128, 64>(&xb, m)?,
        map::<_, 256, 64>(&wb, m)?,
        map::<_, 64, 256>(&wb, m)?,
    );
    let (xmh, wmh, bmh) = (
        map::<_, 128, 64>(&xh, m)?,
        map::<_, 256, 64>(&wh, m)?,
        map::<_, 64, 256>(&wh, m)?,
    );
    let (xm8, wm8) = (map::<_, 128, 128>(&x8, m)?, map::<_, 256, 128>(&w8, m)?);
    let bias_view = cuda::device_view::<_, Dims<1>, LayoutRight>(&bias, Dims::new([size]))?;
    let (persistent, per_chunk) = (grid(stream, size, size, PERSISTENT)?, grid(stream, size, size, false)?);
    let mut sides = Sides::new(SIDES.len(), WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut times = vec![0.0; SIDES.len()];
        for turn in 0..SIDES.len() {
            let which = (turn + round) % SIDES.len();
            // A safe kernel on the maps made above, into `yb` or `yh`.
            macro_rules! launch {
                ($y:expr, $config:expr, |$l:ident, $yv:ident| $call:expr) => {{
                    let mut view = cuda::device_view_mut::<_, Dims<2>, LayoutRight>($y, Dims::new(m))?;
                    cuda::scope(|s| {
                        let ($l, $yv) = (s.launch(stream, kernels, $config), view.as_view_mut());
                        $call
                    })?;
                    Ok(())
                }};
            }
            times[which] = cover.time(stream, || match which {
                0 => cublas(blas, shape, true, &xb, &wb, &mut yb),
                1 => launch!(&mut yb, persistent, |l, y| hk::linear_bf16(l, xm.map(), wm.map(), y)),
                2 => raw(stream, kernels, (size, size), false, Twin::Nt(&xm, &wm), &mut yb),
                3 => cublas(blas, shape, true, &xh, &wh, &mut yh),
                4 => launch!(&mut yh, persistent, |l, y| hk::linear_f16(l, xmh.map(), wmh.map(), y)),
                5 => launch!(&mut yb, persistent, |l, y| {
                    let args = hk::LinearFp8Args {
                        scale_x: 0.5,
                        scale_w: 2.0,
                        x: xm8.map(),
                        w: wm8.map(),
                        y,
                    };
                    hk::linear_fp8(l, args)
                }),
                6 | 7 => {
                    let act = if which == 6 {
                        hk::Activation::GELU_TANH
                    } else {
                        hk::Activation::NONE
                    };
                    launch!(&mut yb, persistent, |l, y| hk::linear_bias_bf16(
                        l,
                        act,
                        xm.map(),
                        wm.map(),
                        bias_view,
                        y
                    ))
                }
                8 => launch!(&mut yb, per_chunk, |l, y| hk::linear_bf16_simple(
                    l,
                    xm.map(),
                    wm.map(),
                    y
                )),
                9 => launch!(&mut yb, persistent, |l, y| hk::linear_bf16_simple(
                    l,
                    xm.map(),
                    wm.map(),
                    y
                )),
                10 => raw(stream, kernels, (size, size), true, Twin::Nt(&xm, &wm), &mut yb),
                11 => cublas(blas, shape, false, &xb, &wb, &mut yb),
                12 => launch!(&mut yb, persistent, |l, y| hk::matmul_bf16(l, xm.map(), bm.map(), y)),
                13 => raw(stream, kernels, (size, size), true, Twin::Nn(&xm, &bm), &mut yb),
                14 => cublas(blas, shape, false, &xh, &wh, &mut yh),
                15 => launch!(&mut yh, persistent, |l, y| hk::matmul_f16(l, xmh.map(), bmh.map(), y)),
                _ => safe(
                    stream,
                    kernels,
                    shape,
                    Kind::Bf16,
                    Operands::Bf16(&xb, &wb, &bias, &mut yb),
                ),
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
         plain/bias+GELU {:.3}; plain/bias {:.3}; guide's/cuBLAS {:.3} (persistent {:.3}); \
         safe/raw, both persistent {:.3}; x·b (b row-major): bf16 safe/cuBLAS {:.3}, safe/raw {:.3}, f16 \
         safe/cuBLAS {:.3}; maps made in the call / made before {:.3}",
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

/// The sides whose fixed cost is fitted.
const FIXED_SIDES: [&str; 5] = [
    "safe linear_bf16",
    "cuBLAS bf16",
    "safe linear_bf16, no stores (linear_bf16_products)",
    "safe linear_fp8",
    "safe linear_bf16, stores from registers (linear_bf16_direct)",
];

/// What a call costs besides its products: each side of [`FIXED_SIDES`] timed at
/// `size × k × size` for `k` of `size / 2`, `size` and `2 · size` in alternated rounds, the
/// safe kernels' maps made before. The products grow with `k`; what a chunk does once (its
/// epilogue, the pipeline's start) and the launch do not, so the line through a side's three
/// times crosses `k = 0` at that fixed cost.
pub(super) fn fixed_cost(
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    blas: &CudaBlas,
    size: usize,
) -> Result<(), Box<dyn Error>> {
    let depths = [size / 2, size, 2 * size];
    let (x, w) = (
        dlmd_examples::uniform(size * 2 * size, 0x2545_f491),
        dlmd_examples::uniform(size * 2 * size, 0x9e37_79b9),
    );
    let (xb, wb) = (upload(stream, &x, bf16::from_f32)?, upload(stream, &w, bf16::from_f32)?);
    let (x8, w8) = (
        upload(stream, &x, F8E4M3FN::from_f32)?,
        upload(stream, &w, F8E4M3FN::from_f32)?,
    );
    let mut yb = stream.alloc_zeros::<bf16>(size * size)?;
    let mut maps = Vec::new();
    for k in depths {
        maps.push((
            map::<_, 128, 64>(&xb, [size, k])?,
            map::<_, 256, 64>(&wb, [size, k])?,
            map::<_, 128, 128>(&x8, [size, k])?,
            map::<_, 256, 128>(&w8, [size, k])?,
        ));
    }
    let config = grid(stream, size, size, PERSISTENT)?;
    let count = FIXED_SIDES.len() * depths.len();
    let mut sides = Sides::new(count, WARM_UP);
    let mut cover = Cover::new(stream)?;
    for round in 0..ROUNDS {
        let mut times = vec![0.0; count];
        for turn in 0..count {
            let which = (turn + round) % count;
            let (side, depth) = (which / depths.len(), which % depths.len());
            let (xm, wm, xm8, wm8) = &maps[depth];
            times[which] = cover.time(stream, || {
                if side == 1 {
                    return cublas(blas, (size, depths[depth], size), true, &xb, &wb, &mut yb);
                }
                let mut view = cuda::device_view_mut::<_, Dims<2>, LayoutRight>(&mut yb, Dims::new([size, size]))?;
                cuda::scope(|s| {
                    let (l, y) = (s.launch(stream, kernels, config), view.as_view_mut());
                    match side {
                        0 => hk::linear_bf16(l, xm.map(), wm.map(), y),
                        2 => hk::linear_bf16_products(l, xm.map(), wm.map(), y),
                        4 => hk::linear_bf16_direct(l, xm.map(), wm.map(), y),
                        _ => {
                            let args = hk::LinearFp8Args {
                                scale_x: 0.5,
                                scale_w: 2.0,
                                x: xm8.map(),
                                w: wm8.map(),
                                y,
                            };
                            hk::linear_fp8(l, args)
                        }
                    }
                })?;
                Ok(())
            })?;
        }
        sides.push(round, &times);
    }
    let t = sides.medians();
    for (side, name) in FIXED_SIDES.iter().enumerate() {
        let t = &t[side * depths.len()..][..depths.len()];
        // Least squares through (k, t).
        let n = depths.len() as f64;
        let (sk, st) = (depths.iter().map(|&k| k as f64).sum::<f64>(), t.iter().sum::<f64>());
        let skk = depths.iter().map(|&k| (k * k) as f64).sum::<f64>();
        let skt = depths.iter().zip(t).map(|(&k, t)| k as f64 * t).sum::<f64>();
        let slope = (n * skt - sk * st) / (n * skk - sk * sk);
        let fixed = (st - slope * sk) / n;
        for (k, t) in depths.iter().zip(t) {
            println!("bench {size} x {k} x {size}: {name} {t:.4} ms");
        }
        println!(
            "bench {size}² fixed cost, {name}: {fixed:.4} ms of {:.4} ms at k = {size} ({:.1}%), the products {:.1} TFLOP/s",
            t[1],
            100.0 * fixed / t[1],
            2.0 * (size * size) as f64 / slope / 1e9
        );
    }
    Ok(())
}
