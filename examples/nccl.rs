//! dlmd on several GPUs: an NCCL all-reduce over typed device views, one process per GPU as
//! torchrun starts them, and a peer copy between two devices; each checked, then timed.
//!
//! ```text
//! # one process per GPU (RANK, WORLD_SIZE, LOCAL_RANK as torchrun sets them; rank 0 writes the
//! # NCCL unique id to DLMD_NCCL_ID_FILE, the others read it):
//! RANK=0 WORLD_SIZE=2 DLMD_NCCL_ID_FILE=/tmp/id nccl all-reduce --dtype f32 --mib 256 &
//! RANK=1 WORLD_SIZE=2 DLMD_NCCL_ID_FILE=/tmp/id nccl all-reduce --dtype f32 --mib 256
//! # or share the id through the environment instead of a file:
//! export DLMD_NCCL_ID=$(nccl unique-id)
//! # a copy from device 0 to device 1:
//! nccl peer-copy --mib 1024
//! ```
//!
//! Each prints one JSON line (rank 0 for the all-reduce): the time per operation of every
//! repetition, in ms, and the median's bandwidth. The all-reduce's is NCCL's bus bandwidth,
//! `bytes × 2 (n − 1) / n / time`, as `scripts/bench_nccl_torch.py` computes it for
//! `torch.distributed`; `scripts/bench_multi_gpu.py` runs both sides, alternating.
//!
//! Build with `cargo build --release --features nccl --example nccl`.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, sys};
use dlmd::cuda::{self, device_view, device_view_mut};
use dlmd::half::bf16;
use dlmd::nccl::{Communicator, NcclElement, Ranks, ReduceOp, UniqueId};
use dlmd::{Device, DeviceMdspanMut, Dims, DlElement, LayoutRight, Mdspan};
use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// `--name value` from the command line, or `default`.
fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

fn number(name: &str, default: usize) -> Result<usize> {
    Ok(arg(name, &default.to_string()).parse()?)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Milliseconds per call of `op`, `iters` calls between two events on `stream`.
fn time_ms(stream: &Arc<CudaStream>, iters: usize, mut op: impl FnMut() -> Result<()>) -> Result<f64> {
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = stream.record_event(flags)?;
    for _ in 0..iters {
        op()?;
    }
    let end = stream.record_event(flags)?;
    end.synchronize()?;
    Ok(f64::from(start.elapsed_ms(&end)?) / iters as f64)
}

/// A row-major view of `len` elements of `T` over a byte buffer of device `ordinal`.
fn view_of<T: DlElement>(bytes: &mut CudaSlice<u8>, ordinal: i32) -> DeviceMdspanMut<'_, T, Dims<1>> {
    let len = bytes.len() / size_of::<T>();
    let stream = bytes.stream().clone();
    let (ptr, _) = bytes.device_ptr_mut(&stream);
    let mapping = <LayoutRight as dlmd::layout::CompactLayout>::mapping(Dims::new([len])).expect("fits");
    // SAFETY: the allocation holds `len` elements of `T` on device `ordinal`, borrowed
    // exclusively for the view's lifetime.
    unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, mapping, Device::new(ordinal)) }
}

