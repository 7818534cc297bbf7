//! Attention's forward and backward passes in safe Rust (`examples/hopper-kernels`'
//! `attention_*`: the output and each row's log-sum-exp; `attention_delta_*`, `attention_dq_*`
//! and `attention_dkv_*`: the row statistic `Δ = Σ do ∘ o` and the gradients) on an `sm_90a`
//! GPU, each kernel timed against its raw twin (`attention_raw_*`, the same work over raw
//! instructions, in the same blocks) on the shapes of FlashAttention's benchmarks, the two
//! alternated in each round: medians of CUDA-event spans, each after a 128 MiB device copy, in
//! TFLOP/s counted as FlashAttention counts them (`4 · b · h · s² · d` forward, 2.5 times that
//! backward, halved when causal). `scripts/bench_attention_torch.py [--backward]` times torch's
//! `scaled_dot_product_attention` (its FlashAttention-2 and cuDNN backends) on the same shapes;
//! run the two in turn.
//!
//! `cargo run --release --example attention --features hopper-kernels [-- --small]`: `--small`
//! runs two small shapes once (for compute-sanitizer), grids that are not causal spread over 3
//! blocks where the full shapes' are spread over the multiprocessors (`spread_chunks`).

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{CudaError, Kernels, ModuleError, TiledMap, device_view_mapped, device_view_mapped_mut};
use dlmd::half::bf16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::layout::StrideMapping;
use dlmd::{Const, Dims, LayoutStride};
use dlmd_example_hopper_kernels as hk;
use dlmd_examples::timing::Cover;
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rounds timed, after the warm-up.
const ROUNDS: usize = 10;
const WARM_UP: usize = 3;

/// `(b, h, s, d, causal)`: the shapes of the comparison.
const SHAPES: [(usize, usize, usize, usize, bool); 8] = [
    (4, 32, 4096, 128, false),
    (4, 32, 4096, 128, true),
    (16, 16, 2048, 128, false),
    (16, 16, 2048, 128, true),
    (4, 32, 4096, 64, false),
    (4, 32, 4096, 64, true),
    (1, 32, 16384, 128, false),
    (1, 32, 16384, 128, true),
];

/// `q`, `k`, `v`, `o`, the output's gradient `do` and the gradients of one shape, `b × h × s ×
/// d` each, and `lse` and `Δ`, `b × h × s`, each contiguous.
struct Tensors {
    q: CudaSlice<bf16>,
    k: CudaSlice<bf16>,
    v: CudaSlice<bf16>,
    o: CudaSlice<bf16>,
    lse: CudaSlice<f32>,
    d_o: CudaSlice<bf16>,
    delta: CudaSlice<f32>,
    dq: CudaSlice<bf16>,
    dk: CudaSlice<bf16>,
    dv: CudaSlice<bf16>,
    /// The fused pass's `f32` accumulator of `dq`, and its gradients.
    dq_sum: CudaSlice<f32>,
    fused: [CudaSlice<bf16>; 3],
}

fn tensors(stream: &Arc<CudaStream>, rows: usize, d: usize) -> Result<Tensors, Box<dyn Error>> {
    let up = |seed| -> Result<_, Box<dyn Error>> {
        let x: Vec<bf16> = dlmd_examples::uniform(rows * d, seed)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        Ok(stream.clone_htod(&x)?)
    };
    Ok(Tensors {
        q: up(0x1234)?,
        k: up(0x5678)?,
        v: up(0x9abc)?,
        o: stream.alloc_zeros(rows * d)?,
        lse: stream.alloc_zeros(rows)?,
        d_o: up(0xdef0)?,
        delta: stream.alloc_zeros(rows)?,
        dq: stream.alloc_zeros(rows * d)?,
        dk: stream.alloc_zeros(rows * d)?,
        dv: stream.alloc_zeros(rows * d)?,
        dq_sum: stream.alloc_zeros(rows * d)?,
        fused: [
            stream.alloc_zeros(rows * d)?,
            stream.alloc_zeros(rows * d)?,
            stream.alloc_zeros(rows * d)?,
        ],
    })
}

