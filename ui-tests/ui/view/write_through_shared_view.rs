// A view made from `&data` is read-only: writing needs `dlmd!(&mut data, ..)`.
use dlmd::dlmd;

fn main() {
    let data = [0i32; 6];
    let md = dlmd!(&data, [2, 3]);
    md[[1, 1]] = 5;
}
