//! The nested build's log, made readable: cargo's progress lines dropped, and a host-only
//! dependency that reached the kernels' build named, with the manifest fix.

/// What the nested build printed, without cargo's progress lines (`Compiling …`,
/// `Finished …`, `Blocking …`), which say nothing about the failure.
pub(crate) fn readable(log: &str) -> String {
    const PROGRESS: [&str; 9] = [
        "warning: build failed, waiting for other jobs",
        "Compiling ",
        "Checking ",
        "Finished ",
        "Blocking ",
        "Updating ",
        "Downloading ",
        "Downloaded ",
        "Locking ",
    ];
    let mut kept: Vec<&str> = log
        .lines()
        .filter(|line| !PROGRESS.iter().any(|p| line.trim_start().starts_with(p)))
        .collect();
    while kept.last().is_some_and(|line| line.trim().is_empty()) {
        kept.pop();
    }
    kept.join("\n")
}

/// The crates that rustc found needing `std` in the kernels' build, each once, in the order it
/// named them: from its notes (`std` is required by `X` because it does not declare
/// `#![no_std]`) and from where its "can't find crate for `std`" errors point (a source file in
/// cargo's registry, `…/registry/src/INDEX/X-VERSION/…`).
pub(crate) fn needing_std(log: &str) -> Vec<String> {
    let mut crates: Vec<String> = Vec::new();
    let mut in_std_error = false;
    for line in log.lines() {
        if line.starts_with("error") {
            in_std_error = line.contains("can't find crate for `std`");
        }
        let named = line
            .split_once("`std` is required by `")
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(name, _)| name.to_string());
        let pointed = line
            .trim_start()
            .strip_prefix("--> ")
            .filter(|_| in_std_error)
            .and_then(registry_crate);
        for name in named.into_iter().chain(pointed) {
            if !crates.contains(&name) {
                crates.push(name);
            }
        }
    }
    crates
}

/// The crate a source path in cargo's registry belongs to: `getrandom` for
/// `/…/registry/src/index.crates.io-…/getrandom-0.3.4/src/error.rs:2:1`.
fn registry_crate(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/registry/src/")?;
    let dir = rest.split('/').nth(1)?;
    let (name, version) = dir.rsplit_once('-')?;
    version
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| name.to_string())
}

/// Why a build for `nvptx64` that needs `std` failed, and what to change.
pub(crate) fn explain_std(crates: &[String]) -> String {
    let names = crates.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
    let needs = if crates.len() == 1 { "needs" } else { "need" };
    format!(
        "the kernels' build for {}, which has no `std`, reached {names}, which \
         {needs} it: a dependency meant for the host is in the kernel crate's [dependencies]. Keep \
         there only what kernels use (dlmd with `default-features = false`), and move the rest, \
         with dlmd's host features such as `cuda`, under \
         [target.'cfg(not(target_arch = \"nvptx64\"))'.dependencies], as the first kernel of \
         dlmd's guide (examples/kernel-template) does. rustc's hint to use `-Zbuild-std` does not \
         apply: dlmd-build already builds `core` from source.",
        crate::TARGET
    )
}

/// Whether rustc's errors in the kernels' build name an atomic type, which the kernels' target
/// does not have (`cannot find type `AtomicU32` in module `core::sync::atomic``, an unresolved
/// import of one).
pub(crate) fn names_atomics(log: &str) -> bool {
    const TYPES: [&str; 13] = [
        "Bool", "I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64", "Isize", "Usize", "Ptr", "<",
    ];
    log.lines().any(|line| {
        line.starts_with("error")
            && (line.contains("sync::atomic")
                || line.contains("in `atomic`")
                || TYPES.iter().any(|t| line.contains(&format!("`Atomic{t}"))))
    })
}

/// Why a kernel that names an atomic type does not compile, and what to use.
pub(crate) fn explain_atomics() -> String {
    format!(
        "the kernels' target ({}) has no atomic types: an atomic may hold another value for each \
         thread that reads it, and a branch on it in a kernel's uniform code would run a barrier or \
         a warp-wide instruction on part of the threads that must run it together. Reduce with a \
         block's collectives (`Block::sum`, `Block::warp_sum`), add to an atomic view with \
         `Thread::atomic_add`, or to a warpgroup's `Sums` with `Warpgroup::add_to`.",
        crate::TARGET
    )
}

