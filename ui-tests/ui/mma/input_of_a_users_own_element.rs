// The tensor cores multiply `f16` or `bf16` bits: a 16-bit element of the user's declared an
// input would have its bits multiplied as one of those. `MmaInput` is sealed: only `f16` and
// `bf16` are inputs.
use dlmd::kernel::mma::MmaInput;

#[derive(Clone, Copy, Debug, PartialEq, dlmd::DlElement)]
#[repr(transparent)]
pub struct Half(pub u16);

impl MmaInput for Half {
    const BF16: bool = true;
}

fn main() {}
