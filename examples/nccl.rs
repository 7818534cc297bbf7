//! dlmd on any number of GPUs: NCCL collectives over typed device views, one process per GPU
//! as torchrun starts them, and peer copies between every pair of devices; each checked, then
//! timed.
//!
//! ```text
//! # one process per GPU, started by torchrun (RANK, WORLD_SIZE, LOCAL_RANK; rank 0 hands the
//! # NCCL unique id to the others at MASTER_ADDR, port MASTER_PORT + 1 or DLMD_NCCL_PORT):
//! torchrun --nproc-per-node 4 nccl all-reduce --dtype f32 --mib 256
//! # or started by hand, rank 0 writing the id to DLMD_NCCL_ID_FILE and the others reading it:
//! RANK=0 WORLD_SIZE=2 DLMD_NCCL_ID_FILE=/tmp/id nccl all-gather --mib 256 &
//! RANK=1 WORLD_SIZE=2 DLMD_NCCL_ID_FILE=/tmp/id nccl all-gather --mib 256
//! # or with the id in the environment:
//! export DLMD_NCCL_ID=$(nccl unique-id)
//! # only the id exchange (every rank prints the id it got):
//! torchrun --nproc-per-node 4 nccl rendezvous
//! # a copy between every ordered pair of devices, or one pair:
//! nccl peer-copy --mib 1024 [--pairs 0-1,1-0]
//! ```
//!
//! The collectives are `all-reduce`, `all-gather`, `reduce-scatter` and `broadcast` (from rank
//! 0), of `--mib` MiB in all: the buffer of all_reduce and broadcast, all_gather's output,
//! reduce_scatter's input. Each prints one JSON line (rank 0; one per pair for the copies): the
//! time per operation of every repetition, in ms, and the median's bandwidth. A collective's bus
//! bandwidth is NCCL's: the algorithm bandwidth `bytes / time` times `2 (n − 1) / n` for
//! all_reduce, `(n − 1) / n` for all_gather and reduce_scatter, 1 for broadcast, as
//! `scripts/bench_nccl_torch.py` computes it for `torch.distributed`;
//! `scripts/bench_multi_gpu.py` runs both sides, alternating.
//!
//! Build with `cargo build --release --features nccl --example nccl`.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, sys};
use dlmd::cuda::{self, device_view, device_view_mut};
use dlmd::half::bf16;
use dlmd::nccl::{Communicator, NcclElement, Ranks, ReduceOp, Rendezvous, UniqueId};
use dlmd::{Device, DeviceMdspanMut, Dims, DlElement, LayoutRight, Mdspan};
use dlmd_examples::median;
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
    // SAFETY: one view, which borrows the buffer exclusively.
    unsafe { views_of(bytes, ordinal, 1) }.remove(0)
}

/// `count` row-major views of `len` elements of `T` over one byte buffer of device `ordinal`,
/// for queuing the same work on it again and again in one `cuda::scope`, which keeps each view
/// it is given borrowed until it ends.
///
/// # Safety
///
/// The views' work is queued on one stream (so that it runs in order), and none of them is used
/// on another stream or read on the host while another one's work may still run.
unsafe fn views_of<T: DlElement>(
    bytes: &mut CudaSlice<u8>,
    ordinal: i32,
    count: usize,
) -> Vec<DeviceMdspanMut<'_, T, Dims<1>>> {
    let len = bytes.len() / size_of::<T>();
    let stream = bytes.stream().clone();
    let (ptr, _) = bytes.device_ptr_mut(&stream);
    let mapping = <LayoutRight as dlmd::layout::CompactLayout>::mapping(Dims::new([len])).expect("fits");
    (0..count)
        .map(|_| {
            // SAFETY: the allocation holds `len` elements of `T` on device `ordinal`, borrowed
            // exclusively for the views' lifetime; the views' work runs one at a time (caller).
            unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, mapping, Device::new(ordinal)) }
        })
        .collect()
}

/// The collectives the example measures, named as NCCL names them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
}

impl Collective {
    fn name(self) -> &'static str {
        match self {
            Self::AllReduce => "all_reduce",
            Self::AllGather => "all_gather",
            Self::ReduceScatter => "reduce_scatter",
            Self::Broadcast => "broadcast",
        }
    }

    /// Bus bandwidth over algorithm bandwidth for a world of `n`, as NCCL's own tests define it:
    /// what each rank's links carry, comparable across world sizes.
    fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Self::AllReduce => 2.0 * (n - 1.0) / n,
            Self::AllGather | Self::ReduceScatter => (n - 1.0) / n,
            Self::Broadcast => 1.0,
        }
    }
}

