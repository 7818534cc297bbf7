// Elements are plain `'static` data that can cross to C and Python: a type that borrows cannot
// be one.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Borrowed<'a>(&'a f32);

fn main() {}
