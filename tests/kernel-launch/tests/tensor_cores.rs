//! Tensor-core kernels (`examples/tensor-kernels`) on a GPU, against the CPU: `bf16` and `f16`
//! products with `C = α · A · B + β · C`, `x · wᵀ` into `bf16`, and a `Linear` layer with its
//! bias and activation fused, over aligned shapes (asynchronous copies), ragged ones (copies cut
//! at the edges) and rows that are not 16-byte multiples (element by element), with a grid that
//! covers the result and one that does not.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::LaunchConfig;
use dlmd::cuda::{self, Kernels, device_view, device_view_mut};
use dlmd::half::{bf16, f16};
use dlmd::{Dims, LayoutLeft, LayoutRight};
use dlmd_example_tensor_kernels as kernels;
use dlmd_tests::{gpu, view_from};

/// `blocks` blocks (at least one) of `kernels::GEMM_THREADS` threads.
fn grid(blocks: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks.max(1) as u32, 1, 1),
        block_dim: (kernels::GEMM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `(m, k, n)`: empty ones, tile-aligned ones, ragged ones whose rows are 16-byte multiples
/// (8 elements: the asynchronous path, cut at the edges), and ragged ones whose rows are not.
const SHAPES: [(usize, usize, usize); 11] = [
    (0, 5, 7),
    (5, 0, 7),
    (5, 8, 0),
    (1, 1, 1),
    (128, 32, 128),
    (256, 256, 256),
    (200, 72, 136),
    (130, 520, 264),
    (100, 33, 37),
    (17, 1000, 9),
    (300, 40, 129),
];

/// Small integers: every product and sum of a row of up to 1000 is exact in `f32` and each
/// value exact in `bf16` and `f16`, so the results are exact whatever the order of the sums.
fn operand(len: usize, mul: usize, modulo: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (i * mul % modulo) as f32 - (modulo / 2) as f32)
        .collect()
}

/// `a · b` for row-major `a` (`m × k`) and `b` given by `b_at(p, j)`.
fn product(m: usize, k: usize, n: usize, a: &[f32], b_at: impl Fn(usize, usize) -> f32) -> Vec<f32> {
    (0..m * n)
        .map(|i| (0..k).map(|p| a[i / n * k + p] * b_at(p, i % n)).sum())
        .collect()
}

