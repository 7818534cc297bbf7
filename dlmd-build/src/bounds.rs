//! Launch bounds: what a cooperative kernel declares of its blocks (the `NAME__dlmd_launch_bounds`
//! global that `#[dlmd::kernel]` emits: the block's threads, and the blocks each multiprocessor
//! must hold), written into its PTX entry point as `.reqntid` and `.minnctapersm`, which is what
//! CUDA C++'s `__launch_bounds__` makes. `ptxas` then knows the block's size, and keeps to the
//! registers that let that many blocks share a multiprocessor.

/// The suffix of the globals that carry a kernel's launch bounds.
const SUFFIX: &str = "__dlmd_launch_bounds";

/// `ptx` with each kernel's launch bounds written into its entry point, before its body.
/// Kernels without the global, and bounds that are not two `u32` (which `#[dlmd::kernel]` never
/// emits), are left as they are.
pub fn with_launch_bounds(ptx: &str) -> String {
    let bounds: Vec<(&str, [u32; 2])> = ptx.lines().filter_map(declared_bounds).collect();
    if bounds.is_empty() {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + bounds.len() * 48);
    let mut pending: Option<[u32; 2]> = None;
    for line in ptx.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(name) = entry_name(trimmed) {
            pending = bounds.iter().find(|(kernel, _)| *kernel == name).map(|(_, b)| *b);
        }
        if trimmed == "{"
            && let Some([threads, blocks]) = pending.take()
            && threads > 0
        {
            out.push_str(&format!(".reqntid {threads}, 1, 1\n"));
            if blocks > 0 {
                out.push_str(&format!(".minnctapersm {blocks}\n"));
            }
        }
        out.push_str(line);
    }
    out
}

/// The kernel an `.entry` line starts (`.visible .entry NAME(`), if it starts one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.split(".entry").nth(1)?.trim_start();
    let end = rest.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The kernel and its bounds, where `line` declares a launch-bounds global:
/// `.visible .global .align 4 .b8 NAME__dlmd_launch_bounds[8] = {0, 1, 0, 0, 2};` (two
/// little-endian `u32`, trailing zeros left out).
fn declared_bounds(line: &str) -> Option<(&str, [u32; 2])> {
    let line = line.trim();
    if !line.starts_with(".visible .global") {
        return None;
    }
    let (declaration, value) = line.split_once('=')?;
    let symbol = declaration.split_whitespace().last()?;
    let kernel = symbol.strip_suffix("[8]")?.strip_suffix(SUFFIX)?;
    let bytes: Vec<u8> = value
        .trim()
        .strip_prefix('{')?
        .strip_suffix("};")?
        .split(',')
        .map(|b| b.trim().parse().ok())
        .collect::<Option<_>>()?;
    // LLVM leaves out the trailing zero bytes of an initialiser (`{0, 1}` is 256 and 0).
    if bytes.len() > 8 {
        return None;
    }
    let mut padded = [0u8; 8];
    padded[..bytes.len()].copy_from_slice(&bytes);
    let bytes = padded;
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((kernel, [word(0), word(4)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 8.0
.target sm_70
.visible .global .align 4 .b8 tiled__dlmd_launch_bounds[8] = {0, 1, 0, 0, 2, 0, 0, 0};
.visible .global .align 4 .b8 any__dlmd_launch_bounds[8] = {0, 4};
.visible .global .align 8 .b8 tiled__dlmd_signature[8] = {1, 2, 3, 4, 5, 6, 7, 8};
\t// .globl\ttiled
.visible .entry tiled(
\t.param .align 8 .b8 tiled_param_0[64]
)
{
\tret;
}
.visible .entry plain(
\t.param .b64 plain_param_0
)
{
\tret;
}
.visible .entry any()
{
\tret;
}
";

    #[test]
    fn each_kernel_gets_its_own_bounds_before_its_body() {
        let out = with_launch_bounds(PTX);
        assert!(
            out.contains("tiled_param_0[64]\n)\n.reqntid 256, 1, 1\n.minnctapersm 2\n{\n"),
            "{out}"
        );
        // No blocks per multiprocessor asked: the block's size alone.
        assert!(out.contains(".visible .entry any()\n.reqntid 1024, 1, 1\n{\n"), "{out}");
        // A kernel without bounds (an element-wise one) is left alone.
        assert!(out.contains("plain_param_0\n)\n{\n"), "{out}");
        assert_eq!(out.matches(".reqntid").count(), 2);
        assert_eq!(out.lines().count(), PTX.lines().count() + 3);
    }

    #[test]
    fn ptx_without_bounds_is_unchanged() {
        let ptx = ".visible .entry k(\n)\n{\n\tret;\n}\n";
        assert_eq!(with_launch_bounds(ptx), ptx);
    }

    #[test]
    fn malformed_bounds_are_ignored() {
        for line in [
            ".visible .global .align 4 .b8 k__dlmd_launch_bounds[8] = {0, 1, 0, 0, 2, 0, 0, 0, 0};",
            ".visible .global .align 4 .b8 k__dlmd_launch_bounds[8] = {0, -1};",
            ".visible .global .align 4 .b8 k__dlmd_launch_bounds[8] = {0, 1, 0, 0, 2, 0, 0, 300};",
            ".visible .global .align 4 .b8 k__dlmd_launch_bounds[4] = {0, 1, 0, 0};",
            ".visible .global .align 4 .b8 k__dlmd_signature[8] = {0, 1, 0, 0, 2, 0, 0, 0};",
        ] {
            assert_eq!(declared_bounds(line), None, "{line}");
        }
        assert_eq!(
            declared_bounds(".visible .global .align 4 .b8 k__dlmd_launch_bounds[8] = {32, 0, 0, 0, 1, 0, 0, 0};"),
            Some(("k", [32, 1]))
        );
        assert_eq!(
            declared_bounds(".visible .global .align 4 .b8 k__dlmd_launch_bounds[8] = {0, 1};"),
            Some(("k", [256, 0]))
        );
    }

    #[test]
    fn entry_lines_name_their_kernel() {
        assert_eq!(entry_name(".visible .entry tiled("), Some("tiled"));
        assert_eq!(entry_name(".visible .entry any()"), Some("any"));
        assert_eq!(entry_name(".entry"), None);
        assert_eq!(entry_name("\t.param .b64 p"), None);
    }
}
