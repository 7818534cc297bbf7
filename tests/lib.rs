//! Integration tests of dlmd; the tests are the `[[test]]` targets beside this file.

/// Every index of `extents`, row-major.
pub fn indices<const R: usize>(extents: [usize; R]) -> Vec<[usize; R]> {
    let mut out = Vec::new();
    if extents.contains(&0) {
        return out;
    }
    let mut index = [0; R];
    loop {
        out.push(index);
        let mut carried = true;
        for d in (0..R).rev() {
            index[d] += 1;
            if index[d] < extents[d] {
                carried = false;
                break;
            }
            index[d] = 0;
        }
        if carried {
            return out;
        }
    }
}
