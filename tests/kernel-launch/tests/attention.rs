//! Attention's forward pass written with `dlmd::kernel::warpgroup` (`examples/hopper-kernels`'
//! `attention_*`) on an `sm_90a` GPU, against the CPU in `f64`, output and log-sum-exp (into a
//! view with padding between heads, which must stay as it was): head dimensions 64 and 128,
//! `bf16` and `f16`, causal and not, grouped-query ratios 1, 4 and 8, key sequences shorter
//! and longer than the queries' and of any length (one key; a last tile of keys cut short),
//! query lengths that are not multiples of the chunk (128 rows, 192 at head dimension 64; one
//! query; a last chunk of queries cut short, with warpgroups whose rows are all past the end),
//! tensors laid out as `(b, h, s, d)`, as `(b, s, h, d)` seen as `(b, h, s, d)`, and with NaN
//! rows between heads (which must not reach the output: no box crosses a head's end), grids
//! that cover the chunks and grids of fewer blocks (each runs its pipeline over several chunks,
//! refilling the resident query tile), and calls whose extents do not fit together or whose
//! scale is not positive, which leave the output and the log-sum-exp as they were; and the
//! host-side call (`attention_forward`), which runs the same kernels and names each call that
//! does not fit.
//!
//! Without a GPU each test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead); on a GPU that cannot run `sm_90a` code the
//! module is refused by name, and the tests say so and pass.

mod common;

use common::{Case, Input, Order, case, gather, hopper, reference, scatter, values};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, Kernels, TiledMap, device_view_mapped, device_view_mapped_mut};
use dlmd::half::{bf16, f16};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::layout::StrideMapping;
use dlmd::{Const, Dims, LayoutStride};
use dlmd_example_hopper_kernels as hk;
use std::sync::Arc;

const CASES: [Case; 18] = [
    case([1, 2, 2], [128, 128, 64], false, Order::Heads),
    case([2, 4, 1], [256, 200, 128], true, Order::Heads),
    case([1, 8, 2], [384, 384, 128], true, Order::Tokens),
    case([1, 8, 1], [128, 1, 64], false, Order::Heads),
    case([2, 2, 2], [256, 520, 64], true, Order::Padded),
    case([1, 2, 2], [256, 100, 128], true, Order::Heads),
    case([3, 4, 4], [128, 333, 128], false, Order::Padded),
    case([1, 4, 1], [512, 512, 64], true, Order::Tokens),
    // More queries than keys, causal: in chunks of 192 rows the first warpgroups see no key of
    // the first chunk, or fewer tiles than the chunk's last.
    case([1, 4, 2], [300, 150, 64], true, Order::Padded),
    case([2, 2, 1], [384, 200, 64], true, Order::Heads),
    // Query lengths that are not multiples of 128, down to one query.
    case([2, 4, 2], [200, 200, 128], true, Order::Tokens),
    case([1, 8, 8], [1, 77, 64], false, Order::Padded),
    case([1, 8, 1], [1, 300, 128], true, Order::Heads),
    case([2, 2, 2], [77, 77, 64], true, Order::Heads),
    case([1, 4, 4], [300, 130, 64], false, Order::Padded),
    case([1, 8, 2], [190, 1, 128], true, Order::Padded),
    case([3, 2, 1], [129, 250, 64], true, Order::Tokens),
    case([1, 8, 4], [65, 65, 128], false, Order::Tokens),
];

