// NCCL moves CUDA device memory: a host view cannot be all-reduced. Copy it to a device first.
use dlmd::cuda::scope;
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{DeviceMdspanMut, Dims, HostMdspan};

fn reduce(comm: &Communicator, send: &HostMdspan<'_, f32, Dims<1>>, recv: &mut DeviceMdspanMut<'_, f32, Dims<1>>) -> Result<(), NcclError> {
    scope(|s| comm.all_reduce(s, send, recv, ReduceOp::Sum))
}

fn main() {}
