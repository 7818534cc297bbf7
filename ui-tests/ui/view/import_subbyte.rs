// A plain `DLTensor` of FP6 elements means packed data, which dlmd's one-per-byte `F6E2M3FN`
// cannot view: the import does not compile.
use dlmd::{to_host_mdspan, LayoutRight, F6E2M3FN, dlpack::DLTensor};

fn view(t: &DLTensor) {
    let _ = unsafe { to_host_mdspan::<F6E2M3FN, 1, LayoutRight>(t) };
}

fn main() {}
