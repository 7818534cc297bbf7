// A `DlpackTensor` borrows the view's data: the data cannot be dropped while it lives.
use dlmd::{dlmd, to_dlpack_tensor};

fn main() {
    let data = vec![1.0f32; 6];
    let md = dlmd!(&data, [2, 3]);
    let dl = to_dlpack_tensor(&md);
    drop(data);
    println!("{:?}", dl.get().data);
}
