//! Attention's backward pass written with `dlmd::kernel::warpgroup` (`examples/hopper-kernels`'
//! `attention_delta_*`, `attention_dq_*` and `attention_dkv_*`) on an `sm_90a` GPU, against the
//! CPU in `f64`: from `q`, `k`, `v`, the forward pass's `o` (rounded to the inputs' type) and
//! `lse`, and the output's gradient `do`, the row statistic `Δ = Σ do ∘ o` and the gradients
//! `dq`, `dk` and `dv`; head dimensions 64 and 128, `bf16` and `f16`, causal and not,
//! grouped-query ratios 1, 2, 4 and 8 (a key-value head's gradients sum its group's), lengths
//! that are not multiples of the tiles, one query, one key (and rows that see no key), tensors
//! laid out as `(b, h, s, d)`, as `(b, s, h, d)` seen as `(b, h, s, d)` and with NaN rows
//! between heads, `o` and `dv` in another layout than `do` and `dk`, on grids of one block a
//! chunk and of three blocks (each runs its pipeline over several chunks); no gradient written
//! outside its view, exact zeros for the queries that see no key, and the same bits on any grid.
//!
//! Without a GPU each test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead); on a GPU that cannot run `sm_90a` code the
//! module is refused by name, and the tests say so and pass.

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

