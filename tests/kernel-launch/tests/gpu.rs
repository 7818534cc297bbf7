//! Kernel launches on a GPU: a launcher refused by a module whose kernel of that name has
//! another signature, launches ordered after the work queued on their views' memory, and
//! imported tensors launched on their producer's stream, held until the kernel is done (and
//! released then by the releasing thread, with no further call), held as long as a CUDA graph
//! that captured them, ordered after launches over the same memory imported on another stream
//! (after the replays of a graph that captured such a launch, and on a new stream that may reuse
//! a destroyed writer's handle), and refused on another
//! stream, outside their allocation or off the device, or on another thread than the one whose
//! per-thread stream their producer named; copies in scopes ordered against launches over
//! imports both ways; scopes that wait for their kernels even when their stream begins a
//! capture, and refuse work on a stream that is capturing; launches on one thread's per-thread
//! stream ordered after work on another's.
//!
//! Without a GPU each test prints one line saying it was skipped and passes; with
//! `DLMD_REQUIRE_GPU=1` a missing GPU fails instead.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig, sys};
use dlmd::cuda::{self, CudaError, Imported, Kernels, device_view, device_view_mut};
use dlmd::dlpack::{DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use dlmd::exchange::WorkStream;
use dlmd::managed::ManagedTensor;
use dlmd::space::Device;
use dlmd::{Aliased, AliasedMut, DeviceMdspan, DeviceMdspanMut, Dims, DlElement, LayoutLeft, LayoutRight, Mdspan};
use dlmd_example_kernels as examples;
use dlmd_test_kernels_other as other;
use dlmd_test_kernels_real as real;
use dlmd_tests::gpu;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

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

/// How often a foreign tensor's deleter ran, and on which threads.
#[derive(Default)]
struct Releases {
    count: AtomicUsize,
    threads: Mutex<Vec<ThreadId>>,
    changed: Condvar,
}

impl Releases {
    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// The threads the deleter ran on.
    fn threads(&self) -> Vec<ThreadId> {
        self.threads.lock().unwrap().clone()
    }

    /// Waits until the deleter ran `n` times, for at most `bound` (a bound on a wait that
    /// ends as soon as the deleter runs, not a sleep); whether it did.
    fn wait_for(&self, n: usize, bound: Duration) -> bool {
        let threads = self.threads.lock().unwrap();
        let (_threads, timeout) = self
            .changed
            .wait_timeout_while(threads, bound, |_| self.count() < n)
            .unwrap();
        !timeout.timed_out()
    }
}

/// A versioned managed tensor over device memory Rust allocated, as a foreign producer hands
/// one over: it owns the allocation (or borrows another tensor's), and its deleter counts the
/// releases.
#[repr(C)]
struct Foreign {
    managed: DLManagedTensorVersioned,
    shape: [i64; 3],
    strides: [i64; 3],
    memory: Option<CudaSlice<real::Real>>,
    released: Arc<Releases>,
}

unsafe extern "C" fn release_foreign(tensor: *mut DLManagedTensorVersioned) {
    // SAFETY: `tensor` is the first field of a boxed `Foreign` (`foreign`), released once.
    let owner = unsafe { Box::from_raw(tensor.cast::<Foreign>()) };
    owner.released.threads.lock().unwrap().push(std::thread::current().id());
    owner.released.count.fetch_add(1, Ordering::SeqCst);
    owner.released.changed.notify_all();
}

/// The DLPack stream value of `stream`, as its producer names it: each test makes its tensors
/// over memory allocated and written on the stream it names.
fn on(stream: &Arc<CudaStream>) -> WorkStream {
    // SAFETY: the stream the caller's memory was made ready on, alive for the test.
    unsafe { WorkStream::from_raw(stream.cu_stream() as usize) }
}

/// `memory` (or, without it, the host address `host`) as a 1-D tensor of `len` elements labelled
/// on CUDA device 0, handed to an `Imported` whose producer named `stream`.
fn foreign(
    memory: Option<CudaSlice<real::Real>>,
    host: usize,
    len: i64,
    stream: WorkStream,
) -> (Imported, Arc<Releases>) {
    foreign_shaped(memory, host, &[len], &[1], stream)
}

/// `memory` (or, without it, the address `data`, which another tensor keeps) as a tensor of
/// `shape` and `strides` (rank 1 to 3) labelled on CUDA device 0, handed to an `Imported` whose
/// producer named `stream`.
fn foreign_shaped(
    memory: Option<CudaSlice<real::Real>>,
    data: usize,
    shape: &[i64],
    strides: &[i64],
    stream: WorkStream,
) -> (Imported, Arc<Releases>) {
    let (tensor, released) = foreign_tensor(memory, data, shape, strides);
    // SAFETY: each caller passes the stream its memory was allocated and written on (which
    // outlives the tensor), or a tensor whose launches are refused before anything is queued.
    (unsafe { Imported::new(tensor, stream) }, released)
}

/// [`foreign_shaped`]'s tensor, as `python::from_dlpack` hands it over, before it is held for
/// kernels.
fn foreign_tensor(
    memory: Option<CudaSlice<real::Real>>,
    data: usize,
    shape: &[i64],
    strides: &[i64],
) -> (ManagedTensor, Arc<Releases>) {
    let released = Arc::new(Releases::default());
    let data = memory.as_ref().map_or(data, |m| m.device_ptr(m.stream()).0 as usize);
    let mut owner = Box::new(Foreign {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 3 },
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(release_foreign),
            flags: 0,
            dl_tensor: DLTensor {
                data: data as *mut core::ffi::c_void,
                device: DLDevice::cuda(0),
                ndim: shape.len() as i32,
                dtype: <real::Real as DlElement>::DTYPE,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: [0; 3],
        strides: [0; 3],
        memory,
        released: released.clone(),
    });
    owner.shape[..shape.len()].copy_from_slice(shape);
    owner.strides[..strides.len()].copy_from_slice(strides);
    owner.managed.dl_tensor.shape = owner.shape.as_mut_ptr();
    owner.managed.dl_tensor.strides = owner.strides.as_mut_ptr();
    let raw = Box::into_raw(owner).cast::<DLManagedTensorVersioned>();
    // SAFETY: a fresh tensor handed over, its arrays in the same box, its memory owned by it
    // (or by a tensor the caller keeps longer) until the deleter (which frees the box) runs
    // once.
    (unsafe { ManagedTensor::from_raw(raw) }.unwrap(), released)
}

/// 256 MiB, with 32 passes of `add_index` on one stream: milliseconds of work, queued in far
/// less, so that work on another stream not ordered after it would see values half written.
const R: usize = 8192;
const C: usize = 8192;
const PASSES: usize = 32;

/// The grid of `add_index` and `transpose` over `rows` × `cols` elements: a row of blocks of 256
/// threads, four elements a thread, per row.
fn rows_grid(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((cols / 4 / 256) as u32, rows as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `PASSES` launches of `add_index` over `x`, an R × C tensor imported as [1, R, C], on its
/// producer's stream.
fn add_index_passes(x: &Imported, kernels: &Kernels) {
    for _ in 0..PASSES {
        examples::add_index(
            x.launch(kernels, rows_grid(R, C)).unwrap(),
            x.arg::<DeviceMdspanMut<'_, f32, Dims<3>>>().unwrap(),
        )
        .unwrap();
    }
}

/// Reads the R × C tensor at `data` through an import of it for `reads`, transposed by a launch
/// there into new memory, and returns how many of its elements are not PASSES·(i + j), what
/// `PASSES` passes of `add_index` make of zeros.
fn read_transposed(reads: &Arc<CudaStream>, kernels: &Kernels, data: usize) -> usize {
    let (r, c) = (R as i64, C as i64);
    let (read, _) = foreign_shaped(None, data, &[r, c], &[c, 1], on(reads));
    let out = reads.alloc_zeros::<real::Real>(R * C).unwrap();
    let out_data = out.device_ptr(reads).0 as usize;
    let (transposed, _) = foreign_shaped(None, out_data, &[r, c], &[1, r], on(reads));
    examples::transpose(
        read.launch(kernels, rows_grid(R, C)).unwrap(),
        read.arg::<DeviceMdspan<'_, f32, Dims<2>>>().unwrap(),
        transposed
            .arg::<DeviceMdspanMut<'_, f32, Dims<2>, LayoutLeft>>()
            .unwrap(),
    )
    .unwrap();
    // `out` is column-major: element [i, j] at i + j·R.
    let back = reads.clone_dtoh(&out).unwrap();
    (0..R * C)
        .filter(|&at| back[at] != (PASSES * (at % R + at / R)) as f32)
        .count()
}

/// Whether `stream` still has work queued that is not done.
fn busy(stream: &CudaStream) -> bool {
    // SAFETY: a live stream of a live context.
    match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
        sys::CUresult::CUDA_SUCCESS => false,
        sys::CUresult::CUDA_ERROR_NOT_READY => true,
        e => panic!("cuStreamQuery: {e:?}"),
    }
}

#[test]
fn an_import_launches_on_its_producers_stream_and_is_released_once_when_done() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = 1 << 20;
    // The test keeps the memory, so that it can read it after the tensor is released.
    let memory = stream.clone_htod(&vec![1.5 as real::Real; n]).unwrap();
    let data = memory.device_ptr(&stream).0 as usize;
    let (x, released) = foreign(None, data, n as i64, on(&stream));
    let grid = LaunchConfig::for_num_elems(n as u32);
    real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    // The caller lets go at once; the launches hold the tensor until their kernels are done,
    // and then the releasing thread lets it go, with no further call from here.
    drop(x);
    stream.synchronize().unwrap();
    cuda::wait_released().unwrap();
    assert_eq!(released.count(), 1, "released once, after the kernels");
    assert!(
        !released.threads().contains(&std::thread::current().id()),
        "released by the releasing thread, not by a call of this one"
    );
    assert_eq!(cuda::release_completed().unwrap(), 0);
    let host = stream.clone_dtoh(&memory).unwrap();
    assert!(host.iter().all(|&v| v == 6.0), "{:?}", &host[..4]);
}

#[test]
fn a_hold_is_not_released_while_its_kernels_run() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    // 256 MiB, scaled 32 times: tens of milliseconds of kernels, queued in far less.
    let n = (256 << 20) / size_of::<real::Real>();
    let memory = stream.clone_htod(&vec![1.0 as real::Real; n]).unwrap();
    let (x, released) = foreign(Some(memory), 0, n as i64, on(&stream));
    let grid = LaunchConfig::for_num_elems((n / 4) as u32);
    for _ in 0..32 {
        real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    }
    drop(x);
    let count = released.count();
    // The stream still runs the kernels after the count was read: the count was read before
    // they were done, when the tensor must still be held.
    assert!(busy(&stream), "the kernels finished before the check; make them longer");
    assert_eq!(count, 0, "released while its kernels ran");
    stream.synchronize().unwrap();
    cuda::wait_released().unwrap();
    assert_eq!(released.count(), 1, "released once the kernels were done");
}

