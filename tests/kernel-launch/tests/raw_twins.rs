//! The raw twins' launches. Each raw twin is written for one block size and for a grid of one
//! row of blocks, numbered along `x`; safe to launch, it must refuse what it was not written
//! for. The launcher refuses other blocks; on a grid of several rows or layers, or over views
//! whose shapes do not fit together, a raw twin writes nothing; and the raw twins of the
//! cooperative kernels match the CPU where they run.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead. The Hopper kernels' cases are skipped, and
//! say so, on a GPU that cannot run `sm_90a` code.

mod common;

use common::hopper_module;
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels, LaunchError, TiledMap, device_view, device_view_mut};
use dlmd::half::bf16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_example_kernels as kernels;
use dlmd_example_tensor_kernels as tc;
use dlmd_tests::{gpu, view_from};
use std::sync::Arc;

/// What the tests write over every output first: an element a kernel did not write keeps it.
const UNTOUCHED: f32 = -7.0;

/// `len` small integers in `{-1, 0, 1}` as `bf16`: every product of 64 of them and its sum is
/// exact, whatever the order, so a product is compared with the CPU's bit for bit.
fn small(len: usize, mul: usize) -> Vec<bf16> {
    (0..len).map(|i| bf16::from_f32((i * mul % 3) as f32 - 1.0)).collect()
}

/// `Σ_p a[i, p] · b(p, j)` for row-major `a` (`m × k`), as `bf16`, row-major `m × n`.
fn product(a: &[bf16], (m, k, n): (usize, usize, usize), b: impl Fn(usize, usize) -> bf16) -> Vec<bf16> {
    (0..m * n)
        .map(|e| bf16::from_f32((0..k).map(|p| a[e / n * k + p].to_f32() * b(p, e % n).to_f32()).sum()))
        .collect()
}

/// Checks a product's buffer `got`, read back whole, around its view of `len` elements from
/// element `from`: the view holds `expected`, or, where that is `None` (a launch the twin
/// refuses), is still untouched; every element outside the view is untouched either way.
fn check_view(got: &[bf16], (from, len): (usize, usize), expected: Option<&[bf16]>, what: &str) {
    let untouched = bf16::from_f32(UNTOUCHED);
    let (before, rest) = got.split_at(from);
    let (inside, after) = rest.split_at(len);
    match expected {
        Some(expected) => assert!(inside == expected, "{what}: not the product"),
        None => assert!(inside.iter().all(|&x| x == untouched), "{what}: written"),
    }
    assert!(
        before.iter().chain(after).all(|&x| x == untouched),
        "{what}: written outside the view"
    );
}

/// A grid of `(x, y, z)` blocks of `threads` threads, with `shared` bytes of dynamic shared
/// memory.
fn config((x, y, z): (usize, u32, u32), threads: u32, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (x.max(1) as u32, y, z),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared,
    }
}

/// The grids of several rows or layers that a raw twin refuses, for `blocks` blocks a row.
fn other_grids(blocks: usize) -> [(usize, u32, u32); 3] {
    [(blocks, 2, 1), (blocks, 1, 2), (1, 3, 1)]
}

/// A kernel of two views, `x` of `rows × cols` and its output of `out` elements (of extents
/// `out_extents`), run over `x`'s values: the output as the kernel left it.
type Run2 = fn(&Arc<CudaStream>, &Kernels, LaunchConfig, (&[f32], [usize; 2]), &[usize]) -> Result<Vec<f32>, CudaError>;

macro_rules! run2 {
    ($name:ident, $kernel:path, $out_rank:literal) => {
        fn $name(
            stream: &Arc<CudaStream>,
            module: &Kernels,
            config: LaunchConfig,
            (x, [rows, cols]): (&[f32], [usize; 2]),
            out: &[usize],
        ) -> Result<Vec<f32>, CudaError> {
            let d_x = stream.clone_htod(x).unwrap();
            let len = out.iter().product::<usize>();
            let mut d_out = stream.clone_htod(&vec![UNTOUCHED; len]).unwrap();
            {
                let xv = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([rows, cols])).unwrap();
                let extents: [usize; $out_rank] = out.try_into().unwrap();
                let mut ov =
                    device_view_mut::<_, Dims<$out_rank>, LayoutRight>(&mut d_out, Dims::new(extents)).unwrap();
                cuda::scope(|s| $kernel(s.launch(stream, module, config), xv, ov.as_view_mut()))?;
            }
            Ok(stream.clone_dtoh(&d_out).unwrap())
        }
    };
}
run2!(transpose, kernels::transpose_tiled_raw, 2);
run2!(row_sums, kernels::row_sums_block_raw, 1);
run2!(row_sums_wide, kernels::row_sums_block_wide_raw, 1);
run2!(softmax, kernels::softmax_rows_raw, 2);
run2!(softmax_short, kernels::softmax_rows_short_raw, 2);

