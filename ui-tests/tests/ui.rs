//! Compile-fail tests: each file under `ui/` documents one misuse dlmd refuses, with the
//! compiler's message beside it in a `.stderr` file.
//!
//! The messages are those of rustc 1.95; other compilers word them differently, so there the
//! test is reported as ignored rather than run. Regenerate with `TRYBUILD=overwrite` and review
//! the diff.

#[rustversion::attr(not(stable(1.95)), ignore = "UI messages are pinned to rustc 1.95")]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    // A passing case makes trybuild `cargo build` the set, so post-monomorphisation and
    // `const` checks run as they would for a user.
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/derive/*.rs");
    t.compile_fail("ui/view/*.rs");
    t.compile_fail("ui/nccl/*.rs");
    t.compile_fail("ui/kernel/*.rs");
    t.compile_fail("ui/block/*.rs");
    t.compile_fail("ui/mma/*.rs");
    t.compile_fail("ui/warpgroup/*.rs");
    t.compile_fail("ui/attention/*.rs");
    t.compile_fail("ui/xla/*.rs");
    t.compile_fail("ui/torch/*.rs");
}

/// What the Python bindings refuse (feature `python`: `cargo test -p dlmd-ui-tests --features
/// python`, which `scripts/test.sh` runs).
#[cfg(feature = "python")]
#[rustversion::attr(not(stable(1.95)), ignore = "UI messages are pinned to rustc 1.95")]
#[test]
fn ui_python() {
    trybuild::TestCases::new().compile_fail("ui/python/*.rs");
}
