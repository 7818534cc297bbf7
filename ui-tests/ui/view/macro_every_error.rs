// `dlmd!` reports every mistake it finds in one call, not just the first: here an unknown layout
// and a second inferred extent. The view's type errors do not follow: the call stands for no
// value at all once it has failed.
use dlmd::dlmd;

fn main() {
    let data = [0f32; 12];
    let md = dlmd!(&data, [_, 3, _], layout_diagonal);
    let _first: f32 = md[[0, 0, 0]];
}