/// A raw twin of a cooperative kernel of two views.
#[derive(Clone, Copy)]
struct Twin {
    name: &'static str,
    run: Run2,
    threads: u32,
    shared: u32,
    /// The output's extents for an input of `rows × cols`.
    out: fn(usize, usize) -> Vec<usize>,
}

const COOPERATIVE: [Twin; 5] = [
    Twin {
        name: "transpose_tiled_raw",
        run: transpose,
        threads: 256,
        shared: kernels::TRANSPOSE_TILED_RAW_SHARED,
        out: |r, c| vec![c, r],
    },
    Twin {
        name: "row_sums_block_raw",
        run: row_sums,
        threads: kernels::ROW_SUMS_THREADS as u32,
        shared: kernels::ROW_SUMS_BLOCK_RAW_SHARED,
        out: |r, _| vec![r],
    },
    Twin {
        name: "row_sums_block_wide_raw",
        run: row_sums_wide,
        threads: kernels::ROW_SUMS_WIDE_THREADS as u32,
        shared: kernels::ROW_SUMS_BLOCK_RAW_SHARED,
        out: |r, _| vec![r],
    },
    Twin {
        name: "softmax_rows_raw",
        run: softmax,
        threads: kernels::SOFTMAX_THREADS as u32,
        shared: kernels::SOFTMAX_ROWS_RAW_SHARED,
        out: |r, c| vec![r, c],
    },
    Twin {
        name: "softmax_rows_short_raw",
        run: softmax_short,
        threads: kernels::SOFTMAX_SHORT_THREADS as u32,
        shared: kernels::SOFTMAX_ROWS_RAW_SHARED,
        out: |r, c| vec![r, c],
    },
];

/// What the kernel `name` of [`COOPERATIVE`] computes from `x` (`rows × cols`), or `None` where
/// it is documented to write nothing (row sums of rows that are not whole runs of four; a
/// softmax of rows longer than the kernel keeps).
fn expected(name: &str, x: &[f32], rows: usize, cols: usize) -> Option<Vec<f64>> {
    let row = |i: usize| &x[i * cols..(i + 1) * cols];
    match name {
        "transpose_tiled_raw" => Some(
            (0..rows * cols)
                .map(|k| f64::from(x[k % rows * cols + k / rows]))
                .collect(),
        ),
        "row_sums_block_raw" | "row_sums_block_wide_raw" => cols
            .is_multiple_of(4)
            .then(|| (0..rows).map(|i| row(i).iter().map(|&v| f64::from(v)).sum()).collect()),
        _ => {
            let widest = if name == "softmax_rows_raw" {
                kernels::SOFTMAX_COLS
            } else {
                kernels::SOFTMAX_SHORT_COLS
            };
            (cols <= widest).then(|| {
                (0..rows)
                    .flat_map(|i| {
                        let max = row(i).iter().copied().fold(f32::NEG_INFINITY, f32::max);
                        let e: Vec<f64> = row(i).iter().map(|&v| f64::from(v - max).exp()).collect();
                        let sum: f64 = e.iter().sum();
                        e.into_iter().map(move |e| e / sum)
                    })
                    .collect()
            })
        }
    }
}

