//! Parameters read in place: a kernel's TMA tensor maps, which the copy engine reads from the
//! kernel's parameter space by address, and which must lie 64 bytes aligned there. rustc
//! declares no parameter above 16; `dlmd-build` writes `.align 64` into the entry point where
//! `#[dlmd::kernel]` says a parameter needs it. A launcher knows from its parameters' types
//! which need it, and a launch checks the module's declarations against that: a kernel whose
//! declaration lacks it (PTX from another build) is refused, instead of faulting on the device.

use std::collections::HashMap;

/// A parameter declared with less alignment than its kernel needs: its PTX index, the
/// alignment needed and the one declared (0 where the entry point does not declare it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Misaligned {
    pub param: usize,
    pub needed: u32,
    pub declared: u32,
}

/// The alignment each entry point of `ptx` declares of its parameters, by kernel name and PTX
/// index: `Some(A)` for `.param .align A …`, `None` for a parameter declared without one.
pub(super) fn declared_alignments(ptx: &str) -> HashMap<String, Vec<Option<u32>>> {
    let mut entries = HashMap::new();
    let mut current: Option<(String, Vec<Option<u32>>)> = None;
    for line in ptx.lines().map(str::trim) {
        if let Some(name) = entry_name(line) {
            if let Some((kernel, params)) = current.take() {
                entries.insert(kernel, params);
            }
            current = Some((name.to_string(), Vec::new()));
            continue;
        }
        let Some((_, params)) = current.as_mut() else { continue };
        if let Some(rest) = line.strip_prefix(".param") {
            // Only the parameter's own alignment, the word after `.param`.
            let mut words = rest.split_whitespace();
            let align = match (words.next(), words.next()) {
                (Some(".align"), Some(a)) => a.parse().ok(),
                _ => None,
            };
            params.push(align);
        } else if let Some((kernel, params)) = current.take() {
            entries.insert(kernel, params);
        }
    }
    if let Some((kernel, params)) = current {
        entries.insert(kernel, params);
    }
    entries
}

/// The first parameter of a kernel that needs `needed[J]` bytes of alignment (0: none asked)
/// which its entry point, whose declarations are `declared`, declares with less.
pub(super) fn first_misaligned(needed: &[u8], declared: Option<&[Option<u32>]>) -> Option<Misaligned> {
    needed.iter().enumerate().find_map(|(param, &needed)| {
        let declared = declared.and_then(|d| d.get(param).copied().flatten()).unwrap_or(0);
        (needed != 0 && declared < u32::from(needed)).then_some(Misaligned {
            param,
            needed: u32::from(needed),
            declared,
        })
    })
}

/// The kernel an `.entry` line starts (`.visible .entry NAME(`), if it starts one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.split(".entry").nth(1)?.trim_start();
    let end = rest.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .global .align 1 .b8 maps__dlmd_param_align[4] = {64, 64};
.visible .entry maps(
\t.param .align 64 .b8 maps_param_0[176],
\t.param .align 16 .b8 maps_param_1[176],
\t.param .f32 maps_param_2,
\t.param .u64 .ptr .global .align 64 maps_param_3
)
{
\tret;
}
.visible .entry mapsmaps(
\t.param .align 64 .b8 mapsmaps_param_0[208]
)
{
\tret;
}
.visible .entry none()
{
\tret;
}
";

    #[test]
    fn each_entry_points_declarations_are_read_by_index() {
        let declared = declared_alignments(PTX);
        assert_eq!(declared["maps"], [Some(64), Some(16), None, None]);
        assert_eq!(declared["mapsmaps"], [Some(64)]);
        assert!(declared["none"].is_empty());
        assert_eq!(declared.len(), 3);
    }

    #[test]
    fn a_parameter_read_in_place_must_be_declared_64_aligned() {
        let declared = declared_alignments(PTX);
        let maps = declared.get("maps").map(Vec::as_slice);
        assert_eq!(first_misaligned(&[64, 0, 0, 0], maps), None);
        assert_eq!(
            first_misaligned(&[64, 64, 0, 0], maps),
            Some(Misaligned {
                param: 1,
                needed: 64,
                declared: 16
            })
        );
        // A pointer's pointee alignment is not the parameter's.
        assert_eq!(first_misaligned(&[0, 0, 0, 64], maps).map(|m| m.declared), Some(0));
        // Past the declarations, or no entry point at all: declared with none.
        assert_eq!(first_misaligned(&[0, 0, 0, 0, 64], maps).map(|m| m.param), Some(4));
        assert_eq!(first_misaligned(&[64], None).map(|m| m.declared), Some(0));
        assert_eq!(first_misaligned(&[], None), None);
    }
}
