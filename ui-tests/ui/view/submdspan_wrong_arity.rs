// `submdspan` takes one index or range per dimension: two for a rank-3 view is an error.
use dlmd::dlmd;

fn main() {
    let data = [0u8; 24];
    let md = dlmd!(&data, [2, 3, 4]);
    let _ = md.submdspan((1, ..));
}