fn all_reduce<T: NcclElement>(dtype: &str, one: impl Fn(f32) -> T) -> Result<()> {
    let ranks = Ranks::from_env()?;
    let (mib, iters, reps) = (number("--mib", 256)?, number("--iters", 20)?, number("--reps", 7)?);
    let stream = cuda::context(ranks.local_rank)?.new_stream()?;
    let id = match std::env::var("DLMD_NCCL_ID_FILE") {
        Ok(path) => UniqueId::exchange_file(&path, ranks.rank, Duration::from_secs(120))?,
        Err(_) if std::env::var_os("DLMD_NCCL_ID").is_some() => UniqueId::from_env("DLMD_NCCL_ID")?,
        Err(_) => return Err("set DLMD_NCCL_ID_FILE to a path all ranks reach, or DLMD_NCCL_ID to an id".into()),
    };
    let comm = Communicator::init_rank(stream.clone(), &id, ranks.rank, ranks.world_size)?;
    let bytes = mib << 20;
    let len = bytes / size_of::<T>();
    let mine = vec![one((ranks.rank + 1) as f32); len];
    // SAFETY: `T` is a plain number type without padding: its bytes are all initialised.
    let raw = unsafe { std::slice::from_raw_parts(mine.as_ptr().cast::<u8>(), bytes) };
    let mut buffer = stream.clone_htod(raw)?;
    let ordinal = ranks.local_rank as i32;

    // Checked: once reduced, every element is 1 + 2 + … + world.
    {
        let mut view = view_of::<T>(&mut buffer, ordinal);
        cuda::scope(|s| comm.all_reduce_in_place(s, &mut view, ReduceOp::Sum))?;
    }
    let n = ranks.world_size;
    let want = one((n * (n + 1) / 2) as f32);
    let got = stream.clone_dtoh(&buffer)?;
    // SAFETY: as above, read back as the elements written.
    let got: &[T] = unsafe { std::slice::from_raw_parts(got.as_ptr().cast::<T>(), len) };
    let wrong = got.iter().filter(|x| bytes_of(*x) != bytes_of(&want)).count();
    if wrong > 0 {
        return Err(format!("all_reduce: {wrong} of {len} elements are wrong").into());
    }

    // Timed: in place, back to back inside one scope per repetition, as torch's loop runs.
    let mut view = view_of::<T>(&mut buffer, ordinal);
    let mut ms = Vec::new();
    cuda::scope(|s| {
        for _ in 0..3 {
            comm.all_reduce_in_place(s, &mut view, ReduceOp::Sum)?;
        }
        Ok::<_, Box<dyn Error>>(())
    })?;
    for _ in 0..reps {
        ms.push(cuda::scope(|s| {
            time_ms(&stream, iters, || {
                Ok(comm.all_reduce_in_place(s, &mut view, ReduceOp::Sum)?)
            })
        })?);
    }
    let t = median(ms.clone());
    let busbw = bytes as f64 * 2.0 * (n as f64 - 1.0) / n as f64 / (t * 1e-3) / 1e9;
    if ranks.rank == 0 {
        println!(
            "{{\"side\": \"dlmd\", \"op\": \"all_reduce\", \"dtype\": \"{dtype}\", \"bytes\": {bytes}, \"world\": {n}, \"ms\": {ms:?}, \"busbw_gbps\": {busbw:.2}}}"
        );
    }
    Ok(())
}

fn bytes_of<T>(x: &T) -> &[u8] {
    // SAFETY: `T` is a plain number type without padding (see the callers).
    unsafe { std::slice::from_raw_parts((x as *const T).cast::<u8>(), size_of::<T>()) }
}

fn peer_copy() -> Result<()> {
    let (mib, iters, reps) = (number("--mib", 1024)?, number("--iters", 10)?, number("--reps", 7)?);
    let (gpu0, gpu1) = (cuda::context(0)?, cuda::context(1)?);
    let (s0, s1) = (gpu0.new_stream()?, gpu1.new_stream()?);
    let len = (mib << 20) / 4;
    let values: Vec<f32> = (0..len).map(|i| (i % 1000) as f32).collect();
    let a = s0.clone_htod(&values)?;
    s0.synchronize()?;
    let mut b = s1.alloc_zeros::<f32>(len)?;
    s1.synchronize()?;
    let src = device_view::<_, Dims<1>, LayoutRight>(&a, Dims::new([len]))?;
    let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(&mut b, Dims::new([len]))?;
    // The copy runs on the destination's stream, as torch's `copy_` does.
    cuda::scope(|s| s.copy(&s1, &src, &mut dst))?;
    let mut ms = Vec::new();
    for _ in 0..reps {
        ms.push(cuda::scope(|s| {
            time_ms(&s1, iters, || Ok(s.copy(&s1, &src, &mut dst)?))
        })?);
    }
    if s1.clone_dtoh(&b)? != values {
        return Err("peer copy: the copy differs from the source".into());
    }
    let t = median(ms.clone());
    let gbps = (mib << 20) as f64 / (t * 1e-3) / 1e9;
    println!(
        "{{\"side\": \"dlmd\", \"op\": \"peer_copy\", \"bytes\": {}, \"ms\": {ms:?}, \"gbps\": {gbps:.2}}}",
        mib << 20
    );
    Ok(())
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let result = match (mode.as_str(), arg("--dtype", "f32").as_str()) {
        ("all-reduce", "f32") => all_reduce::<f32>("f32", |x| x),
        ("all-reduce", "bf16") => all_reduce::<bf16>("bf16", bf16::from_f32),
        ("all-reduce", other) => Err(format!("--dtype {other}: f32 or bf16").into()),
        ("peer-copy", _) => peer_copy(),
        ("unique-id", _) => UniqueId::new()
            .map(|id| println!("{}", id.to_hex()))
            .map_err(Into::into),
        _ => Err(
            "usage: nccl all-reduce [--dtype f32|bf16] [--mib N] | nccl peer-copy [--mib N] | nccl unique-id".into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