/// The nightly features rustc refused the kernel crate (`the feature `X` is not in the list of
/// allowed features`), each once.
pub(crate) fn refused_features(log: &str) -> Vec<String> {
    let mut features: Vec<String> = Vec::new();
    for line in log.lines().filter(|line| line.starts_with("error")) {
        let named = line
            .split_once("the feature `")
            .and_then(|(_, rest)| rest.split_once("` is not in the list of allowed features"))
            .map(|(name, _)| name.to_string());
        if let Some(name) = named
            && !features.contains(&name)
        {
            features.push(name);
        }
    }
    features
}

/// Why a kernel crate may not turn on `features`, and which it may.
pub(crate) fn explain_features(features: &[String]) -> String {
    let names = features.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    format!(
        "a kernel crate may turn on only these nightly features: {}; not {names}. Kernels keep \
         what differs between threads out of their uniform code, and a feature such as \
         `thread_local` would carry it there (dlmd-build's docs, \"No atomics\").",
        crate::KERNEL_FEATURES.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
   Compiling getrandom v0.2.16
error[E0463]: can't find crate for `std`
 --> /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/rand_core-0.9.3/src/lib.rs:2:1
  |
  = note: the `nvptx64-nvidia-cuda` target may not support the standard library
  = note: `std` is required by `getrandom` because it does not declare `#![no_std]`
  = help: consider building the standard library from source with `cargo build -Zbuild-std`

error[E0463]: can't find crate for `std`
  = note: `std` is required by `getrandom` because it does not declare `#![no_std]`
  = note: `std` is required by `libc` because it does not declare `#![no_std]`
   Compiling first-kernel v0.1.0
error: could not compile `getrandom` (lib) due to 2 previous errors
warning: build failed, waiting for other jobs to finish...

";

    #[test]
    fn progress_lines_go_and_errors_stay() {
        let log = readable(LOG);
        assert!(!log.contains("Compiling"), "{log}");
        assert!(log.starts_with("error[E0463]"), "{log}");
        assert!(log.ends_with("due to 2 previous errors"), "{log}");
    }

    #[test]
    fn crates_that_need_std_are_named_once_with_the_fix() {
        let crates = needing_std(LOG);
        assert_eq!(crates, ["rand_core", "getrandom", "libc"]);
        let text = explain_std(&crates);
        assert!(text.contains("`rand_core`, `getrandom`, `libc`"), "{text}");
        assert!(
            text.contains("[target.'cfg(not(target_arch = \"nvptx64\"))'.dependencies]"),
            "{text}"
        );
        assert!(needing_std("error: expected `;`").is_empty());
    }

    #[test]
    fn a_refused_feature_is_named_once_with_those_allowed() {
        let log = "\
error[E0725]: the feature `thread_local` is not in the list of allowed features
 --> src/lib.rs:1:12
error[E0725]: the feature `thread_local` is not in the list of allowed features
";
        let features = refused_features(log);
        assert_eq!(features, ["thread_local"]);
        assert!(refused_features(LOG).is_empty());
        let text = explain_features(&features);
        assert!(
            text.contains("not `thread_local`") && text.contains("abi_ptx"),
            "{text}"
        );
    }

    #[test]
    fn an_atomic_type_in_a_kernel_is_explained() {
        let log = "\
error[E0432]: unresolved import `core::sync::atomic::AtomicBool`
 --> src/lib.rs:3:5
error[E0412]: cannot find type `AtomicU32` in module `core::sync::atomic`
";
        assert!(names_atomics(log));
        assert!(!names_atomics(LOG));
        // A note that mentions an atomic is not an error about one, nor is an error about
        // dlmd's names that start alike.
        assert!(!names_atomics("warning: unused `AtomicBool`\n  = note: in `atomic`"));
        assert!(!names_atomics(
            "error[E0405]: cannot find trait `AtomicElement` in this scope"
        ));
        assert!(names_atomics(
            "error[E0412]: cannot find type `AtomicUsize` in this scope"
        ));
        let text = explain_atomics();
        assert!(
            text.contains(crate::TARGET) && text.contains("`Thread::atomic_add`"),
            "{text}"
        );
    }
}