#[test]
fn imports_are_refused_on_another_stream_outside_their_memory_and_off_the_device() {
    let Some(ctx) = gpu() else { return };
    let (producer, other) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
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
    assert_eq!(released.count(), 1, "a refused launch holds nothing");

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

#[test]
fn a_captured_launch_holds_its_import_as_long_as_the_graph() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = 4096;
    let memory = stream.clone_htod(&vec![1.0 as real::Real; n]).unwrap();
    let (x, released) = foreign(Some(memory), 0, n as i64, on(&stream));
    let data = x.tensor().dl_tensor().data as u64;
    stream.synchronize().unwrap();
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    real::scale(
        x.launch(&kernels, LaunchConfig::for_num_elems(n as u32)).unwrap(),
        x.arg().unwrap(),
        2.0,
    )
    .unwrap();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("the capture recorded the launch");
    // The graph holds the tensor, whoever else lets go of it.
    drop(x);
    ctx.synchronize().unwrap();
    cuda::wait_released().unwrap();
    assert_eq!(released.count(), 0, "released after the capture");
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    stream.synchronize().unwrap();
    cuda::wait_released().unwrap();
    assert_eq!(released.count(), 0, "released after the replays");
    let mut host = vec![0.0 as real::Real; n];
    // SAFETY: the graph keeps the tensor, which owns `n` elements of device memory at `data`;
    // nothing is queued on it.
    unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut host, data) }.unwrap();
    assert!(
        host.iter().all(|&v| v == 8.0),
        "three replays of a doubling: {:?}",
        &host[..4]
    );
    // Once the graph is gone and its launches done, the driver hands the hold back.
    drop(graph);
    ctx.synchronize().unwrap();
    assert!(
        released.wait_for(1, Duration::from_secs(60)),
        "not released after the graph was destroyed"
    );
    assert_eq!(released.count(), 1, "released once");
}

