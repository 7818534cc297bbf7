// Collectives are queued, not finished, when they return: the memory they use must outlive the
// scope, which waits for them. A view of memory freed inside the scope is refused.
use dlmd::cuda::{device_view_mut, scope};
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{Dims, LayoutRight};

fn reduce(comm: &Communicator) -> Result<(), NcclError> {
    scope(|s| {
        let mut scratch = comm.stream().alloc_zeros::<f32>(4)?;
        let mut view = device_view_mut::<_, Dims<1>, LayoutRight>(&mut scratch, Dims::new([4]))?;
        comm.all_reduce_in_place(s, &mut view, ReduceOp::Sum)
    })
}

fn main() {}
