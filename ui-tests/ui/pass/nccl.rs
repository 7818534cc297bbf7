// Collectives and peer copies over views borrowed from outside the scope, of derived element
// types and vectors too.
use dlmd::cuda::{CudaError, scope};
use dlmd::nccl::{Communicator, NcclError, ReduceOp, group};
use dlmd::{DeviceMdspan, DeviceMdspanMut, DlElement, Dims, LayoutLeft};
use std::sync::Arc;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Meters(f64);

fn step(
    comms: &[Communicator],
    grads: &mut [DeviceMdspanMut<'_, half::bf16, Dims<2>, LayoutLeft>],
    positions: &mut DeviceMdspanMut<'_, [Meters; 3], Dims<1>>,
    shards: &DeviceMdspan<'_, f32, Dims<1>>,
    gathered: &mut DeviceMdspanMut<'_, f32, Dims<2>>,
) -> Result<(), NcclError> {
    scope(|s| {
        group(|| {
            for (comm, grad) in comms.iter().zip(grads.iter_mut()) {
                comm.all_reduce_in_place(s, grad, ReduceOp::Avg)?;
            }
            Ok(())
        })?;
        comms[0].broadcast_in_place(s, positions, 0)?;
        comms[0].all_gather(s, shards, gathered)
    })
}

fn copy(
    stream: &Arc<cudarc::driver::CudaStream>,
    src: &DeviceMdspan<'_, f32, Dims<2>>,
    dst: &mut DeviceMdspanMut<'_, f32, Dims<2>>,
) -> Result<(), CudaError> {
    scope(|s| s.copy(stream, src, dst))
}

fn main() {
    let _ = (step, copy);
}
