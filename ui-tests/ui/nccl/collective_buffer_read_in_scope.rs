// A collective is queued, not finished, when it returns: its output stays borrowed until the
// scope has waited for it. Copying out of it in the same scope would read it while NCCL still
// writes it.
use cudarc::driver::{CudaSlice, CudaStream};
use dlmd::cuda::{device_view, device_view_mut, scope};
use dlmd::nccl::{Communicator, NcclError, ReduceOp};
use dlmd::{Dims, LayoutRight};
use std::sync::Arc;

fn reduce_then_copy(
    comm: &Communicator,
    other: &Arc<CudaStream>,
    input: &CudaSlice<f32>,
    sums: &mut CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
) -> Result<(), NcclError> {
    let input = device_view::<_, Dims<1>, LayoutRight>(input, Dims::new([4]))?;
    let mut sums = device_view_mut::<_, Dims<1>, LayoutRight>(sums, Dims::new([4]))?;
    let mut out = device_view_mut::<_, Dims<1>, LayoutRight>(out, Dims::new([4]))?;
    scope(|s| {
        comm.all_reduce(s, &input, &mut sums, ReduceOp::Sum)?;
        s.copy(other, &sums, &mut out)?;
        Ok(())
    })
}

fn main() {}