/// One forward pass of head dimension `D` by `$kernel`, timed (after the cover's copy).
macro_rules! timed {
    ($name:ident, $kernel:ident, $args:ident, $d:literal, $shared:expr) => {
        fn $name(
            stream: &Arc<CudaStream>,
            kernels: &Kernels,
            cover: &mut Cover,
            t: &mut Tensors,
            (b, h, s, causal): (usize, usize, usize, bool),
        ) -> Result<f64, Box<dyn Error>> {
            let extents = [b, h, s, $d];
            let strides = [h * s * $d, s * $d, $d, 1];
            // The query rows of a chunk and the threads of its block.
            const CHUNK: hk::ForwardChunk = hk::forward_chunk($d);
            fn map<'a, const R: usize>(
                x: &'a CudaSlice<bf16>,
                (extents, strides): ([usize; 4], [usize; 4]),
            ) -> Result<Boxes<'a, R, $d>, Box<dyn Error>> {
                let mapping = StrideMapping::new(Dims::new(extents), strides)?;
                let view = device_view_mapped::<_, _, LayoutStride>(x, mapping)?;
                Ok(TiledMap::new(&view)?)
            }
            let (qm, km, vm) = (
                map::<{ CHUNK.rows }>(&t.q, (extents, strides))?,
                map::<128>(&t.k, (extents, strides))?,
                map::<128>(&t.v, (extents, strides))?,
            );
            let mapping = StrideMapping::new(Dims::new(extents), strides)?;
            let mut ov = device_view_mapped_mut::<_, _, LayoutStride>(&mut t.o, mapping)?;
            let mapping = StrideMapping::new(Dims::new([b, h, s]), [h * s, s, 1])?;
            let mut lv = device_view_mapped_mut::<_, _, LayoutStride>(&mut t.lse, mapping)?;
            let config = LaunchConfig {
                grid_dim: ((b * h * s.div_ceil(CHUNK.rows)) as u32, 1, 1),
                block_dim: (CHUNK.threads, 1, 1),
                shared_mem_bytes: $shared,
            };
            // As `attention_forward` launches it: over the multiprocessors where not causal.
            let config = hk::spread_chunks(config, causal, || spread_over(stream));
            let args = hk::$args {
                q: qm.map(),
                k: km.map(),
                v: vm.map(),
                o: ov.as_view_mut(),
                lse: lv.as_view_mut(),
                scale: 1.0 / ($d as f32).sqrt(),
                causal,
            };
            cover.time_scoped(stream, |scope| {
                hk::$kernel(scope.launch(stream, kernels, config), args)
            })
        }
    };
}

timed!(forward_d64, attention_bf16_d64, AttentionBf16D64Args, 64, 0);
timed!(forward_d128, attention_bf16_d128, AttentionBf16D128Args, 128, 0);
timed!(
    raw_d64,
    attention_raw_bf16_d64,
    AttentionRawBf16D64Args,
    64,
    hk::raw_attention_shared_bytes(64)
);
timed!(
    raw_d128,
    attention_raw_bf16_d128,
    AttentionRawBf16D128Args,
    128,
    hk::raw_attention_shared_bytes(128)
);

/// The views and maps of one shape's backward pass, `(b, h, s, d)` contiguous.
fn strided<const N: usize>(extents: [usize; N]) -> Result<StrideMapping<Dims<N>>, Box<dyn Error>> {
    let mut strides = [1; N];
    for i in (0..N - 1).rev() {
        strides[i] = strides[i + 1] * extents[i + 1];
    }
    Ok(StrideMapping::new(Dims::new(extents), strides)?)
}

/// A tensor map of a `b × h × s × D` tensor in boxes of `R` rows of one head.
type Boxes<'a, const R: usize, const D: usize> = TiledMap<'a, bf16, (Const<R>, Const<D>), Swizzle128, 4>;

/// The tensor map of `x` (`b × h × s × D`, contiguous) in boxes of `R` rows of one head.
fn tiled<'a, const R: usize, const D: usize>(
    x: &'a CudaSlice<bf16>,
    extents: [usize; 4],
) -> Result<Boxes<'a, R, D>, Box<dyn Error>> {
    let view = device_view_mapped::<_, _, LayoutStride>(x, strided(extents)?)?;
    Ok(TiledMap::new(&view)?)
}

