// Only a transparent newtype may be generic; a vector struct needs its concrete scalar type to
// be checked for padding and to name its data type.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Vec2<T> {
    x: T,
    y: T,
}

fn main() {}
