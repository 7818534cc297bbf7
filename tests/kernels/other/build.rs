//! The kernels' PTX, built with this crate's features.

fn main() {
    dlmd_build::Kernels::from_env().build_or_exit();
}
