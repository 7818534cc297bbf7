// NCCL moves one contiguous span: a strided view (a slice, a transpose) is refused. Copy it
// into a `LayoutRight` or `LayoutLeft` view first.
use dlmd::cuda::scope;
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{Device, Dims, LayoutStride, Mdspan, view::Unique};

fn reduce(comm: &Communicator, buf: &mut Mdspan<'_, f32, Dims<2>, LayoutStride, Device, Unique>) -> Result<(), NcclError> {
    scope(|s| comm.all_reduce_in_place(s, buf, ReduceOp::Sum))
}

fn main() {}
