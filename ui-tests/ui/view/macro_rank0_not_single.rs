// `[]` makes a rank-0 view of one element; a `Vec` is not one element.
use dlmd::dlmd;

fn main() {
    let data = vec![1.0f32, 2.0];
    let _md = dlmd!(&data, []);
}
