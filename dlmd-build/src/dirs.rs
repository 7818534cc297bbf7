//! Where the nested build keeps its files: one directory for the whole outer build, so that
//! every kernel crate of a workspace, each of its feature sets and every profile (debug,
//! release, `cargo check`) share the `core` and the `dlmd` it compiles, once.

use std::path::{Path, PathBuf};

/// The nested build's directory: `dlmd-nvptx` in the outer build's target directory, or
/// `nvptx` in `out_dir` where that directory cannot be told from `out_dir`. Every feature set
/// of every kernel crate shares it: cargo gives each feature set's build files of its own (its
/// metadata hash), and the PTX is found by that hash.
pub(crate) fn nested_target_dir(out_dir: &Path, target: Option<&str>) -> PathBuf {
    match outer_target_dir(out_dir, target) {
        Some(dir) => dir.join("dlmd-nvptx"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_crate_and_feature_set_of_a_build_shares_one_directory() {
        let release = Path::new("/w/target/release/build/kernels-0123/out");
        let debug = Path::new("/w/target/debug/build/other-kernels-4567/out");
        assert_eq!(nested_target_dir(release, None), Path::new("/w/target/dlmd-nvptx"));
        assert_eq!(nested_target_dir(debug, None), Path::new("/w/target/dlmd-nvptx"));
        let cross = Path::new("/w/target/x86_64-unknown-linux-gnu/release/build/k-89ab/out");
        assert_eq!(
            nested_target_dir(cross, Some("x86_64-unknown-linux-gnu")),
            Path::new("/w/target/dlmd-nvptx")
        );
        // Not the layout cargo makes: the build's own output directory.
        let elsewhere = Path::new("/tmp/out");
        assert_eq!(nested_target_dir(elsewhere, None), Path::new("/tmp/out/nvptx"));
    }
}
