//! Where the nested build keeps its files: one directory for the whole outer build, so that
//! every kernel crate of a workspace and every profile (debug, release, `cargo check`) share
//! the `core` it compiles, once.

use std::path::{Path, PathBuf};

/// The nested build's directory for a crate built with `features`: `dlmd-nvptx/FEATURES` in
/// the outer build's target directory, or `nvptx` in `out_dir` where that directory cannot be
/// told from `out_dir`. A feature set has a directory of its own: the PTX is the newest
/// assembly of the crate there, which must be this feature set's.
pub(crate) fn nested_target_dir(out_dir: &Path, features: &[String], target: Option<&str>) -> PathBuf {
    match outer_target_dir(out_dir, target) {
        Some(dir) => dir.join("dlmd-nvptx").join(features_key(features)),
        None => out_dir.join("nvptx"),
    }
}

/// The outer build's target directory, from a build script's `OUT_DIR`:
/// `TARGET_DIR/[TRIPLE/]PROFILE/build/PACKAGE-HASH/out`, where `TRIPLE` is there when the
/// build names a `--target` (`target`, cargo's `TARGET`).
fn outer_target_dir(out_dir: &Path, target: Option<&str>) -> Option<PathBuf> {
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let above_profile = build.parent()?.parent()?;
    match (above_profile.file_name(), target) {
        (Some(name), Some(target)) if name == target => above_profile.parent().map(Path::to_path_buf),
        _ => Some(above_profile.to_path_buf()),
    }
}

/// A directory name for a feature set: the names, `+`-separated, with anything but ASCII
/// letters, digits, `-` and `_` as `_` (`none` for none).
fn features_key(features: &[String]) -> String {
    if features.is_empty() {
        return "none".into();
    }
    let mut sorted: Vec<&String> = features.iter().collect();
    sorted.sort();
    sorted
        .iter()
        .map(|f| {
            f.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_and_crate_of_a_build_shares_one_directory_a_feature_set() {
        let none: &[String] = &[];
        let release = Path::new("/w/target/release/build/kernels-0123/out");
        let debug = Path::new("/w/target/debug/build/other-kernels-4567/out");
        assert_eq!(
            nested_target_dir(release, none, None),
            Path::new("/w/target/dlmd-nvptx/none")
        );
        assert_eq!(
            nested_target_dir(debug, none, None),
            Path::new("/w/target/dlmd-nvptx/none")
        );
        let cross = Path::new("/w/target/x86_64-unknown-linux-gnu/release/build/k-89ab/out");
        assert_eq!(
            nested_target_dir(cross, none, Some("x86_64-unknown-linux-gnu")),
            Path::new("/w/target/dlmd-nvptx/none")
        );
        let features = ["wide".to_string(), "f64/extra".to_string()];
        assert_eq!(
            nested_target_dir(release, &features, None),
            Path::new("/w/target/dlmd-nvptx/f64_extra+wide")
        );
        // Not the layout cargo makes: the build's own output directory.
        let elsewhere = Path::new("/tmp/out");
        assert_eq!(nested_target_dir(elsewhere, none, None), Path::new("/tmp/out/nvptx"));
    }
}
