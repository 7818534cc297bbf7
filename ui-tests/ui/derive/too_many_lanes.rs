// A vector element has at most 16 lanes, as `[S; N]` does.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Wide(
    u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8,
);

fn main() {}