#[test]
fn the_cooperative_raw_twins_match_the_cpu_or_write_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    for (rows, cols) in [
        (0, 8),
        (1, 1),
        (31, 33),
        (64, 96),
        (100, 37),
        (132, 68),
        (7, 1024),
        (3, 4100),
        (1, 8192),
        (2, 8193),
    ] {
        // Small integers: the sums are exact in `f32` whatever the order.
        let x: Vec<f32> = (0..rows * cols).map(|k| (k * 37 % 11) as f32 - 5.0).collect();
        for Twin {
            name,
            run,
            threads,
            shared,
            out,
        } in COOPERATIVE
        {
            for blocks in [rows.max(cols), 3] {
                let got = run(
                    &stream,
                    &module,
                    config((blocks, 1, 1), threads, shared),
                    (&x, [rows, cols]),
                    &out(rows, cols),
                )
                .unwrap();
                let what = format!("{name}, {rows} x {cols}, {blocks} blocks");
                match expected(name, &x, rows, cols) {
                    Some(expected) => {
                        assert_eq!(got.len(), expected.len(), "{what}");
                        for (k, (&g, e)) in got.iter().zip(expected).enumerate() {
                            assert!(
                                (f64::from(g) - e).abs() <= 1e-5 * e.abs().max(1e-3),
                                "{what}, [{k}]: {g} vs {e}"
                            );
                        }
                    }
                    None => assert!(got.iter().all(|&g| g == UNTOUCHED), "{what}: written"),
                }
            }
        }
    }
}

#[test]
fn a_cooperative_raw_twin_refuses_another_block_size() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let (rows, cols) = (8, 8);
    let x = vec![1.0f32; rows * cols];
    for Twin {
        name,
        run,
        threads,
        shared,
        out,
    } in COOPERATIVE
    {
        for block_dim in [
            (threads / 2, 1, 1),
            (threads / 2, 2, 1),
            (threads, 2, 1),
            (2 * threads, 1, 1),
        ] {
            let config = LaunchConfig {
                block_dim,
                ..config((1, 1, 1), threads, shared)
            };
            let result = run(&stream, &module, config, (&x, [rows, cols]), &out(rows, cols));
            assert!(
                matches!(
                    result,
                    Err(CudaError::Launch(LaunchError::BlockSize { kernel, threads: t, .. })) if kernel == name && t == threads
                ),
                "{name}, {block_dim:?}: {result:?}"
            );
        }
    }
}

#[test]
fn a_cooperative_raw_twin_on_a_grid_of_rows_or_layers_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let (rows, cols) = (64, 96);
    let x: Vec<f32> = (0..rows * cols).map(|k| (k % 13) as f32).collect();
    for Twin {
        name,
        run,
        threads,
        shared,
        out,
    } in COOPERATIVE
    {
        for grid in other_grids(rows) {
            let got = run(
                &stream,
                &module,
                config(grid, threads, shared),
                (&x, [rows, cols]),
                &out(rows, cols),
            )
            .unwrap();
            assert!(
                got.iter().all(|&g| g == UNTOUCHED),
                "{name} on a grid of {grid:?}: written"
            );
        }
        // The same launch on one row of blocks writes every element.
        let got = run(
            &stream,
            &module,
            config((rows, 1, 1), threads, shared),
            (&x, [rows, cols]),
            &out(rows, cols),
        )
        .unwrap();
        assert!(got.iter().all(|&g| g != UNTOUCHED), "{name} on one row of blocks");
    }
    // The matrix product's twin, of three views, on small integers (exact sums).
    let (m, k, n) = (130, 20, 140);
    let a: Vec<f32> = (0..m * k).map(|i| (i * 7 % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i * 5 % 7) as f32 - 3.0).collect();
    let expected: Vec<f32> = (0..m * n)
        .map(|e| (0..k).map(|p| a[e / n * k + p] * b[p * n + e % n]).sum())
        .collect();
    let (d_a, d_b) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
    for grid in [(4, 1, 1), (4, 2, 1), (4, 1, 2)] {
        let mut d_c = stream.clone_htod(&vec![UNTOUCHED; m * n]).unwrap();
        {
            let a = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
            let b = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
            let mut c = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
            let config = config(grid, 256, kernels::MATMUL_RAW_SHARED);
            cuda::scope(|s| {
                let args = kernels::MatmulRawArgs {
                    a,
                    b,
                    c: c.as_view_mut(),
                };
                kernels::matmul_raw(s.launch(&stream, &module, config), args)
            })
            .unwrap();
        }
        let got = stream.clone_dtoh(&d_c).unwrap();
        if grid.1 == 1 && grid.2 == 1 {
            assert!(got == expected, "matmul_raw on one row of blocks: not a · b");
        } else {
            assert!(
                got.iter().all(|&c| c == UNTOUCHED),
                "matmul_raw on a grid of {grid:?}: written"
            );
        }
    }
}

