// `repr(packed)` drops the alignment to 1: a consumer reading the lanes as `float` would read
// them misaligned. `packed(N)` with N at least the lane's alignment is accepted.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C, packed)]
struct Float2 {
    x: f32,
    y: f32,
}

fn main() {}
