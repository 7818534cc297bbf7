//! Compiles this crate's kernels to PTX for `sm_80` (Ampere and later: `mma.sync` on `bf16`,
//! `cp.async`), with the nightly toolchain (`dlmd::kernels_ptx!()` reads it).

fn main() {
    dlmd_build::PtxBuild::from_env().arch("sm_80").build_or_exit();
}
