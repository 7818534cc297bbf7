//! Hopper kernels written with `dlmd::kernel::warpgroup` (`examples/hopper-kernels`) on an
//! `sm_90a` GPU, against the CPU: the safe `wgmma` products over aligned and ragged shapes, a
//! grid that covers the result and one of fewer blocks (each runs its pipeline for several
//! chunks in turn), FP8 with scales and `c = α · x · wᵀ + β · c`, `x · b` with a row-major
//! `b` (read MN-major, on `bf16` and `f16`); and the copy engine's
//! swizzled layouts, byte for byte, against `Swizzle::offset`.
//!
//! Without a GPU each test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead); on a GPU that cannot run `sm_90a` code the
//! module is refused by name, and the tests say so and pass.

mod common;

use common::hopper;
use cudarc::driver::LaunchConfig;
use dlmd::cuda::{self, CudaError, Kernels, LaunchError, TiledMap, device_view, device_view_mut};
use dlmd::dtype::F8E4M3FN;
use dlmd::half::{bf16, f16};
use dlmd::kernel::swizzle::{Swizzle, Swizzle32, Swizzle64, Swizzle128};
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;

/// `blocks` blocks of 384 threads.
fn grid(blocks: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks.max(1) as u32, 1, 1),
        block_dim: (384, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Small integers, exact in `bf16` and FP8 E4M3 (at most 4 in magnitude); every product and
/// sum exact in `f32`.
fn operand(len: usize, mul: usize, modulo: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (i * mul % modulo) as f32 - (modulo / 2) as f32)
        .collect()
}

/// `x · wᵀ` for row-major `x` (`m × k`) and `w` (`n × k`).
fn product(m: usize, k: usize, n: usize, x: &[f32], w: &[f32]) -> Vec<f32> {
    (0..m * n)
        .map(|i| (0..k).map(|p| x[i / n * k + p] * w[i % n * k + p]).sum())
        .collect()
}

#[test]
fn a_module_whose_maps_are_not_declared_64_aligned_is_refused_at_launch() {
    let Some((ctx, _)) = hopper() else { return };
    let stream = ctx.default_stream();
    // The PTX as rustc declares the maps (16-aligned), without dlmd-build's declaration.
    let declared = ".param .align 64 .b8 linear_bf16_param_1[";
    assert!(hk::PTX.contains(declared), "dlmd-build declares the map 64-aligned");
    let ptx = hk::PTX.replace(declared, ".param .align 16 .b8 linear_bf16_param_1[");
    let module = Kernels::load(&ctx, &ptx).unwrap();
    let (m, k, n) = (128, 64, 256);
    let d_x = stream.alloc_zeros::<bf16>(m * k).unwrap();
    let d_w = stream.alloc_zeros::<bf16>(n * k).unwrap();
    let mut d_y = stream.clone_htod(&vec![bf16::ONE; m * n]).unwrap();
    let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
    let wv = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([n, k])).unwrap();
    let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
    let wm = TiledMap::<bf16, (Const<256>, Const<64>), Swizzle128>::new(&wv).unwrap();
    {
        let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
        let err = cuda::scope(|s| {
            hk::linear_bf16(
                s.launch(&stream, &module, grid(1)),
                xm.map(),
                wm.map(),
                yv.as_view_mut(),
            )
        })
        .unwrap_err();
        assert!(
            matches!(
                err,
                CudaError::Launch(LaunchError::ParamAlignment {
                    kernel: "linear_bf16",
                    param: 1,
                    needed: 64,
                    declared: 16
                })
            ),
            "{err}"
        );
    }
    // Nothing ran.
    assert!(stream.clone_dtoh(&d_y).unwrap().iter().all(|&y| y == bf16::ONE));
}

/// Aligned shapes, ragged ones on every side, one row and one column: `k` a multiple of 16
/// (the copy engine's rows are multiples of 16 bytes, for FP8 too).
const SHAPES: [(usize, usize, usize); 6] = [
    (128, 64, 256),
    (256, 512, 512),
    (100, 80, 300),
    (300, 208, 520),
    (1, 16, 1),
    (129, 1040, 257),
];

