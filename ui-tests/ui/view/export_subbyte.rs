// FP4 values are stored one per byte; a plain `DLTensor` would describe them as packed, so
// exporting them as one does not compile.
use dlmd::{dlmd, to_dlpack_tensor, F4E2M1FN};

fn main() {
    let data = [F4E2M1FN::from_f32(1.0); 4];
    let md = dlmd!(&data, [4]);
    let _dl = to_dlpack_tensor(&md);
}
