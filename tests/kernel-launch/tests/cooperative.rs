//! Cooperative kernels (`examples/kernels`) on a GPU, against the CPU: a tiled transpose through
//! a block-shared tile, row sums by block reduction, a row softmax kept in registers, a tiled
//! matrix product (and its raw twin), a barrier after a thread-dependent branch, and chunks of
//! whole rows, over shapes that are not multiples of the tile (and empty ones), with a grid that
//! covers the view and one that does not; and launches of the wrong block shape refused.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::LaunchConfig;
use dlmd::cuda::{self, CudaError, Kernels, device_view, device_view_mut};
use dlmd::{Dims, LayoutRight};
use dlmd_example_kernels as kernels;
use dlmd_tests::gpu;

/// `blocks` blocks (at least one) of `threads` threads.
fn grid(blocks: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks.max(1) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

const SHAPES: [(usize, usize); 9] = [
    (0, 0),
    (0, 7),
    (7, 0),
    (1, 1),
    (31, 33),
    (64, 96),
    (100, 37),
    (33, 1000),
    (1000, 1000),
];

#[test]
fn a_tiled_transpose_matches_the_cpu_for_ragged_and_empty_shapes() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    // Beside the shared shapes, rows whose lengths are multiples of four (whole vector runs)
    // but not of the tile's 64; rows of other lengths are read and written one element at a
    // time where a run is not aligned.
    for &(rows, cols) in SHAPES.iter().chain(&[(132, 68), (4, 260)]) {
        let src: Vec<f32> = (0..rows * cols).map(|k| k as f32).collect();
        let expected: Vec<f32> = (0..cols * rows).map(|k| src[(k % rows) * cols + k / rows]).collect();
        let chunks = rows.div_ceil(64) * cols.div_ceil(64);
        // Every chunk its own block, then three blocks for all of them; the tile filled by
        // rows, then by staged columns.
        for (blocks, staged) in [chunks, 3].into_iter().flat_map(|b| [(b, false), (b, true)]) {
            let d_src = stream.clone_htod(&src).unwrap();
            let mut d_dst = stream.alloc_zeros::<f32>(rows * cols).unwrap();
            {
                let src = device_view::<_, Dims<2>, LayoutRight>(&d_src, Dims::new([rows, cols])).unwrap();
                let mut dst = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_dst, Dims::new([cols, rows])).unwrap();
                let config = grid(blocks, 256);
                cuda::scope(|s| match staged {
                    false => kernels::transpose_tiled(s.launch(&stream, &module, config), src, dst.as_view_mut()),
                    true => kernels::transpose_staged(s.launch(&stream, &module, config), src, dst.as_view_mut()),
                })
                .unwrap();
            }
            let got = stream.clone_dtoh(&d_dst).unwrap();
            assert_eq!(got, expected, "{rows} x {cols}, {blocks} blocks, staged: {staged}");
        }
    }
}

#[test]
fn row_sums_by_block_reduction_match_the_cpu() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    for (rows, cols) in [
        (0, 5),
        (5, 0),
        (1, 1),
        (7, 1023),
        (300, 4099),
        (2, 100_000),
        (1000, 1000),
    ] {
        // Small integers, so that every sum is exact in f32 whatever the order.
        let x: Vec<f32> = (0..rows * cols)
            .map(|k| ((k / cols * 7 + k % cols * 3) % 11) as f32 - 5.0)
            .collect();
        let expected: Vec<f32> = (0..rows).map(|i| x[i * cols..(i + 1) * cols].iter().sum()).collect();
        // Blocks of 128 and, for long rows, of 1024 (`row_sums_block_wide`).
        for (blocks, wide) in [(rows, false), (5, false), (rows, true), (5, true)] {
            let d_x = stream.clone_htod(&x).unwrap();
            let mut d_sums = stream.alloc_zeros::<f32>(rows).unwrap();
            {
                let x = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([rows, cols])).unwrap();
                let mut sums = device_view_mut::<_, Dims<1>, LayoutRight>(&mut d_sums, Dims::new([rows])).unwrap();
                cuda::scope(|s| {
                    if wide {
                        let threads = kernels::ROW_SUMS_WIDE_THREADS as u32;
                        kernels::row_sums_block_wide(
                            s.launch(&stream, &module, grid(blocks, threads)),
                            x,
                            sums.as_view_mut(),
                        )
                    } else {
                        let threads = kernels::ROW_SUMS_THREADS as u32;
                        kernels::row_sums_block(
                            s.launch(&stream, &module, grid(blocks, threads)),
                            x,
                            sums.as_view_mut(),
                        )
                    }
                })
                .unwrap();
            }
            assert_eq!(
                stream.clone_dtoh(&d_sums).unwrap(),
                expected,
                "{rows} x {cols}, {blocks} blocks, wide: {wide}"
            );
        }
    }
}

