// The view API used as intended: builds with `cargo build`, so the checks above are real.
use dlmd::{HostMdspan, Dims};
use dlmd::{dlmd, to_dlpack_tensor, LayoutRight};

fn main() {
    let data = [1, 2, 3, 4, 5, 6];
    let md = dlmd!(&data, [2, 3]);
    let dl = to_dlpack_tensor(&md);
    let t = dl.get();
    let back = unsafe { HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(back[[1, 2]], 6);
    let row = md.submdspan((1, ..)).unwrap();
    assert_eq!(row[[0]], 4);
}
