//! Compiles this crate's kernels to PTX for `sm_90a` (Hopper with its architecture-specific
//! instructions: `wgmma`), with the nightly toolchain (`dlmd::kernels_ptx!()` reads it), in PTX
//! ISA 8.1: 8.0 is the first that has `wgmma`, 8.1 the first whose `red` adds two `f32`s in
//! one request (the fused backward pass's `dq`, `Sums::pairs`).

fn main() {
    dlmd_build::PtxBuild::from_env()
        .arch("sm_90a")
        .ptx_isa(8, 1)
        .build_or_exit();
}