/// `fn $name(stream, module, case, [q, k, v], call) -> Out`: one case through the kernel
/// `$kernel` (of `$t`, head dimension `$d`) as `call` says, with the views laid out as the
/// case's order says (`k`'s layout for `v`, `q`'s for `o`; `lse` `(b, h, s + 5)`); `o` and
/// `lse` start as `-7`.
macro_rules! runner {
    ($name:ident, $kernel:ident, $args:ident, $t:ty, $d:literal) => {
        runner!($name, $kernel, $args, $t, $d, 0);
    };
    // The raw twins: the safe kernels' chunks, with their own shared memory.
    ($name:ident, $kernel:ident, $args:ident, $t:ty, $d:literal, $shared:expr) => {
        fn $name(
            stream: &Arc<CudaStream>,
            module: &Kernels,
            c: Case,
            [q, k, v]: [&[f32]; 3],
            Call {
                blocks,
                layers,
                extents,
                lse: lse_extents,
                scale,
            }: Call,
        ) -> Out {
            let up = |x: &[f32], extents: [usize; 4]| {
                let (len, strides) = c.order.layout(extents);
                let mut buffer = vec![<$t>::of(f32::NAN); len];
                let logical: Vec<$t> = x.iter().map(|&x| <$t>::of(x)).collect();
                scatter(&mut buffer, &logical, extents, strides);
                (stream.clone_htod(&buffer).unwrap(), strides)
            };
            let (dq, dk, dv) = (up(q, extents[0]), up(k, extents[1]), up(v, extents[2]));
            // The query rows of a chunk and the threads of its block.
            const CHUNK: hk::ForwardChunk = hk::forward_chunk($d);
            fn map<'a, const R: usize>(
                (d, strides): &'a (CudaSlice<$t>, [usize; 4]),
                extents: [usize; 4],
            ) -> TiledMap<'a, $t, (Const<R>, Const<$d>), Swizzle128, 4> {
                let mapping = StrideMapping::new(Dims::new(extents), *strides).unwrap();
                let view = device_view_mapped::<$t, _, LayoutStride>(d, mapping).unwrap();
                TiledMap::new(&view).unwrap()
            }
            let (qm, km, vm) = (
                map::<{ CHUNK.rows }>(&dq, extents[0]),
                map::<128>(&dk, extents[1]),
                map::<128>(&dv, extents[2]),
            );
            let (len, strides) = c.order.layout(extents[3]);
            let mut o = stream.clone_htod(&vec![<$t>::of(-7.0); len]).unwrap();
            let [b, h, s, _] = extents[3];
            let cfg = LaunchConfig {
                grid_dim: (
                    if blocks == 0 {
                        b * h * s.div_ceil(CHUNK.rows)
                    } else {
                        blocks
                    } as u32,
                    layers,
                    1,
                ),
                block_dim: (CHUNK.threads, 1, 1),
                shared_mem_bytes: $shared,
            };
            let [lb, lh, ls] = lse_extents;
            let lse_strides = [lh * (ls + 5), ls + 5, 1];
            let mut lse = stream.clone_htod(&vec![-7.0f32; lb * lh * (ls + 5)]).unwrap();
            {
                let mapping = StrideMapping::new(Dims::new(extents[3]), strides).unwrap();
                let mut ov = device_view_mapped_mut::<$t, _, LayoutStride>(&mut o, mapping).unwrap();
                let mapping = StrideMapping::new(Dims::new(lse_extents), lse_strides).unwrap();
                let mut lv = device_view_mapped_mut::<f32, _, LayoutStride>(&mut lse, mapping).unwrap();
                cuda::scope(|s| {
                    hk::$kernel(
                        s.launch(stream, module, cfg),
                        hk::$args {
                            q: qm.map(),
                            k: km.map(),
                            v: vm.map(),
                            o: ov.as_view_mut(),
                            lse: lv.as_view_mut(),
                            scale,
                            causal: c.causal,
                        },
                    )
                })
                .unwrap();
            }
            let (o, rest) = gather(
                &stream.clone_dtoh(&o).unwrap(),
                extents[3],
                strides,
                <$t>::of(-7.0),
            );
            // `lse` as a `b × h × s × 1` array.
            let (lse, lse_rest) = gather(
                &stream.clone_dtoh(&lse).unwrap(),
                [lb, lh, ls, 1],
                [lse_strides[0], lse_strides[1], 1, 1],
                -7.0,
            );
            Out {
                o: o.into_iter().map(<$t>::to).collect(),
                lse,
                rest: rest && lse_rest,
            }
        }
    };
}