#[test]
fn a_tensor_core_product_matches_the_cpu_for_aligned_ragged_and_empty_shapes() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let [bm, bn, _] = kernels::GEMM_TILE;
    for (m, k, n) in SHAPES {
        let (a, b) = (operand(m * k, 7, 9), operand(k * n, 5, 7));
        let c0 = operand(m * n, 3, 11);
        let ab = product(m, k, n, &a, |p, j| b[p * n + j]);
        let chunks = m.div_ceil(bm) * n.div_ceil(bn);
        for (alpha, beta) in [(1.0f32, 0.0f32), (2.0, -1.0)] {
            let expected: Vec<f32> = ab.iter().zip(&c0).map(|(x, c)| alpha * x + beta * c).collect();
            for blocks in [chunks, 3] {
                for half in [false, true] {
                    let mut d_c = stream.clone_htod(&c0).unwrap();
                    {
                        let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
                        // The same launch for either input type: its operands converted, its
                        // kernel and the kernel's argument struct.
                        macro_rules! launch {
                            ($ty:ty, $kernel:ident, $args:ident) => {{
                                let (a16, b16): (Vec<$ty>, Vec<$ty>) = (
                                    a.iter().map(|&x| <$ty>::from_f32(x)).collect(),
                                    b.iter().map(|&x| <$ty>::from_f32(x)).collect(),
                                );
                                let (d_a, d_b) = (
                                    stream.clone_htod(&a16).unwrap(),
                                    stream.clone_htod(&b16).unwrap(),
                                );
                                let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
                                let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
                                cuda::scope(|s| {
                                    let args = kernels::$args {
                                        alpha,
                                        beta,
                                        a: av,
                                        b: bv,
                                        c: cv.as_view_mut(),
                                    };
                                    kernels::$kernel(s.launch(&stream, &module, grid(blocks)), args)
                                })
                                .unwrap();
                            }};
                        }
                        if half {
                            launch!(f16, gemm_f16, GemmF16Args);
                        } else {
                            launch!(bf16, gemm_bf16, GemmBf16Args);
                        }
                    }
                    let got = stream.clone_dtoh(&d_c).unwrap();
                    assert_eq!(
                        got, expected,
                        "{m} x {k} · {k} x {n}, α {alpha} β {beta}, {blocks} blocks, f16: {half}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_product_with_a_row_major_weight_matches_the_cpu() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let [bm, bn, _] = kernels::GEMM_TILE;
    for (m, k, n) in SHAPES {
        // `w` is `n × k`, row-major: `b = wᵀ`, the column-major `k × n` view of it.
        let (x, w) = (operand(m * k, 7, 9), operand(n * k, 5, 7));
        let expected: Vec<bf16> = product(m, k, n, &x, |p, j| w[j * k + p])
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let (x16, w16): (Vec<bf16>, Vec<bf16>) = (
            x.iter().map(|&v| bf16::from_f32(v)).collect(),
            w.iter().map(|&v| bf16::from_f32(v)).collect(),
        );
        let (d_x, d_w) = (stream.clone_htod(&x16).unwrap(), stream.clone_htod(&w16).unwrap());
        for blocks in [m.div_ceil(bm) * n.div_ceil(bn), 2] {
            let mut d_y = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n]).unwrap();
            {
                let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
                let wv = device_view::<_, Dims<2>, LayoutLeft>(&d_w, Dims::new([k, n])).unwrap();
                let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
                cuda::scope(|s| {
                    kernels::gemm_bf16_nt(s.launch(&stream, &module, grid(blocks)), xv, wv, yv.as_view_mut())
                })
                .unwrap();
            }
            let got = stream.clone_dtoh(&d_y).unwrap();
            assert_eq!(got, expected, "{m} x {k} · ({n} x {k})ᵀ, {blocks} blocks");
        }
    }
}

/// GELU (tanh approximation) and SiLU, in `f64`.
fn activate(activation: kernels::Activation, v: f64) -> f64 {
    match activation {
        kernels::Activation::GELU_TANH => {
            0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
        }
        kernels::Activation::SILU => v / (1.0 + (-v).exp()),
        _ => v,
    }
}

#[test]
fn a_linear_layer_with_its_bias_and_activation_fused_matches_the_cpu() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let [bm, bn, _] = kernels::GEMM_TILE;
    for (m, k, n) in [(128, 64, 128), (200, 72, 136), (100, 33, 37), (64, 512, 320)] {
        // Values of a few units, where the activations bend: sums of `k` products of
        // quarters.
        let x: Vec<f32> = operand(m * k, 7, 9).iter().map(|v| v / 4.0).collect();
        let w: Vec<f32> = operand(n * k, 5, 7).iter().map(|v| v / (k as f32).sqrt()).collect();
        let bias: Vec<f32> = operand(n, 3, 5).iter().map(|v| v / 2.0).collect();
        let (x16, w16, b16): (Vec<bf16>, Vec<bf16>, Vec<bf16>) = (
            x.iter().map(|&v| bf16::from_f32(v)).collect(),
            w.iter().map(|&v| bf16::from_f32(v)).collect(),
            bias.iter().map(|&v| bf16::from_f32(v)).collect(),
        );
        let (d_x, d_w, d_b) = (
            stream.clone_htod(&x16).unwrap(),
            stream.clone_htod(&w16).unwrap(),
            stream.clone_htod(&b16).unwrap(),
        );
        for activation in [
            kernels::Activation::NONE,
            kernels::Activation::GELU_TANH,
            kernels::Activation::SILU,
        ] {
            let mut d_y = stream.alloc_zeros::<bf16>(m * n).unwrap();
            {
                let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
                let wv = device_view::<_, Dims<2>, LayoutLeft>(&d_w, Dims::new([k, n])).unwrap();
                let bv = device_view::<_, Dims<1>, LayoutRight>(&d_b, Dims::new([n])).unwrap();
                let mut yv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([m, n])).unwrap();
                let config = grid(m.div_ceil(bm) * n.div_ceil(bn));
                cuda::scope(|s| {
                    kernels::linear_bf16(
                        s.launch(&stream, &module, config),
                        activation,
                        xv,
                        wv,
                        bv,
                        yv.as_view_mut(),
                    )
                })
                .unwrap();
            }
            let got = stream.clone_dtoh(&d_y).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let v: f64 = (0..k)
                        .map(|p| f64::from(x16[i * k + p].to_f32()) * f64::from(w16[j * k + p].to_f32()))
                        .sum::<f64>()
                        + f64::from(b16[j].to_f32());
                    let want = activate(activation, v);
                    let g = f64::from(got[i * n + j].to_f32());
                    // One rounding to bf16 (2⁻⁸ relative) and `ex2.approx`'s error.
                    assert!(
                        (g - want).abs() <= 1e-2 * want.abs() + 1e-3,
                        "{activation:?} {m} x {k} · ({n} x {k})ᵀ at [{i}, {j}]: {g} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn products_into_bf16_match_the_cpu_with_two_and_three_stages() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let [bm, bn, _] = kernels::GEMM_TILE;
    for (m, k, n) in SHAPES {
        let (a, b) = (operand(m * k, 7, 9), operand(k * n, 5, 7));
        let expected: Vec<bf16> = product(m, k, n, &a, |p, j| b[p * n + j])
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let (a16, b16): (Vec<bf16>, Vec<bf16>) = (
            a.iter().map(|&v| bf16::from_f32(v)).collect(),
            b.iter().map(|&v| bf16::from_f32(v)).collect(),
        );
        let (d_a, d_b) = (stream.clone_htod(&a16).unwrap(), stream.clone_htod(&b16).unwrap());
        for blocks in [m.div_ceil(bm) * n.div_ceil(bn), 3] {
            for two in [false, true] {
                let mut d_c = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n]).unwrap();
                {
                    let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
                    let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
                    let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
                    cuda::scope(|s| {
                        let config = if two {
                            // The guide's kernel: 8 warps.
                            LaunchConfig {
                                block_dim: (256, 1, 1),
                                ..grid(blocks)
                            }
                        } else {
                            grid(blocks)
                        };
                        let launch = s.launch(&stream, &module, config);
                        let c = cv.as_view_mut();
                        if two {
                            kernels::matmul_bf16_two_stages(
                                launch,
                                kernels::MatmulBf16TwoStagesArgs { a: av, b: bv, c },
                            )
                        } else {
                            kernels::matmul_bf16(launch, kernels::MatmulBf16Args { a: av, b: bv, c })
                        }
                    })
                    .unwrap();
                }
                let got = stream.clone_dtoh(&d_c).unwrap();
                assert_eq!(
                    got, expected,
                    "{m} x {k} · {k} x {n}, {blocks} blocks, two stages: {two}"
                );
            }
        }
    }
}

/// Results that start one element into their allocation (their pairs of neighbours not
/// aligned to a pair's size: each element written on its own) and two elements in (aligned
/// again: a store a pair, at an offset), on whole and ragged shapes: into `bf16` by both
/// products (`store_accumulators`, `update_accumulators`) and into `f32` as `c = α · a · b + β ·
/// c`, which reads each element before it writes it. The elements around the view stay as they
/// were.
#[test]
fn products_into_views_that_start_inside_an_allocation_write_each_element_in_place() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    for (m, k, n) in [(256, 64, 256), (200, 72, 136)] {
        let (a, b) = (operand(m * k, 7, 9), operand(k * n, 5, 7));
        let c0 = operand(m * n, 3, 11);
        let ab = product(m, k, n, &a, |p, j| b[p * n + j]);
        let a16: Vec<bf16> = a.iter().map(|&x| bf16::from_f32(x)).collect();
        let b16: Vec<bf16> = b.iter().map(|&x| bf16::from_f32(x)).collect();
        let (d_a, d_b) = (stream.clone_htod(&a16).unwrap(), stream.clone_htod(&b16).unwrap());
        let av = || device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
        let bv = || device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
        let blocks = m.div_ceil(128) * n.div_ceil(128);
        for from in [1, 2] {
            for two in [false, true] {
                let mut d_c = stream.clone_htod(&vec![bf16::from_f32(-1.0); m * n + 3]).unwrap();
                let c = view_from(&stream, &mut d_c, from, [m, n]);
                cuda::scope(|s| {
                    if two {
                        let config = LaunchConfig {
                            block_dim: (256, 1, 1),
                            ..grid(blocks)
                        };
                        let args = kernels::MatmulBf16TwoStagesArgs { a: av(), b: bv(), c };
                        kernels::matmul_bf16_two_stages(s.launch(&stream, &module, config), args)
                    } else {
                        let args = kernels::MatmulBf16Args { a: av(), b: bv(), c };
                        kernels::matmul_bf16(s.launch(&stream, &module, grid(blocks)), args)
                    }
                })
                .unwrap();
                let got = stream.clone_dtoh(&d_c).unwrap();
                let expected: Vec<bf16> = ab.iter().map(|&x| bf16::from_f32(x)).collect();
                let what = format!("{m} x {k} · {k} x {n} into bf16 from element {from}, two stages: {two}");
                assert_eq!(&got[from..from + m * n], &expected[..], "{what}");
                let around = got[..from].iter().chain(&got[from + m * n..]);
                assert!(around.clone().all(|&x| x == bf16::from_f32(-1.0)), "{what}");
            }
            let mut start = vec![-7.0f32; m * n + 3];
            start[from..from + m * n].copy_from_slice(&c0);
            let mut d_c = stream.clone_htod(&start).unwrap();
            let c = view_from(&stream, &mut d_c, from, [m, n]);
            cuda::scope(|s| {
                let args = kernels::GemmBf16Args {
                    alpha: 2.0,
                    beta: -1.0,
                    a: av(),
                    b: bv(),
                    c,
                };
                kernels::gemm_bf16(s.launch(&stream, &module, grid(blocks)), args)
            })
            .unwrap();
            let got = stream.clone_dtoh(&d_c).unwrap();
            let expected: Vec<f32> = ab.iter().zip(&c0).map(|(x, c)| 2.0 * x - c).collect();
            let what = format!("{m} x {k} · {k} x {n} into f32 from element {from}");
            assert_eq!(&got[from..from + m * n], &expected[..], "{what}");
            assert!(
                got[..from].iter().chain(&got[from + m * n..]).all(|&x| x == -7.0),
                "{what}"
            );
        }
    }
}

