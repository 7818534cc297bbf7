// `unroll!`'s steps are copies of one body, so a body that moves a value out of a variable
// from outside could move it twice. It is refused at any count, however the count is written:
// a count of 1 is checked as 2 would be (clone the value, or take it out before the steps).
pub fn names() -> Vec<(usize, String)> {
    let name = String::from("step");
    let mut named = Vec::new();
    dlmd::unroll!(1, |i| {
        named.push((i, name));
    });
    named
}

fn main() {}
