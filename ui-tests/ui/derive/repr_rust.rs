// `#[repr(Rust)]` spelled out is still the unspecified Rust layout, and is refused like no repr.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(Rust)]
struct Meters(f64);

fn main() {}