#[test]
fn a_row_softmax_matches_the_cpu() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let softmax = |row: &[f32]| -> Vec<f32> {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f64> = row.iter().map(|&x| f64::from(x - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        exps.iter().map(|e| (e / sum) as f32).collect()
    };
    // The long-row kernel and the short-row one, each in blocks of its size.
    for (threads, widest) in [
        (kernels::SOFTMAX_THREADS as u32, kernels::SOFTMAX_COLS),
        (kernels::SOFTMAX_SHORT_THREADS as u32, kernels::SOFTMAX_SHORT_COLS),
    ] {
        for (rows, cols) in [
            (0, 5),
            (1, 1),
            (7, 100),
            (5, 1023),
            (3, widest),
            (300, 1024),
            (2, widest + 1),
        ] {
            let x: Vec<f32> = (0..rows * cols).map(|k| ((k * 37 % 101) as f32 - 50.0) / 7.0).collect();
            for blocks in [rows, 2] {
                let d_x = stream.clone_htod(&x).unwrap();
                let mut d_y = stream.alloc_zeros::<f32>(rows * cols).unwrap();
                {
                    let x = device_view::<_, Dims<2>, LayoutRight>(&d_x, Dims::new([rows, cols])).unwrap();
                    let mut y = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_y, Dims::new([rows, cols])).unwrap();
                    cuda::scope(|s| {
                        let launch = s.launch(&stream, &module, grid(blocks, threads));
                        if threads == kernels::SOFTMAX_THREADS as u32 {
                            kernels::softmax_rows(launch, x, y.as_view_mut())
                        } else {
                            kernels::softmax_rows_short(launch, x, y.as_view_mut())
                        }
                    })
                    .unwrap();
                }
                let got = stream.clone_dtoh(&d_y).unwrap();
                if cols > widest {
                    assert!(
                        got.iter().all(|&y| y == 0.0),
                        "rows wider than {widest} are left as they were ({threads} threads)"
                    );
                    continue;
                }
                for i in 0..rows {
                    let expected = softmax(&x[i * cols..(i + 1) * cols]);
                    for (j, (&g, e)) in got[i * cols..(i + 1) * cols].iter().zip(expected).enumerate() {
                        assert!(
                            (g - e).abs() <= 1e-5 * e.max(1e-3),
                            "{rows} x {cols}, {threads} threads, [{i}, {j}]: {g} vs {e}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_tiled_matrix_product_matches_the_cpu_for_ragged_and_empty_shapes() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let [bm, bn, _] = kernels::MATMUL_TILE;
    for (m, k, n) in [
        (0, 5, 7),
        (5, 0, 7),
        (5, 7, 0),
        (1, 1, 1),
        (128, 8, 128),
        (129, 9, 130),
        (300, 77, 200),
        (64, 1000, 33),
        (257, 256, 255),
        // Rows of whole vector runs in both operands, ragged against the tiles and against
        // the steps of `k` (20 = 2 · 8 + 4).
        (132, 20, 260),
    ] {
        // Small integers: every product and sum is exact in f32, whatever the order.
        let a: Vec<f32> = (0..m * k).map(|i| (i * 7 % 9) as f32 - 4.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i * 5 % 7) as f32 - 3.0).collect();
        let expected: Vec<f32> = (0..m * n)
            .map(|i| (0..k).map(|p| a[i / n * k + p] * b[p * n + i % n]).sum())
            .collect();
        let chunks = m.div_ceil(bm) * n.div_ceil(bn);
        let (d_a, d_b) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
        // Every chunk its own block, then two blocks for all of them; the safe kernel and its
        // raw twin.
        for blocks in [chunks, 2] {
            for raw in [false, true] {
                // Not zero: a product over an empty `k` must write its zeros.
                let mut d_c = stream.clone_htod(&vec![-1.0f32; m * n]).unwrap();
                {
                    let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([m, k])).unwrap();
                    let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([k, n])).unwrap();
                    let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([m, n])).unwrap();
                    let config = grid(blocks, 256);
                    cuda::scope(|s| {
                        if raw {
                            let config = LaunchConfig {
                                shared_mem_bytes: kernels::MATMUL_RAW_SHARED,
                                ..config
                            };
                            let launch = s.launch(&stream, &module, config);
                            kernels::matmul_raw(
                                launch,
                                kernels::MatmulRawArgs {
                                    a: av,
                                    b: bv,
                                    c: cv.as_view_mut(),
                                },
                            )
                        } else {
                            let launch = s.launch(&stream, &module, config);
                            kernels::matmul(
                                launch,
                                kernels::MatmulArgs {
                                    a: av,
                                    b: bv,
                                    c: cv.as_view_mut(),
                                },
                            )
                        }
                    })
                    .unwrap();
                }
                let got = stream.clone_dtoh(&d_c).unwrap();
                assert_eq!(got, expected, "{m} x {k} · {k} x {n}, {blocks} blocks, raw: {raw}");
            }
        }
    }
}

#[test]
fn a_matrix_product_of_mismatched_extents_writes_nothing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let (d_a, d_b) = (
        stream.clone_htod(&[1.0f32; 12]).unwrap(),
        stream.clone_htod(&[1.0f32; 12]).unwrap(),
    );
    let mut d_c = stream.clone_htod(&[7.0f32; 16]).unwrap();
    {
        // 3 × 4 by 3 × 4: the inner extents differ.
        let av = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([3, 4])).unwrap();
        let bv = device_view::<_, Dims<2>, LayoutRight>(&d_b, Dims::new([3, 4])).unwrap();
        let mut cv = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([4, 4])).unwrap();
        cuda::scope(|s| {
            kernels::matmul(
                s.launch(&stream, &module, grid(1, 256)),
                kernels::MatmulArgs {
                    a: av,
                    b: bv,
                    c: cv.as_view_mut(),
                },
            )
        })
        .unwrap();
    }
    assert_eq!(stream.clone_dtoh(&d_c).unwrap(), [7.0; 16]);
}