/// With less dynamic shared memory than it needs, a cooperative raw twin writes nothing (and
/// the launch succeeds: no trap leaves the context unusable).
#[test]
fn a_cooperative_raw_twin_with_too_little_shared_memory_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let (rows, cols) = (64, 96);
    let x: Vec<f32> = (0..rows * cols).map(|k| (k % 13) as f32).collect();
    for Twin {
        name,
        run,
        threads,
        shared,
        out,
    } in COOPERATIVE
    {
        for short in [0, shared - 4] {
            let config = config((rows, 1, 1), threads, short);
            let got = run(&stream, &module, config, (&x, [rows, cols]), &out(rows, cols)).unwrap();
            assert!(
                got.iter().all(|&g| g == UNTOUCHED),
                "{name} with {short} bytes: written"
            );
        }
    }
    // The context is still usable: a launch with its shared memory runs.
    let Twin {
        run,
        threads,
        shared,
        out,
        ..
    } = COOPERATIVE[0];
    let got = run(
        &stream,
        &module,
        config((rows, 1, 1), threads, shared),
        (&x, [rows, cols]),
        &out(rows, cols),
    )
    .unwrap();
    assert_eq!(got[1], x[cols], "the transpose after the refused launches");
}

/// The softmax twins over rows of no element, as many as `usize::MAX` (an empty view may have
/// them): nothing to write, and the launch ends (a loop over the rows would not).
#[test]
fn a_softmax_raw_twin_over_empty_rows_returns() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let d_x = stream.clone_htod(&[UNTOUCHED]).unwrap();
    let mut d_y = stream.clone_htod(&[UNTOUCHED]).unwrap();
    for twin in [COOPERATIVE[3], COOPERATIVE[4]] {
        for rows in [7, usize::MAX] {
            {
                let x = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([rows, 0])).unwrap();
                let mut y = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([rows, 0])).unwrap();
                let config = config((2, 1, 1), twin.threads, twin.shared);
                cuda::scope(|s| {
                    let launch = s.launch(&stream, &module, config);
                    if twin.name == "softmax_rows_raw" {
                        kernels::softmax_rows_raw(launch, x, y.as_view_mut())
                    } else {
                        kernels::softmax_rows_short_raw(launch, x, y.as_view_mut())
                    }
                })
                .unwrap();
            }
            assert_eq!(
                stream.clone_dtoh(&d_y).unwrap(),
                [UNTOUCHED],
                "{} over {rows} empty rows",
                twin.name
            );
        }
    }
}

#[test]
fn a_cooperative_raw_twin_over_views_that_do_not_fit_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let (rows, cols) = (40, 24);
    let x: Vec<f32> = (0..rows * cols).map(|k| (k % 13) as f32).collect();
    // Each twin with an output of another shape than its input asks (a transpose's `dst` of
    // `src`'s shape, row sums one too many, a softmax's `y` a row short); and row sums over rows
    // that are not whole runs of four (six columns). Each twin also runs over this input with
    // the output it asks for, and writes it.
    for Twin {
        name,
        run,
        threads,
        shared,
        out,
    } in COOPERATIVE
    {
        let got = run(
            &stream,
            &module,
            config((rows, 1, 1), threads, shared),
            (&x, [rows, cols]),
            &out(rows, cols),
        )
        .unwrap();
        assert!(got.iter().all(|&g| g != UNTOUCHED), "{name} over {rows} x {cols}");
    }
    let [transpose, row_sums, row_sums_wide, softmax, softmax_short] = COOPERATIVE;
    let cases = [
        (transpose, [rows, cols], vec![rows, cols]),
        (row_sums, [rows, cols], vec![rows + 1]),
        (row_sums_wide, [rows, cols], vec![rows - 1]),
        (row_sums, [rows * cols / 6, 6], vec![rows * cols / 6]),
        (softmax, [rows, cols], vec![rows - 1, cols]),
        (softmax_short, [rows, cols], vec![rows, cols + 1]),
    ];
    for (twin, shape, out) in cases {
        let config = config((rows, 1, 1), twin.threads, twin.shared);
        let got = (twin.run)(&stream, &module, config, (&x, shape), &out).unwrap();
        assert!(
            got.iter().all(|&g| g == UNTOUCHED),
            "{} over {shape:?} into {out:?}: written",
            twin.name
        );
    }
}