/// `fn $name(stream, module, case, inputs, launch) -> Grads`: the three kernels of `$t` and
/// head dimension `$d` in turn, the gradients' on grids of one block a chunk (`launch.blocks`
/// 0) or of `launch.blocks`, with `$shared` bytes of dynamic shared memory, then changed by
/// `launch.edit`; `o` and `dv` laid out by [`other`], every other tensor as the case's order
/// says, the statistics `b × h × s` contiguous; the gradients start as `-7`.
macro_rules! runner {
    ($name:ident, $t:ty, $d:literal, $shared:expr, $delta:ident, $delta_args:ident, $dq:ident, $dq_args:ident, $dkv:ident, $dkv_args:ident) => {
        fn $name(stream: &Arc<CudaStream>, module: &Kernels, c: Case, x: &Inputs, launch: Launch) -> Grads {
            let blocks = launch.blocks;
            let scale = launch.scale / (c.dim as f32).sqrt();
            let (qe, ke) = (c.q(), c.kv());
            let ([q, k, v, o, d_o], [mut dq, mut dk, mut dv]) = uploaded::<$t>(stream, c, x);
            let stat = [qe[1] * qe[2], qe[2], 1];
            // The extents of a view the launch presents one short (`Launch::short`).
            let cut = |mut extents: [usize; 4], which: Short| {
                let (short, dim) = launch.short;
                if short == which {
                    extents[dim] -= 1;
                }
                extents
            };
            let lse = stream.clone_htod(&x.lse).unwrap();
            let mut delta = stream.clone_htod(&vec![f32::NAN; x.lse.len()]).unwrap();
            let strided =
                |strides: [usize; 4], extents: [usize; 4]| StrideMapping::new(Dims::new(extents), strides).unwrap();
            let stat_mapping = |which: Short| {
                let [b, h, s, _] = cut(qe, which);
                StrideMapping::new(Dims::new([b, h, s]), stat).unwrap()
            };
            let grid = |[b, h, s, _]: [usize; 4]| {
                (launch.edit)(LaunchConfig {
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
                    shared_mem_bytes: $shared,
                })
            };
            // Δ: a thread a row, blocks of 256 rows of one head.
            {
                let rows = LaunchConfig {
                    grid_dim: (qe[2].div_ceil(256) as u32, qe[1] as u32, qe[0] as u32),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let ov = device_view_mapped::<$t, _, LayoutStride>(&o.0, strided(o.1, cut(qe, Short::O))).unwrap();
                let gv = device_view_mapped::<$t, _, LayoutStride>(&d_o.0, strided(d_o.1, cut(qe, Short::DO))).unwrap();
                let mut dv_ =
                    device_view_mapped_mut::<f32, _, LayoutStride>(&mut delta, stat_mapping(Short::Delta)).unwrap();
                cuda::scope(|s| {
                    let args = hk::$delta_args {
                        o: ov,
                        d_o: gv,
                        delta_out: dv_.as_view_mut(),
                    };
                    hk::$delta(s.launch(stream, module, rows), args)
                })
                .unwrap();
            }
            // The maps of the dq kernel (`q` and `do` in boxes of 128 rows, `k` and `v` of 64) and
            // of the dkv kernel (the other way round).
            let [eq, ek, ev, edo] =
                [(qe, Short::Q), (ke, Short::K), (ke, Short::V), (qe, Short::DO)].map(|(e, w)| cut(e, w));
            let (q128, do128, k64, v64) = (
                tiled::<$t, 128, $d>(&q, eq),
                tiled::<$t, 128, $d>(&d_o, edo),
                tiled::<$t, 64, $d>(&k, ek),
                tiled::<$t, 64, $d>(&v, ev),
            );
            let (k128, v128, q64, do64) = (
                tiled::<$t, 128, $d>(&k, ek),
                tiled::<$t, 128, $d>(&v, ev),
                tiled::<$t, 64, $d>(&q, eq),
                tiled::<$t, 64, $d>(&d_o, edo),
            );
            let lv = device_view_mapped::<f32, _, LayoutStride>(&lse, stat_mapping(Short::Lse)).unwrap();
            let delta_view = device_view_mapped::<f32, _, LayoutStride>(&delta, stat_mapping(Short::Delta)).unwrap();
            {
                let mut out =
                    device_view_mapped_mut::<$t, _, LayoutStride>(&mut dq.0, strided(dq.1, cut(qe, Short::Dq)))
                        .unwrap();
                cuda::scope(|s| {
                    let args = hk::$dq_args {
                        q: q128.map(),
                        k: k64.map(),
                        v: v64.map(),
                        d_o: do128.map(),
                        lse: lv,
                        delta: delta_view,
                        dq_out: out.as_view_mut(),
                        scale,
                        causal: c.causal,
                    };
                    hk::$dq(s.launch(stream, module, grid(qe)), args)
                })
                .unwrap();
            }
            {
                let mut out_k =
                    device_view_mapped_mut::<$t, _, LayoutStride>(&mut dk.0, strided(dk.1, cut(ke, Short::Dk)))
                        .unwrap();
                let mut out_v =
                    device_view_mapped_mut::<$t, _, LayoutStride>(&mut dv.0, strided(dv.1, cut(ke, Short::Dv)))
                        .unwrap();
                cuda::scope(|s| {
                    let args = hk::$dkv_args {
                        k: k128.map(),
                        v: v128.map(),
                        q: q64.map(),
                        d_o: do64.map(),
                        lse: lv,
                        delta: delta_view,
                        dk_out: out_k.as_view_mut(),
                        dv_out: out_v.as_view_mut(),
                        scale,
                        causal: c.causal,
                    };
                    hk::$dkv(s.launch(stream, module, grid(ke)), args)
                })
                .unwrap();
            }
            let back = |buffer: &Buffer<$t>, extents: [usize; 4]| download(stream, buffer, extents);
            let ((dq, rest_q), (dk, rest_k), (dv, rest_v)) = (back(&dq, qe), back(&dk, ke), back(&dv, ke));
            Grads {
                delta: stream.clone_dtoh(&delta).unwrap(),
                dq,
                dk,
                dv,
                rest: rest_q && rest_k && rest_v,
            }
        }
    };
}

runner!(
    bf16_d64,
    bf16,
    64,
    0,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_dq_bf16_d64,
    AttentionDqBf16D64Args,
    attention_dkv_bf16_d64,
    AttentionDkvBf16D64Args
);
runner!(
    bf16_d128,
    bf16,
    128,
    0,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_dq_bf16_d128,
    AttentionDqBf16D128Args,
    attention_dkv_bf16_d128,
    AttentionDkvBf16D128Args
);
runner!(
    f16_d64,
    f16,
    64,
    0,
    attention_delta_f16,
    AttentionDeltaF16Args,
    attention_dq_f16_d64,
    AttentionDqF16D64Args,
    attention_dkv_f16_d64,
    AttentionDkvF16D64Args
);
runner!(
    f16_d128,
    f16,
    128,
    0,
    attention_delta_f16,
    AttentionDeltaF16Args,
    attention_dq_f16_d128,
    AttentionDqF16D128Args,
    attention_dkv_f16_d128,
    AttentionDkvF16D128Args
);

runner!(
    raw_bf16_d64,
    bf16,
    64,
    hk::raw_backward_shared_bytes(64),
    attention_raw_delta_bf16,
    AttentionRawDeltaBf16Args,
    attention_raw_dq_bf16_d64,
    AttentionRawDqBf16D64Args,
    attention_raw_dkv_bf16_d64,
    AttentionRawDkvBf16D64Args
);
runner!(
    raw_bf16_d128,
    bf16,
    128,
    hk::raw_backward_shared_bytes(128),
    attention_raw_delta_bf16,
    AttentionRawDeltaBf16Args,
    attention_raw_dq_bf16_d128,
    AttentionRawDqBf16D128Args,
    attention_raw_dkv_bf16_d128,
    AttentionRawDkvBf16D128Args
);
runner!(
    raw_f16_d64,
    f16,
    64,
    hk::raw_backward_shared_bytes(64),
    attention_raw_delta_f16,
    AttentionRawDeltaF16Args,
    attention_raw_dq_f16_d64,
    AttentionRawDqF16D64Args,
    attention_raw_dkv_f16_d64,
    AttentionRawDkvF16D64Args
);
runner!(
    raw_f16_d128,
    f16,
    128,
    hk::raw_backward_shared_bytes(128),
    attention_raw_delta_f16,
    AttentionRawDeltaF16Args,
    attention_raw_dq_f16_d128,
    AttentionRawDqF16D128Args,
    attention_raw_dkv_f16_d128,
    AttentionRawDkvF16D128Args
);

/// The gradients' launches of a run: grids of one block a chunk (`blocks` 0) or of `blocks`,
/// then changed by `edit`, with the softmax scale `scale / √d`, and the view `short.0` one
/// short in dimension `short.1`.
#[derive(Clone, Copy)]
struct Launch {
    blocks: usize,
    edit: fn(LaunchConfig) -> LaunchConfig,
    scale: f32,
    short: (Short, usize),
}

/// A view the runner gives the kernels one short in a dimension (its extent there less one; the
/// same memory and strides), so that its extents no longer fit the others': the tensors read,
/// the statistics (`Δ` also as the first kernel's output) and the gradients.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Short {
    Whole,
    Q,
    K,
    V,
    O,
    DO,
    Lse,
    Delta,
    Dq,
    Dk,
    Dv,
}

