// Iterating a device view from the host would read device memory: it does not compile.
use dlmd::{DeviceMdspan, Dims};

fn sum(md: DeviceMdspan<'_, f32, Dims<1>>) -> f32 {
    md.iter().sum()
}

fn main() {}
