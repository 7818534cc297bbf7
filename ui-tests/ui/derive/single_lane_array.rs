// `[S; N]` is a vector element for 2 <= N <= 16: `[f32; 1]` would alias the scalar `f32` and
// `[f32; 0]` has no data.
fn dtype<T: dlmd::DlElement>() -> dlmd::dlpack::DLDataType {
    T::DTYPE
}

fn main() {
    let _ = dtype::<[f32; 1]>();
}