/// A launch on `blocks` blocks, as the runner makes it, with the scale `1 / √d` and every view
/// whole.
fn blocks(blocks: usize) -> Launch {
    Launch {
        blocks,
        edit: |c| c,
        scale: 1.0,
        short: (Short::Whole, 0),
    }
}

/// A runner's signature.
type RunFn = fn(&Arc<CudaStream>, &Kernels, Case, &Inputs, Launch) -> Grads;

/// Every case of head dimension `d` through `run`, on a grid of one block a chunk and on one of
/// three blocks; `u`, the element type's unit of rounding.
fn check<T: Input>(stream: &Arc<CudaStream>, module: &Kernels, (d, u): (usize, f64), what: &str, run: RunFn) {
    for c in CASES.into_iter().filter(|c| c.dim == d) {
        let scale = 1.0 / (d as f64).sqrt();
        let x = inputs::<T>(c, scale);
        let [delta, dq, dk, dv] = gradients(c, &x, scale);
        for n in [0, 3] {
            let got = run(stream, module, c, &x, blocks(n));
            let what = format!("{what}, {n} blocks");
            for (row, (&g, &w)) in got.delta.iter().zip(&delta).enumerate() {
                assert!(
                    (f64::from(g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{what} {c:?}: Δ of row {row} is {g}, expected {w}"
                );
            }
            assert_grads(c, &x, &got, [&dq, &dk, &dv], u, &what);
        }
    }
}

#[test]
fn the_gradients_match_the_cpu_in_bf16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let u = 1.0 / 256.0;
    check::<bf16>(&stream, &module, (64, u), "bf16 d64", bf16_d64);
    check::<bf16>(&stream, &module, (128, u), "bf16 d128", bf16_d128);
}

#[test]
fn the_gradients_match_the_cpu_in_f16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let u = 1.0 / 2048.0;
    check::<f16>(&stream, &module, (64, u), "f16 d64", f16_d64);
    check::<f16>(&stream, &module, (128, u), "f16 d128", f16_d128);
}

