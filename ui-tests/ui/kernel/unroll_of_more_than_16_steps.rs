// `unroll!` writes its steps out, at most 16 of them: a longer run is a loop (or two
// `unroll!`s, one inside the other). A count past 16 is refused when the constant is known,
// rather than some steps left out.
pub fn sum() -> usize {
    let mut sum = 0;
    dlmd::unroll!(17, |i| {
        sum += i;
    });
    sum
}

fn main() {}
