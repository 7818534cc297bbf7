// Elements are copied bit for bit across the ABI, so they must be `Copy`.
use dlmd::DlElement;

#[derive(DlElement)]
#[repr(transparent)]
struct Meters(f64);

fn main() {}
