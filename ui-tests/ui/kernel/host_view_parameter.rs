// A kernel cannot take a host view: its memory is not reachable from the GPU.
use dlmd::{Dims, HostMdspan};

#[dlmd::kernel]
pub fn read(_: dlmd::kernel::Thread, v: HostMdspan<'_, f32, Dims<1>>) {}

fn main() {}