#[test]
fn a_reader_on_another_stream_waits_for_a_writer_of_the_same_memory_imported_twice() {
    let Some(ctx) = gpu() else { return };
    let (writes, reads) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let (r, c) = (R as i64, C as i64);
    let memory = writes.alloc_zeros::<real::Real>(R * C).unwrap();
    let data = memory.device_ptr(&writes).0 as usize;
    // One buffer, imported twice: as the writer's [1, R, C] on one stream and the reader's
    // [R, C] on the other.
    let (written, _) = foreign_shaped(Some(memory), 0, &[1, r, c], &[r * c, c, 1], on(&writes));
    add_index_passes(&written, &kernels);
    // The reader's stream waits on the device for the writer's last launch.
    let wrong = read_transposed(&reads, &kernels, data);
    assert_eq!(
        wrong,
        0,
        "{wrong} of {} elements were read before they were written",
        R * C
    );
    writes.synchronize().unwrap();
    drop(written);
    cuda::wait_released().unwrap();
}

#[test]
fn a_reader_on_another_stream_waits_for_a_graph_replay_that_writes_the_import() {
    let Some(ctx) = gpu() else { return };
    let (writes, reads) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let (r, c) = (R as i64, C as i64);
    let memory = writes.alloc_zeros::<real::Real>(R * C).unwrap();
    writes.synchronize().unwrap();
    let data = memory.device_ptr(&writes).0 as usize;
    let (written, _) = foreign_shaped(Some(memory), 0, &[1, r, c], &[r * c, c, 1], on(&writes));
    writes
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    add_index_passes(&written, &kernels);
    let graph = writes
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("the capture recorded the launches");
    // A replay (cudarc's, not a launch of dlmd's), then the same memory read through another
    // import of it, for the reader's stream: the reader waits for the replay's last kernel.
    graph.launch().unwrap();
    let wrong = read_transposed(&reads, &kernels, data);
    writes.synchronize().unwrap();
    drop(graph);
    drop(written);
    assert_eq!(
        wrong,
        0,
        "{wrong} of {} elements read before the replay wrote them",
        R * C
    );
}

