// Padding is not data: `align(16)` over three `f32` makes a 16-byte struct with 4 bytes no
// DLPack lane describes. (Over four `f32`, as CUDA's `float4`, there is no padding and it is fine.)
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C, align(16))]
struct Float3 {
    x: f32,
    y: f32,
    z: f32,
}

fn main() {}
