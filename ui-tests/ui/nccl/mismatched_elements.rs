// The input and output of a collective hold the same element type: NCCL has one data type per
// call, so f32 in and f64 out does not compile.
use dlmd::cuda::scope;
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{DeviceMdspan, DeviceMdspanMut, Dims};

fn reduce(comm: &Communicator, send: &DeviceMdspan<'_, f32, Dims<1>>, recv: &mut DeviceMdspanMut<'_, f64, Dims<1>>) -> Result<(), NcclError> {
    scope(|s| comm.all_reduce(s, send, recv, ReduceOp::Sum))
}

fn main() {}
