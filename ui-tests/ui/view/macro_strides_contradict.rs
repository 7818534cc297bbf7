// Strides given with `layout_right` must be the row-major ones: [1, 2] describes column-major
// data, which is `layout_left` (or `layout_stride`).
use dlmd::dlmd;

fn main() {
    let data = [0i32; 6];
    let _md = dlmd!(&data, [2, 3], layout_right, strides = [1, 2]);
}
