//! Multi-GPU tests: device ordinals, peer copies and NCCL collectives on every device of the
//! machine (N ≥ 2: every device, every pair, every rank).
//!
//! With fewer than two GPUs (or no NCCL) each test prints one line saying it was skipped and
//! passes; with `DLMD_REQUIRE_GPU=1` that fails instead.

// Rank-indexed buffers read best as `x[r]`.
#![allow(clippy::needless_range_loop)]

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use dlmd::cuda::{self, CudaError, MirroredArray, Placed, device_view, device_view_mut};
use dlmd::dlpack::{DLDevice, DLTensor};
use dlmd::nccl::{self, Communicator, NcclElement, NcclError, ReduceOp, Rendezvous, UniqueId, group};
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
    dlmd_tests::skipped(format_args!("{why}"));
}

/// Every device of the machine, or `None` after printing why the test is skipped.
fn gpus() -> Option<Vec<Arc<CudaContext>>> {
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
    let rest = (1..count as usize).map(|d| cuda::context(d).expect("every counted device exists"));
    Some(std::iter::once(first).chain(rest).collect())
}

/// A new stream on every device, with NCCL, or `None` after printing why the test is skipped.
fn gpus_and_nccl() -> Option<Vec<Arc<CudaStream>>> {
    let gpus = gpus()?;
    if !nccl::available() {
        skip(format!("{}", NcclError::NoLibrary));
        return None;
    }
    Some(gpus.iter().map(|g| g.new_stream().unwrap()).collect())
}

/// Every ordered pair of distinct devices among `n`.
fn pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
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
    let Some(gpus) = gpus() else { return };
    let n = gpus.len();
    for (d, gpu) in gpus.iter().enumerate() {
        let stream = gpu.default_stream();
        let data = stream.clone_htod(&[1.5f32; 8]).unwrap();
        let view = device_view::<_, Dims<1>, LayoutRight>(&data, Dims::new([8])).unwrap();
        assert_eq!(view.space().ordinal(), d as i32, "a view knows its memory's device");
        assert_eq!(view.context().unwrap().ordinal(), d);
        let ptr = view.data_handle() as u64;
        let mut shape = [8i64];
        // Labelled with the right device: imported, on that device.
        let t = tensor_of(ptr, DLDevice::cuda(d as i32), &mut shape, f32::DTYPE);
        // SAFETY: the tensor describes `data`, alive for the import.
        match unsafe { cuda::place::<f32, 1, LayoutRight>(&t) }.unwrap() {
            Placed::Device(v) => assert_eq!(v.space().ordinal(), d as i32),
            Placed::Managed(_) => panic!("device memory imported as managed"),
        }
        // Labelled with any other device: refused, naming both.
        for other in (0..n).filter(|&o| o != d) {
            let t = tensor_of(ptr, DLDevice::cuda(other as i32), &mut shape, f32::DTYPE);
            // SAFETY: as above.
            let e = unsafe { cuda::place::<f32, 1, LayoutRight>(&t) }.unwrap_err();
            assert!(
                matches!(e, CudaError::Placement(dlmd::cuda::PlacementError::WrongDevice { labelled, actual }) if labelled == other as i32 && actual == d as i32),
                "{e}"
            );
        }
    }
}

#[test]
fn managed_memory_keeps_its_ordinal() {
    let Some(gpus) = gpus() else { return };
    for (d, gpu) in gpus.iter().enumerate() {
        // SAFETY: the memory is written before it is read.
        let mut managed = unsafe { gpu.alloc_unified::<f32>(4, true) }.unwrap();
        managed.as_mut_slice().unwrap().fill(2.0);
        let view = cuda::managed_view::<_, Dims<1>, LayoutRight>(&managed, Dims::new([4])).unwrap();
        assert_eq!(view.space().ordinal(), d as i32);
        use dlmd::space::MemorySpace;
        assert_eq!(view.space().device().device_id, d as i32);
    }
}

