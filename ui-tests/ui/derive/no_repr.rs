// A struct without `#[repr(C)]` or `#[repr(transparent)]` has no fixed layout: Rust may reorder
// or pad its fields, so no DLPack data type can describe it.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
struct Float2 {
    x: f32,
    y: f32,
}

// Only the missing `repr` is reported: uses of `Float2` as an element raise nothing more.
fn dtype<T: DlElement>() -> dlmd::dlpack::DLDataType {
    T::DTYPE
}

fn main() {
    let _ = dtype::<Float2>();
}
