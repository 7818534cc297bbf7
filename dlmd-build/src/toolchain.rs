//! The nightly toolchain that compiles the kernels: its sysroot, checked to be recent enough and
//! to hold `rust-src`.

use crate::{BuildError, MIN_NIGHTLY_DATE};
use std::path::PathBuf;
use std::process::Command;

/// The sysroot of `toolchain`, checked to be new enough and to hold `rust-src`.
pub(crate) fn sysroot(toolchain: &str) -> Result<PathBuf, BuildError> {
    let missing = |what: String, install: String| BuildError::Toolchain { missing: what, install };
    let sysroot = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--print", "sysroot"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output();
    let sysroot = match sysroot {
        Ok(out) if out.status.success() => PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
        Ok(_) => {
            return Err(missing(
                format!("the {toolchain} toolchain"),
                format!("rustup toolchain install {toolchain} --component rust-src"),
            ));
        }
        Err(_) => {
            return Err(missing(
                "rustup".into(),
                "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh".into(),
            ));
        }
    };
    let version = Command::new(sysroot.join("bin").join("rustc"))
        .arg("-vV")
        .output()
        .map_err(|e| BuildError::Io(sysroot.join("bin").join("rustc"), e))?;
    if let Some(date) = commit_date(&String::from_utf8_lossy(&version.stdout))
        && date < MIN_NIGHTLY_DATE
    {
        return Err(BuildError::OldToolchain {
            toolchain: toolchain.into(),
            date: date.into(),
        });
    }
    let core = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core.exists() {
        return Err(missing(
            format!("the rust-src component of {toolchain}"),
            format!("rustup component add rust-src --toolchain {toolchain}"),
        ));
    }
    Ok(sysroot)
}

/// The commit date `rustc -vV` prints (`commit-date: YYYY-MM-DD`), where it has one that reads
/// as a date.
pub(crate) fn commit_date(version: &str) -> Option<&str> {
    let date = version
        .lines()
        .find_map(|line| line.strip_prefix("commit-date: "))?
        .trim();
    let bytes = date.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    (bytes.len() == 10 && bytes[4] == b'-' && bytes[7] == b'-' && digits(0..4) && digits(5..7) && digits(8..10))
        .then_some(date)
}
