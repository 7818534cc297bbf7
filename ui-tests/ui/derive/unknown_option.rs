// `#[dlmd(...)]` takes only `crate = path`; a misspelt option is an error, not ignored.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[dlmd(krate = dlmd)]
#[repr(transparent)]
struct Meters(f64);

fn main() {}
