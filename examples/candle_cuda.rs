//! candle's CUDA tensors through dlmd, both ways, checked against the CPU; with `--bench`, the
//! costs measured against references in the same run, alternated round by round.
//!
//! - A candle CUDA tensor as a dlmd device view, read by an NVRTC kernel (`dlmd::view`), against
//!   the same kernel body reading candle's own `CudaSlice` through a raw pointer with row-major
//!   indexing written by hand: the view must add no per-element cost.
//! - A candle CUDA tensor exported as a DLPack managed tensor (no copy: the same device pointer)
//!   and imported back (the same candle tensor).
//! - A CUDA tensor of another producer (a cudarc allocation exported by dlmd) imported into
//!   candle: one device-to-device copy, timed against cudarc's device copy of the same bytes.
//!
//! Run with `cargo run --release -p dlmd-examples --features candle-cuda --example candle_cuda
//! [-- --bench]` (candle's kernels need nvcc at build time) on a machine with an NVIDIA GPU.

use candle_core::{DType, Device, Tensor};
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use dlmd::Mdspan;
use dlmd::dlpack::{DLDevice, DLManagedTensorVersioned};
use dlmd::managed::{ManagedTensor, TensorOwner, export_with};
use dlmd::view::Aliased;
use dlmd::{Device as DeviceSpace, Dims, LayoutRight};
use dlmd_examples::cxx::{add_index_grid, compile};
use dlmd_examples::median;
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The kernel both sides run: `dst = src + (i + j + k)` over a 3-D row-major tensor, reading
/// `src` through a `dlmd::view` (`from_view`) or through a raw pointer indexed by hand
/// (`from_raw`, what code without dlmd writes). Four elements of the last dimension a thread.
const KERNELS: &str = r#"
template <class Load>
__device__ void body(Load load, dlmd::view<float, 3> dst) {
    long long i = blockIdx.z;
    long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    long long k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (j >= dst.extent(1) || k >= dst.extent(2)) return;
    float4 x = load(i, j, k);
    float s = (float)(i + j + k);
    x.x += s; x.y += s + 1.0f; x.z += s + 2.0f; x.w += s + 3.0f;
    *reinterpret_cast<float4*>(&dst(i, j, k)) = x;
}
extern "C" __global__ void from_view(dlmd::view<float, 3> src, dlmd::view<float, 3> dst) {
    body([&](long long i, long long j, long long k) {
        return *reinterpret_cast<const float4*>(&src(i, j, k));
    }, dst);
}
extern "C" __global__ void from_raw(const float* src, long long n1, long long n2, dlmd::view<float, 3> dst) {
    body([&](long long i, long long j, long long k) {
        return *reinterpret_cast<const float4*>(src + (i * n1 + j) * n2 + k);
    }, dst);
}
"#;

/// A cudarc allocation exported by dlmd as a DLPack CUDA tensor: another producer's tensor.
struct DeviceOwner(CudaSlice<f32>);

