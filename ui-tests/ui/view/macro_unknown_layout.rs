// `dlmd!` knows `layout_right`, `layout_left` and `layout_stride`; a misspelt layout is an error.
use dlmd::dlmd;

fn main() {
    let data = [0i32; 6];
    let _md = dlmd!(&data, [2, 3], layout_column_major);
}
