//! Attention's forward pass in safe Rust (`examples/hopper-kernels`' `attention_*`: the output
//! and each row's log-sum-exp) on an
//! `sm_90a` GPU, timed against its raw twin (`attention_raw_*`, the same work over raw
//! instructions) on the shapes of FlashAttention's benchmarks, the two alternated in each round:
//! medians of CUDA-event spans, each after a 128 MiB device copy, in TFLOP/s counted as
//! FlashAttention counts them (`4 · b · h · s² · d`, halved when causal). `scripts/bench_attention_torch.py` times torch's
//! `scaled_dot_product_attention` (its FlashAttention-2 and cuDNN backends) on the same shapes;
//! run the two in turn.
//!
//! `cargo run --release --example attention --features hopper-kernels [-- --small]`: `--small`
//! runs one small shape once (for compute-sanitizer).

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

/// `q`, `k`, `v` and `o` of one shape, `b × h × s × d` each, and `lse`, `b × h × s`, each
/// contiguous.
struct Tensors {
    q: CudaSlice<bf16>,
    k: CudaSlice<bf16>,
    v: CudaSlice<bf16>,
    o: CudaSlice<bf16>,
    lse: CudaSlice<f32>,
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
            type Map<'a> = TiledMap<'a, bf16, (Const<128>, Const<$d>), Swizzle128, 4>;
            fn map<'a>(
                x: &'a CudaSlice<bf16>,
                (extents, strides): ([usize; 4], [usize; 4]),
            ) -> Result<Map<'a>, Box<dyn Error>> {
                let mapping = StrideMapping::new(Dims::new(extents), strides)?;
                let view = device_view_mapped::<_, _, LayoutStride>(x, mapping)?;
                Ok(TiledMap::new(&view)?)
            }
            let (qm, km, vm) = (
                map(&t.q, (extents, strides))?,
                map(&t.k, (extents, strides))?,
                map(&t.v, (extents, strides))?,
            );
            let mapping = StrideMapping::new(Dims::new(extents), strides)?;
            let mut ov = device_view_mapped_mut::<_, _, LayoutStride>(&mut t.o, mapping)?;
            let mapping = StrideMapping::new(Dims::new([b, h, s]), [h * s, s, 1])?;
            let mut lv = device_view_mapped_mut::<_, _, LayoutStride>(&mut t.lse, mapping)?;
            let config = LaunchConfig {
                grid_dim: ((b * h * s.div_ceil(128)) as u32, 1, 1),
                block_dim: (384, 1, 1),
                shared_mem_bytes: $shared,
            };
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
    let shapes: &[(usize, usize, usize, usize, bool)] = if small { &[(1, 2, 200, 128, true)] } else { &SHAPES };
    for &(b, h, s, d, causal) in shapes {
        let mut t = tensors(&stream, b * h * s, d)?;
        let (safe, raw): (Timed, Timed) = if d == 64 {
            (forward_d64, raw_d64)
        } else {
            (forward_d128, raw_d128)
        };
        let (mut ms, mut ms_raw) = (Vec::new(), Vec::new());
        let rounds = if small { 1 } else { WARM_UP + ROUNDS };
        for round in 0..rounds {
            // Alternated, each side first in every other round.
            let (first, second) = if round % 2 == 0 { (safe, raw) } else { (raw, safe) };
            let a = first(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            let z = second(&stream, &kernels, &mut cover, &mut t, (b, h, s, causal))?;
            let (time, time_raw) = if round % 2 == 0 { (a, z) } else { (z, a) };
            if small || round >= WARM_UP {
                ms.push(time);
                ms_raw.push(time_raw);
            }
        }
        let (ms, ms_raw) = (dlmd_examples::median(ms), dlmd_examples::median(ms_raw));
        let flops = 4.0 * (b * h * s * s * d) as f64 / if causal { 2.0 } else { 1.0 };
        println!(
            "bench attention b={b} h={h} s={s} d={d} causal={causal}: dlmd safe forward {ms:.3} ms, {:.0} TFLOP/s; raw twin {ms_raw:.3} ms, {:.0} TFLOP/s; safe / raw {:.3}",
            flops / ms / 1e9,
            flops / ms_raw / 1e9,
            ms_raw / ms
        );
    }
    Ok(())
}
