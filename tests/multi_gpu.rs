//! Multi-GPU tests: device ordinals, peer copies and NCCL collectives on two real devices.
//!
//! With fewer than two GPUs (or no NCCL) each test prints one line saying it was skipped and
//! passes; with `DLMD_REQUIRE_GPU=1` that fails instead.

// Rank-indexed buffers read best as `x[r]`.
#![allow(clippy::needless_range_loop)]

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use dlmd::cuda::{self, CudaError, CudaImport, MirroredArray, device_view, device_view_mut};
use dlmd::dlpack::{DLDevice, DLTensor};
use dlmd::nccl::{self, Communicator, NcclElement, NcclError, ReduceOp, UniqueId, group};
use dlmd::{Device, DeviceMdspanMut, Dims, DlElement, F8E4M3FN, LayoutLeft, LayoutRight, Mdspan};
use half::bf16;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

fn required() -> bool {
    std::env::var("DLMD_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

fn skip(why: String) {
    if required() {
        panic!("DLMD_REQUIRE_GPU=1 but {why}");
    }
    // Straight to stderr, past the test harness's capture, so the skip is seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED ({why})");
}

/// The first two devices, or `None` after printing why the test is skipped.
fn two_gpus() -> Option<[Arc<CudaContext>; 2]> {
    let first = match cuda::context(0) {
        Ok(ctx) => ctx,
        Err(e @ (CudaError::NoDriver | CudaError::Driver(_))) => {
            skip(format!("no GPU: {e}"));
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let count = CudaContext::device_count().expect("the driver counts its devices");
    if count < 2 {
        skip(format!("needs 2 GPUs, this machine has {count}"));
        return None;
    }
    Some([first, cuda::context(1).expect("device 1 exists")])
}

/// The two devices' default streams and NCCL, or `None` after printing why the test is skipped.
fn two_gpus_and_nccl() -> Option<[Arc<CudaStream>; 2]> {
    let [a, b] = two_gpus()?;
    if !nccl::available() {
        skip(format!("{}", NcclError::NoLibrary));
        return None;
    }
    Some([a.new_stream().unwrap(), b.new_stream().unwrap()])
}

fn tensor_of(ptr: u64, device: DLDevice, shape: &mut [i64; 1], dtype: dlmd::dlpack::DLDataType) -> DLTensor {
    DLTensor {
        data: ptr as *mut core::ffi::c_void,
        device,
        ndim: 1,
        dtype,
        shape: shape.as_mut_ptr(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    }
}

#[test]
fn imports_check_the_device_of_the_pointer() {
    let Some([_, gpu1]) = two_gpus() else { return };
    let stream = gpu1.default_stream();
    let data = stream.clone_htod(&[1.5f32; 8]).unwrap();
    let view = device_view::<_, Dims<1>, LayoutRight>(&data, Dims::new([8])).unwrap();
    assert_eq!(
        view.space().ordinal(),
        1,
        "a view of device 1's memory knows its device"
    );
    assert_eq!(view.context().unwrap().ordinal(), 1);
    let ptr = view.data_handle() as u64;
    let mut shape = [8i64];
    // Labelled with the right device: imported, on that device.
    let t = tensor_of(ptr, DLDevice::cuda(1), &mut shape, f32::DTYPE);
    // SAFETY: the tensor describes `data`, alive for the import.
    match unsafe { cuda::import_cuda::<f32, 1, LayoutRight>(&t) }.unwrap() {
        CudaImport::Device(v) => assert_eq!(v.space().ordinal(), 1),
        CudaImport::Managed(_) => panic!("device memory imported as managed"),
    }
    // Labelled with the other device: refused, naming both.
    let t = tensor_of(ptr, DLDevice::cuda(0), &mut shape, f32::DTYPE);
    // SAFETY: as above.
    let e = unsafe { cuda::import_cuda::<f32, 1, LayoutRight>(&t) }.unwrap_err();
    assert!(matches!(e, CudaError::WrongDevice { labelled: 0, actual: 1 }), "{e}");
}

#[test]
fn managed_memory_keeps_its_ordinal() {
    let Some([_, gpu1]) = two_gpus() else { return };
    // SAFETY: the memory is written before it is read.
    let mut managed = unsafe { gpu1.alloc_unified::<f32>(4, true) }.unwrap();
    managed.as_mut_slice().unwrap().fill(2.0);
    let view = cuda::managed_view::<_, Dims<1>, LayoutRight>(&managed, Dims::new([4])).unwrap();
    assert_eq!(view.space().ordinal(), 1);
    use dlmd::space::MemorySpace;
    assert_eq!(view.space().device().device_id, 1);
}

#[test]
fn mirrored_arrays_on_device_1() {
    let Some([_, gpu1]) = two_gpus() else { return };
    let stream = gpu1.default_stream();
    let mut array = MirroredArray::<f32, Dims<2>, LayoutRight>::zeros(&stream, Dims::new([3, 5])).unwrap();
    array
        .host_mut()
        .unwrap()
        .for_each_mut(|[i, j], x| *x = (i * 10 + j) as f32);
    array.to_device().unwrap();
    assert_eq!(array.device().unwrap().space().ordinal(), 1);
    // Copy device 1's array to device 0 and back into a fresh array: the values survive.
    let s0 = cuda::context(0).unwrap().default_stream();
    let mut on0 = s0.alloc_zeros::<f32>(15).unwrap();
    let mut back = MirroredArray::<f32, Dims<2>, LayoutRight>::zeros(&stream, Dims::new([3, 5])).unwrap();
    back.to_device().unwrap();
    {
        let src = array.device().unwrap();
        let mut mid = device_view_mut::<_, Dims<2>, LayoutRight>(&mut on0, Dims::new([3, 5])).unwrap();
        let mut dst = back.device_mut().unwrap();
        cuda::scope(|s| {
            s.copy(&stream, &src, &mut mid)?;
            s.copy(&stream, &mid, &mut dst)
        })
        .unwrap();
    }
    back.to_host().unwrap();
    let host = back.host().unwrap();
    assert_eq!(host[[2, 4]], 24.0);
    assert_eq!(host[[1, 3]], 13.0);
}

#[test]
fn peer_copies_between_devices() {
    let Some([gpu0, gpu1]) = two_gpus() else { return };
    let (s0, s1) = (gpu0.default_stream(), gpu1.default_stream());
    let values: Vec<f64> = (0..6 * 7).map(|i| i as f64 * 0.5).collect();
    let a = s0.clone_htod(&values).unwrap();
    let mut b: CudaSlice<f64> = s1.alloc_zeros(values.len()).unwrap();
    {
        let src = device_view::<_, Dims<2>, LayoutLeft>(&a, Dims::new([6, 7])).unwrap();
        let mut dst = device_view_mut::<_, Dims<2>, LayoutLeft>(&mut b, Dims::new([6, 7])).unwrap();
        // On device 1's stream, then on device 0's: either device's stream may run the copy.
        cuda::scope(|s| s.copy(&s1, &src, &mut dst)).unwrap();
        cuda::scope(|s| s.copy(&s0, &src, &mut dst)).unwrap();
        // Other extents: a named error before anything is queued.
        let mut wrong = device_view_mut::<_, Dims<2>, LayoutLeft>(&mut b, Dims::new([7, 6])).unwrap();
        let e = cuda::scope(|s| s.copy(&s1, &src, &mut wrong)).unwrap_err();
        assert!(
            matches!(&e, CudaError::CopyExtents { src, dst } if src == &[6, 7] && dst == &[7, 6]),
            "{e}"
        );
    }
    assert_eq!(s1.clone_dtoh(&b).unwrap(), values);
    // cudarc allocates from each device's stream-ordered pool: the copy gave the other device
    // access to it, so the copy engines move the bytes directly.
    let (pa, _) = a.device_ptr(&s0);
    assert_eq!(
        pool_access(pa, 1),
        cudarc::driver::sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    );
}

/// How device `device` may access the memory pool `ptr` came from.
fn pool_access(ptr: u64, device: i32) -> cudarc::driver::sys::CUmemAccess_flags {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = core::ptr::null_mut();
    // SAFETY: writes one pool handle through a valid pointer; `ptr` is only looked up.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut pool as *mut sys::CUmemoryPool).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            ptr,
        )
    }
    .result()
    .unwrap();
    assert!(!pool.is_null(), "cudarc allocates from a memory pool");
    let mut location = dlmd::cuda::device_location(device);
    let mut flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
    // SAFETY: a live pool; both pointers are valid for one value each.
    unsafe { sys::cuMemPoolGetAccess(&mut flags, pool, &mut location) }
        .result()
        .unwrap();
    flags
}

#[test]
fn a_panic_inside_a_scope_still_waits() {
    let Some([gpu0, gpu1]) = two_gpus() else { return };
    let (s0, s1) = (gpu0.default_stream(), gpu1.default_stream());
    let a = s0.clone_htod(&vec![3u8; 1 << 20]).unwrap();
    let mut b = s1.alloc_zeros::<u8>(1 << 20).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let src = device_view::<_, Dims<1>, LayoutRight>(&a, Dims::new([1 << 20])).unwrap();
        let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([1 << 20])).unwrap();
        let _: Result<(), CudaError> = cuda::scope(|s| {
            s.copy(&s1, &src, &mut dst)?;
            panic!("after queueing");
        });
    }));
    assert!(caught.is_err());
    // The copy finished before the panic left the scope; the stream is idle.
    assert!(s1.clone_dtoh(&b).unwrap().iter().all(|&x| x == 3));
}

