// A struct without fields holds no data and has no DLPack data type.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Nothing;

fn main() {}