#[test]
fn an_mma_whose_result_only_some_lanes_store_runs_on_the_whole_warp() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    // Ones: every product is 16; `c` of 4 × 16 keeps only the even columns of its 4 rows.
    let ones = vec![bf16::ONE; 16 * 16];
    let (d_a, d_b) = (stream.clone_htod(&ones).unwrap(), stream.clone_htod(&ones).unwrap());
    let mut d_c = stream.clone_htod(&vec![-1.0f32; 4 * 16]).unwrap();
    {
        let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([16, 16])).unwrap();
        let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([16, 16])).unwrap();
        let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([4, 16])).unwrap();
        let config = LaunchConfig {
            block_dim: (32, 1, 1),
            ..grid(1)
        };
        cuda::scope(|s| {
            let args = kernels::EdgeStoreArgs {
                a: av,
                b: bv,
                c: cv.as_view_mut(),
            };
            kernels::edge_store(s.launch(&stream, &module, config), args)
        })
        .unwrap();
    }
    let got = stream.clone_dtoh(&d_c).unwrap();
    let expected: Vec<f32> = (0..4 * 16).map(|i| if i % 2 == 0 { 16.0 } else { 0.0 }).collect();
    assert_eq!(got, expected);
}

/// Swizzled tiles put each element where `fetch` (whole tiles, ragged copies cut at the edges,
/// and element by element where rows are not 16-byte multiples), `write` and `Tile::get` all
/// find it: `c = a + bᵀ` through a row-major and a column-major swizzled tile, exactly.
#[test]
fn swizzled_tiles_hold_each_element_where_fetch_write_and_get_find_it() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    for (m, n) in [(32, 64), (64, 128), (50, 72), (33, 100), (7, 9)] {
        // Integers below 251 and multiples of 256 below 3328: each exact in `bf16`, and each
        // sum exact in `f32` with both parts recoverable from it.
        let a: Vec<bf16> = (0..m * n).map(|i| bf16::from_f32((i % 251) as f32)).collect();
        let b: Vec<bf16> = (0..n * m).map(|i| bf16::from_f32((i % 13 * 256) as f32)).collect();
        let (d_a, d_b) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
        let mut d_c = stream.alloc_zeros::<f32>(m * n).unwrap();
        {
            let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, n])).unwrap();
            let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([n, m])).unwrap();
            let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
            let config = LaunchConfig {
                block_dim: (64, 1, 1),
                ..grid(m.div_ceil(32) * n.div_ceil(64))
            };
            cuda::scope(|s| {
                let args = kernels::SwizzledCopyArgs {
                    a: av,
                    b: bv,
                    c: cv.as_view_mut(),
                };
                kernels::swizzled_copy(s.launch(&stream, &module, config), args)
            })
            .unwrap();
        }
        let got = stream.clone_dtoh(&d_c).unwrap();
        let expected: Vec<f32> = (0..m * n)
            .map(|i| a[i].to_f32() + b[i % n * m + i / n].to_f32())
            .collect();
        let wrong = got.iter().zip(&expected).filter(|(g, e)| g != e).count();
        assert_eq!(wrong, 0, "{m} x {n}: {wrong} of {} elements differ", m * n);
    }
}

