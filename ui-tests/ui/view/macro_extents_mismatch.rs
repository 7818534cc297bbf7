// `dlmd!` checks static extents against an array's length at compile time: 2 × 4 is not 6.
use dlmd::dlmd;

fn main() {
    let data = [0i32; 6];
    let _md = dlmd!(&data, [2, 4]);
}
