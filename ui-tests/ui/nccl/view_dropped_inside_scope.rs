// Collectives are queued, not finished, when they return: the memory they use must outlive the
// scope, which waits for them. A view of memory freed inside the scope is refused.
use dlmd::cuda::scope;
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{DeviceMdspanMut, Dims};

fn device_memory<'a>(_: &'a mut Vec<f32>) -> DeviceMdspanMut<'a, f32, Dims<1>> {
    unimplemented!()
}

fn reduce(comm: &Communicator) -> Result<(), NcclError> {
    scope(|s| {
        let mut scratch = vec![0.0f32; 4];
        let mut view = device_memory(&mut scratch);
        comm.all_reduce_in_place(s, &mut view, ReduceOp::Sum)
    })
}

fn main() {}
