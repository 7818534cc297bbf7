//! Compiles this crate's kernels to PTX with the nightly toolchain (`dlmd::kernels_ptx!()` reads it).

fn main() {
    dlmd_build::PtxBuild::from_env()
        .arch(dlmd_build::DEFAULT_ARCH)
        .build_or_exit();
}