/// The unique id of this group: from the file `DLMD_NCCL_ID_FILE` names, from `DLMD_NCCL_ID`,
/// or through the launcher's rendezvous (`MASTER_ADDR`, `MASTER_PORT`), in that order; waiting
/// at most `--timeout-s` seconds (120) for rank 0.
fn join(ranks: &Ranks) -> Result<UniqueId> {
    let timeout = Duration::from_secs(number("--timeout-s", 120)? as u64);
    if let Ok(path) = std::env::var("DLMD_NCCL_ID_FILE") {
        return Ok(UniqueId::exchange_file(&path, ranks.rank, timeout)?);
    }
    if std::env::var_os("DLMD_NCCL_ID").is_some() {
        return Ok(UniqueId::from_env("DLMD_NCCL_ID")?);
    }
    if std::env::var_os("MASTER_ADDR").is_some() {
        return Ok(Rendezvous::from_env()?.exchange(ranks.rank, ranks.world_size, timeout)?);
    }
    Err(
        "start the ranks with torchrun, or set DLMD_NCCL_ID_FILE to a path all ranks reach, or DLMD_NCCL_ID to an id"
            .into(),
    )
}

/// One collective of `--mib` MiB in all (the buffer of all_reduce and broadcast, all_gather's
/// output, reduce_scatter's input) over every rank: checked once, then timed.
fn collective<T: NcclElement>(op: Collective, dtype: &str, one: impl Fn(f32) -> T) -> Result<()> {
    let ranks = Ranks::from_env()?;
    let (mib, iters, reps) = (number("--mib", 256)?, number("--iters", 20)?, number("--reps", 7)?);
    let stream = cuda::context(ranks.local_rank)?.new_stream()?;
    let id = join(&ranks)?;
    let comm = Communicator::init_rank(stream.clone(), &id, ranks.rank, ranks.world_size)?;
    let n = ranks.world_size;
    let bytes = mib << 20;
    let len = bytes / size_of::<T>();
    if !len.is_multiple_of(n) {
        return Err(format!("{len} elements do not split into {n} equal parts").into());
    }
    let part = len / n;
    // Rank r sends r + 1 everywhere; what each rank receives is known in closed form.
    let send_len = match op {
        Collective::AllGather => part,
        _ => len,
    };
    let mine = vec![one((ranks.rank + 1) as f32); send_len];
    let mut send = stream.clone_htod(bytes_of(&mine[..]))?;
    let mut recv = match op {
        Collective::AllGather => Some(stream.alloc_zeros::<u8>(bytes)?),
        Collective::ReduceScatter => Some(stream.alloc_zeros::<u8>(part * size_of::<T>())?),
        // In place: the send buffer is the output.
        Collective::AllReduce | Collective::Broadcast => None,
    };
    let ordinal = ranks.local_rank as i32;
    let sum = one((n * (n + 1) / 2) as f32);
    let want = |i: usize| match op {
        Collective::AllReduce | Collective::ReduceScatter => sum,
        Collective::AllGather => one((i / part + 1) as f32),
        Collective::Broadcast => one(1.0),
    };

    // Checked on every rank.
    {
        let mut sv = view_of::<T>(&mut send, ordinal);
        let mut rv = recv.as_mut().map(|r| view_of::<T>(r, ordinal));
        cuda::scope(|s| run(op, &comm, s, &mut sv, rv.as_mut()))?;
    }
    let out = stream.clone_dtoh(recv.as_ref().unwrap_or(&send))?;
    // SAFETY: the bytes were written as elements of `T`, a plain number type without padding.
    let got: &[T] = unsafe { std::slice::from_raw_parts(out.as_ptr().cast::<T>(), out.len() / size_of::<T>()) };
    let wrong = got
        .iter()
        .enumerate()
        .filter(|&(i, x)| bytes_of(std::slice::from_ref(x)) != bytes_of(&[want(i)]))
        .count();
    if wrong > 0 {
        let what = format!(
            "{}: rank {}: {wrong} of {} elements are wrong",
            op.name(),
            ranks.rank,
            got.len()
        );
        return Err(what.into());
    }

    // Timed: back to back inside one scope per repetition, as torch's loop runs. Reduced again
    // and again, the values grow to infinity, which costs NCCL nothing extra. A scope keeps each
    // view it is given until it ends, so each collective of a repetition gets views of its own.
    // SAFETY (of each `views_of` below): every collective of the views is queued on `stream`,
    // NCCL's stream for this rank, one after the other, and the buffers are read only after the
    // scopes have waited.
    // SAFETY: see above.
    let mut warm = unsafe { paired_views::<T>(&mut send, recv.as_mut(), ordinal, 3) };
    cuda::scope(|s| {
        for (send, recv) in &mut warm {
            run(op, &comm, s, send, recv.as_mut())?;
        }
        Ok::<_, Box<dyn Error>>(())
    })?;
    drop(warm);
    let mut ms = Vec::new();
    for _ in 0..reps {
        // SAFETY: see above.
        let mut timed = unsafe { paired_views::<T>(&mut send, recv.as_mut(), ordinal, iters) };
        let mut next = timed.iter_mut();
        ms.push(cuda::scope(|s| {
            time_ms(&stream, iters, || {
                let (send, recv) = next.next().ok_or("fewer views than iterations")?;
                run(op, &comm, s, send, recv.as_mut())
            })
        })?);
    }
    let t = median(ms.clone());
    let algbw = bytes as f64 / (t * 1e-3) / 1e9;
    let busbw = algbw * op.bus_factor(n);
    if ranks.rank == 0 {
        println!(
            "{{\"side\": \"dlmd\", \"op\": \"{}\", \"dtype\": \"{dtype}\", \"bytes\": {bytes}, \"world\": {n}, \"ms\": {ms:?}, \"algbw_gbps\": {algbw:.2}, \"busbw_gbps\": {busbw:.2}}}",
            op.name()
        );
    }
    Ok(())
}

