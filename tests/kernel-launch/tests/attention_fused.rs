//! Attention's backward pass in one kernel (`examples/hopper-kernels`' `attention_fused_*`,
//! with `attention_delta_*` before it and `attention_dq_convert_*` after) on an `sm_90a` GPU,
//! against the CPU in `f64`, on the three-kernel pass's cases (`common::backward`): head
//! dimensions 64 and 128, `bf16` and `f16`, causal and not, grouped-query ratios 1, 2, 4 and 8,
//! ragged lengths, one query, one key, three layouts; on grids of one block a chunk and of three
//! blocks. `dq` is summed by the blocks atomically in `f32`, converted once: the same tolerance
//! as the three-kernel pass's; no gradient written outside its view, exact zeros for the queries
//! that see no key, and `dq`'s accumulator outside its view untouched.
//!
//! Without a GPU each test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead).

mod common;

use common::backward::{Buffer, CASES, Grads, Inputs, assert_grads, download, gradients, inputs, tiled, uploaded};
use common::{Case, Input, hopper};
use cudarc::driver::{CudaStream, LaunchConfig};
use dlmd::cuda::{self, Kernels, device_view_mapped, device_view_mapped_mut};
use dlmd::half::{bf16, f16};
use dlmd::layout::StrideMapping;
use dlmd::{Dims, LayoutStride};
use dlmd_example_hopper_kernels as hk;
use std::sync::Arc;

/// A view a run presents one row short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Short {
    Sum,
    Dk,
    Dv,
    Do,
    Lse,
    Delta,
}

/// How a fused run is set up: on a grid of one block a chunk (`blocks` 0) or of `blocks`;
/// `dq`'s accumulator with `gap` elements after each row (an odd row stride with an odd gap);
/// one view one row short, or none.
#[derive(Clone, Copy, Debug)]
struct Setup {
    blocks: usize,
    gap: usize,
    short: Option<Short>,
}

/// What a fused run gives back: the gradients; whether every element of `dq`'s `f32`
/// accumulator outside its view (the gaps after its rows, and a guard after the last) still
/// holds its finite sentinel, bit for bit; and whether every element inside is still zero.
struct Run {
    grads: Grads,
    outside: bool,
    untouched: bool,
}

/// The sentinel of `dq`'s accumulator outside its view: finite, so that an addition shows.
const SENTINEL: f32 = 1234.5;

