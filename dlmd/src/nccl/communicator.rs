//! [`Communicator`]: one rank of a group of GPUs, made for a process per GPU or one process
//! driving several.

use super::runtime::{call, supported};
use super::{NcclElement, NcclError, UniqueId, check};
use crate::cuda::{CudaError, Scope};
use crate::kernel::{Footprint, Use};
use cudarc::driver::CudaStream;
use cudarc::nccl::sys;
use std::ffi::c_int;
use std::sync::Arc;

/// One rank of an NCCL communicator, on one CUDA device, queueing its work on one stream.
///
/// It may move to another thread but not be used from two at once (NCCL's rule). Dropping it
/// destroys the communicator (`ncclCommDestroy`).
#[derive(Debug)]
pub struct Communicator {
    comm: sys::ncclComm_t,
    stream: Arc<CudaStream>,
    rank: usize,
    world: usize,
    ordinal: i32,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time; `&self` methods
// that call NCCL are not offered through `Sync` (the type is `!Sync`, as the raw pointer is).
unsafe impl Send for Communicator {}

impl Drop for Communicator {
    fn drop(&mut self) {
        // Errors cannot be reported from here; the communicator is gone either way.
        // SAFETY: `comm` is a live communicator, destroyed once.
        let _ = call("ncclCommDestroy", None, || unsafe { sys::ncclCommDestroy(self.comm) });
    }
}

fn ordinal_of(stream: &Arc<CudaStream>) -> Result<i32, NcclError> {
    let ordinal = stream.context().ordinal();
    i32::try_from(ordinal).map_err(|_| CudaError::Ordinal(ordinal).into())
}

impl Communicator {
    /// One communicator per stream, for one process driving several GPUs: rank `i` is on
    /// `streams[i]`'s device and queues its work there (`ncclCommInitAll`). The devices must be
    /// distinct.
    pub fn for_devices(streams: &[Arc<CudaStream>]) -> Result<Vec<Self>, NcclError> {
        let world = streams.len();
        check::ranks(0, world)?;
        let devices = streams
            .iter()
            .map(|s| ordinal_of(s).map(|o| o as c_int))
            .collect::<Result<Vec<_>, _>>()?;
        let mut comms = vec![core::ptr::null_mut(); world];
        // SAFETY: `comms` has room for `world` communicators and `devices` lists `world`
        // ordinals.
        call("ncclCommInitAll", None, || unsafe {
            sys::ncclCommInitAll(comms.as_mut_ptr(), world as c_int, devices.as_ptr())
        })?;
        Ok(comms
            .into_iter()
            .zip(streams)
            .enumerate()
            .map(|(rank, (comm, stream))| Self {
                comm,
                stream: stream.clone(),
                rank,
                world,
                ordinal: devices[rank],
            })
            .collect())
    }

    /// Rank `rank` of `world` ranks, one per process (or thread), on `stream`'s device: every
    /// rank calls it with the same `id`, and it returns once all have
    /// (`ncclCommInitRank`).
    pub fn init_rank(stream: Arc<CudaStream>, id: &UniqueId, rank: usize, world: usize) -> Result<Self, NcclError> {
        let (r, w) = check::ranks(rank, world)?;
        let ordinal = ordinal_of(&stream)?;
        stream.context().bind_to_thread()?;
        let mut comm = core::ptr::null_mut();
        // SAFETY: writes one communicator through a valid pointer; the device is the one bound
        // to this thread above, as NCCL takes it.
        call("ncclCommInitRank", None, || unsafe {
            sys::ncclCommInitRank(&mut comm, w, id.0, r)
        })?;
        Ok(Self {
            comm,
            stream,
            rank,
            world,
            ordinal,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// The CUDA device of this rank.
    pub fn device(&self) -> crate::space::Device {
        crate::space::Device::new(self.ordinal)
    }

    /// The stream this rank's work is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Queues one collective, `op`, in `scope` (`queue` calls NCCL with this rank's stream):
    /// common to every collective are that the element type is supported, the stream is not
    /// capturing a CUDA graph, the stream's context is bound, the collective runs after the work
    /// in flight on its buffers, and the scope waits for it.
    pub(super) fn queue<T: NcclElement>(
        &self,
        scope: &Scope<'_, '_>,
        op: &'static str,
        buffers: &[(check::Buffer, Use)],
        queue: impl FnOnce(sys::cudaStream_t) -> Result<(), NcclError>,
    ) -> Result<(), NcclError> {
        supported::<T>()?;
        // A buffer's bytes are counted as whole elements per value: a bound, never short.
        let footprints: Vec<Footprint> = buffers
            .iter()
            .map(|&(b, used)| Footprint {
                start: b.address,
                bytes: b.count.saturating_mul(size_of::<T>()),
                used,
            })
            .collect();
        let slot = scope.collective_slot(op, &self.stream)?;
        // What it writes shares no memory with what it reads, nor with other work queued in
        // scopes (aliased views' borrows exclude nothing).
        scope.claim(op, &footprints)?;
        self.stream.context().bind_to_thread()?;
        // After the work queued on the views' memory before they were made, and after launches
        // over imports of it in flight, on any stream.
        for f in &footprints {
            crate::cuda::order_after(&self.stream, f.start, f.bytes, op)?;
            crate::cuda::order_after_queued(&self.stream, f, Some(slot.event()), op)?;
        }
        let queued = queue(self.stream.cu_stream() as sys::cudaStream_t);
        // Recorded whether NCCL succeeded or not: it may have queued part of the work.
        let recorded = scope.queued_collective(slot, &footprints);
        queued?;
        Ok(recorded?)
    }

    /// `rank` as NCCL takes a root or peer: one of this communicator's ranks.
    pub(super) fn peer(&self, op: &'static str, rank: usize) -> Result<c_int, NcclError> {
        check::peer(op, rank, self.world)
    }

    /// The NCCL communicator, for the collectives.
    pub(super) fn comm(&self) -> sys::ncclComm_t {
        self.comm
    }

    /// This rank's device ordinal, for the collectives' checks.
    pub(super) fn ordinal(&self) -> i32 {
        self.ordinal
    }
}