/// A send view and, for collectives with an output buffer, a receive view.
type ViewPair<'b, T> = (DeviceMdspanMut<'b, T, Dims<1>>, Option<DeviceMdspanMut<'b, T, Dims<1>>>);

/// `count` pairs of views of `send` and, where there is one, `recv` ([`views_of`]).
///
/// # Safety
///
/// As for [`views_of`].
unsafe fn paired_views<'b, T: DlElement>(
    send: &'b mut CudaSlice<u8>,
    recv: Option<&'b mut CudaSlice<u8>>,
    ordinal: i32,
    count: usize,
) -> Vec<ViewPair<'b, T>> {
    // SAFETY: forwarded from the caller.
    let sends = unsafe { views_of::<T>(send, ordinal, count) };
    let recvs: Vec<Option<_>> = match recv {
        // SAFETY: forwarded from the caller.
        Some(r) => unsafe { views_of::<T>(r, ordinal, count) }
            .into_iter()
            .map(Some)
            .collect(),
        None => (0..count).map(|_| None).collect(),
    };
    sends.into_iter().zip(recvs).collect()
}

/// Queues `op` once: in place on `send` (all_reduce, broadcast from rank 0), or from `send`
/// into `recv`.
fn run<'scope, 'v, T: NcclElement>(
    op: Collective,
    comm: &Communicator,
    s: &cuda::Scope<'scope, '_>,
    send: &'scope mut DeviceMdspanMut<'v, T, Dims<1>>,
    recv: Option<&'scope mut DeviceMdspanMut<'v, T, Dims<1>>>,
) -> Result<()>
where
    'v: 'scope,
{
    match (op, recv) {
        (Collective::AllReduce, _) => comm.all_reduce_in_place(s, send, ReduceOp::Sum)?,
        (Collective::Broadcast, _) => comm.broadcast_in_place(s, send, 0)?,
        (Collective::AllGather, Some(recv)) => comm.all_gather(s, send, recv)?,
        (Collective::ReduceScatter, Some(recv)) => comm.reduce_scatter(s, send, recv, ReduceOp::Sum)?,
        (_, None) => return Err(format!("{} needs an output buffer", op.name()).into()),
    }
    Ok(())
}

/// Only the id exchange, as a launcher starts the ranks: each prints its rank and the id it
/// joined with (every rank must print the same id).
fn rendezvous() -> Result<()> {
    let ranks = Ranks::from_env()?;
    let id = join(&ranks)?;
    println!(
        "{{\"rank\": {}, \"world\": {}, \"local_rank\": {}, \"id\": \"{}\"}}",
        ranks.rank,
        ranks.world_size,
        ranks.local_rank,
        id.to_hex()
    );
    Ok(())
}

fn bytes_of<T: NcclElement>(xs: &[T]) -> &[u8] {
    // SAFETY: NCCL's element types are plain numbers (and arrays of them) without padding:
    // every byte is initialised.
    unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<u8>(), size_of_val(xs)) }
}