#[test]
fn a_barrier_after_a_thread_dependent_branch_is_reached_by_the_whole_block() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let f = kernels::reverse_blocks_value;
    for (n, blocks) in [(1000, 4), (1000, 1), (256, 1), (0, 1)] {
        let mut d_out = stream.alloc_zeros::<u32>(n).unwrap();
        {
            let mut out = device_view_mut::<_, Dims<1>, LayoutRight>(&mut d_out, Dims::new([n])).unwrap();
            cuda::scope(|s| kernels::reverse_blocks(s.launch(&stream, &module, grid(blocks, 256)), out.as_view_mut()))
                .unwrap();
        }
        let expected: Vec<u32> = (0..n).map(|k| f(255 - k % 256)).collect();
        assert_eq!(
            stream.clone_dtoh(&d_out).unwrap(),
            expected,
            "{n} elements, {blocks} blocks"
        );
    }
}

#[test]
fn chunks_of_whole_rows_go_each_to_one_block() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    // Fewer rows than a chunk's four (one chunk of them all), ragged groups, rows of one
    // element and long rows, with a grid of one block per chunk and one that is smaller.
    for (rows, cols) in SHAPES.into_iter().chain([(3, 5000), (4, 1), (9, 2), (17, 300)]) {
        let chunks = rows.div_ceil(4);
        for blocks in [chunks, 3, 1] {
            let mut d_out = stream.alloc_zeros::<u32>(rows * cols).unwrap();
            {
                let mut out = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_out, Dims::new([rows, cols])).unwrap();
                cuda::scope(|s| {
                    kernels::mark_row_groups(s.launch(&stream, &module, grid(blocks, 128)), out.as_view_mut())
                })
                .unwrap();
            }
            // Chunk `c`, rows `4c..4c + 4`, is block `c % blocks`'s.
            let expected: Vec<u32> = (0..rows * cols)
                .map(|k| ((k / cols / 4) % blocks.max(1)) as u32 + 1)
                .collect();
            assert_eq!(
                stream.clone_dtoh(&d_out).unwrap(),
                expected,
                "{rows} x {cols}, {blocks} blocks"
            );
        }
    }
}