#[test]
fn a_copy_on_another_stream_waits_for_a_launch_that_writes_the_import_it_reads() {
    let Some(ctx) = gpu() else { return };
    let (writes, reads) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let (r, c) = (R as i64, C as i64);
    let memory = writes.alloc_zeros::<real::Real>(R * C).unwrap();
    let (x, _) = foreign_shaped(Some(memory), 0, &[1, r, c], &[r * c, c, 1], on(&writes));
    add_index_passes(&x, &kernels);
    // The import viewed (after the launches) and copied on the other stream, in safe code.
    let src: Mdspan<'_, f32, Dims<3>, LayoutRight, Device, Aliased> = x.tensor().view().unwrap();
    let mut out = reads.alloc_zeros::<f32>(R * C).unwrap();
    {
        let mut dst = device_view_mut::<f32, Dims<3>, LayoutRight>(&mut out, Dims::new([1, R, C])).unwrap();
        cuda::scope(|s| s.copy(&reads, &src, &mut dst)).unwrap();
    }
    let back = reads.clone_dtoh(&out).unwrap();
    let wrong = (0..R * C)
        .filter(|&at| back[at] != (PASSES * (at / C + at % C)) as f32)
        .count();
    writes.synchronize().unwrap();
    drop(x);
    cuda::wait_released().unwrap();
    assert_eq!(
        wrong,
        0,
        "{wrong} of {} elements copied before the launches wrote them",
        R * C
    );
}

