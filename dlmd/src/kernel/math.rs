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
        exp2(x * core::f32::consts::LOG2_E)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::exp`")
    }
}

/// `2^x` for `f32`, as CUDA's `exp2f` with `-use_fast_math`: the GPU's `ex2.approx` (relative
/// error about 2⁻²²; subnormal results flush to zero). `-∞` gives 0 and NaN gives NaN. The
/// exponential of an online softmax, whose scale folds `log2 e` in once.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: f32;
        // SAFETY: a register-to-register instruction with no precondition.
        unsafe {
            core::arch::asm!(
                "ex2.approx.ftz.f32 {out}, {x};",
                out = out(reg32) out,
                x = in(reg32) x,
                options(pure, nomem, nostack),
            )
        };
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::exp2`")
    }
}

/// `log₂ x` for `f32`, as CUDA's `__log2f`: the GPU's `lg2.approx` (absolute error about 2⁻²²
/// near 1; subnormal inputs flush to zero). 0 gives `-∞`, `+∞` gives `+∞`, a negative `x` NaN.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: f32;
        // SAFETY: a register-to-register instruction with no precondition.
        unsafe {
            core::arch::asm!(
                "lg2.approx.ftz.f32 {out}, {x};",
                out = out(reg32) out,
                x = in(reg32) x,
                options(pure, nomem, nostack),
            )
        };
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::log2`")
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

/// `1 / x` for `f32`, as CUDA's `__frcp_rn` would be without its rounding: the GPU's
/// `rcp.approx.ftz.f32` (relative error about 2⁻²³; subnormals flush to zero), one instruction
/// where a division `a / b` is a dozen. `a * rcp(b)` is CUDA's `__fdividef(a, b)`.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: f32;
        // SAFETY: a register-to-register instruction with no precondition.
        unsafe {
            core::arch::asm!(
                "rcp.approx.ftz.f32 {out}, {x};",
                out = out(reg32) out,
                x = in(reg32) x,
                options(pure, nomem, nostack),
            )
        };
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::rcp`")
    }
}

/// `x` rounded to the nearest `bf16` (ties to even), as CUDA's `__float2bfloat16_rn`: one
/// `cvt.rn.bf16.f32` (`sm_80` and later), the same value as `half::bf16::from_f32`, which
/// takes several integer instructions.
#[inline(always)]
pub fn to_bf16(x: f32) -> half::bf16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u16;
        // SAFETY: a register-to-register instruction with no precondition (sm_80 and later, which
        // every kernel with `bf16` arithmetic is built for; an older target does not assemble).
        unsafe {
            core::arch::asm!(
                "cvt.rn.bf16.f32 {out}, {x};",
                out = out(reg16) out,
                x = in(reg32) x,
                options(pure, nomem, nostack),
            )
        };
        half::bf16::from_bits(out)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::to_bf16`")
    }
}

/// `x` rounded to the nearest `f16` (ties to even), as CUDA's `__float2half_rn`: one
/// `cvt.rn.f16.f32`, the same value as `half::f16::from_f32`, which takes a few dozen
/// instructions and branches.
#[inline(always)]
pub fn to_f16(x: f32) -> half::f16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u16;
        // SAFETY: a register-to-register instruction with no precondition.
        unsafe {
            core::arch::asm!(
                "cvt.rn.f16.f32 {out}, {x};",
                out = out(reg16) out,
                x = in(reg32) x,
                options(pure, nomem, nostack),
            )
        };
        half::f16::from_bits(out)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = x;
        crate::space::device_only("`dlmd::kernel::math::to_f16`")
    }
}