runner!(run_bf16_d64, attention_bf16_d64, AttentionBf16D64Args, bf16, 64);
runner!(run_bf16_d128, attention_bf16_d128, AttentionBf16D128Args, bf16, 128);
runner!(run_f16_d64, attention_f16_d64, AttentionF16D64Args, f16, 64);
runner!(run_f16_d128, attention_f16_d128, AttentionF16D128Args, f16, 128);
runner!(
    raw_bf16_d64,
    attention_raw_bf16_d64,
    AttentionRawBf16D64Args,
    bf16,
    64,
    hk::raw_attention_shared_bytes(64)
);
runner!(
    raw_bf16_d128,
    attention_raw_bf16_d128,
    AttentionRawBf16D128Args,
    bf16,
    128,
    hk::raw_attention_shared_bytes(128)
);
runner!(
    raw_f16_d64,
    attention_raw_f16_d64,
    AttentionRawF16D64Args,
    f16,
    64,
    hk::raw_attention_shared_bytes(64)
);
runner!(
    raw_f16_d128,
    attention_raw_f16_d128,
    AttentionRawF16D128Args,
    f16,
    128,
    hk::raw_attention_shared_bytes(128)
);

/// The inputs of a case, rounded to `T`.
fn inputs<T: Input>(c: Case) -> [Vec<f32>; 3] {
    let (rows_q, rows_k) = (c.batch * c.heads_q * c.seq_q, c.batch * c.heads_kv * c.seq_k);
    let round = |x: f32| T::of(x).to();
    [
        values(rows_q * c.dim, 0x1234_5678, round),
        values(rows_k * c.dim, 0x8765_4321, round),
        values(rows_k * c.dim, 0x0bad_cafe, round),
    ]
}

/// Checks each row's log-sum-exp against the `f64` reference: within `1e-3 + 1e-4·|ref|`, `+∞`
/// exactly where the reference's is.
fn close_lse(c: Case, got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (row, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_infinite() {
            g == f32::INFINITY
        } else {
            (f64::from(g) - w).abs() <= 1e-3 + 1e-4 * w.abs()
        };
        assert!(ok, "{what} {c:?}: log-sum-exp of row {row} is {g}, expected {w}");
    }
}

/// Checks `got` against the `f64` reference: each element within `0.01 + 0.02·|ref|` (the
/// output is rounded to a 16-bit type once, `P` before its product with `V`), and the mean
/// error below `0.002`.
fn close(c: Case, got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    let mut total = 0.0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs();
        assert!(
            err <= 0.01 + 0.02 * w.abs(),
            "{what} {c:?}: element {i} (row {}) is {g}, expected {w}",
            i / c.dim
        );
        total += err;
    }
    let mean = total / got.len() as f64;
    assert!(mean < 2e-3, "{what} {c:?}: mean error {mean}");
}

/// Every case of head dimension `d` through `run`, on a grid of one block a chunk and on one of
/// three blocks; the output's elements outside its view (padding) are left as they were.
fn check<T: Input>(stream: &Arc<CudaStream>, module: &Kernels, d: usize, what: &str, run: RunFn) {
    for c in CASES.into_iter().filter(|c| c.dim == d) {
        let [q, k, v] = inputs::<T>(c);
        let (want, want_lse) = reference(c, &q, &k, &v, 1.0 / (d as f64).sqrt());
        for blocks in [0, 3] {
            let got = run(stream, module, c, [&q, &k, &v], Call::of(c, blocks));
            close(c, &got.o, &want, &format!("{what}, {blocks} blocks"));
            close_lse(c, &got.lse, &want_lse, &format!("{what}, {blocks} blocks"));
            assert!(got.rest, "{what} {c:?}, {blocks} blocks: wrote outside the views");
        }
    }
}

/// How a runner launches its case: on a grid of `blocks` (0: one a chunk), with the views'
/// `extents` (`[q, k, v, o]`, each `[b, h, s, d]`), `lse`'s (`[b, h, s]`) and the softmax scale.
#[derive(Clone, Copy, Debug)]
struct Call {
    blocks: usize,
    /// The grid's `y`: 1 (every kernel here numbers its blocks along `x`).
    layers: u32,
    extents: [[usize; 4]; 4],
    lse: [usize; 3],
    scale: f32,
}

impl Call {
    /// The case's own extents and scale `1/√d`.
    fn of(c: Case, blocks: usize) -> Self {
        Call {
            blocks,
            layers: 1,
            extents: [c.q(), c.kv(), c.kv(), c.q()],
            lse: [c.batch, c.heads_q, c.seq_q],
            scale: 1.0 / (c.dim as f32).sqrt(),
        }
    }
}

