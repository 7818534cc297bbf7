//! Elementary functions for kernels, which `core` does not have (kernels, and host builds that
//! type-check kernel bodies: [`check`](super::check), where each is a stand-in that refuses to
//! run).

/// `e^x` for `f32`, as CUDA's `__expf`: `2^(x log2 e)` by the GPU's `ex2.approx` (relative
/// error about 2⁻²² plus the rounding of `x log2 e`; subnormal results flush to zero). `-∞`
/// gives 0 and NaN gives NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
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
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::exp`")
    }
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.fma.f32"]
    fn fma_f32(a: f32, b: f32, c: f32) -> f32;
}

/// `a × b + c` for `f32` with one rounding, as CUDA's `fmaf` (PTX `fma.rn.f32`): one
/// instruction where `a * b + c` is two, since Rust never fuses a product and a sum on its own.
/// The inner step of a matrix product.
#[inline(always)]
pub fn mul_add(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: LLVM's fused multiply-add of three values, defined for every input.
        unsafe { fma_f32(a, b, c) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (a, b, c);
        crate::space::device_only("`dlmd::kernel::math::mul_add`")
    }
}
