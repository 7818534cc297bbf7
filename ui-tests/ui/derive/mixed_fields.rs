// The lanes of a vector element share one scalar type: `{u8, f32}` is no DLPack vector (and
// `repr(C)` would pad it, too).
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Tagged {
    tag: f32,
    value: u32,
}

fn main() {}
