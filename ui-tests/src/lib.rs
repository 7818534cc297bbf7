//! Compile-fail tests of dlmd live in `tests/ui.rs` and `ui/`.