#[test]
fn a_safe_wgmma_product_matches_the_cpu_for_aligned_and_ragged_shapes() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    for (m, k, n) in SHAPES {
        let (x, w) = (operand(m * k, 7, 9), operand(n * k, 5, 7));
        let expected: Vec<bf16> = product(m, k, n, &x, &w).into_iter().map(bf16::from_f32).collect();
        let to = |v: &[f32]| v.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>();
        let (d_x, d_w) = (stream.clone_htod(&to(&x)).unwrap(), stream.clone_htod(&to(&w)).unwrap());
        let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
        let wv = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([n, k])).unwrap();
        let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
        let wm = TiledMap::<bf16, (Const<256>, Const<64>), Swizzle128>::new(&wv).unwrap();
        let chunks = m.div_ceil(128) * n.div_ceil(256);
        // The grouped kernel, the guide's (memory order), each with a grid that covers the
        // chunks and grids of fewer blocks, which run their pipelines over several chunks.
        for simple in [false, true] {
            for blocks in [chunks, 1, 2] {
                let mut d_y = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n]).unwrap();
                {
                    let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
                    cuda::scope(|s| {
                        let launch = s.launch(&stream, &module, grid(blocks));
                        if simple {
                            hk::linear_bf16_simple(launch, xm.map(), wm.map(), yv.as_view_mut())
                        } else {
                            hk::linear_bf16(launch, xm.map(), wm.map(), yv.as_view_mut())
                        }
                    })
                    .unwrap();
                }
                let got = stream.clone_dtoh(&d_y).unwrap();
                assert_eq!(
                    got, expected,
                    "{m} x {k} · ({n} x {k})ᵀ, {blocks} blocks, guide's: {simple}"
                );
            }
        }
    }
}

#[test]
fn an_fp8_product_with_scales_and_an_update_of_c_match_the_cpu() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    for (m, k, n) in SHAPES {
        let (x, w) = (operand(m * k, 7, 9), operand(n * k, 5, 7));
        let xw = product(m, k, n, &x, &w);
        // FP8, scales 0.5 and 4: exact.
        let to8 = |v: &[f32]| v.iter().map(|&v| F8E4M3FN::from_f32(v)).collect::<Vec<_>>();
        let (d_x, d_w) = (
            stream.clone_htod(&to8(&x)).unwrap(),
            stream.clone_htod(&to8(&w)).unwrap(),
        );
        let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
        let wv = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([n, k])).unwrap();
        let xm = TiledMap::<F8E4M3FN, (Const<128>, Const<128>), Swizzle128>::new(&xv).unwrap();
        let wm = TiledMap::<F8E4M3FN, (Const<256>, Const<128>), Swizzle128>::new(&wv).unwrap();
        let mut d_y = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n]).unwrap();
        {
            let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
            cuda::scope(|s| {
                let args = hk::LinearFp8Args {
                    scale_x: 0.5,
                    scale_w: 4.0,
                    x: xm.map(),
                    w: wm.map(),
                    y: yv.as_view_mut(),
                };
                hk::linear_fp8(s.launch(&stream, &module, grid(3)), args)
            })
            .unwrap();
        }
        let expected: Vec<bf16> = xw.iter().map(|&v| bf16::from_f32(2.0 * v)).collect();
        assert_eq!(
            stream.clone_dtoh(&d_y).unwrap(),
            expected,
            "FP8 {m} x {k} · ({n} x {k})ᵀ"
        );

        // c = 2 x · wᵀ − c, bf16 inputs, f32 c.
        let to = |v: &[f32]| v.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>();
        let (d_x, d_w) = (stream.clone_htod(&to(&x)).unwrap(), stream.clone_htod(&to(&w)).unwrap());
        let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
        let wv = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([n, k])).unwrap();
        let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
        let wm = TiledMap::<bf16, (Const<256>, Const<64>), Swizzle128>::new(&wv).unwrap();
        let c0 = operand(m * n, 3, 11);
        let mut d_c = stream.clone_htod(&c0).unwrap();
        {
            let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
            cuda::scope(|s| {
                let args = hk::GemmBf16Args {
                    alpha: 2.0,
                    beta: -1.0,
                    x: xm.map(),
                    w: wm.map(),
                    c: cv.as_view_mut(),
                };
                hk::gemm_bf16(s.launch(&stream, &module, grid(2)), args)
            })
            .unwrap();
        }
        let expected: Vec<f32> = xw.iter().zip(&c0).map(|(v, c)| 2.0 * v - c).collect();
        assert_eq!(
            stream.clone_dtoh(&d_c).unwrap(),
            expected,
            "update {m} x {k} · ({n} x {k})ᵀ"
        );
    }
}

/// Shapes for `x · b` with a row-major `b` (`k × n`): `n` a multiple of 8 (the rows of `b` a
/// multiple of 16 bytes), ragged against the `64 × 256` tiles of `b` on every side.
const ROW_MAJOR_B_SHAPES: [(usize, usize, usize); 6] = [
    (128, 64, 256),
    (256, 512, 512),
    (100, 80, 296),
    (300, 200, 520),
    (1, 8, 8),
    (129, 1032, 264),
];