/// No atomics: the same inputs give the same bits, whatever the grid.
#[test]
fn the_gradients_do_not_depend_on_the_grid() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let c = CASES[1];
    let x = inputs::<bf16>(c, 1.0 / (c.dim as f64).sqrt());
    let bits = |g: &Grads| [&g.delta, &g.dq, &g.dk, &g.dv].map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let first = bits(&bf16_d128(&stream, &module, c, &x, blocks(0)));
    for n in [1, 3, 7] {
        assert!(
            bits(&bf16_d128(&stream, &module, c, &x, blocks(n))) == first,
            "{n} blocks"
        );
    }
}

#[test]
fn the_raw_twins_match_the_cpu() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let (b, f) = (1.0 / 256.0, 1.0 / 2048.0);
    check::<bf16>(&stream, &module, (64, b), "raw bf16 d64", raw_bf16_d64);
    check::<bf16>(&stream, &module, (128, b), "raw bf16 d128", raw_bf16_d128);
    check::<f16>(&stream, &module, (64, f), "raw f16 d64", raw_f16_d64);
    check::<f16>(&stream, &module, (128, f), "raw f16 d128", raw_f16_d128);
}

/// The raw twins do the safe kernels' work in the same order: the same bits out, every case,
/// on one block a chunk and on three blocks.
#[test]
fn the_raw_twins_give_the_safe_kernels_bits() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let bits = |g: &Grads| [&g.delta, &g.dq, &g.dk, &g.dv].map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let pairs: [(usize, bool, RunFn, RunFn); 4] = [
        (64, false, bf16_d64, raw_bf16_d64),
        (128, false, bf16_d128, raw_bf16_d128),
        (64, true, f16_d64, raw_f16_d64),
        (128, true, f16_d128, raw_f16_d128),
    ];
    for (d, half, safe, raw) in pairs {
        for c in CASES.into_iter().filter(|c| c.dim == d) {
            let scale = 1.0 / (d as f64).sqrt();
            let x = if half {
                inputs::<f16>(c, scale)
            } else {
                inputs::<bf16>(c, scale)
            };
            for n in [0, 3] {
                let (a, z) = (
                    safe(&stream, &module, c, &x, blocks(n)),
                    raw(&stream, &module, c, &x, blocks(n)),
                );
                assert!(z.rest, "{c:?}, {n} blocks: the raw twin wrote outside the views");
                let names = ["Δ", "dq", "dk", "dv"];
                for ((name, a), z) in names.iter().zip(bits(&a)).zip(bits(&z)) {
                    assert!(a == z, "{c:?}, {n} blocks, half {half}: the raw twin's {name} differs");
                }
            }
        }
    }
}

/// A raw twin writes no gradient on a launch it was not written for: a grid of two layers (two
/// blocks each chunk's), or half the shared memory it needs; the same twin on the
/// launch it takes writes them.
#[test]
fn a_raw_twin_refuses_launches_it_was_not_written_for() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let untouched = |g: &Grads| g.rest && [&g.dq, &g.dk, &g.dv].iter().all(|v| v.iter().all(|&x| x == -7.0));
    let layers = Launch {
        edit: |c| LaunchConfig {
            grid_dim: (c.grid_dim.0, 1, 2),
            ..c
        },
        ..blocks(0)
    };
    let starved = Launch {
        edit: |c| LaunchConfig {
            shared_mem_bytes: c.shared_mem_bytes / 2,
            ..c
        },
        ..blocks(0)
    };
    for (c, run) in [(CASES[1], raw_bf16_d128 as RunFn), (CASES[0], raw_bf16_d64)] {
        let x = inputs::<bf16>(c, 1.0 / (c.dim as f64).sqrt());
        for (what, launch) in [("two layers", layers), ("half its shared memory", starved)] {
            assert!(
                untouched(&run(&stream, &module, c, &x, launch)),
                "{c:?}: {what}: a gradient was written"
            );
        }
        assert!(
            !untouched(&run(&stream, &module, c, &x, blocks(0))),
            "{c:?}: nothing written on the launch it takes"
        );
    }
}

