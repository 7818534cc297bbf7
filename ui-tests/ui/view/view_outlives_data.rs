// A view borrows its data: it cannot outlive it.
use dlmd::dlmd;

fn main() {
    let md;
    {
        let data = [1u8, 2, 3];
        md = dlmd!(&data, [3]);
    }
    println!("{}", md[[0]]);
}
