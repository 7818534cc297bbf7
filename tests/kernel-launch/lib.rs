//! Tests of kernel crates against their launchers; see `tests/`. What several of them share.

/// Checks the errors a build of a fixture crate reported, each as `(line, message)` of its
/// `src/lib.rs`, against the fixture's `source`: every line that carries a comment `// MARKER:
/// text` has an error whose message contains `text`, and no other line has one. Returns how
/// many lines were marked. `log` is the whole build output, shown on a failure.
pub fn assert_marked_errors(source: &str, marker: &str, errors: &[(usize, &str)], log: &str) -> usize {
    let mut marked = 0;
    for (i, line) in source.lines().enumerate() {
        let Some((_, message)) = line.split_once(&format!("// {marker}: ")) else {
            continue;
        };
        marked += 1;
        let number = i + 1;
        assert!(
            errors.iter().any(|&(l, m)| l == number && m.contains(message)),
            "line {number} is not reported with \"{message}\"; the errors: {errors:#?}\n{log}"
        );
    }
    assert_eq!(
        errors.len(),
        marked,
        "one error per marked line, no other: {errors:#?}\n{log}"
    );
    marked
}