/// What a runner read back: `o`'s and `lse`'s logical arrays, and whether every element of
/// their buffers outside the views is still `-7`.
struct Out {
    o: Vec<f32>,
    lse: Vec<f32>,
    rest: bool,
}

/// A runner's signature.
type RunFn = fn(&Arc<CudaStream>, &Kernels, Case, [&[f32]; 3], Call) -> Out;

#[test]
fn the_forward_pass_matches_the_cpu_in_bf16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    check::<bf16>(&stream, &module, 64, "bf16 d64", run_bf16_d64);
    check::<bf16>(&stream, &module, 128, "bf16 d128", run_bf16_d128);
}

#[test]
fn the_forward_pass_matches_the_cpu_in_f16() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    check::<f16>(&stream, &module, 64, "f16 d64", run_f16_d64);
    check::<f16>(&stream, &module, 128, "f16 d128", run_f16_d128);
}

#[test]
fn the_raw_twins_match_the_cpu() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    check::<bf16>(&stream, &module, 64, "raw bf16 d64", raw_bf16_d64);
    check::<bf16>(&stream, &module, 128, "raw bf16 d128", raw_bf16_d128);
    check::<f16>(&stream, &module, 64, "raw f16 d64", raw_f16_d64);
    check::<f16>(&stream, &module, 128, "raw f16 d128", raw_f16_d128);
}

/// The raw twins do the safe kernels' work in the same blocks and order: the same bits out,
/// on one block a chunk and on three blocks.
#[test]
fn the_raw_twins_give_the_safe_kernels_bits() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let pairs: [(usize, bool, RunFn, RunFn); 4] = [
        (64, false, run_bf16_d64, raw_bf16_d64),
        (128, false, run_bf16_d128, raw_bf16_d128),
        (64, true, run_f16_d64, raw_f16_d64),
        (128, true, run_f16_d128, raw_f16_d128),
    ];
    for (d, half, safe, raw) in pairs {
        for c in CASES.into_iter().filter(|c| c.dim == d) {
            let [q, k, v] = if half { inputs::<f16>(c) } else { inputs::<bf16>(c) };
            for blocks in [0, 3] {
                let call = Call::of(c, blocks);
                let (a, b) = (
                    safe(&stream, &module, c, [&q, &k, &v], call),
                    raw(&stream, &module, c, [&q, &k, &v], call),
                );
                let bits = |x: &[f32]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&a.o) == bits(&b.o),
                    "{c:?}, {blocks} blocks: o differs (f16 {half})"
                );
                assert!(
                    bits(&a.lse) == bits(&b.lse),
                    "{c:?}, {blocks} blocks: lse differs (f16 {half})"
                );
                assert!(b.rest, "{c:?}, {blocks} blocks: the raw twin wrote outside the views");
            }
        }
    }
}

/// A raw twin numbers its blocks along `x`: on a grid of two layers (two blocks each chunk's),
/// it writes nothing.
#[test]
fn a_raw_twin_on_a_grid_of_layers_writes_nothing() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    for (c, run) in [(CASES[1], raw_bf16_d128 as RunFn), (CASES[0], raw_bf16_d64)] {
        let [q, k, v] = inputs::<bf16>(c);
        let call = Call {
            layers: 2,
            ..Call::of(c, 0)
        };
        let got = run(&stream, &module, c, [&q, &k, &v], call);
        let untouched = got.o.iter().chain(&got.lse).all(|&x| x == -7.0);
        assert!(untouched && got.rest, "{c:?}: a grid of two layers wrote the outputs");
    }
}