/// Rank `r`'s values: `r + 1 + i % 7`, as `T`.
fn values<T: From<u8>>(rank: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| T::from((rank + 1 + i % 7) as u8)).collect()
}

/// The bytes of `values`.
fn bytes_of<T: Copy>(values: &[T]) -> Vec<u8> {
    // SAFETY: the element types used here (integers, floats, FP8, arrays of them) have no
    // padding, so every byte of the slice is initialised.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }.to_vec()
}

/// A row-major `[n / 4, 4]` view of `T`s over a byte buffer on device `ordinal`.
fn view_of<T: DlElement>(bytes: &mut CudaSlice<u8>, ordinal: i32, n: usize) -> DeviceMdspanMut<'_, T, Dims<2>> {
    assert_eq!(bytes.len(), n * size_of::<T>());
    let stream = bytes.stream().clone();
    let (ptr, _) = bytes.device_ptr_mut(&stream);
    let mapping = <LayoutRight as dlmd::layout::CompactLayout>::mapping(Dims::new([n / 4, 4])).unwrap();
    // SAFETY: the allocation holds `n` elements of `T` (checked above) on device `ordinal`, and
    // is borrowed exclusively for the view's lifetime; device memory is never read on the host.
    unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, mapping, Device::new(ordinal)) }
}

