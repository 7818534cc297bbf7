//! The target kernels are compiled for: rustc's `nvptx64-nvidia-cuda` without atomics
//! ([why](crate#no-atomics)).

use crate::BuildError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built-in target the kernels' target is derived from.
pub const BASE_TARGET: &str = "nvptx64-nvidia-cuda";

/// The name of the target kernels are compiled for: [`BASE_TARGET`] with no atomic types. It is
/// also the stem of its specification's file ([`kernel_target_spec`](crate::kernel_target_spec)).
pub const TARGET: &str = "nvptx64-nvidia-cuda-noatomic";

/// The key of a target specification that says how wide its atomics are.
const WIDTH_KEY: &str = "\"max-atomic-width\":";

/// [`BASE_TARGET`]'s specification (as rustc prints it with `--print target-spec-json`) with
/// its atomic width 0. `None` where the specification does not have the key exactly once.
pub(crate) fn without_atomics(spec: &str) -> Option<String> {
    let mut lines = spec.lines().filter(|line| line.trim_start().starts_with(WIDTH_KEY));
    let line = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let indent = &line[..line.len() - line.trim_start().len()];
    let comma = if line.trim_end().ends_with(',') { "," } else { "" };
    let replaced = format!("{indent}{WIDTH_KEY} 0{comma}");
    let mut out = String::with_capacity(spec.len());
    for l in spec.lines() {
        out.push_str(if l.trim_start().starts_with(WIDTH_KEY) {
            &replaced
        } else {
            l
        });
        out.push('\n');
    }
    Some(out)
}

/// Writes the specification of [`TARGET`] into a directory of `dir` named by a hash of its
/// contents, from the `rustc` of `sysroot` (the toolchain that compiles with it, whose format
/// it is), and returns its path. Each toolchain's specification has a file of its own, which
/// no other build rewrites while cargo reads it; it is written once, by a rename, so builds
/// that run at once read a whole file and cargo does not see a new target each time.
pub(crate) fn write_target_spec(sysroot: &Path, dir: &Path) -> Result<PathBuf, BuildError> {
    let rustc = sysroot.join("bin").join("rustc");
    let printed = Command::new(&rustc)
        .args([
            "-Zunstable-options",
            "--print",
            "target-spec-json",
            "--target",
            BASE_TARGET,
        ])
        .output()
        .map_err(|e| BuildError::Io(rustc.clone(), e))?;
    if !printed.status.success() {
        return Err(BuildError::TargetSpec(format!(
            "`rustc --print target-spec-json --target {BASE_TARGET}` failed: {}",
            String::from_utf8_lossy(&printed.stderr).trim()
        )));
    }
    let spec = without_atomics(&String::from_utf8_lossy(&printed.stdout)).ok_or_else(|| {
        BuildError::TargetSpec(format!(
            "the specification rustc prints for {BASE_TARGET} has no single `max-atomic-width`"
        ))
    })?;
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        spec.hash(&mut hasher);
        hasher.finish()
    };
    let dir = dir.join(format!("target-{hash:016x}"));
    std::fs::create_dir_all(&dir).map_err(|e| BuildError::Io(dir.clone(), e))?;
    let path = dir.join(format!("{TARGET}.json"));
    if std::fs::read_to_string(&path).ok().as_deref() != Some(spec.as_str()) {
        let partial = dir.join(format!("{TARGET}.json.{}", std::process::id()));
        std::fs::write(&partial, &spec).map_err(|e| BuildError::Io(partial.clone(), e))?;
        if let Err(e) = std::fs::rename(&partial, &path) {
            let _ = std::fs::remove_file(&partial);
            return Err(BuildError::Io(path, e));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_width_becomes_zero_and_nothing_else_changes() {
        let spec = "{\n  \"arch\": \"nvptx64\",\n  \"max-atomic-width\": 64,\n  \"os\": \"cuda\"\n}\n";
        let out = without_atomics(spec).unwrap();
        assert_eq!(out, spec.replace("\"max-atomic-width\": 64", "\"max-atomic-width\": 0"));
        // The last key of an object has no comma.
        let last = "{\n  \"max-atomic-width\": 64\n}";
        assert_eq!(without_atomics(last).unwrap(), "{\n  \"max-atomic-width\": 0\n}\n");
    }

    #[test]
    fn a_specification_without_the_key_or_with_two_is_refused() {
        assert_eq!(without_atomics("{\n  \"arch\": \"nvptx64\"\n}"), None);
        assert_eq!(
            without_atomics("{\n  \"max-atomic-width\": 64,\n  \"max-atomic-width\": 32\n}"),
            None
        );
    }
}