#[test]
fn extents_that_do_not_fit_together_leave_the_outputs_as_they_were() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let c = case([2, 4, 2], [256, 256, 64], false, Order::Heads);
    let (q, kv) = (c.q(), c.kv());
    // Each call's views `[q, k, v, o]`, with a pair that does not fit: heads of `k` that do
    // not divide `q`'s; `k` and `v` of other lengths, other heads, another batch; `o` of
    // another length; a head dimension other than the kernel's; `lse` of another length or
    // with a head too many.
    let lse = [2, 4, 256];
    for (extents, lse) in [
        (
            [[2, 4, 256, 64], [2, 3, 256, 64], [2, 3, 256, 64], [2, 4, 256, 64]],
            lse,
        ),
        ([q, [2, 2, 256, 64], [2, 2, 200, 64], q], lse),
        ([q, [2, 2, 256, 64], [2, 1, 256, 64], q], lse),
        ([q, [1, 2, 256, 64], [1, 2, 256, 64], q], lse),
        ([q, kv, kv, [2, 4, 200, 64]], lse),
        (
            [[2, 4, 256, 32], [2, 2, 256, 32], [2, 2, 256, 32], [2, 4, 256, 32]],
            lse,
        ),
        ([q, kv, kv, q], [2, 4, 200]),
        ([q, kv, kv, q], [2, 5, 256]),
    ] {
        let size = |e: [usize; 4]| e.iter().product::<usize>();
        let data = [size(extents[0]), size(extents[1]), size(extents[2])].map(|n| values(n, 7, |x| x));
        let call = Call {
            blocks: 0,
            layers: 1,
            extents,
            lse,
            scale: 0.125,
        };
        let got = run_bf16_d64(&stream, &module, c, [&data[0], &data[1], &data[2]], call);
        let untouched = got.o.iter().chain(&got.lse).all(|&x| x == -7.0);
        assert!(untouched && got.rest, "{extents:?}, {lse:?} wrote the outputs");
    }
    // A scale that is not positive and finite: the softmax takes each row's maximum first.
    let [q, k, v] = inputs::<bf16>(c);
    for scale in [-0.125, 0.0, f32::NAN, f32::INFINITY] {
        let call = Call {
            scale,
            ..Call::of(c, 0)
        };
        let got = run_bf16_d64(&stream, &module, c, [&q, &k, &v], call);
        let untouched = got.o.iter().chain(&got.lse).all(|&x| x == -7.0);
        assert!(untouched && got.rest, "scale {scale} wrote the outputs");
    }
}

