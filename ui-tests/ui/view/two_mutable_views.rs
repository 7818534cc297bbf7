// A mutable view borrows its data exclusively: two cannot write the same elements at once.
use dlmd::dlmd;

fn main() {
    let mut data = [0i32; 4];
    let mut a = dlmd!(&mut data, [4]);
    let mut b = dlmd!(&mut data, [2, 2]);
    a[[0]] = 1;
    b[[0, 0]] = 2;
}