/// The launch of the `Δ` kernel: a thread a query row, blocks of 256 rows of one head.
fn row_launch([b, h, s]: [usize; 3]) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (s.div_ceil(256) as u32, h as u32, b as u32),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The launch of a gradient kernel: a block of 384 threads a chunk of 128 rows of a head, with
/// `shared` bytes of dynamic shared memory, spread over the multiprocessors where not causal
/// (as `attention_backward_imported` launches it).
fn chunk_launch(stream: &Arc<CudaStream>, [b, h, s]: [usize; 3], shared: u32, causal: bool) -> LaunchConfig {
    let config = LaunchConfig {
        grid_dim: ((b * h * s.div_ceil(128)) as u32, 1, 1),
        block_dim: (384, 1, 1),
        shared_mem_bytes: shared,
    };
    hk::spread_chunks(config, causal, || spread_over(stream))
}

/// With `--small`, grids not causal are spread over 3 blocks, so that under compute-sanitizer
/// blocks take several chunks each, as the full shapes' spread over the multiprocessors do.
static SMALL: AtomicBool = AtomicBool::new(false);

/// The blocks a grid not causal is spread over: the multiprocessors of `stream`'s device (3
/// with `--small`).
fn spread_over(stream: &Arc<CudaStream>) -> Option<u32> {
    if SMALL.load(Ordering::Relaxed) {
        return Some(3);
    }
    hk::multiprocessors(stream.context())
}

/// The three kernels of a backward pass of head dimension `D` (`Δ`, then `dq`, then `dk` and
/// `dv`), each timed after the cover's copy: `[Δ, dq, dkv]` in milliseconds.
macro_rules! timed_backward {
    ($name:ident, $d:literal, $shared:expr, $delta:ident, $delta_args:ident, $dq:ident, $dq_args:ident, $dkv:ident, $dkv_args:ident) => {
        fn $name(
            stream: &Arc<CudaStream>,
            kernels: &Kernels,
            cover: &mut Cover,
            t: &mut Tensors,
            (b, h, s, causal): (usize, usize, usize, bool),
        ) -> Result<[f64; 3], Box<dyn Error>> {
            let extents = [b, h, s, $d];
            let read =
                |x| device_view_mapped::<bf16, _, LayoutStride>(x, strided(extents)?).map_err(Box::<dyn Error>::from);
            let (rows, chunks) = (
                row_launch([b, h, s]),
                chunk_launch(stream, [b, h, s], $shared, causal),
            );
            let stat = strided([b, h, s])?;
            let delta = {
                let mut out = device_view_mapped_mut::<f32, _, LayoutStride>(&mut t.delta, stat)?;
                let args = hk::$delta_args {
                    o: read(&t.o)?,
                    d_o: read(&t.d_o)?,
                    delta_out: out.as_view_mut(),
                };
                cover.time_scoped(stream, |scope| {
                    hk::$delta(scope.launch(stream, kernels, rows), args)
                })?
            };
            let lse = device_view_mapped::<f32, _, LayoutStride>(&t.lse, stat)?;
            let delta_view = device_view_mapped::<f32, _, LayoutStride>(&t.delta, stat)?;
            let scale = 1.0 / ($d as f32).sqrt();
            let dq = {
                let (q, d_o, k, v) = (
                    tiled::<128, $d>(&t.q, extents)?,
                    tiled::<128, $d>(&t.d_o, extents)?,
                    tiled::<64, $d>(&t.k, extents)?,
                    tiled::<64, $d>(&t.v, extents)?,
                );
                let mut out = device_view_mapped_mut::<bf16, _, LayoutStride>(&mut t.dq, strided(extents)?)?;
                let args = hk::$dq_args {
                    q: q.map(),
                    k: k.map(),
                    v: v.map(),
                    d_o: d_o.map(),
                    lse,
                    delta: delta_view,
                    dq_out: out.as_view_mut(),
                    scale,
                    causal,
                };
                cover.time_scoped(stream, |scope| {
                    hk::$dq(scope.launch(stream, kernels, chunks), args)
                })?
            };
            let dkv = {
                let (k, v, q, d_o) = (
                    tiled::<128, $d>(&t.k, extents)?,
                    tiled::<128, $d>(&t.v, extents)?,
                    tiled::<64, $d>(&t.q, extents)?,
                    tiled::<64, $d>(&t.d_o, extents)?,
                );
                let mut dk = device_view_mapped_mut::<bf16, _, LayoutStride>(&mut t.dk, strided(extents)?)?;
                let mut dv = device_view_mapped_mut::<bf16, _, LayoutStride>(&mut t.dv, strided(extents)?)?;
                let args = hk::$dkv_args {
                    k: k.map(),
                    v: v.map(),
                    q: q.map(),
                    d_o: d_o.map(),
                    lse,
                    delta: delta_view,
                    dk_out: dk.as_view_mut(),
                    dv_out: dv.as_view_mut(),
                    scale,
                    causal,
                };
                cover.time_scoped(stream, |scope| {
                    hk::$dkv(scope.launch(stream, kernels, chunks), args)
                })?
            };
            Ok([delta, dq, dkv])
        }
    };
}

