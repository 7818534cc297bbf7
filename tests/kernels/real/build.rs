//! The kernels' PTX, built with this crate's features.

fn main() {
    dlmd_build::PtxBuild::from_env().build_or_exit();
}
