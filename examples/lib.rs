//! Runnable examples of dlmd: `cargo run --example NAME`.
