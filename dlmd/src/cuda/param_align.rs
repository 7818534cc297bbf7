//! Parameters read in place: a kernel's TMA tensor maps, which the copy engine reads from the
//! kernel's parameter space by address, and which must lie 64 bytes aligned there. rustc
//! declares no parameter above 16; `#[dlmd::kernel]` emits, beside the entry point, the
//! alignment each PTX parameter needs (`NAME__dlmd_param_align`, a byte per parameter: 64 or
//! 0), and `dlmd-build` writes it into the entry point. A module loaded here is checked for
//! it: a kernel whose declaration lacks it (PTX from another build) is refused at its launch,
//! instead of faulting on the device.

use std::collections::HashMap;

/// The suffix of the globals that carry the alignment each parameter of a kernel needs.
const SUFFIX: &str = "__dlmd_param_align";

/// A parameter declared with less alignment than its kernel needs: its PTX index, the
/// alignment needed and the one declared (0 where the entry point does not declare it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Misaligned {
    pub param: usize,
    pub needed: u32,
    pub declared: u32,
}

/// Each kernel of `ptx` with a parameter declared less aligned than its
/// `NAME__dlmd_param_align` global asks, by name, with the first such parameter.
pub(super) fn misaligned_params(ptx: &str) -> HashMap<String, Misaligned> {
    let mut found = HashMap::new();
    for (kernel, needed) in ptx.lines().filter_map(needed_alignments) {
        let declared = declared_alignments(ptx, kernel);
        let first = needed.iter().enumerate().find_map(|(param, &needed)| {
            let declared = declared.get(param).copied().flatten().unwrap_or(0);
            (needed != 0 && declared < u32::from(needed)).then_some(Misaligned {
                param,
                needed: u32::from(needed),
                declared,
            })
        });
        if let Some(first) = first {
            found.insert(kernel.to_string(), first);
        }
    }
    found
}

/// The kernel and the alignment of each PTX parameter, where `line` declares its
/// alignment global: `.visible .global .align 1 .b8 NAME__dlmd_param_align[N] = {64, 0, 64};`
/// (trailing zeros left out), or without an initializer where every byte is zero.
fn needed_alignments(line: &str) -> Option<(&str, Vec<u8>)> {
    let line = line.trim();
    if !line.starts_with(".visible .global") {
        return None;
    }
    let (declaration, value) = match line.split_once('=') {
        Some((declaration, value)) => (declaration, Some(value)),
        None => (line.trim_end_matches(';'), None),
    };
    let symbol = declaration.split_whitespace().last()?;
    let (kernel, count) = symbol.strip_suffix(']')?.split_once('[')?;
    let kernel = kernel.strip_suffix(SUFFIX)?;
    let count: usize = count.parse().ok()?;
    let mut bytes = vec![0u8; count];
    if let Some(value) = value {
        let listed = value.trim().strip_prefix('{')?.strip_suffix("};")?;
        for (i, byte) in listed.split(',').map(str::trim).filter(|b| !b.is_empty()).enumerate() {
            // A byte past the array, or not a byte: a global of another form (a kernel whose
            // needs cannot be read asks for 64 everywhere; its declarations then show).
            match (bytes.get_mut(i), byte.parse::<u8>()) {
                (Some(slot), Ok(b)) => *slot = b,
                _ => return Some((kernel, vec![64; count])),
            }
        }
    }
    Some((kernel, bytes))
}

