// A plain `DLTensor` of FP6 elements means packed data, which dlmd's one-per-byte `F6E2M3FN`
// cannot view: the import does not compile.
use dlmd::{HostMdspan, Dims};
use dlmd::{ LayoutRight, F6E2M3FN, dlpack::DLTensor};

fn view(t: &DLTensor) {
    let _ = unsafe { HostMdspan::<F6E2M3FN, Dims<1>, LayoutRight>::from_dlpack(t) };
}

fn main() {}