/// The tensor-core products' raw twins: on one row of blocks they compute `c` (bit for bit, from
/// small integers), into a view from the start of its allocation or two elements in (4-aligned,
/// the pairs' stores); on a grid of rows or layers, or into a `c` one element in (2-aligned),
/// they write nothing.
#[test]
fn a_tensor_core_raw_twin_on_a_grid_of_rows_or_layers_or_a_misaligned_view_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, tc::PTX).unwrap();
    let untouched = bf16::from_f32(UNTOUCHED);
    // `c = a · b`, row-major, 256 × 64 · 64 × 256 of small integers.
    let (m, k, n) = (256, 64, 256);
    let (a, b) = (small(m * k, 7), small(k * n, 5));
    let expected = product(&a, (m, k, n), |p, j| b[p * n + j]);
    let (d_a, d_b) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
    for raw in ["gemm_bf16_raw", "matmul_bf16_raw"] {
        for (grid, from) in [
            ((4, 1, 1), 0),
            ((4, 2, 1), 0),
            ((4, 1, 2), 0),
            ((4, 1, 1), 1),
            ((4, 1, 1), 2),
        ] {
            let mut d_c = stream.clone_htod(&vec![untouched; m * n + 2]).unwrap();
            {
                let a = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
                let b = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
                let mut c = view_from(&stream, &mut d_c, from, [m, n]);
                let c = c.as_view_mut();
                cuda::scope(|s| match raw {
                    "gemm_bf16_raw" => {
                        let launch = s.launch(&stream, &module, config(grid, 256, tc::GEMM_RAW_SHARED));
                        tc::gemm_bf16_raw(launch, tc::GemmBf16RawArgs { a, b, c })
                    }
                    _ => {
                        let launch = s.launch(&stream, &module, config(grid, 128, tc::MATMUL_RAW_SHARED));
                        tc::matmul_bf16_raw(launch, tc::MatmulBf16RawArgs { a, b, c })
                    }
                })
                .unwrap();
            }
            let got = stream.clone_dtoh(&d_c).unwrap();
            let runs = grid.1 == 1 && grid.2 == 1 && from != 1;
            let what = format!("{raw} on a grid of {grid:?}, c from element {from}");
            check_view(&got, (from, m * n), runs.then_some(expected.as_slice()), &what);
        }
    }
}

