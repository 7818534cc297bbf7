//! The GPU architectures and PTX ISA versions rustc's NVPTX target writes, and which ISA each
//! architecture needs: checked before the nested build starts, so that a typo or a mismatch is
//! a [`BuildError`] that says what to write instead of a compiler crash.

use crate::BuildError;

/// Every architecture (`-Ctarget-cpu`) rustc's NVPTX target knows, with the oldest PTX ISA
/// version it writes for it, which is what it writes unless [`PtxBuild::ptx_isa`] asks for a
/// later one. `sm_NNa` runs on compute capability NN only; `sm_NNf` on the devices of NN's
/// family (same major version, same or higher minor); `sm_NN` on NN and every later one.
///
/// [`PtxBuild::ptx_isa`]: crate::PtxBuild::ptx_isa
pub const ARCHES: &[(&str, (u32, u32))] = &[
    ("sm_70", (7, 0)),
    ("sm_72", (7, 0)),
    ("sm_75", (7, 0)),
    ("sm_80", (7, 0)),
    ("sm_86", (7, 1)),
    ("sm_87", (7, 4)),
    ("sm_88", (9, 0)),
    ("sm_89", (7, 8)),
    ("sm_90", (7, 8)),
    ("sm_90a", (8, 0)),
    ("sm_100", (8, 6)),
    ("sm_100a", (8, 6)),
    ("sm_100f", (8, 8)),
    ("sm_101", (8, 6)),
    ("sm_101a", (8, 6)),
    ("sm_101f", (8, 8)),
    ("sm_103", (8, 8)),
    ("sm_103a", (8, 8)),
    ("sm_103f", (8, 8)),
    ("sm_110", (9, 0)),
    ("sm_110a", (9, 0)),
    ("sm_110f", (9, 0)),
    ("sm_120", (8, 7)),
    ("sm_120a", (8, 7)),
    ("sm_120f", (8, 8)),
    ("sm_121", (8, 8)),
    ("sm_121a", (8, 8)),
    ("sm_121f", (8, 8)),
];

/// Whether rustc's NVPTX target writes PTX ISA `major.minor` (its `ptxNN` target features from
/// 7.0, the oldest it writes for any architecture: 7.0 to 7.8, 8.0 to 8.8, and 9.0).
pub fn is_known_ptx_isa((major, minor): (u32, u32)) -> bool {
    matches!((major, minor), (7, 0..=8) | (8, 0..=8) | (9, 0))
}

/// The oldest PTX ISA version rustc writes for `arch`, where it knows `arch`.
pub fn min_ptx_isa(arch: &str) -> Option<(u32, u32)> {
    ARCHES.iter().find(|(name, _)| *name == arch).map(|&(_, isa)| isa)
}

/// Checks that rustc knows `arch` and writes `isa` (where one is asked for) for it, and returns
/// the target feature that asks for `isa` (`+ptx80` for 8.0).
pub fn check(arch: &str, isa: Option<(u32, u32)>) -> Result<Option<String>, BuildError> {
    let Some(needs) = min_ptx_isa(arch) else {
        return Err(BuildError::Arch(arch.into()));
    };
    let Some(isa) = isa else { return Ok(None) };
    if !is_known_ptx_isa(isa) {
        return Err(BuildError::PtxIsa(isa));
    }
    if isa < needs {
        return Err(BuildError::PtxIsaTooOld {
            arch: arch.into(),
            isa,
            needs,
        });
    }
    Ok(Some(format!("+ptx{}{}", isa.0, isa.1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_arches_and_isas_pass_and_give_the_feature() {
        assert_eq!(check("sm_70", None).unwrap(), None);
        assert_eq!(check("sm_80", Some((7, 0))).unwrap().as_deref(), Some("+ptx70"));
        assert_eq!(check("sm_90a", Some((8, 0))).unwrap().as_deref(), Some("+ptx80"));
        assert_eq!(check("sm_90", Some((7, 8))).unwrap().as_deref(), Some("+ptx78"));
        assert_eq!(check("sm_100a", Some((8, 6))).unwrap().as_deref(), Some("+ptx86"));
        assert_eq!(check("sm_120a", Some((9, 0))).unwrap().as_deref(), Some("+ptx90"));
        // Every architecture accepts its own minimum, and the newest ISA.
        for &(arch, isa) in ARCHES {
            assert_eq!(check(arch, Some(isa)).unwrap(), Some(format!("+ptx{}{}", isa.0, isa.1)));
            assert!(check(arch, Some((9, 0))).is_ok(), "{arch}");
        }
    }

    #[test]
    fn unknown_arches_are_refused_by_name() {
        for arch in [
            "",
            "sm_",
            "sm_95",
            "sm_90b",
            "SM_90",
            "sm_90a ",
            "compute_90",
            "sm_9000",
            "sm_60",
            "ptx80",
        ] {
            let e = check(arch, None).unwrap_err();
            assert!(matches!(&e, BuildError::Arch(a) if a == arch), "{arch}: {e}");
            let message = e.to_string();
            assert!(message.contains("sm_90a") && message.contains("sm_120f"), "{message}");
        }
    }

    #[test]
    fn unknown_isas_are_refused_by_name() {
        for isa in [(6, 5), (7, 9), (8, 9), (9, 1), (10, 0), (0, 0), (u32::MAX, 0)] {
            let e = check("sm_80", Some(isa)).unwrap_err();
            assert!(matches!(e, BuildError::PtxIsa(i) if i == isa), "{isa:?}: {e}");
            assert!(e.to_string().contains("7.0 to 7.8"), "{e}");
        }
    }

    #[test]
    fn an_isa_older_than_the_arch_needs_is_refused() {
        let cases = [
            ("sm_86", (7, 0), (7, 1)),
            ("sm_89", (7, 7), (7, 8)),
            ("sm_90", (7, 4), (7, 8)),
            ("sm_90a", (7, 8), (8, 0)),
            ("sm_100a", (8, 5), (8, 6)),
            ("sm_120a", (8, 6), (8, 7)),
            ("sm_100f", (8, 7), (8, 8)),
        ];
        for (arch, isa, needs) in cases {
            let e = check(arch, Some(isa)).unwrap_err();
            assert!(
                matches!(&e, BuildError::PtxIsaTooOld { arch: a, isa: i, needs: n } if a == arch && *i == isa && *n == needs),
                "{arch} {isa:?}: {e}"
            );
            let message = e.to_string();
            assert!(
                message.contains(arch) && message.contains(&format!("{}.{}", needs.0, needs.1)),
                "{message}"
            );
        }
    }
}
