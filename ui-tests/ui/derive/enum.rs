// An enum is not an element: DLPack has no enum type, and a foreign producer could send a value
// with no variant, which is undefined behaviour in Rust. Wrap the integer in a newtype instead.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(u8)]
enum Color {
    Red,
    Green,
}

fn main() {}