/// `fn $name(stream, module, case, inputs, setup) -> Run`: `Δ`, then the fused kernel of `$t`
/// and head dimension `$d` (into an accumulator of `dq`, zero inside its view), then `dq`
/// converted; `o` and `dv` laid out by [`other`], every other tensor as the case's order says;
/// the gradients start as `-7`.
macro_rules! fused_runner {
    ($name:ident, $t:ty, $d:literal, $delta:ident, $delta_args:ident, $fused:ident, $fused_args:ident, $convert:ident) => {
        fn $name(stream: &Arc<CudaStream>, module: &Kernels, c: Case, x: &Inputs, setup: Setup) -> Run {
            let scale = 1.0 / (c.dim as f32).sqrt();
            let (qe, ke) = (c.q(), c.kv());
            // The extents of a view the setup presents one row short.
            let cut = |mut extents: [usize; 4], which: Short| {
                if setup.short == Some(which) {
                    extents[2] -= 1;
                }
                extents
            };
            let ([q, k, v, o, d_o], [mut dq, mut dk, mut dv]) = uploaded::<$t>(stream, c, x);
            let strided =
                |strides: [usize; 4], extents: [usize; 4]| StrideMapping::new(Dims::new(extents), strides).unwrap();
            // The statistics' mapping, one row short where the setup says (`None`: never).
            let stat = |which: Option<Short>| {
                let [b, h, s, _] = which.map_or(qe, |which| cut(qe, which));
                StrideMapping::new(Dims::new([b, h, s]), [qe[1] * qe[2], qe[2], 1]).unwrap()
            };
            let lse = stream.clone_htod(&x.lse).unwrap();
            let mut delta = stream.clone_htod(&vec![f32::NAN; x.lse.len()]).unwrap();
            // `dq`'s accumulator: rows of `d` and `gap` sentinels after each, a guard of 64
            // after the last, zero inside.
            let row = $d + setup.gap;
            let rows = qe[0] * qe[1] * qe[2];
            let sum_strides = [qe[1] * qe[2] * row, qe[2] * row, row, 1];
            let mut sum_init = vec![SENTINEL; rows * row + 64];
            for r in 0..rows {
                sum_init[r * row..r * row + $d].fill(0.0);
            }
            let mut sum = stream.clone_htod(&sum_init).unwrap();
            {
                let rows = LaunchConfig {
                    grid_dim: (qe[2].div_ceil(256) as u32, qe[1] as u32, qe[0] as u32),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let ov = device_view_mapped::<$t, _, LayoutStride>(&o.0, strided(o.1, qe)).unwrap();
                let gv = device_view_mapped::<$t, _, LayoutStride>(&d_o.0, strided(d_o.1, qe)).unwrap();
                let mut out = device_view_mapped_mut::<f32, _, LayoutStride>(&mut delta, stat(None)).unwrap();
                cuda::scope(|s| {
                    let args = hk::$delta_args {
                        o: ov,
                        d_o: gv,
                        delta_out: out.as_view_mut(),
                    };
                    hk::$delta(s.launch(stream, module, rows), args)
                })
                .unwrap();
            }
            {
                let (k128, v128, q64, do64) = (
                    tiled::<$t, 128, $d>(&k, ke),
                    tiled::<$t, 128, $d>(&v, ke),
                    tiled::<$t, 64, $d>(&q, qe),
                    tiled::<$t, 64, $d>(&d_o, cut(qe, Short::Do)),
                );
                let lv = device_view_mapped::<f32, _, LayoutStride>(&lse, stat(Some(Short::Lse))).unwrap();
                let delta_view = device_view_mapped::<f32, _, LayoutStride>(&delta, stat(Some(Short::Delta))).unwrap();
                let mut out_k =
                    device_view_mapped_mut::<$t, _, LayoutStride>(&mut dk.0, strided(dk.1, cut(ke, Short::Dk)))
                        .unwrap();
                let mut out_v =
                    device_view_mapped_mut::<$t, _, LayoutStride>(&mut dv.0, strided(dv.1, cut(ke, Short::Dv)))
                        .unwrap();
                let sum_view =
                    device_view_mapped_mut::<f32, _, LayoutStride>(&mut sum, strided(sum_strides, cut(qe, Short::Sum)))
                        .unwrap();
                let [b, h, s, _] = ke;
                let blocks = setup.blocks;
                let grid = LaunchConfig {
                    grid_dim: (
                        if blocks == 0 {
                            b * h * s.div_ceil(128)
                        } else {
                            blocks
                        } as u32,
                        1,
                        1,
                    ),
                    block_dim: (384, 1, 1),
                    shared_mem_bytes: 0,
                };
                cuda::scope(|s| {
                    let args = hk::$fused_args {
                        k: k128.map(),
                        v: v128.map(),
                        q: q64.map(),
                        d_o: do64.map(),
                        lse: lv,
                        delta: delta_view,
                        dk_out: out_k.as_view_mut(),
                        dv_out: out_v.as_view_mut(),
                        dq_sum: sum_view.into_atomic(),
                        scale,
                        causal: c.causal,
                    };
                    hk::$fused(s.launch(stream, module, grid), args)
                })
                .unwrap();
            }
            {
                let sum_view = device_view_mapped::<f32, _, LayoutStride>(&sum, strided(sum_strides, qe)).unwrap();
                let mut out = device_view_mapped_mut::<$t, _, LayoutStride>(&mut dq.0, strided(dq.1, qe)).unwrap();
                let elements = LaunchConfig {
                    grid_dim: (1, qe[2].div_ceil(8) as u32, (qe[0] * qe[1]) as u32),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                };
                cuda::scope(|s| hk::$convert(s.launch(stream, module, elements), sum_view, out.as_view_mut())).unwrap();
            }
            let back = |buffer: &Buffer<$t>, extents: [usize; 4]| download(stream, buffer, extents);
            let ((dq, rest_q), (dk, rest_k), (dv, rest_v)) = (back(&dq, qe), back(&dk, ke), back(&dv, ke));
            let sum_after = stream.clone_dtoh(&sum).unwrap();
            let inside = |i: usize| i < rows * row && i % row < $d;
            let outside = sum_after
                .iter()
                .enumerate()
                .all(|(i, x)| inside(i) || x.to_bits() == SENTINEL.to_bits());
            let untouched = sum_after
                .iter()
                .enumerate()
                .all(|(i, x)| !inside(i) || x.to_bits() == 0);
            let grads = Grads {
                delta: stream.clone_dtoh(&delta).unwrap(),
                dq,
                dk,
                dv,
                rest: rest_q && rest_k && rest_v,
            };
            Run {
                grads,
                outside,
                untouched,
            }
        }
    };
}

fused_runner!(
    bf16_d64,
    bf16,
    64,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_fused_bf16_d64,
    AttentionFusedBf16D64Args,
    attention_dq_convert_bf16
);
fused_runner!(
    bf16_d128,
    bf16,
    128,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_fused_bf16_d128,
    AttentionFusedBf16D128Args,
    attention_dq_convert_bf16
);
fused_runner!(
    f16_d64,
    f16,
    64,
    attention_delta_f16,
    AttentionDeltaF16Args,
    attention_fused_f16_d64,
    AttentionFusedF16D64Args,
    attention_dq_convert_f16
);
fused_runner!(
    f16_d128,
    f16,
    128,
    attention_delta_f16,
    AttentionDeltaF16Args,
    attention_fused_f16_d128,
    AttentionFusedF16D128Args,
    attention_dq_convert_f16
);

type RunFn = fn(&Arc<CudaStream>, &Kernels, Case, &Inputs, Setup) -> Run;

/// Every case of head dimension `d` through `run`, on a grid of one block a chunk and on one of
/// three blocks (the accumulator's rows an odd number of elements apart there, so that its
/// additions go one element at a time); `u`, the element type's unit of rounding.
fn check<T: Input>(stream: &Arc<CudaStream>, module: &Kernels, (d, u): (usize, f64), what: &str, run: RunFn) {
    for c in CASES.into_iter().filter(|c| c.dim == d) {
        let scale = 1.0 / (d as f64).sqrt();
        let x = inputs::<T>(c, scale);
        let [_, dq, dk, dv] = gradients(c, &x, scale);
        for (blocks, gap) in [(0, 4), (3, 3)] {
            let got = run(
                stream,
                module,
                c,
                &x,
                Setup {
                    blocks,
                    gap,
                    short: None,
                },
            );
            let what = format!("{what}, {blocks} blocks, rows of the accumulator {gap} apart");
            assert_grads(c, &x, &got.grads, [&dq, &dk, &dv], u, &what);
            assert!(got.outside, "{what} {c:?}: dq's accumulator added to outside its view");
        }
    }
}

#[test]
fn the_fused_gradients_match_the_cpu_in_bf16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let u = 1.0 / 256.0;
    check::<bf16>(&stream, &module, (64, u), "fused bf16 d64", bf16_d64);
    check::<bf16>(&stream, &module, (128, u), "fused bf16 d128", bf16_d128);
}