#[test]
fn mirrored_arrays_on_every_device() {
    let Some(gpus) = gpus() else { return };
    let n = gpus.len();
    for d in 0..n {
        let stream = gpus[d].default_stream();
        let mut array = MirroredArray::<f32, Dims<2>, LayoutRight>::zeros(&stream, Dims::new([3, 5])).unwrap();
        array
            .host_mut()
            .unwrap()
            .for_each_mut(|[i, j], x| *x = (d * 100 + i * 10 + j) as f32);
        array.to_device().unwrap();
        assert_eq!(array.device().unwrap().space().ordinal(), d as i32);
        // Copy the array to the next device and back into a fresh array: the values survive.
        let next = (d + 1) % n;
        let mut on_next = gpus[next].default_stream().alloc_zeros::<f32>(15).unwrap();
        let mut back = MirroredArray::<f32, Dims<2>, LayoutRight>::zeros(&stream, Dims::new([3, 5])).unwrap();
        back.to_device().unwrap();
        {
            let src = array.device().unwrap();
            let mut mid = device_view_mut::<_, Dims<2>, LayoutRight>(&mut on_next, Dims::new([3, 5])).unwrap();
            let mut dst = back.device_mut().unwrap();
            // A scope keeps what its work reads and writes borrowed until it ends: `mid` is
            // read in a second scope, after the first has waited for its copy.
            cuda::scope(|s| s.copy(&stream, &src, &mut mid)).unwrap();
            cuda::scope(|s| s.copy(&stream, &mid, &mut dst)).unwrap();
        }
        back.to_host().unwrap();
        let host = back.host().unwrap();
        assert_eq!(host[[2, 4]], (d * 100 + 24) as f32, "device {d} by way of {next}");
        assert_eq!(host[[1, 3]], (d * 100 + 13) as f32);
    }
}

#[test]
fn peer_copies_between_every_pair_of_devices() {
    let Some(gpus) = gpus() else { return };
    let streams: Vec<_> = gpus.iter().map(|g| g.default_stream()).collect();
    for (a, b) in pairs(gpus.len()) {
        let (sa, sb) = (&streams[a], &streams[b]);
        let values: Vec<f64> = (0..6 * 7).map(|i| (a * 1000 + b * 100 + i) as f64 * 0.5).collect();
        let src_data = sa.clone_htod(&values).unwrap();
        let mut dst_data: CudaSlice<f64> = sb.alloc_zeros(values.len()).unwrap();
        {
            let src = device_view::<_, Dims<2>, LayoutLeft>(&src_data, Dims::new([6, 7])).unwrap();
            let mut dst = device_view_mut::<_, Dims<2>, LayoutLeft>(&mut dst_data, Dims::new([6, 7])).unwrap();
            // On the destination's stream, then on the source's: either device's stream may
            // run the copy.
            cuda::scope(|s| s.copy(sb, &src, &mut dst)).unwrap();
            cuda::scope(|s| s.copy(sa, &src, &mut dst)).unwrap();
            // Other extents: a named error before anything is queued.
            let mut wrong = device_view_mut::<_, Dims<2>, LayoutLeft>(&mut dst_data, Dims::new([7, 6])).unwrap();
            let e = cuda::scope(|s| s.copy(sb, &src, &mut wrong)).unwrap_err();
            assert!(
                matches!(&e, CudaError::CopyExtents { src, dst } if src == &[6, 7] && dst == &[7, 6]),
                "{e}"
            );
        }
        assert_eq!(sb.clone_dtoh(&dst_data).unwrap(), values, "{a} -> {b}");
        // cudarc allocates from each device's stream-ordered pool: the copy gave the other
        // device access to it, so the copy engines move the bytes directly.
        let (pa, _) = src_data.device_ptr(sa);
        assert_eq!(
            pool_access(pa, b as i32),
            cudarc::driver::sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            "device {b} reads device {a}'s pool"
        );
    }
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
    let Some(gpus) = gpus() else { return };
    let n = gpus.len();
    let streams: Vec<_> = gpus.iter().map(|g| g.default_stream()).collect();
    let srcs: Vec<_> = (0..n)
        .map(|d| streams[d].clone_htod(&vec![d as u8 + 3; 1 << 20]).unwrap())
        .collect();
    let mut dsts: Vec<CudaSlice<u8>> = (0..n).map(|d| streams[d].alloc_zeros(1 << 20).unwrap()).collect();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let views: Vec<_> = srcs
            .iter()
            .map(|a| device_view::<_, Dims<1>, LayoutRight>(a, Dims::new([1 << 20])).unwrap())
            .collect();
        let mut outs: Vec<_> = dsts
            .iter_mut()
            .map(|b| device_view_mut::<_, Dims<1>, LayoutRight>(b, Dims::new([1 << 20])).unwrap())
            .collect();
        let _: Result<(), CudaError> = cuda::scope(|s| {
            // Device d's data into the next device, on the destination's stream.
            for (d, out) in outs.iter_mut().enumerate() {
                let from = (d + n - 1) % n;
                s.copy(&streams[d], &views[from], out)?;
            }
            panic!("after queueing");
        });
    }));
    assert!(caught.is_err());
    // The copies finished before the panic left the scope; the streams are idle.
    for d in 0..n {
        let from = ((d + n - 1) % n) as u8;
        assert!(streams[d].clone_dtoh(&dsts[d]).unwrap().iter().all(|&x| x == from + 3));
    }
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