/// Every cooperative kernel of the crate (built for sm_80) waits for its thread's asynchronous
/// copies before it returns, so that no copy lands after the block's shared memory has gone,
/// even where safe code leaked a `Fetching` tile (`mem::forget`). Read from the PTX: no GPU.
#[test]
fn cooperative_kernels_wait_for_their_copies_before_they_return() {
    let cooperative = [
        "gemm_bf16",
        "gemm_f16",
        "matmul_bf16",
        "matmul_bf16_two_stages",
        "gemm_bf16_nt",
        "linear_bf16",
        "edge_store",
        "swizzled_copy",
    ];
    if kernels::PTX.starts_with("// dlmd-build: not built") {
        dlmd_tests::skipped(format_args!(
            "the kernels were not built: {}",
            kernels::PTX.lines().next().unwrap_or("")
        ));
        return;
    }
    for name in cooperative {
        let start = kernels::PTX
            .find(&format!(".entry {name}("))
            .unwrap_or_else(|| panic!("no entry {name}"));
        let body = &kernels::PTX[start..];
        let body = &body[..body.find("\n}\n").expect("an entry's end")];
        let lines: Vec<&str> = body
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .collect();
        let returns: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == "ret;").collect();
        assert!(!returns.is_empty(), "{name} has no ret");
        for i in returns {
            assert_eq!(
                lines[i - 1],
                "cp.async.wait_group 0;",
                "{name}: {:?} before a ret",
                lines[i - 1]
            );
        }
    }
}