/// The ordered device pairs of `--pairs`: `all` (every pair of the machine's devices, the
/// default) or a list such as `0-1,1-0`.
fn pairs() -> Result<Vec<(usize, usize)>> {
    let text = arg("--pairs", "all");
    if text == "all" {
        let n = cudarc::driver::CudaContext::device_count()? as usize;
        if n < 2 {
            return Err(format!("a peer copy needs 2 devices, this machine has {n}").into());
        }
        return Ok((0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .collect());
    }
    text.split(',')
        .map(|pair| {
            let (a, b) = pair
                .split_once('-')
                .ok_or("--pairs: `all` or pairs A-B, such as 0-1,1-0")?;
            Ok((a.parse()?, b.parse()?))
        })
        .collect()
}

/// A copy of `--mib` MiB from device A to device B for each pair: checked, then timed on B's
/// stream, as torch's `copy_` runs.
fn peer_copy() -> Result<()> {
    let (mib, iters, reps) = (number("--mib", 1024)?, number("--iters", 10)?, number("--reps", 7)?);
    let pairs = pairs()?;
    let len = (mib << 20) / 4;
    let values: Vec<f32> = (0..len).map(|i| (i % 1000) as f32).collect();
    let mut devices: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    devices.sort_unstable();
    devices.dedup();
    // One source and one destination on each device, reused by every pair.
    let (mut srcs, mut dsts) = (Vec::new(), Vec::new());
    for &d in &devices {
        let stream = cuda::context(d)?.new_stream()?;
        srcs.push(stream.clone_htod(&values)?);
        dsts.push((stream.clone(), stream.alloc_zeros::<f32>(len)?));
        stream.synchronize()?;
    }
    let at = |d: usize| devices.binary_search(&d).expect("every device of a pair has buffers");
    for (a, b) in pairs {
        let (stream, dst) = &mut dsts[at(b)];
        let stream = stream.clone();
        // Zeroed, so the check sees this pair's copy and not an earlier one.
        stream.memset_zeros(dst)?;
        let src = device_view::<_, Dims<1>, LayoutRight>(&srcs[at(a)], Dims::new([len]))?;
        let mut ms = Vec::new();
        {
            let mut dst = device_view_mut::<_, Dims<1>, LayoutRight>(dst, Dims::new([len]))?;
            cuda::scope(|s| s.copy(&stream, &src, &mut dst))?;
            // A scope keeps the views it is given until it ends: each timed copy writes a view
            // of its own.
            let (ptr, mapping, space) = (dst.data_handle(), *dst.mapping(), dst.space());
            let mut dsts: Vec<DeviceMdspanMut<'_, f32, Dims<1>>> = (0..iters)
                .map(|_| {
                    // SAFETY: views of `dst`'s memory, which `dst` keeps borrowed meanwhile;
                    // every copy into them is queued on `stream`, one after the other, and the
                    // memory is read only after the scopes have waited.
                    unsafe { Mdspan::from_raw_parts(ptr, mapping, space) }
                })
                .collect();
            for _ in 0..reps {
                let mut next = dsts.iter_mut();
                ms.push(cuda::scope(|s| {
                    time_ms(&stream, iters, || {
                        Ok(s.copy(&stream, &src, next.next().ok_or("fewer views than iterations")?)?)
                    })
                })?);
            }
        }
        if stream.clone_dtoh(dst)? != values {
            return Err(format!("peer copy {a} -> {b}: the copy differs from the source").into());
        }
        let t = median(ms.clone());
        let gbps = (mib << 20) as f64 / (t * 1e-3) / 1e9;
        println!(
            "{{\"side\": \"dlmd\", \"op\": \"peer_copy\", \"from\": {a}, \"to\": {b}, \"bytes\": {}, \"ms\": {ms:?}, \"gbps\": {gbps:.2}}}",
            mib << 20
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let op = match mode.as_str() {
        "all-reduce" => Some(Collective::AllReduce),
        "all-gather" => Some(Collective::AllGather),
        "reduce-scatter" => Some(Collective::ReduceScatter),
        "broadcast" => Some(Collective::Broadcast),
        _ => None,
    };
    let result = match (op, mode.as_str(), arg("--dtype", "f32").as_str()) {
        (Some(op), _, "f32") => collective::<f32>(op, "f32", |x| x),
        (Some(op), _, "bf16") => collective::<bf16>(op, "bf16", bf16::from_f32),
        (Some(_), _, other) => Err(format!("--dtype {other}: f32 or bf16").into()),
        (None, "peer-copy", _) => peer_copy(),
        (None, "rendezvous", _) => rendezvous(),
        (None, "unique-id", _) => UniqueId::new()
            .map(|id| println!("{}", id.to_hex()))
            .map_err(Into::into),
        _ => Err(
            "usage: nccl all-reduce|all-gather|reduce-scatter|broadcast [--dtype f32|bf16] [--mib N] \
             | nccl peer-copy [--mib N] [--pairs all|A-B,...] | nccl rendezvous [--timeout-s S] | nccl unique-id"
                .into(),
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
