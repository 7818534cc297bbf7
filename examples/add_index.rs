//! The seed's test kernel on a GPU: each element of a 3-D view gains the sum of its indices.
//!
//! The view is built with `dlmd!`, copied to the device with cudarc, passed to a kernel compiled
//! by NVRTC as a `dlmd::view<float, 3>` (from `dlmd/view.cuh`), and checked against the same
//! computation on the CPU. With `--bench`, it then times the kernel on 1024×1024×256 `f32`
//! against a device-to-device copy of the same bytes (median of 25 runs, CUDA events).
//!
//! Run with `cargo run --release --features cuda --example add_index [-- --bench]` on a machine
//! with an NVIDIA GPU.

use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg, sys};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use dlmd::cuda::{self, CudaError, HEADER};
use dlmd::{Const, Dims, LayoutRight, dlmd};
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

const KERNEL: &str = r#"
// Each thread takes 4 consecutive elements of the last dimension: one 16-byte load and store
// where the row is contiguous and aligned (the fast path), element by element otherwise.
extern "C" __global__ void add_index(dlmd::view<float, 3> v) {
    long long i = blockIdx.z;
    long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    long long k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (j >= v.extent(1) || k >= v.extent(2)) return;
    float* p = &v(i, j, k);
    float sum = (float)(i + j + k);
    if (v.stride(2) == 1 && k + 4 <= v.extent(2) && ((unsigned long long)p & 15) == 0) {
        float4 x = *reinterpret_cast<float4*>(p);
        x.x += sum; x.y += sum + 1.0f; x.z += sum + 2.0f; x.w += sum + 3.0f;
        *reinterpret_cast<float4*>(p) = x;
    } else {
        for (long long kk = k; kk < k + 4 && kk < v.extent(2); ++kk) v(i, j, kk) += (float)(i + j + kk);
    }
}
"#;

fn launch_config(extents: [usize; 3]) -> LaunchConfig {
    // 64 threads of 4 elements cover 256 of a row; 4 rows per block.
    let (x, y) = (64u32, 4u32);
    LaunchConfig {
        grid_dim: (
            (extents[2] as u32).div_ceil(4 * x),
            (extents[1] as u32).div_ceil(y),
            extents[0] as u32,
        ),
        block_dim: (x, y, 1),
        shared_mem_bytes: 0,
    }
}

fn compile(ctx: &Arc<CudaContext>) -> Result<cudarc::driver::CudaFunction, Box<dyn Error>> {
    let (major, minor) = ctx.compute_capability()?;
    let arch: &'static str = Box::leak(format!("--gpu-architecture=sm_{major}{minor}").into_boxed_str());
    let source = format!("{HEADER}\n{KERNEL}");
    let ptx = compile_ptx_with_opts(
        source,
        CompileOptions {
            options: vec![arch.to_string()],
            ..Default::default()
        },
    )?;
    Ok(ctx.load_module(ptx)?.load_function("add_index")?)
}

fn check(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    func: &cudarc::driver::CudaFunction,
) -> Result<(), Box<dyn Error>> {
    let mut host: Vec<f32> = (0..64 * 32 * 16).map(|x| (x % 7) as f32).collect();
    let mut expected = host.clone();
    {
        let mut md = dlmd!(&mut expected, [64, 32, 16]);
        md.for_each_mut(|[i, j, k], x| *x += (i + j + k) as f32);
    }
    let view = dlmd!(&host, [64, 32, 16]);
    let mut device = stream.clone_htod(view.iter().copied().collect::<Vec<_>>().as_slice())?;
    {
        let dv = cuda::device_view_mut::<f32, (Const<64>, Const<32>, Const<16>), LayoutRight>(
            &mut device,
            (Const, Const, Const),
        )?;
        let kv = dv.kernel_view();
        let mut launch = stream.launch_builder(func);
        launch.arg(&kv);
        // SAFETY: the kernel reads and writes exactly the view's elements, which `device` holds.
        unsafe { launch.launch(launch_config([64, 32, 16])) }?;
    }
    stream.memcpy_dtoh(&device, &mut host)?;
    let wrong = host.iter().zip(&expected).filter(|(a, b)| a != b).count();
    if wrong != 0 {
        return Err(format!("{wrong} of {} elements differ from the CPU result", host.len()).into());
    }
    println!(
        "add_index on 64x32x16 f32 on {}: all {} elements match the CPU",
        ctx.name()?,
        host.len()
    );
    Ok(())
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench(stream: &Arc<CudaStream>, func: &cudarc::driver::CudaFunction) -> Result<(), Box<dyn Error>> {
    let extents = [1024usize, 1024, 256];
    let n: usize = extents.iter().product();
    let mut a = stream.alloc_zeros::<f32>(n)?;
    let mut b = stream.alloc_zeros::<f32>(n)?;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (mut kernel, mut copy) = (Vec::new(), Vec::new());
    for run in 0..30 {
        {
            let dv = cuda::device_view_mut::<f32, Dims<3>, LayoutRight>(&mut a, Dims::new(extents))?;
            let kv = dv.kernel_view();
            let start = stream.record_event(timing)?;
            let mut launch = stream.launch_builder(func);
            launch.arg(&kv);
            // SAFETY: the kernel touches exactly the view's elements, which `a` holds.
            unsafe { launch.launch(launch_config(extents)) }?;
            let end = stream.record_event(timing)?;
            end.synchronize()?;
            if run >= 5 {
                kernel.push(start.elapsed_ms(&end)?);
            }
        }
        let start = stream.record_event(timing)?;
        stream.memcpy_dtod(&a, &mut b)?;
        let end = stream.record_event(timing)?;
        end.synchronize()?;
        if run >= 5 {
            copy.push(start.elapsed_ms(&end)?);
        }
    }
    let (k, c) = (median(kernel), median(copy));
    let bytes = 2.0 * (n * 4) as f64;
    println!(
        "bench add_index 1024x1024x256 f32: kernel {k:.3} ms ({:.0} GB/s), device-to-device copy {c:.3} ms ({:.0} GB/s), kernel bandwidth / copy bandwidth = {:.3}",
        bytes / k as f64 / 1e6,
        bytes / c as f64 / 1e6,
        c / k
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let func = compile(&ctx)?;
    check(&ctx, &stream, &func)?;
    if std::env::args().any(|a| a == "--bench") {
        bench(&stream, &func)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.downcast_ref::<CudaError>()
                .is_some_and(|e| matches!(e, CudaError::NoDriver))
            {
                eprintln!("add_index: {e}");
            } else {
                eprintln!("add_index failed: {e}");
            }
            ExitCode::FAILURE
        }
    }
}
