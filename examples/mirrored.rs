//! `MirroredArray` on a GPU: host and device copies kept in step, checked, then (with `--bench`)
//! 1 GiB transfers timed: pinned and pageable, host-to-device and device-to-host. The same sizes
//! are timed with PyTorch by `scripts/bench_torch_copies.py`, in the same run on the GPU machine.
//!
//! Run with `cargo run --release --features cuda --example mirrored [-- --bench]`.

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use dlmd::cuda::{self, Current, MirroredArray};
use dlmd::{Dims, LayoutRight};
use dlmd_examples::median;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const KERNEL: &str = r#"
extern "C" __global__ void add_index(dlmd::view<float, 3> v) {
    long long i = blockIdx.z, j = blockIdx.y, k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < v.extent(2)) v(i, j, k) += (float)(i + j + k);
}
"#;

fn check(stream: &Arc<CudaStream>) -> Result<(), Box<dyn Error>> {
    let extents = [8usize, 64, 256];
    let mut array = MirroredArray::<f32, Dims<3>, LayoutRight>::zeros(stream, Dims::new(extents))?;
    array
        .host_mut()?
        .for_each_mut(|[i, j, k], x| *x = (i * 10_000 + j * 100 + k) as f32);
    assert_eq!(array.current(), Current::Host);
    assert!(array.device().is_err(), "the device copy is stale");
    array.to_device()?;
    {
        let func = cuda::Kernels::compile_cxx(stream.context(), KERNEL)?.function("add_index")?;
        let view = array.device_mut()?;
        let kv = view.kernel_view();
        let mut launch = stream.launch_builder(&func);
        launch.arg(&kv);
        let cfg = LaunchConfig {
            grid_dim: (1, extents[1] as u32, extents[0] as u32),
            block_dim: (extents[2] as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel touches exactly the view's elements, which the array holds.
        unsafe { launch.launch(cfg) }?;
    }
    assert!(array.host().is_err(), "the host copy is stale after a device write");
    array.to_host()?;
    array.to_host()?; // already current: returns at once
    let host = array.host()?;
    let mut wrong = 0;
    for i in 0..extents[0] {
        for j in 0..extents[1] {
            for k in 0..extents[2] {
                let want = (i * 10_000 + j * 100 + k) as f32 + (i + j + k) as f32;
                wrong += usize::from(host[[i, j, k]] != want);
            }
        }
    }
    if wrong != 0 {
        return Err(format!("{wrong} elements differ after the round trip").into());
    }

    let pageable: Vec<f32> = (0..8 * 64 * 256).map(|x| x as f32 * 0.5).collect();
    array.upload_pageable(&pageable)?;
    let mut back = vec![0.0f32; pageable.len()];
    array.download_pageable(&mut back)?;
    if back != pageable {
        return Err("pageable staging lost data".into());
    }
    println!("MirroredArray: host -> device -> kernel -> host and pageable staging both ways: all values match");
    Ok(())
}

fn bench(stream: &Arc<CudaStream>) -> Result<(), Box<dyn Error>> {
    const N: usize = 1 << 28; // 1 GiB of f32
    let gib = (N * 4) as f64 / (1u64 << 30) as f64;
    let mut array = MirroredArray::<f32, Dims<1>, LayoutRight>::zeros(stream, Dims::new([N]))?;
    let mut pageable = vec![1.0f32; N];
    let (mut h2d, mut d2h, mut h2d_pageable, mut d2h_pageable) = (vec![], vec![], vec![], vec![]);
    for run in 0..12 {
        // SAFETY: nothing is copied into the host copy here (no `to_host`), and the values it
        // holds, whatever they are, are the ones this timing uploads.
        unsafe { array.mark_host_written() };
        let t = Instant::now();
        array.to_device()?;
        stream.synchronize()?;
        let a = t.elapsed().as_secs_f64();
        let _ = array.device_mut()?;
        let t = Instant::now();
        array.to_host()?;
        stream.synchronize()?;
        let b = t.elapsed().as_secs_f64();
        let t = Instant::now();
        array.upload_pageable(&pageable)?;
        let c = t.elapsed().as_secs_f64();
        let t = Instant::now();
        array.download_pageable(&mut pageable)?;
        let d = t.elapsed().as_secs_f64();
        if run >= 2 {
            h2d.push(gib / a);
            d2h.push(gib / b);
            h2d_pageable.push(gib / c);
            d2h_pageable.push(gib / d);
        }
    }
    println!("dlmd h2d_pinned {:.2} GiB/s", median(h2d));
    println!("dlmd d2h_pinned {:.2} GiB/s", median(d2h));
    println!("dlmd h2d_pageable {:.2} GiB/s", median(h2d_pageable));
    println!("dlmd d2h_pageable {:.2} GiB/s", median(d2h_pageable));
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    check(&stream)?;
    if std::env::args().any(|a| a == "--bench") {
        bench(&stream)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mirrored: {e}");
            ExitCode::FAILURE
        }
    }
}
