// A PTX entry point has one signature: a kernel cannot be generic.
#[dlmd::kernel]
pub fn fill<T: dlmd::DlElement>(out: dlmd::DeviceMdspanMut<'_, T, dlmd::Dims<1>>, value: T) {}

fn main() {}
