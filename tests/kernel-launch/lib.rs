//! Tests of kernel crates against their launchers; see `tests/`.