/// One all_reduce over every device from one thread, grouped, for element type `T`: rank `r`
/// sends `value(r, i)` at index `i`, and every rank gets the sum.
fn all_reduce_one_process<T: NcclElement>(
    streams: &[Arc<CudaStream>],
    comms: &[Communicator],
    n: usize,
    value: impl Fn(usize, usize) -> f32,
    to: impl Fn(f32) -> T,
) {
    let world = streams.len();
    let mut send: Vec<CudaSlice<u8>> = (0..world)
        .map(|r| {
            let v: Vec<T> = (0..n).map(|i| to(value(r, i))).collect();
            streams[r].clone_htod(&bytes_of(&v)).unwrap()
        })
        .collect();
    let mut recv: Vec<CudaSlice<u8>> = (0..world)
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
    // The values are small integers: every partial sum is exact in each type.
    let want: Vec<T> = (0..n).map(|i| to((0..world).map(|r| value(r, i)).sum())).collect();
    for r in 0..world {
        assert_eq!(
            streams[r].clone_dtoh(&recv[r]).unwrap(),
            bytes_of(&want),
            "rank {r} of {world}, {}",
            T::DATA_TYPE.name()
        );
    }
}

#[test]
fn all_reduce_from_one_process_of_every_kind_of_element() {
    let Some(streams) = gpus_and_nccl() else { return };
    let world = streams.len();
    let comms = Communicator::for_devices(&streams).unwrap();
    for (r, comm) in comms.iter().enumerate() {
        assert_eq!(
            (comm.rank(), comm.world_size(), comm.device().ordinal()),
            (r, world, r as i32)
        );
    }
    // Up to 8 × (8 + 6) = 112 on 8 GPUs: exact in every type but FP8.
    let value = |r: usize, i: usize| (r + 1 + i % 7) as f32;
    all_reduce_one_process::<f32>(&streams, &comms, 4096, value, |x| x);
    all_reduce_one_process::<f64>(&streams, &comms, 64, value, f64::from);
    all_reduce_one_process::<i32>(&streams, &comms, 64, value, |x| x as i32);
    all_reduce_one_process::<u8>(&streams, &comms, 64, value, |x| x as u8);
    all_reduce_one_process::<i64>(&streams, &comms, 64, value, |x| x as i64);
    all_reduce_one_process::<half::f16>(&streams, &comms, 64, value, half::f16::from_f32);
    all_reduce_one_process::<bf16>(&streams, &comms, 64, value, bf16::from_f32);
    all_reduce_one_process::<[f32; 4]>(&streams, &comms, 64, value, |x| [x, 2.0 * x, -x, 0.5 * x]);
    if nccl::version().unwrap() >= 22400 {
        // E4M3 holds the integers up to 16 exactly: ones and twos, at most 16 in all on 8 GPUs.
        let small = |_: usize, i: usize| (1 + i % 2) as f32;
        all_reduce_one_process::<F8E4M3FN>(&streams, &comms, 64, small, F8E4M3FN::from_f32);
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "FP8 not checked: NCCL {} is older than 2.24",
            nccl::version().unwrap()
        );
    }
}