timed_backward!(
    backward_d64,
    64,
    0,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_dq_bf16_d64,
    AttentionDqBf16D64Args,
    attention_dkv_bf16_d64,
    AttentionDkvBf16D64Args
);
timed_backward!(
    backward_d128,
    128,
    0,
    attention_delta_bf16,
    AttentionDeltaBf16Args,
    attention_dq_bf16_d128,
    AttentionDqBf16D128Args,
    attention_dkv_bf16_d128,
    AttentionDkvBf16D128Args
);
timed_backward!(
    raw_backward_d64,
    64,
    hk::raw_backward_shared_bytes(64),
    attention_raw_delta_bf16,
    AttentionRawDeltaBf16Args,
    attention_raw_dq_bf16_d64,
    AttentionRawDqBf16D64Args,
    attention_raw_dkv_bf16_d64,
    AttentionRawDkvBf16D64Args
);
timed_backward!(
    raw_backward_d128,
    128,
    hk::raw_backward_shared_bytes(128),
    attention_raw_delta_bf16,
    AttentionRawDeltaBf16Args,
    attention_raw_dq_bf16_d128,
    AttentionRawDqBf16D128Args,
    attention_raw_dkv_bf16_d128,
    AttentionRawDkvBf16D128Args
);

/// The fused backward pass of head dimension `D` (`Δ`, then `dq`'s accumulator set to zero and
/// the fused kernel, then `dq` converted), each timed after the cover's copy: `[Δ, fused,
/// convert]` in milliseconds, the zeroing counted with the fused kernel.
macro_rules! timed_fused {
    ($name:ident, $d:literal, $fused:ident, $fused_args:ident) => {
        fn $name(
            stream: &Arc<CudaStream>,
            kernels: &Kernels,
            cover: &mut Cover,
            t: &mut Tensors,
            (b, h, s, causal): (usize, usize, usize, bool),
        ) -> Result<[f64; 3], Box<dyn Error>> {
            let extents = [b, h, s, $d];
            let read =
                |x| device_view_mapped::<bf16, _, LayoutStride>(x, strided(extents)?).map_err(Box::<dyn Error>::from);
            let (rows, chunks) = (row_launch([b, h, s]), chunk_launch(stream, [b, h, s], 0, causal));
            let across = $d / 4;
            let elements = LaunchConfig {
                grid_dim: (
                    1,
                    s.div_ceil(256 / across).min(65_535) as u32,
                    (b * h).min(65_535) as u32,
                ),
                block_dim: (across as u32, (256 / across) as u32, 1),
                shared_mem_bytes: 0,
            };
            let stat = strided([b, h, s])?;
            let delta = {
                let mut out = device_view_mapped_mut::<f32, _, LayoutStride>(&mut t.delta, stat)?;
                let args = hk::AttentionDeltaBf16Args {
                    o: read(&t.o)?,
                    d_o: read(&t.d_o)?,
                    delta_out: out.as_view_mut(),
                };
                cover.time_scoped(stream, |scope| {
                    hk::attention_delta_bf16(scope.launch(stream, kernels, rows), args)
                })?
            };
            let lse = device_view_mapped::<f32, _, LayoutStride>(&t.lse, stat)?;
            let delta_view = device_view_mapped::<f32, _, LayoutStride>(&t.delta, stat)?;
            let scale = 1.0 / ($d as f32).sqrt();
            let [fdq, fdk, fdv] = &mut t.fused;
            let fused = {
                let (k, v, q, d_o) = (
                    tiled::<128, $d>(&t.k, extents)?,
                    tiled::<128, $d>(&t.v, extents)?,
                    tiled::<64, $d>(&t.q, extents)?,
                    tiled::<64, $d>(&t.d_o, extents)?,
                );
                let mut dk = device_view_mapped_mut::<bf16, _, LayoutStride>(fdk, strided(extents)?)?;
                let mut dv = device_view_mapped_mut::<bf16, _, LayoutStride>(fdv, strided(extents)?)?;
                let (dq_sum, sum_map) = (&mut t.dq_sum, strided(extents)?);
                cover.time_scoped(stream, |scope| {
                    stream.memset_zeros(dq_sum)?;
                    let sum = device_view_mapped_mut::<f32, _, LayoutStride>(dq_sum, sum_map)?;
                    let args = hk::$fused_args {
                        k: k.map(),
                        v: v.map(),
                        q: q.map(),
                        d_o: d_o.map(),
                        lse,
                        delta: delta_view,
                        dk_out: dk.as_view_mut(),
                        dv_out: dv.as_view_mut(),
                        dq_sum: sum.into_atomic(),
                        scale,
                        causal,
                    };
                    hk::$fused(scope.launch(stream, kernels, chunks), args)
                })?
            };
            let convert = {
                let sum = device_view_mapped::<f32, _, LayoutStride>(&t.dq_sum, strided(extents)?)?;
                let mut dq = device_view_mapped_mut::<bf16, _, LayoutStride>(fdq, strided(extents)?)?;
                cover.time_scoped(stream, |scope| {
                    hk::attention_dq_convert_bf16(scope.launch(stream, kernels, elements), sum, dq.as_view_mut())
                })?
            };
            Ok([delta, fused, convert])
        }
    };
}