/// Every gradient kernel, safe or raw, writes no gradient where the scale is not positive and
/// finite (`Δ`, whose kernel takes no scale, is written); the same kernels with the scale of the
/// other tests write them.
#[test]
fn a_scale_that_is_not_positive_and_finite_writes_no_gradient() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let untouched = |g: &Grads| g.rest && [&g.dq, &g.dk, &g.dv].iter().all(|v| v.iter().all(|&x| x == -7.0));
    let runs: [(&str, Case, RunFn); 4] = [
        ("safe d128", CASES[1], bf16_d128),
        ("safe d64", CASES[0], bf16_d64),
        ("raw d128", CASES[1], raw_bf16_d128),
        ("raw d64", CASES[0], raw_bf16_d64),
    ];
    for (what, c, run) in runs {
        let x = inputs::<bf16>(c, 1.0 / (c.dim as f64).sqrt());
        for scale in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            let launch = Launch { scale, ..blocks(0) };
            assert!(
                untouched(&run(&stream, &module, c, &x, launch)),
                "{what}, scale {scale}: a gradient was written"
            );
        }
        assert!(
            !untouched(&run(&stream, &module, c, &x, blocks(0))),
            "{what}: nothing written with a good scale"
        );
    }
}

/// Every kernel of the backward pass, safe or raw, writes nothing where the extents of its views
/// do not fit together: with each view in turn one row short (the same memory), and some one
/// head or one column short, the gradients whose kernels read it stay as they were (and `Δ`,
/// where its kernel reads it), and the others are written, with the bits of a launch whose
/// views all fit.
#[test]
fn views_whose_extents_do_not_fit_write_no_gradient() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let written = |v: &[f32]| v.iter().any(|&x| x != -7.0);
    let same = |a: &[f32], b: &[f32]| a.iter().map(|x| x.to_bits()).eq(b.iter().map(|x| x.to_bits()));
    let runs: [(&str, Case, RunFn); 4] = [
        ("safe d128", CASES[1], bf16_d128),
        ("safe d64", CASES[0], bf16_d64),
        ("raw d128", CASES[1], raw_bf16_d128),
        ("raw d64", CASES[0], raw_bf16_d64),
    ];
    use Short::*;
    // Rows of every view; heads of the query side's; columns of the views that are not tensor
    // maps (a map's box is the head dimension's width).
    let rows = [Q, K, V, O, DO, Lse, Delta, Dq, Dk, Dv].map(|v| (v, 2));
    let others = [
        (Q, 1),
        (DO, 1),
        (Lse, 1),
        (Delta, 1),
        (Dq, 1),
        (O, 3),
        (Dq, 3),
        (Dk, 3),
        (Dv, 3),
    ];
    for (what, c, run) in runs {
        let x = inputs::<bf16>(c, 1.0 / (c.dim as f64).sqrt());
        let whole = run(&stream, &module, c, &x, blocks(0));
        assert!(
            written(&whole.dq) && written(&whole.dk) && written(&whole.dv),
            "{what}: views that fit"
        );
        for short in rows.into_iter().chain(others) {
            let g = run(&stream, &module, c, &x, Launch { short, ..blocks(0) });
            let view = short.0;
            let what = format!("{what}, {view:?} one short in dimension {}", short.1);
            assert!(g.rest, "{what}: a gradient written outside its view");
            // `Δ`'s kernel reads `o`, `do` and `Δ`; `dq`'s, all but `o`, `dk` and `dv`; `dk` and
            // `dv`'s, all but `o` and `dq`. (With `o` short, `Δ` stays NaN and the gradients
            // are written from it.)
            assert_eq!(
                g.delta.iter().any(|x| !x.is_nan()),
                !matches!(view, O | DO | Delta),
                "{what}: Δ"
            );
            assert_eq!(written(&g.dq), matches!(view, O | Dk | Dv), "{what}: dq");
            assert_eq!(written(&g.dk), matches!(view, O | Dq), "{what}: dk");
            assert_eq!(written(&g.dv), matches!(view, O | Dq), "{what}: dv");
            if matches!(view, Dk | Dv) {
                assert!(same(&g.dq, &whole.dq), "{what}: dq differs from the launch that fits");
            }
            if view == Dq {
                assert!(
                    same(&g.dk, &whole.dk) && same(&g.dv, &whole.dv),
                    "{what}: dk or dv differs from the launch that fits"
                );
            }
        }
    }
}