#[test]
fn a_launch_over_an_import_waits_for_a_copy_in_flight_that_writes_it() {
    let Some(ctx) = gpu() else { return };
    let (producer, copies) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let real_kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = R * C;
    let memory = producer.alloc_zeros::<real::Real>(n).unwrap();
    producer.synchronize().unwrap();
    let data = memory.device_ptr(&producer).0 as usize;
    let ones = copies.clone_htod(&vec![1.0 as real::Real; n]).unwrap();
    // One tensor imported twice: written by a copy, and launched over.
    let (mut target, _) = foreign_tensor(None, data, &[n as i64], &[1]);
    let (x, _) = foreign_shaped(None, data, &[n as i64], &[1], on(&producer));
    let src = device_view::<real::Real, Dims<1>, LayoutRight>(&ones, Dims::new([n])).unwrap();
    // Work on other memory keeps `copies` busy, so that the copy starts late.
    let mut busy: Vec<CudaSlice<f32>> = (0..8).map(|_| copies.alloc_zeros::<f32>(n).unwrap()).collect();
    let mut busy_views: Vec<DeviceMdspanMut<'_, f32, Dims<3>>> = busy
        .iter_mut()
        .map(|b| device_view_mut::<f32, Dims<3>, LayoutRight>(b, Dims::new([1, R, C])).unwrap())
        .collect();
    let mut dst: Mdspan<'_, real::Real, Dims<1>, LayoutRight, Device, AliasedMut> = target.view_mut().unwrap();
    cuda::scope(|s| {
        for view in busy_views.iter_mut() {
            examples::add_index(s.launch(&copies, &kernels, rows_grid(R, C)), view.as_view_mut())?;
        }
        s.copy(&copies, &src, &mut dst)?;
        // On the producer's stream, after the copy (which writes the same bytes): it doubles
        // the ones.
        real::scale(
            x.launch(&real_kernels, LaunchConfig::for_num_elems((n / 4) as u32))?,
            x.arg()?,
            2.0,
        )
    })
    .unwrap();
    ctx.synchronize().unwrap();
    let back = producer.clone_dtoh(&memory).unwrap();
    let wrong = back.iter().filter(|&&v| v != 2.0).count();
    drop(x);
    cuda::wait_released().unwrap();
    assert_eq!(
        wrong, 0,
        "{wrong} of {n} elements: the launch ran before the copy that writes them"
    );
}

