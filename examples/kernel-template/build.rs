// Compiles the kernels in src/lib.rs to PTX with the nightly toolchain.
fn main() {
    dlmd_build::PtxBuild::from_env().build_or_exit();
}