/// One all_reduce over both devices from one thread, grouped, for element type `T`.
fn all_reduce_one_process<T: NcclElement>(
    streams: &[Arc<CudaStream>; 2],
    comms: &[Communicator],
    n: usize,
    to: impl Fn(f32) -> T,
) {
    let mut send: Vec<CudaSlice<u8>> = (0..2)
        .map(|r| {
            let v: Vec<T> = values::<f32>(r, n).into_iter().map(&to).collect();
            streams[r].clone_htod(&bytes_of(&v)).unwrap()
        })
        .collect();
    let mut recv: Vec<CudaSlice<u8>> = (0..2)
        .map(|r| streams[r].alloc_zeros(n * size_of::<T>()).unwrap())
        .collect();
    {
        let views: Vec<_> = send.iter_mut().zip(0..).map(|(s, r)| view_of::<T>(s, r, n)).collect();
        let mut outs: Vec<_> = recv.iter_mut().zip(0..).map(|(s, r)| view_of::<T>(s, r, n)).collect();
        cuda::scope(|s| {
            group(|| {
                for ((comm, v), o) in comms.iter().zip(&views).zip(outs.iter_mut()) {
                    comm.all_reduce(s, v, o, ReduceOp::Sum)?;
                }
                Ok(())
            })
        })
        .unwrap();
    }
    let want: Vec<T> = (0..n).map(|i| to((1 + 2 + 2 * (i % 7)) as f32)).collect();
    for r in 0..2 {
        assert_eq!(
            streams[r].clone_dtoh(&recv[r]).unwrap(),
            bytes_of(&want),
            "rank {r}, {}",
            T::DATA_TYPE.name()
        );
    }
}