#[test]
fn a_copy_on_another_stream_waits_for_scoped_kernels_that_add_into_the_atomic_view_it_reads() {
    let Some(ctx) = gpu() else { return };
    let (adds, reads) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let ones = adds.clone_htod(&vec![1.0f32; R * C]).unwrap();
    // The sums are `reads`' memory: the copy on `reads` is ordered after their owner's work
    // already, and only the launches' own filing orders it after the kernels on `adds`.
    let mut sums = reads.alloc_zeros::<f32>(R).unwrap();
    let mut out = reads.alloc_zeros::<f32>(R).unwrap();
    ctx.synchronize().unwrap();
    {
        let x = device_view::<f32, Dims<2>, LayoutRight>(&ones, Dims::new([R, C])).unwrap();
        let atomic = device_view_mut::<f32, Dims<1>, LayoutRight>(&mut sums, Dims::new([R]))
            .unwrap()
            .into_atomic();
        let mut dst = device_view_mut::<f32, Dims<1>, LayoutRight>(&mut out, Dims::new([R])).unwrap();
        // A row of 16 × 16 threads a block, 16 rows a block.
        let grid = LaunchConfig {
            grid_dim: (1, (R / 16) as u32, 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        cuda::scope(|s| {
            // 2 GiB read on `adds`: the sums are final after the last pass.
            for _ in 0..PASSES / 4 {
                examples::row_sums(s.launch(&adds, &kernels, grid), x, atomic)?;
            }
            // The same atomic view (`Copy`) as a copy's source, on the other stream.
            s.copy(&reads, &atomic, &mut dst)
        })
        .unwrap();
    }
    let back = reads.clone_dtoh(&out).unwrap();
    let expected = (PASSES / 4 * C) as f32;
    let wrong = back.iter().filter(|&&v| v != expected).count();
    assert_eq!(
        wrong, 0,
        "{wrong} of {R} sums copied before the kernels that add into them were done"
    );
}

#[test]
fn a_scope_does_not_return_before_its_kernels_are_done() {
    let Some(ctx) = gpu() else { return };
    let work = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    // 1 GiB: a millisecond or more of `add_index`.
    const N: usize = 16384;
    let mut buf = work.alloc_zeros::<f32>(N * N).unwrap();
    work.synchronize().unwrap();
    let result = {
        let mut view = device_view_mut::<f32, Dims<3>, LayoutRight>(&mut buf, Dims::new([1, N, N])).unwrap();
        cuda::scope(|s| {
            examples::add_index(s.launch(&work, &kernels, rows_grid(N, N)), view.as_view_mut())?;
            // The stream cannot be synchronized from here on; the event after the kernel can be
            // waited for.
            work.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)?;
            Ok::<_, CudaError>(())
        })
    };
    // The borrow of `buf` has ended: safe code may free or reuse it.
    let _ = work.end_capture(sys::CUgraphInstantiate_flags(0));
    let still_running = busy(&work);
    work.synchronize().unwrap();
    drop(buf);
    assert!(
        !still_running,
        "the scope returned ({result:?}) while the kernel it lent `buf` to still ran"
    );
    result.unwrap();
}

#[test]
fn work_is_not_queued_in_a_scope_on_a_stream_that_is_capturing() {
    let Some(ctx) = gpu() else { return };
    let stream = ctx.new_stream().unwrap();
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let mut x = stream.alloc_zeros::<real::Real>(1024).unwrap();
    let mut y = stream.alloc_zeros::<real::Real>(1024).unwrap();
    let z = stream.alloc_zeros::<real::Real>(1024).unwrap();
    stream.synchronize().unwrap();
    let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(&mut x, Dims::new([1024])).unwrap();
    let src = device_view::<_, Dims<1>, LayoutRight>(&z, Dims::new([1024])).unwrap();
    let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(&mut y, Dims::new([1024])).unwrap();
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let (launched, copied) = cuda::scope(|s| {
        let launched = real::scale(
            s.launch(&stream, &kernels, LaunchConfig::for_num_elems(256)),
            view.as_view_mut(),
            2.0,
        );
        let copied = s.copy(&stream, &src, &mut dst);
        Ok::<_, CudaError>((launched, copied))
    })
    .unwrap();
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0));
    for (what, result) in [("scale", launched), ("copy", copied)] {
        assert!(
            matches!(result, Err(CudaError::ScopeCapture { operation, .. }) if operation == what),
            "{what}: {result:?}"
        );
    }
    drop(graph);
}

#[test]
fn an_import_on_the_per_thread_stream_is_refused_on_another_thread() {
    let Some(ctx) = gpu() else { return };
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = 1 << 20;
    let mine = ctx.per_thread_stream();
    let memory = mine.clone_htod(&vec![1.0 as real::Real; n]).unwrap();
    let data = memory.device_ptr(&mine).0 as usize;
    // The producer names stream 2: its data is ready on this thread's per-thread stream.
    // SAFETY: the copy above was queued on this thread's per-thread stream, which stream 2 names
    // here, and `memory` outlives every launch (synchronized below).
    let per_thread = unsafe { WorkStream::from_raw(2) };
    let (x, _) = foreign_shaped(None, data, &[n as i64], &[1], per_thread);
    let grid = LaunchConfig::for_num_elems((n / 4) as u32);
    // Moved to another thread (an `Imported` is `Send`), where stream 2 is another stream.
    let x = std::thread::scope(|s| {
        s.spawn(|| {
            ctx.bind_to_thread().unwrap();
            let refused = real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0);
            assert!(
                matches!(
                    refused,
                    Err(CudaError::Launch(dlmd::cuda::LaunchError::PerThreadStream {
                        kernel: "scale"
                    }))
                ),
                "{refused:?}"
            );
            x
        })
        .join()
        .unwrap()
    });
    // On the importing thread it runs, after the producer's copy.
    real::scale(x.launch(&kernels, grid).unwrap(), x.arg().unwrap(), 2.0).unwrap();
    let back = mine.clone_dtoh(&memory).unwrap();
    assert!(back.iter().all(|&v| v == 2.0), "{:?}", &back[..4]);
    drop(x);
    cuda::wait_released().unwrap();
}

