//! A caught panic's message, for the entry points a foreign runtime calls (XLA's FFI, torch's
//! dispatcher), out of which nothing may unwind.

use std::boxed::Box;
use std::string::{String, ToString};

/// A panic's message, as `panic!` formats it. The payload is dropped here, where a panic of its
/// own `Drop` is caught too.
pub(crate) fn message(panic: Box<dyn core::any::Any + Send>) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    // A payload whose drop panics leaves another payload, dropped the same way (a few times at
    // most: past that, it is forgotten).
    let mut payload = panic;
    for _ in 0..8 {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload))) {
            Ok(()) => return what,
            Err(again) => payload = again,
        }
    }
    core::mem::forget(payload);
    what
}