#[test]
fn a_launch_of_another_block_shape_is_refused() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let d_src = stream.clone_htod(&[1.0f32; 64]).unwrap();
    let mut d_dst = stream.alloc_zeros::<f32>(64).unwrap();
    let src = device_view::<_, Dims<2>, LayoutRight>(&d_src, Dims::new([8, 8])).unwrap();
    let mut dst = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_dst, Dims::new([8, 8])).unwrap();
    let wrong = [
        grid(1, 128),
        LaunchConfig {
            block_dim: (32, 8, 1),
            ..grid(1, 256)
        },
        LaunchConfig {
            shared_mem_bytes: 1024,
            ..grid(1, 256)
        },
    ];
    for config in wrong {
        let result =
            cuda::scope(|s| kernels::transpose_tiled(s.launch(&stream, &module, config), src, dst.as_view_mut()));
        assert!(
            matches!(
                result,
                Err(CudaError::Launch(dlmd::cuda::LaunchError::Block {
                    kernel: "transpose_tiled",
                    threads: 256,
                    ..
                }))
            ),
            "{config:?}: {result:?}"
        );
    }
    assert_eq!(stream.clone_dtoh(&d_dst).unwrap(), [0.0; 64], "nothing ran");
}

#[test]
fn an_element_wise_kernel_built_for_one_block_size_refuses_another() {
    // `matmul_raw` is built with `block_threads = 256` (its launch bounds): another block
    // shape is refused before it reaches the driver; its dynamic shared memory is its own.
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let module = Kernels::load(&ctx, kernels::PTX).unwrap();
    let d_a = stream.clone_htod(&[1.0f32; 64]).unwrap();
    let mut d_c = stream.alloc_zeros::<f32>(64).unwrap();
    let a = device_view::<_, Dims<2>, LayoutRight>(&d_a, Dims::new([8, 8])).unwrap();
    let shared = kernels::MATMUL_RAW_SHARED;
    for block_dim in [(128, 1, 1), (32, 8, 1)] {
        let mut c = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([8, 8])).unwrap();
        let config = LaunchConfig {
            block_dim,
            shared_mem_bytes: shared,
            ..grid(1, 256)
        };
        let result = cuda::scope(|s| {
            let args = kernels::MatmulRawArgs {
                a,
                b: a,
                c: c.as_view_mut(),
            };
            kernels::matmul_raw(s.launch(&stream, &module, config), args)
        });
        assert!(
            matches!(
                result,
                Err(CudaError::Launch(dlmd::cuda::LaunchError::BlockSize {
                    kernel: "matmul_raw",
                    threads: 256,
                    ..
                }))
            ),
            "{block_dim:?}: {result:?}"
        );
    }
    assert_eq!(stream.clone_dtoh(&d_c).unwrap(), [0.0; 64], "nothing ran");
    // With its block size and its shared memory, it runs: 8 × 8 ones squared are eights.
    let config = LaunchConfig {
        shared_mem_bytes: shared,
        ..grid(1, 256)
    };
    let mut c = device_view_mut::<_, Dims<2>, LayoutRight>(&mut d_c, Dims::new([8, 8])).unwrap();
    cuda::scope(|s| {
        let args = kernels::MatmulRawArgs {
            a,
            b: a,
            c: c.as_view_mut(),
        };
        kernels::matmul_raw(s.launch(&stream, &module, config), args)
    })
    .unwrap();
    assert_eq!(stream.clone_dtoh(&d_c).unwrap(), [8.0; 64]);
}
