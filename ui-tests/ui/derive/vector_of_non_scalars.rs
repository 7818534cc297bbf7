// The fields of a vector element are scalars: a struct of `[f32; 2]` fields would be a vector of
// vectors, which DLPack cannot describe.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Pairs {
    a: [f32; 2],
    b: [f32; 2],
}

fn main() {}