/// The Hopper products' raw twins: on one row of blocks they compute `y` (bit for bit, from small
/// integers), from the start of its allocation or eight elements in; on a grid of rows or
/// layers, or into a `y` that does not start 16-aligned (one or four elements in), they write
/// nothing.
#[test]
fn a_hopper_raw_twin_on_a_grid_of_rows_or_layers_or_a_misaligned_view_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let Some(module) = hopper_module(&ctx) else { return };
    let stream = ctx.default_stream();
    let untouched = bf16::from_f32(UNTOUCHED);
    // `y = x · wᵀ` and `y = x · b` (`w`'s data read as `k × n`), 256 × 64 by 64 × 256 of small
    // integers.
    let (m, k, n) = (256, 64, 256);
    let (xs, ws) = (small(m * k, 7), small(n * k, 5));
    let (nt, nn) = (
        product(&xs, (m, k, n), |p, j| ws[j * k + p]),
        product(&xs, (m, k, n), |p, j| ws[p * n + j]),
    );
    let (d_x, d_w) = (stream.clone_htod(&xs).unwrap(), stream.clone_htod(&ws).unwrap());
    let x = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([m, k])).unwrap();
    let w = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([n, k])).unwrap();
    let b = device_view::<_, Dims<2>, LayoutRight>(&d_w, Dims::new([k, n])).unwrap();
    let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&x).unwrap();
    let wm = TiledMap::<bf16, (Const<256>, Const<64>), Swizzle128>::new(&w).unwrap();
    let bm = TiledMap::<bf16, (Const<64>, Const<256>), Swizzle128>::new(&b).unwrap();
    let twins = [
        "wgmma_nt_256_s4",
        "wgmma_nt_128_s3",
        "wgmma_nt_256_ws4",
        "wgmma_nt_256_tma4",
        "wgmma_nn_256_tma4",
    ];
    for raw in twins {
        // `y` from the start of its allocation, one element in (2 bytes), four (8 bytes) and
        // eight (16 bytes, aligned again).
        for (grid, from) in [
            ((4, 1, 1), 0),
            ((4, 2, 1), 0),
            ((4, 1, 2), 0),
            ((4, 1, 1), 1),
            ((4, 1, 1), 4),
            ((4, 1, 1), 8),
        ] {
            let mut d_y = stream.clone_htod(&vec![untouched; m * n + 8]).unwrap();
            {
                let mut y = view_from(&stream, &mut d_y, from, [m, n]);
                let y = y.as_view_mut();
                let (ws, nt) = (
                    config(grid, 384, hk::shared_bytes_ws(256, 4)),
                    config(grid, 256, hk::shared_bytes(256, 4)),
                );
                cuda::scope(|s| match raw {
                    "wgmma_nt_256_s4" => {
                        hk::wgmma_nt_256_s4(s.launch(&stream, &module, nt), hk::WgmmaNt256S4Args { x, w, y })
                    }
                    "wgmma_nt_128_s3" => {
                        let config = config(grid, 256, hk::shared_bytes(128, 3));
                        hk::wgmma_nt_128_s3(s.launch(&stream, &module, config), hk::WgmmaNt128S3Args { x, w, y })
                    }
                    "wgmma_nt_256_ws4" => {
                        hk::wgmma_nt_256_ws4(s.launch(&stream, &module, ws), hk::WgmmaNt256Ws4Args { x, w, y })
                    }
                    "wgmma_nt_256_tma4" => hk::wgmma_nt_256_tma4(s.launch(&stream, &module, ws), xm.map(), wm.map(), y),
                    _ => hk::wgmma_nn_256_tma4(s.launch(&stream, &module, ws), xm.map(), bm.map(), y),
                })
                .unwrap();
            }
            let got = stream.clone_dtoh(&d_y).unwrap();
            let runs = grid.1 == 1 && grid.2 == 1 && from % 8 == 0;
            let what = format!("{raw} on a grid of {grid:?}, y from element {from}");
            let expected = if raw.starts_with("wgmma_nn") { &nn } else { &nt };
            check_view(&got, (from, m * n), runs.then_some(expected.as_slice()), &what);
        }
    }
}

/// The copy engine's probe writes all of `out` from one block: on a grid of more, it writes
/// nothing (each block would write every byte).
#[test]
fn a_swizzle_probe_on_a_grid_of_more_than_one_block_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let Some(module) = hopper_module(&ctx) else { return };
    let stream = ctx.default_stream();
    let rows = hk::PROBE_ROWS;
    let d_tensor = stream.clone_htod(&vec![7u8; rows * 128]).unwrap();
    let view = device_view::<_, Dims<2>, LayoutRight>(&d_tensor, Dims::new([rows, 128])).unwrap();
    let map = TiledMap::<u8, (Const<{ hk::PROBE_ROWS }>, Const<128>), Swizzle128>::new(&view).unwrap();
    for grid in [(1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 1, 2)] {
        let mut d_out = stream.alloc_zeros::<u8>(rows * 128).unwrap();
        {
            let mut out = device_view_mut::<_, Dims<1>, LayoutRight>(&mut d_out, Dims::new([rows * 128])).unwrap();
            let config = config((grid.0, grid.1, grid.2), 128, hk::PROBE_SHARED);
            cuda::scope(|s| hk::swizzle_probe_128(s.launch(&stream, &module, config), map.map(), out.as_view_mut()))
                .unwrap();
        }
        let want = if grid == (1, 1, 1) { 7 } else { 0 };
        assert!(
            stream.clone_dtoh(&d_out).unwrap().iter().all(|&b| b == want),
            "a grid of {grid:?}"
        );
    }
}