timed_fused!(fused_d64, 64, attention_fused_bf16_d64, AttentionFusedBf16D64Args);
timed_fused!(fused_d128, 128, attention_fused_bf16_d128, AttentionFusedBf16D128Args);

/// The largest difference between the fused pass's gradients and the three-kernel pass's, over
/// the largest of the latter (`[dq, dk, dv]`).
fn fused_error(stream: &Arc<CudaStream>, t: &Tensors) -> Result<[f32; 3], Box<dyn Error>> {
    let mut out = [0.0; 3];
    for (i, (a, b)) in [&t.dq, &t.dk, &t.dv].into_iter().zip(&t.fused).enumerate() {
        let (a, b) = (stream.clone_dtoh(a)?, stream.clone_dtoh(b)?);
        let scale = a
            .iter()
            .map(|x| x.to_f32().abs())
            .fold(0.0, f32::max)
            .max(f32::MIN_POSITIVE);
        // A NaN or an infinity anywhere is the worst error.
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x.to_f32() - y.to_f32()).abs())
            .map(|e| if e.is_finite() { e } else { f32::INFINITY })
            .fold(0.0, f32::max);
        out[i] = worst / scale;
    }
    Ok(out)
}

/// One shape's backward timing function.
type TimedBackward = fn(
    &Arc<CudaStream>,
    &Kernels,
    &mut Cover,
    &mut Tensors,
    (usize, usize, usize, bool),
) -> Result<[f64; 3], Box<dyn Error>>;

/// One shape's timing function.
type Timed = fn(
    &Arc<CudaStream>,
    &Kernels,
    &mut Cover,
    &mut Tensors,
    (usize, usize, usize, bool),
) -> Result<f64, Box<dyn Error>>;

