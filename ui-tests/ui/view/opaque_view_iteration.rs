// An opaque device view cannot be iterated or sliced on the host either.
use dlmd::space::Rocm;
use dlmd::{Dims, OpaqueMdspan};

fn sum(md: &OpaqueMdspan<'_, f32, Dims<1>, Rocm>) -> f32 {
    md.iter().sum()
}

fn main() {}