/// Queues `op(rank, communicator, rank's output view)` for every rank in one group inside one
/// scope, which keeps each output borrowed until it ends.
fn on_every_rank<'v, V>(
    comms: &[Communicator],
    outs: &'v mut [V],
    op: impl for<'s> Fn(&'s cuda::Scope<'s, 'v>, usize, &Communicator, &'s mut V) -> Result<(), NcclError>,
) {
    cuda::scope(move |s| {
        group(move || {
            for (r, (c, out)) in comms.iter().zip(outs).enumerate() {
                op(s, r, c, out)?;
            }
            Ok(())
        })
    })
    .unwrap();
}

#[test]
fn every_collective_over_every_device() {
    let Some(streams) = gpus_and_nccl() else { return };
    let world = streams.len();
    let comms = Communicator::for_devices(&streams).unwrap();
    let n = 6;
    let inputs: Vec<CudaSlice<f32>> = (0..world)
        .map(|r| streams[r].clone_htod(&values::<f32>(r, n)).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..world).map(|r| streams[r].alloc_zeros(world * n).unwrap()).collect();
    let read = |r: usize, s: &CudaSlice<f32>| streams[r].clone_dtoh(s).unwrap();
    let ins = || -> Vec<_> {
        inputs
            .iter()
            .map(|s| device_view::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect()
    };

    // all_gather: rank order, a leading extent of the world size.
    {
        let ins = ins();
        let mut gathered: Vec<_> = outs
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<2>, LayoutRight>(s, Dims::new([world, n])).unwrap())
            .collect();
        on_every_rank(&comms, &mut gathered, |s, r, c, out| c.all_gather(s, &ins[r], out));
    }
    let want: Vec<f32> = (0..world).flat_map(|r| values::<f32>(r, n)).collect();
    for r in 0..world {
        assert_eq!(read(r, &outs[r]), want, "all_gather on rank {r}");
    }

    // reduce_scatter of the gathered data: rank r gets the sum of part r over all ranks.
    let mut parts: Vec<CudaSlice<f32>> = (0..world).map(|r| streams[r].alloc_zeros(n).unwrap()).collect();
    {
        let whole: Vec<_> = outs
            .iter()
            .map(|s| device_view::<_, Dims<1>, LayoutRight>(s, Dims::new([world * n])).unwrap())
            .collect();
        let mut ps: Vec<_> = parts
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        on_every_rank(&comms, &mut ps, |s, r, c, out| {
            c.reduce_scatter(s, &whole[r], out, ReduceOp::Sum)
        });
    }
    for r in 0..world {
        let want: Vec<f32> = values::<f32>(r, n).iter().map(|x| world as f32 * x).collect();
        assert_eq!(read(r, &parts[r]), want, "reduce_scatter part {r}");
    }

    // reduce (max) to the last rank: the largest values are the last rank's own.
    let last = world - 1;
    let mut targets: Vec<CudaSlice<f32>> = (0..world).map(|r| streams[r].alloc_zeros(n).unwrap()).collect();
    {
        let ins = ins();
        let mut ts: Vec<_> = targets
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        on_every_rank(&comms, &mut ts, |s, r, c, out| {
            c.reduce(s, &ins[r], out, ReduceOp::Max, last)
        });
    }
    assert_eq!(
        read(last, &targets[last]),
        values::<f32>(last, n),
        "max lands on the root"
    );
    for r in 0..last {
        assert_eq!(read(r, &targets[r]), vec![0.0; n], "rank {r}'s output is untouched");
    }

    // broadcast from rank 0, in place.
    {
        let mut ps: Vec<_> = parts
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        on_every_rank(&comms, &mut ps, |s, _, c, out| c.broadcast_in_place(s, out, 0));
    }
    let from_0: Vec<f32> = values::<f32>(0, n).iter().map(|x| world as f32 * x).collect();
    for r in 0..world {
        assert_eq!(read(r, &parts[r]), from_0, "broadcast on rank {r}");
    }

    // send/recv around the ring: rank r sends its input to r + 1 and receives r − 1's.
    {
        let ins = ins();
        let mut ts: Vec<_> = targets
            .iter_mut()
            .map(|s| device_view_mut::<_, Dims<1>, LayoutRight>(s, Dims::new([n])).unwrap())
            .collect();
        on_every_rank(&comms, &mut ts, |s, r, c, out| {
            c.send(s, &ins[r], (r + 1) % world)?;
            c.recv(s, out, (r + world - 1) % world)
        });
    }
    for r in 0..world {
        assert_eq!(
            read(r, &targets[r]),
            values::<f32>((r + world - 1) % world, n),
            "ring on rank {r}"
        );
    }
}

