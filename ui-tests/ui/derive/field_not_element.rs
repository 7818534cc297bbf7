// A newtype is an element only when its field is one: `usize` has no DLPack data type (its width
// depends on the target).
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Index(usize);

fn main() {}
