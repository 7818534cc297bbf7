// A `DlpackTensor` borrows the view's data: the data cannot change under a consumer reading it.
use dlmd::{dlmd, to_dlpack_tensor};

fn main() {
    let mut data = [1u8; 4];
    let md = dlmd!(&data, [4]);
    let dl = to_dlpack_tensor(&md);
    data[0] = 2;
    println!("{:?}", dl.get().data);
}
