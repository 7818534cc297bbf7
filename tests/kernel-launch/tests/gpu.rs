//! Kernel launches on a GPU: a launcher refused by a module whose kernel of that name has
//! another signature, launches ordered after the work queued on their views' memory, and
//! imported tensors launched on their producer's stream, held until the kernel is done, and
//! refused on another stream, outside their allocation or off the device.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig};
use dlmd::cuda::{self, CudaError, Imported, Kernels, device_view_mut};
use dlmd::dlpack::{DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use dlmd::exchange::WorkStream;
use dlmd::managed::ManagedTensor;
use dlmd::{DeviceMdspanMut, Dims, DlElement, LayoutRight};
use dlmd_test_kernels_other as other;
use dlmd_test_kernels_real as real;
use dlmd_tests::gpu;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        Err(CudaError::Launch(dlmd::cuda::LaunchError::Signature {
            kernel: "scale",
            found: true
        }))
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
fn parameters_named_like_the_macros_locals_arrive_as_passed() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.default_stream();
    let kernels = Kernels::load(&ctx, other::PTX).unwrap();
    let mut out = stream.alloc_zeros::<i32>(16).unwrap();
    let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(&mut out, Dims::new([16])).unwrap();
    cuda::scope(|s| {
        other::own_names(
            s.launch(&stream, &kernels, LaunchConfig::for_num_elems(16)),
            other::OwnNamesArgs {
                __dlmd_param0: view.as_view_mut(),
                __dlmd_param2: 7,
                __dlmd_param1: 42,
                __dlmd_anchor: 3,
                __dlmd_kernel_body: 4,
                launch: 5,
                args: 6,
                params: 8,
                infos: 9,
            },
        )
    })
    .unwrap();
    let expected = [7, 42, 3, 4, 5, 6, 8, 9];
    assert_eq!(stream.clone_dtoh(&out).unwrap(), [expected, expected].concat());
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

/// A versioned managed tensor over device memory Rust allocated, as a foreign producer hands
/// one over: it owns the allocation, and its deleter counts the releases.
#[repr(C)]
struct Foreign {
    managed: DLManagedTensorVersioned,
    shape: [i64; 1],
    strides: [i64; 1],
    memory: Option<CudaSlice<real::Real>>,
    released: Arc<AtomicUsize>,
}

unsafe extern "C" fn release_foreign(tensor: *mut DLManagedTensorVersioned) {
    // SAFETY: `tensor` is the first field of a boxed `Foreign` (`foreign`), released once.
    let owner = unsafe { Box::from_raw(tensor.cast::<Foreign>()) };
    owner.released.fetch_add(1, Ordering::SeqCst);
}

/// `memory` (or, without it, the host address `host`) as a 1-D tensor of `len` elements labelled
/// on CUDA device 0, handed to an `Imported` whose producer named `stream`.
fn foreign(
    memory: Option<CudaSlice<real::Real>>,
    host: usize,
    len: i64,
    stream: WorkStream,
) -> (Imported, Arc<AtomicUsize>) {
    let released = Arc::new(AtomicUsize::new(0));
    let data = memory.as_ref().map_or(host, |m| m.device_ptr(m.stream()).0 as usize);
    let mut owner = Box::new(Foreign {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 3 },
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(release_foreign),
            flags: 0,
            dl_tensor: DLTensor {
                data: data as *mut core::ffi::c_void,
                device: DLDevice::cuda(0),
                ndim: 1,
                dtype: <real::Real as DlElement>::DTYPE,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: [len],
        strides: [1],
        memory,
        released: released.clone(),
    });
    owner.managed.dl_tensor.shape = owner.shape.as_mut_ptr();
    owner.managed.dl_tensor.strides = owner.strides.as_mut_ptr();
    let raw = Box::into_raw(owner).cast::<DLManagedTensorVersioned>();
    // SAFETY: a fresh tensor handed over, its arrays in the same box, its memory owned by it
    // until the deleter (which frees the box) runs once.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    (Imported::new(tensor, stream), released)
}

#[test]
fn an_import_launches_on_its_producers_stream_and_is_held_until_the_kernel_is_done() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = 1 << 20;
    let memory = stream.clone_htod(&vec![1.5 as real::Real; n]).unwrap();
    let (x, released) = foreign(
        Some(memory),
        0,
        n as i64,
        WorkStream::from_raw(stream.cu_stream() as usize),
    );
    let grid = LaunchConfig::for_num_elems(n as u32);
    real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    // The caller lets go at once; the launches still hold the tensor, which nothing releases
    // before a launch or `release_completed` finds its kernel done.
    let data = x.tensor().dl_tensor().data as u64;
    drop(x);
    assert_eq!(released.load(Ordering::SeqCst), 0, "released under a queued kernel");
    stream.synchronize().unwrap();
    let mut host = vec![0.0 as real::Real; n];
    // SAFETY: the holds keep the allocation (`n` elements of device memory), and no work is
    // queued on it any more.
    unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut host, data) }.unwrap();
    assert!(host.iter().all(|&v| v == 6.0), "{:?}", &host[..4]);
    assert_eq!(cuda::release_completed().unwrap(), 0);
    assert_eq!(released.load(Ordering::SeqCst), 1, "released once, after the kernels");
}

#[test]
fn imports_are_refused_on_another_stream_outside_their_memory_and_off_the_device() {
    let Some(ctx) = gpu() else { return };
    let (producer, other) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let on = |s: &Arc<CudaStream>| WorkStream::from_raw(s.cu_stream() as usize);
    let grid = LaunchConfig::for_num_elems(64);

    let (x, released) = foreign(Some(producer.alloc_zeros(64).unwrap()), 0, 64, on(&producer));
    let e = real::scale(kernels.launch_on(&other, grid), x.arg().unwrap(), 2.0).unwrap_err();
    assert!(
        matches!(
            e,
            CudaError::Launch(dlmd::cuda::LaunchError::Stream { kernel: "scale", .. })
        ),
        "{e}"
    );
    drop(x);
    assert_eq!(released.load(Ordering::SeqCst), 1, "a refused launch holds nothing");

    // A shape past the allocation: the span reaches outside it.
    let (x, _) = foreign(Some(producer.alloc_zeros(64).unwrap()), 0, 1 << 30, on(&producer));
    let e = x.arg::<DeviceMdspanMut<'_, real::Real, Dims<1>>>().unwrap_err();
    assert!(
        matches!(
            e,
            CudaError::Placement(dlmd::cuda::PlacementError::OutsideAllocation { .. })
        ),
        "{e}"
    );

    // Host memory labelled as the device's.
    let host = vec![0.0 as real::Real; 64];
    let (x, _) = foreign(None, host.as_ptr() as usize, 64, on(&producer));
    let e = x.arg::<DeviceMdspanMut<'_, real::Real, Dims<1>>>().unwrap_err();
    assert!(
        matches!(
            e,
            CudaError::Placement(dlmd::cuda::PlacementError::NotDeviceMemory { .. })
        ),
        "{e}"
    );
}
