// Exporting a mutable view borrows the view: it cannot write while the `DlpackTensor` lives.
use dlmd::{dlmd, to_dlpack_tensor};

fn main() {
    let mut data = [0i32; 6];
    let mut md = dlmd!(&mut data, [2, 3]);
    let dl = to_dlpack_tensor(&md);
    md[[0, 0]] = 1;
    println!("{:?}", dl.get().data);
}