#[test]
fn the_fused_gradients_match_the_cpu_in_f16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let u = 1.0 / 2048.0;
    check::<f16>(&stream, &module, (64, u), "fused f16 d64", f16_d64);
    check::<f16>(&stream, &module, (128, u), "fused f16 d128", f16_d128);
}

/// Where a view the fused kernel reads or writes is one row short of the others' extents, it
/// writes no gradient and adds nothing: `dk` and `dv` stay as they were, and so does every
/// element of `dq`'s accumulator.
#[test]
fn views_whose_extents_do_not_fit_add_and_write_nothing() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    for (d, run) in [(64, bf16_d64 as RunFn), (128, bf16_d128)] {
        let c = CASES.into_iter().find(|c| c.dim == d).unwrap();
        let x = inputs::<bf16>(c, 1.0 / (d as f64).sqrt());
        for short in [Short::Sum, Short::Dk, Short::Dv, Short::Do, Short::Lse, Short::Delta] {
            let got = run(
                &stream,
                &module,
                c,
                &x,
                Setup {
                    blocks: 0,
                    gap: 4,
                    short: Some(short),
                },
            );
            let what = format!("d {d}, {short:?} one row short");
            assert!(got.grads.rest, "{what}: a gradient written outside its view");
            assert!(
                got.grads.dk.iter().chain(&got.grads.dv).all(|&g| g == -7.0),
                "{what}: dk or dv written"
            );
            assert!(got.outside && got.untouched, "{what}: dq's accumulator added to");
        }
    }
}

/// The conversion of `dq`'s accumulator writes `dq` only where the two have one shape: with
/// the accumulator one row short (or one row long) `dq` keeps every element, and with the same
/// extents each element is its sum rounded to `bf16`.
#[test]
fn the_conversion_writes_dq_only_where_the_extents_match() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let qe = [2, 3, 5, 64];
    let volume = |e: [usize; 4]| e.iter().product::<usize>();
    let dense = |e: [usize; 4]| StrideMapping::new(Dims::new(e), [e[1] * e[2] * e[3], e[2] * e[3], e[3], 1]).unwrap();
    // Halves from -100 to 154, which the conversion rounds to nearest even as `bf16::from_f32`.
    let values: Vec<f32> = (0..volume([2, 3, 6, 64]))
        .map(|i| (i % 509) as f32 * 0.5 - 100.0)
        .collect();
    // Outside the values' range, so that a written element shows.
    let sentinel = bf16::from_f32(-1000.0);
    for rows in [4, 6, 5] {
        let se = [qe[0], qe[1], rows, qe[3]];
        let sum = stream.clone_htod(&values[..volume(se)]).unwrap();
        let mut dq = stream.clone_htod(&vec![sentinel; volume(qe)]).unwrap();
        {
            let sum_view = device_view_mapped::<f32, _, LayoutStride>(&sum, dense(se)).unwrap();
            let mut out = device_view_mapped_mut::<bf16, _, LayoutStride>(&mut dq, dense(qe)).unwrap();
            let elements = LaunchConfig {
                grid_dim: (1, qe[2].div_ceil(8) as u32, (qe[0] * qe[1]) as u32),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            };
            cuda::scope(|s| {
                hk::attention_dq_convert_bf16(s.launch(&stream, &module, elements), sum_view, out.as_view_mut())
            })
            .unwrap();
        }
        let got = stream.clone_dtoh(&dq).unwrap();
        if rows == qe[2] {
            let want: Vec<bf16> = values[..volume(qe)].iter().map(|&v| bf16::from_f32(v)).collect();
            assert_eq!(got, want, "matching extents: dq is the sums, rounded");
        } else {
            assert!(
                got.iter().all(|&g| g == sentinel),
                "an accumulator of {rows} rows against dq's {}: dq written",
                qe[2]
            );
        }
    }
}