#[test]
fn a_launch_on_one_threads_per_thread_stream_waits_for_work_queued_on_anothers() {
    let Some(ctx) = gpu() else { return };
    let kernels = Kernels::load(&ctx, real::PTX).unwrap();
    let n = (256 << 20) / size_of::<real::Real>();
    let mine = ctx.per_thread_stream();
    let values: Vec<real::Real> = (0..n).map(|i| (i % 1000) as real::Real).collect();
    let src = mine.clone_htod(&values).unwrap();
    let mut x = mine.alloc_zeros::<real::Real>(n).unwrap();
    mine.synchronize().unwrap();
    // Milliseconds of copies into `x`, queued on this thread's per-thread stream.
    for _ in 0..32 {
        mine.memcpy_dtod(&src, &mut x).unwrap();
    }
    // Viewed here, launched on another thread's per-thread stream: no `unsafe` anywhere.
    let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(&mut x, Dims::new([n])).unwrap();
    std::thread::scope(|s| {
        s.spawn(move || {
            let theirs = ctx.per_thread_stream();
            let grid = LaunchConfig::for_num_elems((n / 4) as u32);
            cuda::scope(|sc| real::scale(sc.launch(&theirs, &kernels, grid), view.as_view_mut(), 2.0)).unwrap();
        });
    });
    mine.synchronize().unwrap();
    let back = mine.clone_dtoh(&x).unwrap();
    let wrong = back
        .iter()
        .enumerate()
        .filter(|&(i, &v)| v != 2.0 * (i % 1000) as real::Real)
        .count();
    assert_eq!(
        wrong, 0,
        "{wrong} of {n} elements: the launch ran before the copies it follows"
    );
}

#[test]
fn a_reader_on_a_new_stream_waits_for_a_writer_whose_stream_was_destroyed_with_work_queued() {
    let Some(ctx) = gpu() else { return };
    let kernels = Kernels::load(&ctx, examples::PTX).unwrap();
    let (r, c) = (R as i64, C as i64);
    let alloc = ctx.new_stream().unwrap();
    let memory = alloc.alloc_zeros::<real::Real>(R * C).unwrap();
    let data = memory.device_ptr(&alloc).0 as usize;
    alloc.synchronize().unwrap();
    let writes = ctx.new_stream().unwrap();
    let handle = writes.cu_stream() as usize;
    let (written, _) = foreign_shaped(None, data, &[1, r, c], &[r * c, c, 1], on(&writes));
    add_index_passes(&written, &kernels);
    // The writer's stream is destroyed with its passes still queued (the driver runs them), and
    // new streams are made until one reuses its handle, where the driver does that: a handle
    // never tells the new stream from the destroyed one.
    drop(writes);
    let mut made = Vec::new();
    let reads = loop {
        let s = ctx.new_stream().unwrap();
        if s.cu_stream() as usize == handle || made.len() == 15 {
            break s;
        }
        made.push(s);
    };
    let wrong = read_transposed(&reads, &kernels, data);
    assert_eq!(
        wrong,
        0,
        "{wrong} of {} elements were read before they were written (handle reused: {})",
        R * C,
        reads.cu_stream() as usize == handle
    );
    ctx.synchronize().unwrap();
    drop((written, memory));
    cuda::wait_released().unwrap();
}