/// The alignment `.param` declares of each parameter of the entry point `kernel`, by PTX index:
/// `Some(A)` for `.align A`, `None` for a parameter declared without one.
fn declared_alignments(ptx: &str, kernel: &str) -> Vec<Option<u32>> {
    let mut lines = ptx.lines().map(str::trim);
    let opens = |line: &str| {
        line.split(".entry").nth(1).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.strip_prefix(kernel).is_some_and(|after| after.starts_with('('))
        })
    };
    if lines.by_ref().find(|line| opens(line)).is_none() {
        return Vec::new();
    }
    let mut declared = Vec::new();
    for line in lines {
        if !line.starts_with(".param") {
            break;
        }
        let mut words = line.split_whitespace();
        let align = words
            .by_ref()
            .skip_while(|w| *w != ".align")
            .nth(1)
            .and_then(|a| a.parse().ok());
        declared.push(align);
    }
    declared
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .global .align 1 .b8 maps__dlmd_param_align[4] = {64, 64};
.visible .global .align 1 .b8 late__dlmd_param_align[3] = {0, 0, 64};
.visible .global .align 1 .b8 plain__dlmd_param_align[2];
.visible .entry maps(
\t.param .align 64 .b8 maps_param_0[176],
\t.param .align 16 .b8 maps_param_1[176],
\t.param .f32 maps_param_2,
\t.param .u8 maps_param_3
)
{
\tret;
}
.visible .entry late(
\t.param .f32 late_param_0,
\t.param .f32 late_param_1,
\t.param .align 64 .b8 late_param_2[208]
)
{
\tret;
}
.visible .entry plain(
\t.param .u64 plain_param_0,
\t.param .u64 plain_param_1
)
{
\tret;
}
";

    #[test]
    fn a_parameter_read_in_place_must_be_declared_64_aligned() {
        let found = misaligned_params(PTX);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found["maps"],
            Misaligned {
                param: 1,
                needed: 64,
                declared: 16
            }
        );
        // Every parameter of `late` and `plain` is declared as it needs.
        let fixed = PTX.replace(".align 16 .b8 maps_param_1", ".align 64 .b8 maps_param_1");
        assert!(misaligned_params(&fixed).is_empty());
    }

    #[test]
    fn a_missing_declaration_is_misaligned() {
        // The entry point has fewer parameters than the global names.
        let ptx = ".visible .global .align 1 .b8 k__dlmd_param_align[2] = {0, 64};\n\
                   .visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n}\n";
        let expected = Misaligned {
            param: 1,
            needed: 64,
            declared: 0,
        };
        assert_eq!(misaligned_params(ptx)["k"], expected);
        // No entry point at all.
        let ptx = ".visible .global .align 1 .b8 k__dlmd_param_align[1] = {64};\n";
        assert_eq!(misaligned_params(ptx)["k"].declared, 0);
        // A scalar declared without `.align`.
        let ptx = ".visible .global .align 1 .b8 k__dlmd_param_align[1] = {64};\n\
                   .visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n}\n";
        assert_eq!(misaligned_params(ptx)["k"].param, 0);
    }

    #[test]
    fn globals_are_read_in_every_form_llvm_writes() {
        let line = ".visible .global .align 1 .b8 k__dlmd_param_align[3] = {0, 64};";
        assert_eq!(needed_alignments(line), Some(("k", vec![0, 64, 0])));
        let line = ".visible .global .align 1 .b8 k__dlmd_param_align[2];";
        assert_eq!(needed_alignments(line), Some(("k", vec![0, 0])));
        // More bytes than the array holds, or not bytes: 64 everywhere, which declarations
        // then answer for.
        let line = ".visible .global .align 1 .b8 k__dlmd_param_align[1] = {0, 64};";
        assert_eq!(needed_alignments(line), Some(("k", vec![64])));
        let line = ".visible .global .align 1 .b8 k__dlmd_param_align[1] = {-1};";
        assert_eq!(needed_alignments(line), Some(("k", vec![64])));
        for other in [
            ".visible .global .align 8 .b8 k__dlmd_signature[8] = {1, 2};",
            ".visible .global .align 1 .b8 k__dlmd_param_align = {64};",
            ".global .align 1 .b8 k__dlmd_param_align[1] = {64};",
        ] {
            assert_eq!(needed_alignments(other), None, "{other}");
        }
    }

    #[test]
    fn entry_points_are_told_apart_by_their_whole_name() {
        let ptx = ".visible .entry kk(\n\t.param .align 64 .b8 kk_param_0[176]\n)\n\
                   .visible .entry k(\n\t.param .align 16 .b8 k_param_0[176]\n)\n";
        assert_eq!(declared_alignments(ptx, "k"), [Some(16)]);
        assert_eq!(declared_alignments(ptx, "kk"), [Some(64)]);
        assert!(declared_alignments(ptx, "kkk").is_empty());
    }
}
