//! Compiles this crate's kernels to PTX (`OUT_DIR/kernels.ptx`) with the nightly toolchain.

fn main() {
    dlmd_build::Kernels::from_env()
        .arch(dlmd_build::DEFAULT_ARCH)
        .build_or_exit();
}
