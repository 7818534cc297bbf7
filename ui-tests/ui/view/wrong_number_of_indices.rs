// The rank is part of the type: a rank-2 view takes exactly two indices.
use dlmd::dlmd;

fn main() {
    let data = [0i32; 6];
    let md = dlmd!(&data, [2, 3]);
    let _ = md[[1, 1, 0]];
}