#[test]
fn all_reduce_from_one_process_of_every_kind_of_element() {
    let Some(streams) = two_gpus_and_nccl() else { return };
    let comms = Communicator::for_devices(&streams).unwrap();
    assert_eq!(
        (comms[1].rank(), comms[1].world_size(), comms[1].device().ordinal()),
        (1, 2, 1)
    );
    all_reduce_one_process::<f32>(&streams, &comms, 4096, |x| x);
    all_reduce_one_process::<f64>(&streams, &comms, 64, f64::from);
    all_reduce_one_process::<i32>(&streams, &comms, 64, |x| x as i32);
    all_reduce_one_process::<u8>(&streams, &comms, 64, |x| x as u8);
    all_reduce_one_process::<i64>(&streams, &comms, 64, |x| x as i64);
    all_reduce_one_process::<half::f16>(&streams, &comms, 64, half::f16::from_f32);
    all_reduce_one_process::<bf16>(&streams, &comms, 64, bf16::from_f32);
    all_reduce_one_process::<[f32; 4]>(&streams, &comms, 64, |x| [x, 2.0 * x, -x, 0.5 * x]);
    if nccl::version().unwrap() >= 22400 {
        // Small integers are exact in E4M3.
        all_reduce_one_process::<F8E4M3FN>(&streams, &comms, 64, F8E4M3FN::from_f32);
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "FP8 not checked: NCCL {} is older than 2.24",
            nccl::version().unwrap()
        );
    }
}

