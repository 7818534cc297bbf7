//! Kernel bodies type-checked on the host (`--cfg dlmd_kernel_check`, `dlmd::kernel::check`):
//! a fixture crate whose bodies and `#[dlmd::device]` helper have mistakes, checked by `cargo
//! check` on the stable toolchain, reports each mistake at its line, and nothing else.

use std::path::Path;
use std::process::Command;

/// `cargo check` of the fixture `tests/kernels/check` for the host, with `--cfg
/// dlmd_kernel_check` (whose build script then runs no nested `nvptx64` build, even asked to)
/// or without it (`DLMD_PTX=skip` keeping that build out), in a target directory of its own
/// for each; whether it passed, and its messages.
fn check(with_flag: bool) -> (bool, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/check");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    // What this test's own build set for itself stays out of the fixture's.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_") && name != "CARGO_HOME" || name.starts_with("RUSTC") {
            command.env_remove(&*name);
        }
    }
    let output = command
        .args(["check", "--quiet", "--message-format=short", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join(if with_flag { "kernel-check" } else { "plain-check" }))
        .env("RUSTFLAGS", if with_flag { "--cfg dlmd_kernel_check" } else { "" })
        .env("DLMD_PTX", if with_flag { "build" } else { "skip" })
        .output()
        .expect("cargo runs");
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.success(), log)
}

#[test]
fn a_host_check_with_the_flag_reports_each_mistake_of_a_kernel_body_in_place() {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/check/src/lib.rs"))
        .expect("the fixture's source");
    let (ok, log) = check(true);
    assert!(!ok, "the mistakes compiled:\n{log}");
    assert!(!log.contains("nvptx64"), "a nested build ran:\n{log}");
    // `src/lib.rs:LINE:COLUMN: error[...]: message`, one line each.
    let errors: Vec<(usize, &str)> = log
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("src/lib.rs:")?;
            let (number, rest) = rest.split_once(':')?;
            let (_, message) = rest.split_once(": error")?;
            Some((number.parse().ok()?, message))
        })
        .collect();
    let marked = dlmd_tests_kernels::assert_marked_errors(&source, "error", &errors, &log);
    assert_eq!(marked, 6);
}

#[test]
fn a_plain_host_check_compiles_the_launchers_and_leaves_the_bodies_out() {
    // The same crate without the flag: its launchers compile, and the bodies, the helper and
    // the import that only kernels use are not compiled (nor warned about).
    let (ok, log) = check(false);
    assert!(ok, "the plain host check failed:\n{log}");
    assert!(!log.contains("warning"), "{log}");
}