#[test]
fn extents_devices_and_ranks_are_checked_before_nccl_runs() {
    let Some(streams) = gpus_and_nccl() else { return };
    let world = streams.len();
    let comms = Communicator::for_devices(&streams).unwrap();
    let a = streams[0].alloc_zeros::<f32>(12).unwrap();
    let mut b = streams[0].alloc_zeros::<f32>(12).unwrap();
    let src = device_view::<_, Dims<1>, LayoutRight>(&a, Dims::new([6])).unwrap();
    let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([6])).unwrap();
    let e = cuda::scope(|s| comms[0].all_gather(s, &src, &mut dst)).unwrap_err();
    assert!(
        matches!(e, NcclError::AllGatherExtents { send: 6, recv: 6, world: w } if w == world),
        "{e}"
    );
    let e = cuda::scope(|s| comms[0].reduce_scatter(s, &src, &mut dst, ReduceOp::Sum)).unwrap_err();
    assert!(matches!(e, NcclError::ReduceScatterExtents { .. }), "{e}");
    // A view of any other device, given to rank 0's communicator.
    for (d, stream) in streams.iter().enumerate().skip(1) {
        let elsewhere = stream.alloc_zeros::<f32>(12).unwrap();
        let other = device_view::<_, Dims<1>, LayoutRight>(&elsewhere, Dims::new([6])).unwrap();
        let e = cuda::scope(|s| comms[0].all_reduce(s, &other, &mut dst, ReduceOp::Sum)).unwrap_err();
        assert!(
            matches!(e, NcclError::WrongDevice { view, communicator: 0, .. } if view == d as i32),
            "{e}"
        );
    }
    let e = cuda::scope(|s| comms[0].broadcast_in_place(s, &mut dst, world)).unwrap_err();
    assert!(
        matches!(e, NcclError::Rank { rank, world: w, .. } if rank == world && w == world),
        "{e}"
    );
    let mut twelve = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([12])).unwrap();
    let e = cuda::scope(|s| comms[0].all_reduce(s, &src, &mut twelve, ReduceOp::Sum)).unwrap_err();
    assert!(matches!(e, NcclError::SameExtents { .. }), "{e}");
}

/// One thread per device, each a rank joined by `join(rank, world)`, multiplying `rank + 1`
/// across the ranks: every rank gets `world!`.
fn one_rank_per_thread(world: usize, join: impl Fn(usize, usize) -> UniqueId + Sync) {
    let results: Vec<Vec<i64>> = std::thread::scope(|t| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let join = &join;
                t.spawn(move || {
                    let stream = cuda::context(rank).unwrap().new_stream().unwrap();
                    let id = join(rank, world);
                    let comm = Communicator::init_rank(stream.clone(), &id, rank, world).unwrap();
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
    let factorial: i64 = (1..=world as i64).product();
    assert_eq!(results, vec![vec![factorial; 5]; world]);
}

#[test]
fn one_rank_per_thread_joined_through_a_file() {
    let Some(streams) = gpus_and_nccl() else { return };
    let dir = std::env::temp_dir().join(format!("dlmd-nccl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("unique-id");
    let _ = std::fs::remove_file(&path);
    one_rank_per_thread(streams.len(), |rank, _| {
        UniqueId::exchange_file(&path, rank, Duration::from_secs(60)).unwrap()
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_rank_per_thread_joined_through_a_rendezvous() {
    let Some(streams) = gpus_and_nccl() else { return };
    // A port free a moment ago; rank 0 listens there, the others ask it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let at = Rendezvous::new("127.0.0.1", port);
    one_rank_per_thread(streams.len(), |rank, world| {
        at.exchange(rank, world, Duration::from_secs(60)).unwrap()
    });
}
