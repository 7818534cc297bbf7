// `to_dlpack_tensor(&md).get()` borrows a temporary `DlpackTensor` that is dropped at the end of
// the statement: keep the `DlpackTensor` in a variable first.
use dlmd::{dlmd, to_dlpack_tensor};

fn main() {
    let data = [1, 2, 3, 4, 5, 6];
    let md = dlmd!(&data, [2, 3]);
    let t = to_dlpack_tensor(&md).get();
    println!("{}", t.ndim);
}
