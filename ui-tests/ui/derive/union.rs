// A union is not an element: DLPack cannot describe overlapping fields.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
union Bits {
    f: f32,
    u: u32,
}

fn main() {}