#[test]
fn every_collective_over_two_devices() {
    let Some(streams) = two_gpus_and_nccl() else { return };
    let comms = Communicator::for_devices(&streams).unwrap();
    let n = 6;
    let inputs: Vec<CudaSlice<f32>> = (0..2)
        .map(|r| streams[r].clone_htod(&values::<f32>(r, n)).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..2).map(|r| streams[r].alloc_zeros(2 * n).unwrap()).collect();
    let read = |r: usize, s: &CudaSlice<f32>| streams[r].clone_dtoh(s).unwrap();

    // all_gather: rank order, a leading extent of the world size.
    {
        let ins: Vec<_> = inputs
            .iter()
            .map(|s| device_view::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        let mut gathered: Vec<_> = outs
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<2>, LayoutRight>(s, Dims::new([2, n])).unwrap())
            .collect();
        cuda::scope(|s| {
            group(|| {
                for ((c, i), o) in comms.iter().zip(&ins).zip(gathered.iter_mut()) {
                    c.all_gather(s, i, o)?;
                }
                Ok(())
            })
        })
        .unwrap();
    }
    let want: Vec<f32> = [values::<f32>(0, n), values::<f32>(1, n)].concat();
    assert_eq!(read(0, &outs[0]), want);
    assert_eq!(read(1, &outs[1]), want);

    // reduce_scatter of the gathered data: rank r gets the sum of part r over both ranks.
    let mut parts: Vec<CudaSlice<f32>> = (0..2).map(|r| streams[r].alloc_zeros(n).unwrap()).collect();
    {
        let ins: Vec<_> = outs
            .iter()
            .map(|s| device_view::<_, Dims<1>, LayoutRight>(s, Dims::new([2 * n])).unwrap())
            .collect();
        let mut ps: Vec<_> = parts
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        cuda::scope(|s| {
            group(|| {
                for ((c, i), o) in comms.iter().zip(&ins).zip(ps.iter_mut()) {
                    c.reduce_scatter(s, i, o, ReduceOp::Sum)?;
                }
                Ok(())
            })
        })
        .unwrap();
    }
    for r in 0..2 {
        let want: Vec<f32> = values::<f32>(r, n).iter().map(|x| 2.0 * x).collect();
        assert_eq!(read(r, &parts[r]), want, "reduce_scatter part {r}");
    }

    // reduce to rank 1 (max), broadcast from rank 0, send/recv 0 → 1.
    let mut targets: Vec<CudaSlice<f32>> = (0..2).map(|r| streams[r].alloc_zeros(n).unwrap()).collect();
    {
        let ins: Vec<_> = inputs
            .iter()
            .map(|s| device_view::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        let mut ts: Vec<_> = targets
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        cuda::scope(|s| {
            group(|| {
                for ((c, i), t) in comms.iter().zip(&ins).zip(ts.iter_mut()) {
                    c.reduce(s, i, t, ReduceOp::Max, 1)?;
                }
                Ok(())
            })
        })
        .unwrap();
    }
    assert_eq!(read(1, &targets[1]), values::<f32>(1, n), "max lands on the root");
    assert_eq!(
        read(0, &targets[0]),
        vec![0.0; n],
        "the other rank's output is untouched"
    );
    {
        let mut ps: Vec<_> = parts
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        cuda::scope(|s| {
            group(|| {
                for (c, p) in comms.iter().zip(ps.iter_mut()) {
                    c.broadcast_in_place(s, p, 0)?;
                }
                Ok(())
            })
        })
        .unwrap();
        let (first, rest) = ps.split_at_mut(1);
        cuda::scope(|s| {
            group(|| {
                comms[0].send(s, &first[0], 1)?;
                comms[1].recv(s, &mut rest[0], 0)
            })
        })
        .unwrap();
    }
    let doubled: Vec<f32> = values::<f32>(0, n).iter().map(|x| 2.0 * x).collect();
    assert_eq!(read(0, &parts[0]), doubled);
    assert_eq!(read(1, &parts[1]), doubled);
}

#[test]
fn extents_devices_and_ranks_are_checked_before_nccl_runs() {
    let Some(streams) = two_gpus_and_nccl() else { return };
    let comms = Communicator::for_devices(&streams).unwrap();
    let a = streams[0].alloc_zeros::<f32>(12).unwrap();
    let mut b = streams[0].alloc_zeros::<f32>(12).unwrap();
    let on1 = streams[1].alloc_zeros::<f32>(12).unwrap();
    let src = device_view::<_, Dims<1>, LayoutRight>(&a, Dims::new([6])).unwrap();
    let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([6])).unwrap();
    let other = device_view::<_, Dims<1>, LayoutRight>(&on1, Dims::new([6])).unwrap();
    let e = cuda::scope(|s| comms[0].all_gather(s, &src, &mut dst)).unwrap_err();
    assert!(
        matches!(
            e,
            NcclError::AllGatherExtents {
                send: 6,
                recv: 6,
                world: 2
            }
        ),
        "{e}"
    );
    let e = cuda::scope(|s| comms[0].reduce_scatter(s, &src, &mut dst, ReduceOp::Sum)).unwrap_err();
    assert!(matches!(e, NcclError::ReduceScatterExtents { .. }), "{e}");
    let e = cuda::scope(|s| comms[0].all_reduce(s, &other, &mut dst, ReduceOp::Sum)).unwrap_err();
    assert!(
        matches!(
            e,
            NcclError::WrongDevice {
                view: 1,
                communicator: 0,
                ..
            }
        ),
        "{e}"
    );
    let e = cuda::scope(|s| comms[0].broadcast_in_place(s, &mut dst, 2)).unwrap_err();
    assert!(matches!(e, NcclError::Rank { rank: 2, world: 2, .. }), "{e}");
    let mut twelve = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([12])).unwrap();
    let e = cuda::scope(|s| comms[0].all_reduce(s, &src, &mut twelve, ReduceOp::Sum)).unwrap_err();
    assert!(matches!(e, NcclError::SameExtents { .. }), "{e}");
}

#[test]
fn one_rank_per_thread_joined_through_a_file() {
    let Some(_) = two_gpus_and_nccl() else { return };
    let dir = std::env::temp_dir().join(format!("dlmd-nccl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("unique-id");
    let _ = std::fs::remove_file(&path);
    let results: Vec<Vec<i64>> = std::thread::scope(|t| {
        let handles: Vec<_> = (0..2)
            .map(|rank| {
                let path = path.clone();
                t.spawn(move || {
                    let stream = cuda::context(rank).unwrap().new_stream().unwrap();
                    let id = UniqueId::exchange_file(&path, rank, Duration::from_secs(60)).unwrap();
                    let comm = Communicator::init_rank(stream.clone(), &id, rank, 2).unwrap();
                    let mut data = stream.clone_htod(&[rank as i64 + 1; 5]).unwrap();
                    {
                        let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(&mut data, Dims::new([5])).unwrap();
                        cuda::scope(|s| comm.all_reduce_in_place(s, &mut view, ReduceOp::Prod)).unwrap();
                    }
                    stream.clone_dtoh(&data).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, vec![vec![2i64; 5], vec![2i64; 5]]);
    let _ = std::fs::remove_dir_all(&dir);
}
