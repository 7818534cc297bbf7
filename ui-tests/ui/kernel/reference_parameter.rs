// Kernel parameters cross to the GPU by value: a reference to host memory means nothing there.
#[dlmd::kernel]
pub fn read(v: &dlmd::DeviceMdspan<'_, f32, dlmd::Dims<1>>) {}

fn main() {}
