//! Attention's forward pass written with `dlmd::kernel::warpgroup` (`examples/hopper-kernels`'
//! `attention_*`) on an `sm_90a` GPU, against the CPU in `f64`: head dimensions 64 and 128,
//! `bf16` and `f16`, causal and not, grouped-query ratios 1, 4 and 8, key sequences shorter
//! and longer than the queries' and of any length (one key; a last tile of keys cut short),
//! grids that cover the chunks and grids of fewer blocks (each runs its pipeline over several
//! chunks, refilling the resident query tile), and calls whose extents do not fit together,
//! which leave the output as it was.
//!
//! Without a GPU each test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead); on a GPU that cannot run `sm_90a` code the
//! module is refused by name, and the tests say so and pass.

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels, ModuleError, TiledMap, device_view, device_view_mut};
use dlmd::half::{bf16, f16};
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_tests::gpu;
use std::sync::Arc;

/// The kernels, on a GPU that runs `sm_90a` code.
fn hopper() -> Option<(Arc<CudaContext>, Kernels)> {
    let ctx = gpu()?;
    match Kernels::load(&ctx, hk::PTX) {
        Ok(kernels) => Some((ctx, kernels)),
        Err(CudaError::Module(e @ ModuleError::Arch { .. })) => {
            eprintln!("SKIPPED (not a Hopper GPU: {e})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// An attention call: batch, query heads, key/value heads, query and key lengths, head
/// dimension, causal.
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: usize,
    heads_q: usize,
    heads_kv: usize,
    seq_q: usize,
    seq_k: usize,
    dim: usize,
    causal: bool,
}

const CASES: [Case; 8] = [
    Case {
        batch: 1,
        heads_q: 2,
        heads_kv: 2,
        seq_q: 128,
        seq_k: 128,
        dim: 64,
        causal: false,
    },
    Case {
        batch: 2,
        heads_q: 4,
        heads_kv: 1,
        seq_q: 256,
        seq_k: 200,
        dim: 128,
        causal: true,
    },
    Case {
        batch: 1,
        heads_q: 8,
        heads_kv: 2,
        seq_q: 384,
        seq_k: 384,
        dim: 128,
        causal: true,
    },
    Case {
        batch: 1,
        heads_q: 8,
        heads_kv: 1,
        seq_q: 128,
        seq_k: 1,
        dim: 64,
        causal: false,
    },
    Case {
        batch: 2,
        heads_q: 2,
        heads_kv: 2,
        seq_q: 256,
        seq_k: 520,
        dim: 64,
        causal: true,
    },
    Case {
        batch: 1,
        heads_q: 2,
        heads_kv: 2,
        seq_q: 256,
        seq_k: 100,
        dim: 128,
        causal: true,
    },
    Case {
        batch: 3,
        heads_q: 4,
        heads_kv: 4,
        seq_q: 128,
        seq_k: 333,
        dim: 128,
        causal: false,
    },
    Case {
        batch: 1,
        heads_q: 4,
        heads_kv: 1,
        seq_q: 512,
        seq_k: 512,
        dim: 64,
        causal: true,
    },
];

/// Values in `[-1, 1)` from `seed`, rounded as `to` rounds them.
fn values(len: usize, seed: u64, round: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            round((s >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

/// `softmax(q · kᵀ · scale) · v` in `f64`, query `i` seeing key `j` where `j < s_k` and, if
/// causal, `j ≤ i + s_k − s_q`; rows that see no key are 0.
fn reference(c: Case, q: &[f32], k: &[f32], v: &[f32], scale: f64) -> Vec<f64> {
    let d = c.dim;
    let mut o = vec![0.0; q.len()];
    for b in 0..c.batch {
        for h in 0..c.heads_q {
            let hk = h / (c.heads_q / c.heads_kv);
            let qs = (b * c.heads_q + h) * c.seq_q;
            let ks = (b * c.heads_kv + hk) * c.seq_k;
            for i in 0..c.seq_q {
                let seen = (0..c.seq_k).filter(|&j| !c.causal || j + c.seq_q <= i + c.seq_k);
                let scores: Vec<(usize, f64)> = seen
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|x| f64::from(q[(qs + i) * d + x]) * f64::from(k[(ks + j) * d + x]))
                            .sum();
                        (j, dot * scale)
                    })
                    .collect();
                let Some(max) = scores.iter().map(|s| s.1).reduce(f64::max) else {
                    continue;
                };
                let sum: f64 = scores.iter().map(|s| (s.1 - max).exp()).sum();
                for &(j, s) in &scores {
                    let p = (s - max).exp() / sum;
                    for x in 0..d {
                        o[(qs + i) * d + x] += p * f64::from(v[(ks + j) * d + x]);
                    }
                }
            }
        }
    }
    o
}

/// The element types of the kernels: conversions both ways.
trait Input: dlmd::DlElement + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy {
    fn of(x: f32) -> Self;
    fn to(self) -> f32;
}
impl Input for bf16 {
    fn of(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to(self) -> f32 {
        self.to_f32()
    }
}
impl Input for f16 {
    fn of(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to(self) -> f32 {
        self.to_f32()
    }
}

/// `fn $name(stream, module, case, [q, k, v], blocks, shape) -> o`: one case through the
/// kernel `$kernel` (of `$t`, head dimension `$d`) on a grid of `blocks` (0: one a chunk),
/// `shape` the kernel's `[h_q, h_kv, s_q, s_k]`; `o` starts as `-7`.
macro_rules! runner {
    ($name:ident, $kernel:ident, $args:ident, $t:ty, $d:literal) => {
        fn $name(
            stream: &Arc<CudaStream>,
            module: &Kernels,
            c: Case,
            [q, k, v]: [&[f32]; 3],
            blocks: usize,
            shape: [u32; 4],
        ) -> Vec<f32> {
            let up = |x: &[f32]| {
                stream
                    .clone_htod(&x.iter().map(|&x| <$t>::of(x)).collect::<Vec<_>>())
                    .unwrap()
            };
            let (dq, dk, dv) = (up(q), up(k), up(v));
            let (rows_q, rows_k) = (c.batch * c.heads_q * c.seq_q, c.batch * c.heads_kv * c.seq_k);
            fn map<'a>(
                stream: &Arc<CudaStream>,
                d: &'a CudaSlice<$t>,
                rows: usize,
            ) -> TiledMap<'a, $t, (Const<128>, Const<$d>), Swizzle128> {
                let view = device_view::<_, Dims<2>, LayoutRight>(d, Dims::new([rows, $d])).unwrap();
                TiledMap::new(stream, &view).unwrap()
            }
            let (qm, km, vm) = (
                map(stream, &dq, rows_q),
                map(stream, &dk, rows_k),
                map(stream, &dv, rows_k),
            );
            let mut o = stream.clone_htod(&vec![<$t>::of(-7.0); rows_q * $d]).unwrap();
            let cfg = LaunchConfig {
                grid_dim: (if blocks == 0 { rows_q / 128 } else { blocks } as u32, 1, 1),
                block_dim: (384, 1, 1),
                shared_mem_bytes: 0,
            };
            let scale = 1.0 / (c.dim as f32).sqrt();
            {
                let mut ov = device_view_mut::<_, Dims<2>, LayoutRight>(&mut o, Dims::new([rows_q, $d])).unwrap();
                let [hq, hkv, sq, sk] = shape;
                cuda::scope(|s| {
                    hk::$kernel(
                        s.launch(stream, module, cfg),
                        hk::$args {
                            q: qm.map(),
                            k: km.map(),
                            v: vm.map(),
                            o: ov.as_view_mut(),
                            heads_q: hq,
                            heads_kv: hkv,
                            seq_q: sq,
                            seq_k: sk,
                            scale,
                            causal: c.causal,
                        },
                    )
                })
                .unwrap();
            }
            stream.clone_dtoh(&o).unwrap().into_iter().map(<$t>::to).collect()
        }
    };
}

runner!(run_bf16_d64, attention_bf16_d64, AttentionBf16D64Args, bf16, 64);
runner!(run_bf16_d128, attention_bf16_d128, AttentionBf16D128Args, bf16, 128);
runner!(run_f16_d64, attention_f16_d64, AttentionF16D64Args, f16, 64);
runner!(run_f16_d128, attention_f16_d128, AttentionF16D128Args, f16, 128);

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
/// three blocks.
fn check<T: Input>(stream: &Arc<CudaStream>, module: &Kernels, d: usize, what: &str, run: RunFn) {
    for c in CASES.into_iter().filter(|c| c.dim == d) {
        let [q, k, v] = inputs::<T>(c);
        let want = reference(c, &q, &k, &v, 1.0 / (d as f64).sqrt());
        let shape = [c.heads_q, c.heads_kv, c.seq_q, c.seq_k].map(|x| x as u32);
        for blocks in [0, 3] {
            let got = run(stream, module, c, [&q, &k, &v], blocks, shape);
            close(c, &got, &want, &format!("{what}, {blocks} blocks"));
        }
    }
}

/// A runner's signature.
type RunFn = fn(&Arc<CudaStream>, &Kernels, Case, [&[f32]; 3], usize, [u32; 4]) -> Vec<f32>;

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
fn extents_that_do_not_fit_together_leave_the_output_as_it_was() {
    let Some((ctx, module)) = hopper() else { return };
    let stream = ctx.default_stream();
    let c = CASES[0];
    let [q, k, v] = inputs::<bf16>(c);
    let fine = [c.heads_q, c.heads_kv, c.seq_q, c.seq_k].map(|x| x as u32);
    // Heads of `k` that do not divide `q`'s, none, a query length that is not a multiple of
    // 128, lengths that do not match the tensors' rows.
    for shape in [
        [2, 3, 128, 128],
        [2, 0, 128, 128],
        [1, 1, 256, 128],
        [2, 2, 64, 128],
        [2, 2, 128, 64],
        [4, 2, 128, 128],
    ] {
        assert_ne!(shape, fine);
        let got = run_bf16_d64(&stream, &module, c, [&q, &k, &v], 0, shape);
        assert!(got.iter().all(|&x| x == -7.0), "shape {shape:?} wrote the output");
    }
}