// SAFETY: the allocation does not move with its `CudaSlice`, which owns it; the pointer is the
// device address of its first element, valid while the owner lives. Nothing else writes it.
unsafe impl TensorOwner for DeviceOwner {
    type Elem = f32;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut f32 {
        let stream = self.0.stream().clone();
        let (ptr, _record) = cudarc::driver::DevicePtr::device_ptr(&self.0, &stream);
        ptr as usize as *mut f32
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

fn own(raw: *mut DLManagedTensorVersioned) -> Result<ManagedTensor, Box<dyn Error>> {
    // SAFETY: `raw` was just made by one of dlmd's exports and is handed over here.
    Ok(unsafe { ManagedTensor::from_raw(raw) }?)
}

fn foreign(stream: &Arc<CudaStream>, values: &[f32], dims: [usize; 3]) -> Result<ManagedTensor, Box<dyn Error>> {
    let slice = stream.clone_htod(values)?;
    // SAFETY: the owner's memory is a cudarc allocation on device 0 (the stream's).
    let raw = unsafe {
        export_with::<DLManagedTensorVersioned, _, _>(DeviceOwner(slice), Dims::new(dims), 0, DLDevice::cuda(0))
    }?;
    own(raw)
}

/// Launches `from_view` (the dlmd view of the candle tensor) or `from_raw` (candle's own slice)
/// into `dst`.
fn launch(
    stream: &Arc<CudaStream>,
    funcs: &(cudarc::driver::CudaFunction, cudarc::driver::CudaFunction),
    src: &Tensor,
    dst: &mut CudaSlice<f32>,
    through_view: bool,
) -> Result<(), Box<dyn Error>> {
    let dims: [usize; 3] = src.dims().try_into()?;
    let out = dlmd::cuda::device_view_mut::<f32, Dims<3>, LayoutRight>(dst, Dims::new(dims))?;
    let out = out.kernel_view();
    let borrowed = dlmd::candle::borrow(src);
    if through_view {
        let view = borrowed.device_view::<f32, Dims<3>, LayoutRight>()?;
        let kv = view.kernel_view();
        let mut b = stream.launch_builder(&funcs.0);
        b.arg(&kv).arg(&out);
        // SAFETY: `from_view` reads the view's elements (candle's storage, kept by `borrowed`)
        // and writes `dst`'s, both of `dims`.
        unsafe { b.launch(add_index_grid(dims)) }?;
    } else {
        let (storage, _) = src.storage_and_layout();
        let candle_core::Storage::Cuda(cuda) = &*storage else {
            return Err("not a CUDA tensor".into());
        };
        let slice = cuda.as_cuda_slice::<f32>()?;
        let (n1, n2) = (dims[1] as i64, dims[2] as i64);
        let mut b = stream.launch_builder(&funcs.1);
        b.arg(slice).arg(&n1).arg(&n2).arg(&out);
        // SAFETY: `from_raw` reads the contiguous slice of `dims` elements and writes `dst`'s.
        unsafe { b.launch(add_index_grid(dims)) }?;
    }
    Ok(())
}

fn check(
    device: &Device,
    stream: &Arc<CudaStream>,
    funcs: &(cudarc::driver::CudaFunction, cudarc::driver::CudaFunction),
) -> Result<(), Box<dyn Error>> {
    let dims = [8usize, 16, 64];
    let n: usize = dims.iter().product();
    let host: Vec<f32> = (0..n).map(|x| (x % 7) as f32).collect();
    let t = Tensor::from_vec(host.clone(), dims.to_vec(), device)?;
    let expected: Vec<f32> = (0..n)
        .map(|x| host[x] + (x / (dims[1] * dims[2]) + (x / dims[2]) % dims[1] + x % dims[2]) as f32)
        .collect();
    for through_view in [true, false] {
        let mut dst = stream.alloc_zeros::<f32>(n)?;
        launch(stream, funcs, &t, &mut dst, through_view)?;
        let got = stream.clone_dtoh(&dst)?;
        let wrong = got.iter().zip(&expected).filter(|(a, b)| a != b).count();
        if wrong != 0 {
            return Err(format!("{wrong} of {n} elements differ from the CPU (through_view = {through_view})").into());
        }
    }
    println!(
        "a candle CUDA tensor as a dlmd device view: the kernel's {n} results match the CPU, as through candle's own slice"
    );

    // Out as DLPack: the same device memory; back: the same candle tensor.
    let view_ptr = dlmd::candle::borrow(&t)
        .device_view::<f32, Dims<3>, LayoutRight>()?
        .as_ptr();
    let managed = own(dlmd::candle::export(&t)?)?;
    let seen = managed.view::<Mdspan<'_, f32, Dims<3>, LayoutRight, DeviceSpace, Aliased>>()?;
    if seen.as_ptr() != view_ptr || managed.flags() & dlmd::dlpack::READ_ONLY == 0 {
        return Err("the export is not candle's memory, read-only".into());
    }
    let back = dlmd::candle::import(managed, device)?;
    if back.id() != t.id() {
        return Err("the exported candle tensor did not come back as itself".into());
    }
    // A strided candle tensor exports in its own strides.
    let tt = t.transpose(1, 2)?;
    let managed = own(dlmd::candle::export(&tt)?)?;
    let strided = managed.view::<Mdspan<'_, f32, Dims<3>, dlmd::LayoutStride, DeviceSpace, Aliased>>()?;
    if strided.stride(1) != 1 || strided.stride(2) != 64 {
        return Err("the transposed export lost candle's strides".into());
    }
    // Another producer's CUDA tensor: one copy on the device, equal values.
    let copied = dlmd::candle::import(foreign(stream, &host, dims)?, device)?;
    if copied.flatten_all()?.to_vec1::<f32>()? != host || copied.dims() != dims {
        return Err("the CUDA import into candle does not hold the producer's values".into());
    }
    println!(
        "candle CUDA tensors both ways: exported without a copy (same pointer, read-only, strides kept), back as the same tensor; another producer's CUDA tensor copied on the device, values equal"
    );
    Ok(())
}

/// A candle tensor that candle's queued kernels are still writing, read by a Rust kernel
/// launched on another stream: the launch waits on the device for an event recorded on
/// candle's stream, behind candle's work.
fn rust_kernel_after_candle(device: &Device, stream: &Arc<CudaStream>) -> Result<(), Box<dyn Error>> {
    let (rows, cols) = (4096usize, 4096usize);
    let ctx = stream.context();
    let other = ctx.new_stream()?;
    let kernels = dlmd::cuda::Kernels::load(ctx, dlmd_example_kernels::PTX)?;
    let grid = cudarc::driver::LaunchConfig {
        grid_dim: ((rows as u32 / 4).div_ceil(32), (cols as u32).div_ceil(8), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    for round in 0..3 {
        // 64 MiB, then 32 additions queued on candle's stream: milliseconds of work.
        let mut t = Tensor::ones((rows, cols), DType::F32, device)?;
        for _ in 0..32 {
            t = (t + 1.0)?;
        }
        let mut out = other.alloc_zeros::<f32>(rows * cols)?;
        {
            let borrowed = dlmd::candle::borrow(&t);
            let src = borrowed.device_view::<f32, Dims<2>, LayoutRight>()?;
            let mut dst =
                dlmd::cuda::device_view_mut::<f32, Dims<2>, dlmd::LayoutLeft>(&mut out, Dims::new([rows, cols]))?;
            dlmd::cuda::scope(|s| {
                dlmd_example_kernels::transpose(s.launch(&other, &kernels, grid), src, dst.as_view_mut())
            })?;
        }
        let got = other.clone_dtoh(&out)?;
        let wrong = got.iter().filter(|&&x| x != 33.0).count();
        if wrong != 0 {
            return Err(format!(
                "round {round}: {wrong} of {} elements read before candle wrote them",
                got.len()
            )
            .into());
        }
    }
    println!(
        "a Rust kernel on another stream reads a candle tensor behind candle's queued kernels: all {} elements written, 3 rounds",
        rows * cols
    );
    Ok(())
}

fn bench(
    device: &Device,
    stream: &Arc<CudaStream>,
    funcs: &(cudarc::driver::CudaFunction, cudarc::driver::CudaFunction),
) -> Result<(), Box<dyn Error>> {
    let dims = [256usize, 1024, 1024];
    let n: usize = dims.iter().product();
    let bytes = (n * 4) as f64;
    let t = Tensor::ones(dims.to_vec(), DType::F32, device)?;
    let mut dst = stream.alloc_zeros::<f32>(n)?;
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut time_kernel = |through_view: bool| -> Result<f64, Box<dyn Error>> {
        let start = stream.record_event(timing)?;
        launch(stream, funcs, &t, &mut dst, through_view)?;
        let end = stream.record_event(timing)?;
        end.synchronize()?;
        Ok(f64::from(start.elapsed_ms(&end)?))
    };
    let (mut view, mut raw) = (Vec::new(), Vec::new());
    for round in 0..25 {
        let order = if round % 2 == 0 { [true, false] } else { [false, true] };
        for through_view in order {
            let ms = time_kernel(through_view)?;
            if round >= 5 {
                if through_view { view.push(ms) } else { raw.push(ms) }
            }
        }
    }
    let (v, r) = (median(view), median(raw));
    println!(
        "bench candle tensor 256x1024x1024 f32 into a kernel: dlmd view {v:.3} ms ({:.0} GB/s), candle's slice by raw pointer {r:.3} ms ({:.0} GB/s), view / raw speed = {:.3}",
        2.0 * bytes / v / 1e6,
        2.0 * bytes / r / 1e6,
        r / v
    );

    // Another producer's 1 GiB CUDA tensor into candle (a new allocation and one device copy,
    // finished when the import returns) against cudarc's device copy of the same bytes into an
    // allocation made before, synchronised the same way: first with the memory pool as CUDA
    // leaves it (freed memory goes back to the system at each synchronisation, so every import
    // maps its gigabyte again, as every new candle tensor of that size does), then with the pool
    // keeping its memory (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` at its maximum, as torch's caching
    // allocator does), which leaves the copy itself.
    let src = stream.alloc_zeros::<f32>(n)?;
    let mut copy_dst = stream.alloc_zeros::<f32>(n)?;
    for pool_keeps_memory in [false, true] {
        if pool_keeps_memory {
            keep_pool_memory(stream)?;
        }
        let (mut import, mut copy) = (Vec::new(), Vec::new());
        for round in 0..15 {
            for first in if round % 2 == 0 { [true, false] } else { [false, true] } {
                if first {
                    let slice = stream.clone_dtod(&src)?;
                    stream.synchronize()?;
                    // SAFETY: the owner's memory is a cudarc allocation on device 0.
                    let raw = unsafe {
                        export_with::<DLManagedTensorVersioned, _, _>(
                            DeviceOwner(slice),
                            Dims::new(dims),
                            0,
                            DLDevice::cuda(0),
                        )
                    }?;
                    let managed = own(raw)?;
                    let started = Instant::now();
                    let tensor = dlmd::candle::import(managed, device)?;
                    let s = started.elapsed().as_secs_f64();
                    drop(tensor);
                    if round >= 3 {
                        import.push(s);
                    }
                } else {
                    stream.synchronize()?;
                    let started = Instant::now();
                    stream.memcpy_dtod(&src, &mut copy_dst)?;
                    stream.synchronize()?;
                    if round >= 3 {
                        copy.push(started.elapsed().as_secs_f64());
                    }
                }
            }
        }
        let (i, c) = (median(import), median(copy));
        println!(
            "bench another producer's 1 GiB CUDA tensor into candle ({}): import {:.3} ms ({:.0} GB/s), cudarc device copy {:.3} ms ({:.0} GB/s), import / copy bandwidth = {:.3}",
            if pool_keeps_memory {
                "pool keeping its memory"
            } else {
                "CUDA's default pool"
            },
            i * 1e3,
            2.0 * bytes / i / 1e9,
            c * 1e3,
            2.0 * bytes / c / 1e9,
            c / i
        );
    }
    Ok(())
}

/// Lets the device's default memory pool (cudarc's and candle's allocations) keep what is freed.
fn keep_pool_memory(stream: &Arc<CudaStream>) -> Result<(), Box<dyn Error>> {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    let device = stream.context().cu_device();
    // SAFETY: `pool` is written by the driver for a valid device.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device) }.result()?;
    let mut threshold = u64::MAX;
    // SAFETY: a live pool; the release threshold attribute takes a `cuuint64_t`.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()?;
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let device = Device::new_cuda(0)?;
    let Device::Cuda(cuda) = &device else {
        return Err("candle made no CUDA device".into());
    };
    let stream = cuda.cuda_stream();
    let ctx = stream.context().clone();
    let funcs = (
        compile(&ctx, KERNELS, "from_view")?,
        compile(&ctx, KERNELS, "from_raw")?,
    );
    check(&device, &stream, &funcs)?;
    rust_kernel_after_candle(&device, &stream)?;
    if std::env::args().any(|a| a == "--bench") {
        bench(&device, &stream, &funcs)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("candle_cuda failed: {e}");
            ExitCode::FAILURE
        }
    }
}
