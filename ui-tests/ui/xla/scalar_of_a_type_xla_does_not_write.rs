// Attributes are read as the scalar types XLA writes, of their widths: `Scalar` is sealed, so a
// type of another width (or a `bool` newtype, whose byte is checked only for `bool`) cannot
// claim an XLA type.
use dlmd::xla::Scalar;
use dlmd::xla::ffi::DataType;

#[derive(Clone, Copy)]
struct Pair(u64, u64);

unsafe impl Scalar for Pair {
    const DTYPE: DataType = DataType::S64;
}

fn main() {}
