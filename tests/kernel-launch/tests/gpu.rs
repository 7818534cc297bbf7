//! Kernel launches on a GPU: a launcher refused by a module whose kernel of that name has
//! another signature, and launches ordered after the work queued on their views' memory.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use dlmd::cuda::{self, CudaError, Kernels, device_view_mut};
use dlmd::{Dims, LayoutRight};
use dlmd_test_kernels_other as other;
use dlmd_test_kernels_real as real;
use dlmd_tests::gpu;
use std::sync::Arc;

/// `real::scale` by 2 over `x` on `stream`, through `kernels`.
fn real_scale(stream: &Arc<CudaStream>, kernels: &Kernels, x: &mut CudaSlice<real::Real>) -> Result<(), CudaError> {
    let n = x.len();
    let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(x, Dims::new([n]))?;
    let grid = LaunchConfig::for_num_elems(n.div_ceil(4) as u32);
    cuda::scope(|s| real::scale(s.launch(stream, kernels, grid), view.as_view_mut(), 2.0))
}

/// `other::scale` by 3 over `x` (2 × 3) on `stream`, through `kernels`.
fn other_scale(stream: &Arc<CudaStream>, kernels: &Kernels, x: &mut CudaSlice<i32>) -> Result<(), CudaError> {
    let mut view = device_view_mut::<_, Dims<2>, LayoutRight>(x, Dims::new([2, 3]))?;
    cuda::scope(|s| {
        other::scale(
            s.launch(stream, kernels, LaunchConfig::for_num_elems(6)),
            view.as_view_mut(),
            3,
        )
    })
}

fn refused(result: Result<(), CudaError>) -> bool {
    matches!(
        result,
        Err(CudaError::KernelSignature {
            kernel: "scale",
            found: true
        })
    )
}

#[test]
fn a_kernel_of_the_same_name_and_another_signature_is_refused_in_either_order() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let mut reals = stream.clone_htod(&[1.0 as real::Real, 2.0, 3.0]).unwrap();
    let mut ints = stream.clone_htod(&[1i32, 2, 3, 4, 5, 6]).unwrap();

    // Through the real crate's module: its own launcher first, then the other's.
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    real_scale(&stream, &kernels, &mut reals).unwrap();
    assert!(refused(other_scale(&stream, &kernels, &mut ints)));
    // The other order, on a fresh module: refused before and after the right one ran.
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    assert!(refused(other_scale(&stream, &kernels, &mut ints)));
    real_scale(&stream, &kernels, &mut reals).unwrap();
    assert!(refused(other_scale(&stream, &kernels, &mut ints)));
    assert_eq!(stream.clone_dtoh(&reals).unwrap(), [4.0, 8.0, 12.0]);

    // And the other crate's module, both ways round.
    let kernels = Kernels::load(&ctx, other::PTX).unwrap();
    assert!(refused(real_scale(&stream, &kernels, &mut reals)));
    other_scale(&stream, &kernels, &mut ints).unwrap();
    assert!(refused(real_scale(&stream, &kernels, &mut reals)));
    assert_eq!(stream.clone_dtoh(&ints).unwrap(), [3, 6, 9, 12, 15, 18]);
    assert_eq!(
        stream.clone_dtoh(&reals).unwrap(),
        [4.0, 8.0, 12.0],
        "nothing ran on the refusals"
    );
}

#[test]
fn a_launch_on_another_stream_reads_what_a_copy_still_in_flight_writes() {
    let Some(ctx) = gpu() else { return };
    // 256 MiB from pinned memory: the copy is still running when `clone_htod` returns.
    let n = (256 << 20) / size_of::<real::Real>();
    let (copies, launches) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    // SAFETY: every element is written below before the copy reads it.
    let mut host = unsafe { ctx.alloc_pinned::<real::Real>(n) }.unwrap();
    for (i, x) in host.as_mut_slice().unwrap().iter_mut().enumerate() {
        *x = (i % 1000) as real::Real;
    }
    for round in 0..3 {
        let mut x = copies.clone_htod(&host).unwrap();
        // The view notes the allocation's stream, `copies`; the launch on `launches` waits on
        // the device for an event recorded there, behind the copy.
        real_scale(&launches, &kernels, &mut x).unwrap();
        let back = copies.clone_dtoh(&x).unwrap();
        let wrong = back
            .iter()
            .enumerate()
            .filter(|&(i, &v)| v != 2.0 * (i % 1000) as real::Real)
            .count();
        assert_eq!(wrong, 0, "round {round}: {wrong} of {n} elements missed the copy");
    }
}