#[test]
fn the_host_call_runs_the_kernel_and_names_what_does_not_fit() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let c = case([2, 4, 2], [200, 333, 128], true, Order::Tokens);
    let [q, k, v] = inputs::<f16>(c);
    let (want, want_lse) = reference(c, &q, &k, &v, 0.1);
    let up = |x: &[f32], extents: [usize; 4]| {
        let (len, strides) = c.order.layout(extents);
        let mut buffer = vec![f16::from_f32(f32::NAN); len];
        let logical: Vec<f16> = x.iter().map(|&x| f16::from_f32(x)).collect();
        scatter(&mut buffer, &logical, extents, strides);
        (stream.clone_htod(&buffer).unwrap(), strides)
    };
    fn view(
        (d, strides): &(CudaSlice<f16>, [usize; 4]),
        extents: [usize; 4],
    ) -> dlmd::DeviceMdspan<'_, f16, Dims<4>, LayoutStride> {
        device_view_mapped::<f16, _, LayoutStride>(d, StrideMapping::new(Dims::new(extents), *strides).unwrap())
            .unwrap()
    }
    let (dq, dk, dv) = (up(&q, c.q()), up(&k, c.kv()), up(&v, c.kv()));
    let (qv, kv, vv) = (view(&dq, c.q()), view(&dk, c.kv()), view(&dv, c.kv()));
    let rows = c.batch * c.heads_q * c.seq_q;
    let mut o = stream.alloc_zeros::<f16>(rows * c.dim).unwrap();
    let mut lse = stream.alloc_zeros::<f32>(rows).unwrap();
    let o_mapping = || StrideMapping::new(Dims::new(c.q()), Order::Heads.layout(c.q()).1).unwrap();
    let lse_mapping = |extents: [usize; 3]| {
        let [_, h, s] = extents;
        StrideMapping::new(Dims::new(extents), [h * s, s, 1]).unwrap()
    };
    {
        let mut ov = device_view_mapped_mut::<f16, _, LayoutStride>(&mut o, o_mapping()).unwrap();
        let mut lv = device_view_mapped_mut::<f32, _, LayoutStride>(&mut lse, lse_mapping([2, 4, 200])).unwrap();
        hk::attention_forward(
            &stream,
            &module,
            [&qv, &kv, &vv],
            ov.as_view_mut(),
            lv.as_view_mut(),
            0.1,
            true,
        )
        .unwrap();
        // Refused before anything runs, each by name.
        let err = hk::attention_forward(
            &stream,
            &module,
            [&qv, &kv, &vv],
            ov.as_view_mut(),
            lv.as_view_mut(),
            0.0,
            true,
        )
        .unwrap_err();
        assert!(matches!(err, hk::AttentionError::Scale { .. }), "{err}");
        let err = hk::attention_forward(
            &stream,
            &module,
            [&qv, &kv, &qv],
            ov.as_view_mut(),
            lv.as_view_mut(),
            0.1,
            true,
        )
        .unwrap_err();
        assert!(matches!(err, hk::AttentionError::KeysValues { .. }), "{err}");
        let err = hk::attention_forward(
            &stream,
            &module,
            [&qv, &qv, &qv],
            ov.as_view_mut(),
            lv.as_view_mut(),
            0.1,
            true,
        );
        assert!(err.is_ok(), "q as its own keys and values: {err:?}");
    }
    {
        let mut ov = device_view_mapped_mut::<f16, _, LayoutStride>(&mut o, o_mapping()).unwrap();
        let mut short = device_view_mapped_mut::<f32, _, LayoutStride>(&mut lse, lse_mapping([2, 4, 199])).unwrap();
        let err = hk::attention_forward(
            &stream,
            &module,
            [&qv, &kv, &vv],
            ov.as_view_mut(),
            short.as_view_mut(),
            0.1,
            true,
        )
        .unwrap_err();
        assert!(matches!(err, hk::AttentionError::Lse { .. }), "{err}");
    }
    // The call before the last two ran `q` against itself: run the case again, then compare.
    {
        let mut ov = device_view_mapped_mut::<f16, _, LayoutStride>(&mut o, o_mapping()).unwrap();
        let mut lv = device_view_mapped_mut::<f32, _, LayoutStride>(&mut lse, lse_mapping([2, 4, 200])).unwrap();
        hk::attention_forward(
            &stream,
            &module,
            [&qv, &kv, &vv],
            ov.as_view_mut(),
            lv.as_view_mut(),
            0.1,
            true,
        )
        .unwrap();
    }
    let got: Vec<f32> = stream.clone_dtoh(&o).unwrap().into_iter().map(f16::to_f32).collect();
    close(c, &got, &want, "the host call");
    close_lse(c, &stream.clone_dtoh(&lse).unwrap(), &want_lse, "the host call");
    // The raw twin's host call, into cleared outputs: the same checks, the same results.
    stream.memset_zeros(&mut o).unwrap();
    stream.memset_zeros(&mut lse).unwrap();
    {
        let mut ov = device_view_mapped_mut::<f16, _, LayoutStride>(&mut o, o_mapping()).unwrap();
        let mut lv = device_view_mapped_mut::<f32, _, LayoutStride>(&mut lse, lse_mapping([2, 4, 200])).unwrap();
        let raw = |ov: &mut dlmd::DeviceMdspanMut<'_, f16, Dims<4>, LayoutStride>,
                   lv: &mut dlmd::DeviceMdspanMut<'_, f32, Dims<3>, LayoutStride>,
                   scale| {
            hk::attention_forward_raw(
                &stream,
                &module,
                [&qv, &kv, &vv],
                ov.as_view_mut(),
                lv.as_view_mut(),
                scale,
                true,
            )
        };
        let err = raw(&mut ov, &mut lv, f32::NAN).unwrap_err();
        assert!(matches!(err, hk::AttentionError::Scale { .. }), "{err}");
        raw(&mut ov, &mut lv, 0.1).unwrap();
    }
    let got: Vec<f32> = stream.clone_dtoh(&o).unwrap().into_iter().map(f16::to_f32).collect();
    close(c, &got, &want, "the raw twin's host call");
    close_lse(
        c,
        &stream.clone_dtoh(&lse).unwrap(),
        &want_lse,
        "the raw twin's host call",
    );
}