#[test]
fn a_product_with_a_row_major_b_matches_the_cpu_on_bf16_and_f16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    for (m, k, n) in ROW_MAJOR_B_SHAPES {
        let (x, w) = (operand(m * k, 7, 9), operand(n * k, 5, 7));
        // `b = wᵀ`, row-major `k × n`: `x · b` is `x · wᵀ`.
        let b: Vec<f32> = (0..k * n).map(|i| w[i % n * k + i / n]).collect();
        let xw = product(m, k, n, &x, &w);
        let chunks = m.div_ceil(128) * n.div_ceil(256);
        for blocks in [chunks, 2] {
            let to = |v: &[f32]| v.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>();
            let (d_x, d_b) = (stream.clone_htod(&to(&x)).unwrap(), stream.clone_htod(&to(&b)).unwrap());
            let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
            let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
            let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
            let bm = TiledMap::<bf16, (Const<64>, Const<256>), Swizzle128>::new(&bv).unwrap();
            let mut d_y = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n]).unwrap();
            {
                let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
                cuda::scope(|s| {
                    hk::matmul_bf16(
                        s.launch(&stream, &module, grid(blocks)),
                        xm.map(),
                        bm.map(),
                        yv.as_view_mut(),
                    )
                })
                .unwrap();
            }
            let expected: Vec<bf16> = xw.iter().map(|&v| bf16::from_f32(v)).collect();
            assert_eq!(
                stream.clone_dtoh(&d_y).unwrap(),
                expected,
                "bf16 {m} x {k} · {k} x {n}, {blocks} blocks"
            );

            let to = |v: &[f32]| v.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>();
            let (d_x, d_b) = (stream.clone_htod(&to(&x)).unwrap(), stream.clone_htod(&to(&b)).unwrap());
            let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
            let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
            let xm = TiledMap::<f16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
            let bm = TiledMap::<f16, (Const<64>, Const<256>), Swizzle128>::new(&bv).unwrap();
            let mut d_y = stream.clone_htod(&vec![f16::from_f32(-1.0); m * n]).unwrap();
            {
                let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
                cuda::scope(|s| {
                    hk::matmul_f16(
                        s.launch(&stream, &module, grid(blocks)),
                        xm.map(),
                        bm.map(),
                        yv.as_view_mut(),
                    )
                })
                .unwrap();
            }
            let expected: Vec<f16> = xw.iter().map(|&v| f16::from_f32(v)).collect();
            assert_eq!(
                stream.clone_dtoh(&d_y).unwrap(),
                expected,
                "f16 {m} x {k} · {k} x {n}, {blocks} blocks"
            );
        }
    }
}

/// The probe of swizzle `S` (rows of `BYTES`) against `S::offset`: the tile's byte at
/// `offset(row, byte)` is the tensor's byte `(row, byte)`.
macro_rules! probe {
    ($stream:expr, $module:expr, $swizzle:ty, $bytes:literal, $kernel:ident) => {{
        let (stream, module) = ($stream, $module);
        let rows = hk::PROBE_ROWS;
        // Each byte its own value along a row, and rows told apart.
        let tensor: Vec<u8> = (0..rows * $bytes)
            .map(|i| (i % $bytes + 7 * (i / $bytes)) as u8)
            .collect();
        let d_tensor = stream.clone_htod(&tensor).unwrap();
        let view = device_view::<_, Dims<2>, LayoutRight>(&d_tensor, Dims::new([rows, $bytes])).unwrap();
        let map = TiledMap::<u8, (Const<{ hk::PROBE_ROWS }>, Const<$bytes>), $swizzle>::new(&view).unwrap();
        let mut d_out = stream.alloc_zeros::<u8>(rows * $bytes).unwrap();
        {
            let mut out = device_view_mut::<_, Dims<1>, LayoutRight>(&mut d_out, Dims::new([rows * $bytes])).unwrap();
            let config = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: hk::PROBE_SHARED,
            };
            cuda::scope(|s| hk::$kernel(s.launch(&stream, &module, config), map.map(), out.as_view_mut())).unwrap();
        }
        let tile = stream.clone_dtoh(&d_out).unwrap();
        for row in 0..rows {
            for byte in 0..$bytes {
                assert_eq!(
                    tile[<$swizzle>::offset(row, byte)],
                    tensor[row * $bytes + byte],
                    "{}-byte swizzle, row {row}, byte {byte}",
                    $bytes
                );
            }
        }
    }};
}

#[test]
fn the_copy_engine_lays_out_each_swizzle_as_its_offset_says() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    probe!(&stream, &module, Swizzle32, 32, swizzle_probe_32);
    probe!(&stream, &module, Swizzle64, 64, swizzle_probe_64);
    probe!(&stream, &module, Swizzle128, 128, swizzle_probe_128);
}
