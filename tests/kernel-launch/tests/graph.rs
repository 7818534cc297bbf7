//! A Hopper kernel's launch captured into a CUDA graph (`examples/hopper-kernels`' safe
//! `linear_bf16`): its TMA tensor maps travel in the captured kernel parameters, so the graph
//! replays correctly after the maps are gone. Alone in its binary: a capture cannot wait for
//! work that other tests queue on other streams over memory this one reuses.
//!
//! Without a GPU the test prints one line saying it was skipped and passes (with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead); on a GPU that cannot run `sm_90a` code the
//! module is refused by name, and the test says so and passes.

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, sys};
use dlmd::cuda::{CudaError, Kernels, ModuleError, TiledMap, device_view, device_view_mut};
use dlmd::half::bf16;
use dlmd::kernel::swizzle::Swizzle128;
use dlmd::{Const, Dims, LayoutRight};
use dlmd_example_hopper_kernels as hk;
use dlmd_tests::gpu;

#[test]
fn a_launch_captured_into_a_graph_carries_its_maps() {
    let Some(ctx) = gpu() else { return };
    let module = match Kernels::load(&ctx, hk::PTX) {
        Ok(kernels) => kernels,
        Err(CudaError::Module(e @ ModuleError::Arch { .. })) => {
            dlmd_tests::skipped(format_args!("not a Hopper GPU: {e}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let stream = ctx.new_stream().unwrap();
    let (m, k, n) = (256, 192, 512);
    // Small integers: every product and sum is exact in `f32`, and the result in `bf16`.
    let x: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 - 2.0).collect();
    // `y = x · wᵀ`, `x` of `m × k` and `w` of `n × k`, row-major.
    let expected: Vec<bf16> = (0..m * n)
        .map(|i| bf16::from_f32((0..k).map(|p| x[i / n * k + p] * w[i % n * k + p]).sum()))
        .collect();
    let to = |v: &[f32]| v.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>();
    // A launch outside a scope takes views that borrow for `'static`: memory kept to the end.
    let leak = |slice: CudaSlice<bf16>| -> &'static mut CudaSlice<bf16> { Box::leak(Box::new(slice)) };
    let d_x = leak(stream.clone_htod(&to(&x)).unwrap());
    let d_w = leak(stream.clone_htod(&to(&w)).unwrap());
    let d_y = leak(stream.alloc_zeros::<bf16>(m * n).unwrap());
    let y_at = d_y.device_ptr(&stream).0;
    stream.synchronize().unwrap();
    let xv = device_view::<_, Dims<2>, LayoutRight>(&*d_x, Dims::new([m, k])).unwrap();
    let wv = device_view::<_, Dims<2>, LayoutRight>(&*d_w, Dims::new([n, k])).unwrap();
    let yv = device_view_mut::<_, Dims<2>, LayoutRight>(d_y, Dims::new([m, n])).unwrap();
    // A block for each of the 2 × 2 chunks of 128 × 256.
    let config = LaunchConfig {
        grid_dim: (4, 1, 1),
        block_dim: (384, 1, 1),
        shared_mem_bytes: 0,
    };
    let graph = {
        let xm = TiledMap::<bf16, (Const<128>, Const<64>), Swizzle128>::new(&xv).unwrap();
        let wm = TiledMap::<bf16, (Const<256>, Const<64>), Swizzle128>::new(&wv).unwrap();
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        hk::linear_bf16(module.launch_on(&stream, config), xm.map(), wm.map(), yv).unwrap();
        stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("the capture recorded the launch")
        // The maps end here: they travel in the captured parameters, and the graph needs
        // nothing of theirs.
    };
    for replay in 0..2 {
        // SAFETY: `y_at` is the start of `m · n` elements of device memory that is never freed;
        // nothing is queued on it (the stream is idle between replays).
        unsafe { cudarc::driver::result::memset_d8_sync(y_at, 0, m * n * 2) }.unwrap();
        graph.launch().unwrap();
        stream.synchronize().unwrap();
        let mut got = vec![bf16::ZERO; m * n];
        // SAFETY: as above; the replay is done.
        unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut got, y_at) }.unwrap();
        assert_eq!(got, expected, "replay {replay}");
    }
}
