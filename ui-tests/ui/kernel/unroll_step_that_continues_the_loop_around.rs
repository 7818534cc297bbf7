// `unroll!` writes its steps out one after another; they are not a loop. A `continue` in a
// step would go on with the loop around the macro, skipping the steps after it, which is not
// what `continue` in a `for` over the steps would do: it is refused. Name the loop (`continue
// 'rows`) where that is what is meant.
pub fn sums() -> [usize; 2] {
    let mut sums = [0usize; 2];
    for row in 0..2 {
        dlmd::unroll!(4, |i| {
            if i == row {
                continue;
            }
            sums[row] += i;
        });
    }
    sums
}

fn main() {}
