//! The seed's test kernel (the seed: the C++/CUDA AMSO MemArray that `examples/python-memarray`
//! rebuilds) on a GPU: each element of a 3-D view gains the sum of its indices.
//!
//! The view is built with `dlmd!`, copied to the device with cudarc, passed to a kernel compiled
//! by NVRTC as a `dlmd::view<float, 3>` (from `dlmd/view.cuh`), and checked against the same
//! computation on the CPU. With `--bench`, it then times the kernel on 1024×1024×256 `f32`
//! against a device-to-device copy of the same bytes (median of 25 runs, CUDA events).
//!
//! Run with `cargo run --release --features cuda --example add_index [-- --bench]` on a machine
//! with an NVIDIA GPU.

use cudarc::driver::{CudaContext, CudaStream, PushKernelArg, sys};
use dlmd::cuda::{self, CudaError};
use dlmd::{Const, Dims, LayoutRight, dlmd};
use dlmd_examples::cxx::{ADD_INDEX, add_index_grid, compile};
use dlmd_examples::median;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;

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
        unsafe { launch.launch(add_index_grid([64, 32, 16])) }?;
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
            unsafe { launch.launch(add_index_grid(extents)) }?;
            let end = stream.record_event(timing)?;
            end.synchronize()?;
            if run >= 5 {
                kernel.push(f64::from(start.elapsed_ms(&end)?));
            }
        }
        let start = stream.record_event(timing)?;
        stream.memcpy_dtod(&a, &mut b)?;
        let end = stream.record_event(timing)?;
        end.synchronize()?;
        if run >= 5 {
            copy.push(f64::from(start.elapsed_ms(&end)?));
        }
    }
    let (k, c) = (median(kernel), median(copy));
    let bytes = 2.0 * (n * 4) as f64;
    println!(
        "bench add_index 1024x1024x256 f32: kernel {k:.3} ms ({:.0} GB/s), device-to-device copy {c:.3} ms ({:.0} GB/s), kernel bandwidth / copy bandwidth = {:.3}",
        bytes / k / 1e6,
        bytes / c / 1e6,
        c / k
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let ctx = cuda::context(0)?;
    let stream = ctx.default_stream();
    let func = compile(&ctx, ADD_INDEX, "add_index")?;
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
