// A newtype of a vector is a vector: it cannot be a lane of another vector (DLPack has no
// vectors of vectors), though a newtype of a scalar can.
use dlmd::DlElement;

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Float2([f32; 2]);

#[derive(Clone, Copy, DlElement)]
#[repr(transparent)]
struct Meters(f32);

fn dtype<T: DlElement>() -> dlmd::dlpack::DLDataType {
    T::DTYPE
}

fn main() {
    let _fine = dtype::<[Meters; 4]>();
    let _refused = dtype::<[Float2; 2]>();
}