fn main() -> Result<(), Box<dyn Error>> {
    let small = std::env::args().any(|a| a == "--small");
    SMALL.store(small, Ordering::Relaxed);
    let ctx = cudarc::driver::CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let kernels = match Kernels::load(&ctx, hk::PTX) {
        Ok(kernels) => kernels,
        Err(CudaError::Module(e @ ModuleError::Arch { .. })) => {
            println!("not a Hopper GPU ({e}): nothing to time");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let mut cover = Cover::new(&stream)?;
    let shapes: &[(usize, usize, usize, usize, bool)] = if small {
        &[(1, 2, 200, 128, true), (1, 4, 333, 64, false)]
    } else {
        &SHAPES
    };
    for &(b, h, s, d, causal) in shapes {
        let mut t = tensors(&stream, b * h * s, d)?;
        let (safe, raw): (Timed, Timed) = if d == 64 {
            (forward_d64, raw_d64)
        } else {
            (forward_d128, raw_d128)
        };
        let (safe_back, raw_back): (TimedBackward, TimedBackward) = if d == 64 {
            (backward_d64, raw_backward_d64)
        } else {
            (backward_d128, raw_backward_d128)
        };
        let fused_back: TimedBackward = if d == 64 { fused_d64 } else { fused_d128 };
        let mut fused: [Vec<f64>; 4] = Default::default();
        let (mut ms, mut ms_raw) = (Vec::new(), Vec::new());
        let (mut back, mut back_raw): ([Vec<f64>; 4], [Vec<f64>; 4]) = Default::default();
        let rounds = if small { 1 } else { WARM_UP + ROUNDS };
        for round in 0..rounds {
            // Alternated, each side first in every other round; the backward pass after the
            // forward pass, whose `o` and `lse` it reads.
            let (first, second) = if round % 2 == 0 { (safe, raw) } else { (raw, safe) };
            let a = first(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            let z = second(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            let (time, time_raw) = if round % 2 == 0 { (a, z) } else { (z, a) };
            let (first, second) = if round % 2 == 0 {
                (safe_back, raw_back)
            } else {
                (raw_back, safe_back)
            };
            // The fused pass before the three-kernel passes in one round, after them in the next.
            let mut fused_parts = [0.0; 3];
            if round % 2 == 0 {
                fused_parts = fused_back(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            }
            let a = first(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            let z = second(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            if round % 2 == 1 {
                fused_parts = fused_back(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            }
            let (parts, parts_raw) = if round % 2 == 0 { (a, z) } else { (z, a) };
            if small || round >= WARM_UP {
                ms.push(time);
                ms_raw.push(time_raw);
                for (i, (x, y)) in parts.iter().zip(&parts_raw).enumerate() {
                    back[i].push(*x);
                    back_raw[i].push(*y);
                }
                back[3].push(parts.iter().sum());
                back_raw[3].push(parts_raw.iter().sum());
                for (i, x) in fused_parts.iter().enumerate() {
                    fused[i].push(*x);
                }
                fused[3].push(fused_parts.iter().sum());
            }
        }
        let error = fused_error(&stream, &t)?;
        let (ms, ms_raw) = (dlmd_examples::median(ms), dlmd_examples::median(ms_raw));
        let [delta, dq, dkv, total] = back.map(dlmd_examples::median);
        let [delta_raw, dq_raw, dkv_raw, total_raw] = back_raw.map(dlmd_examples::median);
        let flops = 4.0 * (b * h * s * s * d) as f64 / if causal { 2.0 } else { 1.0 };
        println!(
            "bench attention b={b} h={h} s={s} d={d} causal={causal}: dlmd safe forward {ms:.3} ms, {:.0} TFLOP/s; raw twin {ms_raw:.3} ms, {:.0} TFLOP/s; safe / raw {:.3}",
            flops / ms / 1e9,
            flops / ms_raw / 1e9,
            ms_raw / ms
        );
        println!(
            "bench attention backward b={b} h={h} s={s} d={d} causal={causal}: dlmd safe {total:.3} ms (Δ {delta:.3}, dq {dq:.3}, dk dv {dkv:.3}), {:.0} TFLOP/s; raw twin {total_raw:.3} ms (Δ {delta_raw:.3}, dq {dq_raw:.3}, dk dv {dkv_raw:.3}), {:.0} TFLOP/s; safe / raw {:.3}; forward + backward, safe: {:.3} ms, {:.0} TFLOP/s",
            2.5 * flops / total / 1e9,
            2.5 * flops / total_raw / 1e9,
            total_raw / total,
            ms + total,
            3.5 * flops / (ms + total) / 1e9
        );
        let [f_delta, f_kernel, f_convert, f_total] = fused.map(dlmd_examples::median);
        println!(
            "bench attention fused backward b={b} h={h} s={s} d={d} causal={causal}: dlmd fused {f_total:.3} ms (Δ {f_delta:.3}, fused {f_kernel:.3}, convert {f_convert:.3}), {:.0} TFLOP/s; three kernels / fused {:.3}; forward + backward, fused: {:.3} ms, {:.0} TFLOP/s; largest difference from the three kernels' (÷ their largest): dq {:.2e}, dk {:.2e}, dv {:.2e}",
            2.5 * flops / f_total / 1e9,
            total / f_total,
            ms + f_total,
            3.5 * flops / (ms + f_total) / 1e9,
            error[0],
            error[1],
            error[2]
        );
    }
    Ok(())
}
