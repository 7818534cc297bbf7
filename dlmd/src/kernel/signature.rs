//! The signature digest of a kernel: what its PTX entry point and its host launcher must agree
//! on, computed by the compiler on both sides from the parameters' resolved types.
//!
//! `#[dlmd::kernel]` writes each kernel's digest twice: into the PTX, as the global
//! `NAME__dlmd_signature`, and into the launcher, which the launch compares with the PTX's
//! before it runs anything. The digest mixes the signature as written (the name, and each
//! parameter's type as its tokens print) with a fingerprint of each parameter's type as the
//! compiler resolved it ([`KernelParam::FINGERPRINT`]): its `Param`'s size and alignment, and
//! for a view its element's DLPack data type, rank, static extents, layout, memory space and
//! access. So two builds whose `cfg`s or features give one name two types (`type Real = f64`
//! in one and `f32` in the other) get different digests, and the launch refuses the pair.

use super::KernelParam;

pub use crate::fingerprint::{START, mix, mix_str};

/// The fingerprint every parameter starts from: its `Param`'s size and alignment.
pub const fn param_layout<P: KernelParam>() -> u64 {
    mix(mix(START, size_of::<P::Param>() as u64), align_of::<P::Param>() as u64)
}

/// The digest of a kernel: `written` (the digest of its signature as written, which
/// `#[dlmd::kernel]` computes from the tokens) with each parameter's fingerprint mixed in, in
/// order.
pub const fn digest(written: u64, fingerprints: &[u64]) -> u64 {
    let mut hash = mix(written, fingerprints.len() as u64);
    let mut i = 0;
    while i < fingerprints.len() {
        hash = mix(hash, fingerprints[i]);
        i += 1;
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extents::{Const, Dims, Dyn};
    use crate::layout::{LayoutLeft, LayoutRight};
    use crate::view::{DeviceMdspan, DeviceMdspanAtomic, DeviceMdspanMut, ManagedMdspan};

    const fn of<P: KernelParam>() -> u64 {
        P::FINGERPRINT
    }

    #[test]
    fn resolved_types_differ_where_tokens_would_not() {
        let all = [
            of::<f32>(),
            of::<f64>(),
            of::<i32>(),
            of::<[f32; 2]>(),
            of::<DeviceMdspan<'static, f32, Dims<1>>>(),
            of::<DeviceMdspan<'static, f64, Dims<1>>>(),
            of::<DeviceMdspan<'static, f32, Dims<2>>>(),
            of::<DeviceMdspan<'static, f32, Dims<2>, LayoutLeft>>(),
            of::<DeviceMdspan<'static, f32, (Const<4>, Dyn)>>(),
            of::<DeviceMdspan<'static, f32, (Const<5>, Dyn)>>(),
            of::<DeviceMdspanMut<'static, f32, Dims<1>>>(),
            of::<DeviceMdspanAtomic<'static, f32, Dims<1>>>(),
            of::<ManagedMdspan<'static, f32, Dims<1>>>(),
        ];
        for (i, a) in all.iter().enumerate() {
            for (j, b) in all.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "fingerprints {i} and {j} collide");
            }
        }
        // The same resolved type, however its extents are spelled, crosses the same way.
        assert_eq!(
            of::<DeviceMdspan<'static, f32, Dims<2>, LayoutRight>>(),
            of::<DeviceMdspan<'static, f32, (Dyn, Dyn)>>()
        );
    }

    #[test]
    fn the_digest_depends_on_every_fingerprint_and_its_place() {
        let (a, b) = (of::<f32>(), of::<f64>());
        assert_ne!(digest(7, &[a, b]), digest(7, &[b, a]));
        assert_ne!(digest(7, &[a]), digest(7, &[a, a]));
        assert_ne!(digest(7, &[a]), digest(8, &[a]));
        assert_eq!(digest(7, &[a, b]), digest(7, &[a, b]));
    }
}
