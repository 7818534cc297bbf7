// NCCL has no boolean, 16-bit integer or complex data type: such views cannot be reduced.
use dlmd::cuda::scope;
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{DeviceMdspanMut, Dims};

fn any(comm: &Communicator, flags: &mut DeviceMdspanMut<'_, bool, Dims<1>>) -> Result<(), NcclError> {
    scope(|s| comm.all_reduce_in_place(s, flags, ReduceOp::Max))
}

fn main() {}
