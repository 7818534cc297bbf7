//! Elementary functions for kernels, which `core` does not have (kernels only).

/// `e^x` for `f32`, as CUDA's `__expf`: `2^(x log2 e)` by the GPU's `ex2.approx` (relative
/// error about 2⁻²² plus the rounding of `x log2 e`; subnormal results flush to zero). `-∞`
/// gives 0 and NaN gives NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let scaled = x * core::f32::consts::LOG2_E;
    let out: f32;
    // SAFETY: a register-to-register instruction with no precondition.
    unsafe {
        core::arch::asm!(
            "ex2.approx.ftz.f32 {out}, {x};",
            out = out(reg32) out,
            x = in(reg32) scaled,
            options(pure, nomem, nostack),
        )
    };
    out
}
