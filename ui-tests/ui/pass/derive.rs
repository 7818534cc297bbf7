// The shapes `#[derive(DlElement)]` accepts. Compiling this with `cargo build` also runs the
// layout assertions that `cargo check` would skip.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Meters(f64);

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Float4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

#[derive(Clone, Copy, DlElement)]
#[repr(C, align(16))]
struct CudaFloat4 {
    x: f32,
    y: f32,
    z: f32,
    w: f32,
}

#[derive(Clone, Copy, DlElement)]
#[repr(C)]
struct Half2([half::f16; 2]);

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Wrap<T>(T);

fn main() {
    assert_eq!(Meters::DTYPE.to_string(), "float64");
    assert_eq!(Float4::DTYPE.to_string(), "float32x4");
    assert_eq!(CudaFloat4::DTYPE.to_string(), "float32x4");
    assert_eq!(Half2::DTYPE.to_string(), "float16x2");
    assert_eq!(<Wrap<Float4>>::DTYPE.to_string(), "float32x4");
}
