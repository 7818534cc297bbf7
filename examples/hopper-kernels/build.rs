//! Compiles this crate's kernels to PTX for `sm_90a` (Hopper with its architecture-specific
//! instructions: `wgmma`), with the nightly toolchain (`dlmd::kernels_ptx!()` reads it). LLVM
//! writes PTX ISA 8.0 for `sm_90a`, the first version that has `wgmma`.

fn main() {
    dlmd_build::PtxBuild::from_env().arch("sm_90a").build_or_exit();
}
