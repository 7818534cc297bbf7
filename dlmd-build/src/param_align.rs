//! Parameters read in place: what `#[dlmd::kernel]` says of a kernel's PTX parameters that the
//! kernel reads by address (TMA tensor maps, read where the launch puts them, as CUDA C++ reads
//! a `__grid_constant__ CUtensorMap`), in the `NAME__dlmd_param_align` global (a byte per
//! parameter: 64, or 0 for those it leaves as rustc declares them), written into the entry
//! point as `.align 64`. rustc declares no parameter more than 16-byte aligned, and the copy
//! engine faults on a map that is not 64-byte aligned; `dlmd::cuda::Kernels` refuses to
//! launch a kernel whose declaration lacks it.

/// The suffix of the globals that carry the alignment each parameter of a kernel needs.
const SUFFIX: &str = "__dlmd_param_align";

/// `ptx` with each parameter that a kernel's alignment global asks 64 bytes for declared
/// `.align 64`. Parameters declared without `.align` (scalars, which nothing reads in place)
/// and globals of another form are left as they are: a launch then refuses the kernel.
pub fn with_param_alignment(ptx: &str) -> String {
    let needs: Vec<(&str, Vec<usize>)> = ptx.lines().filter_map(aligned_params).collect();
    if needs.iter().all(|(_, params)| params.is_empty()) {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut current: Option<&[usize]> = None;
    for line in ptx.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(name) = entry_name(trimmed) {
            current = needs
                .iter()
                .find(|(kernel, _)| *kernel == name)
                .map(|(_, p)| p.as_slice());
            out.push_str(line);
            continue;
        }
        if let Some(params) = current {
            if !trimmed.starts_with(".param") {
                current = None;
            } else if let Some(rewritten) = param_index(trimmed)
                .filter(|index| params.contains(index))
                .and_then(|_| aligned_64(line))
            {
                out.push_str(&rewritten);
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

/// `line` (a `.param .align A .b8 NAME_param_J[N]` declaration) with `.align 64`, where it
/// declares an alignment below 64.
fn aligned_64(line: &str) -> Option<String> {
    // Only the parameter's own alignment, right after `.param` (a pointer's `.ptr .align N`
    // is its pointee's).
    let indent = line.len() - line.trim_start().len();
    if !line[indent..].starts_with(".param .align ") {
        return None;
    }
    let at = indent + ".param .align ".len();
    let end = at + line[at..].find(char::is_whitespace)?;
    let align: u32 = line[at..end].parse().ok()?;
    (align < 64).then(|| format!("{}64{}", &line[..at], &line[end..]))
}

/// The PTX index `J` of the parameter a `.param` line declares (`…NAME_param_J[N],`).
fn param_index(line: &str) -> Option<usize> {
    let symbol = line.split_whitespace().last()?.trim_end_matches(',');
    let symbol = symbol.split('[').next()?;
    symbol.rsplit_once("_param_")?.1.parse().ok()
}

/// The kernel an `.entry` line starts (`.visible .entry NAME(`), if it starts one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.split(".entry").nth(1)?.trim_start();
    let end = rest.find(|c: char| c == '(' || c.is_whitespace()).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The kernel and the PTX indices of its parameters that need 64 bytes, where `line` declares
/// its alignment global: `.visible .global .align 1 .b8 NAME__dlmd_param_align[N] = {64, 0};`
/// (trailing zeros left out; no initializer where every byte is zero).
fn aligned_params(line: &str) -> Option<(&str, Vec<usize>)> {
    let line = line.trim();
    if !line.starts_with(".visible .global") {
        return None;
    }
    let declaration = line.split('=').next()?.trim().trim_end_matches(';');
    let symbol = declaration.split_whitespace().last()?;
    let kernel = symbol.split('[').next()?.strip_suffix(SUFFIX)?;
    let Some((_, value)) = line.split_once('=') else {
        return Some((kernel, Vec::new()));
    };
    let bytes = value.trim().strip_prefix('{')?.strip_suffix("};")?;
    let params = bytes
        .split(',')
        .map(str::trim)
        .enumerate()
        .filter(|(_, b)| *b == "64")
        .map(|(i, _)| i)
        .collect();
    Some((kernel, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .global .align 1 .b8 maps__dlmd_param_align[4] = {64, 0, 64};
.visible .global .align 1 .b8 plain__dlmd_param_align[1];
.visible .global .align 8 .b8 maps__dlmd_signature[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.visible .entry maps(
\t.param .align 16 .b8 maps_param_0[176],
\t.param .align 8 .b8 maps_param_1[80],
\t.param .align 16 .b8 maps_param_2[208],
\t.param .f32 maps_param_3
)
{
\tld.param.b64 %rd1, [maps_param_0+128];
\tret;
}
.visible .entry plain(
\t.param .align 16 .b8 plain_param_0[176]
)
{
\tret;
}
";

    #[test]
    fn parameters_read_in_place_are_declared_64_aligned() {
        let out = with_param_alignment(PTX);
        assert!(out.contains("\t.param .align 64 .b8 maps_param_0[176],\n"), "{out}");
        assert!(out.contains("\t.param .align 64 .b8 maps_param_2[208],\n"), "{out}");
        // The others, another kernel's of the same form, and the body are left as they were.
        assert!(out.contains("\t.param .align 8 .b8 maps_param_1[80],\n"), "{out}");
        assert!(out.contains("\t.param .align 16 .b8 plain_param_0[176]\n"), "{out}");
        assert!(out.contains("[maps_param_0+128]"), "{out}");
        assert_eq!((out.len(), out.matches(".align 64").count()), (PTX.len(), 2));
    }

    #[test]
    fn ptx_without_parameters_read_in_place_is_unchanged() {
        let ptx = ".visible .global .align 1 .b8 k__dlmd_param_align[2];\n\
                   .visible .entry k(\n\t.param .align 16 .b8 k_param_0[16]\n)\n{\n\tret;\n}\n";
        assert_eq!(with_param_alignment(ptx), ptx);
        let ptx = ".visible .entry k(\n)\n{\n\tret;\n}\n";
        assert_eq!(with_param_alignment(ptx), ptx);
    }

    #[test]
    fn declarations_are_read_as_ptx_writes_them() {
        assert_eq!(param_index(".param .align 16 .b8 k_param_12[176],"), Some(12));
        assert_eq!(param_index(".param .f32 my_param_kernel_param_3"), Some(3));
        assert_eq!(param_index(".param .f32 k"), None);
        assert_eq!(
            aligned_64("\t.param .align 16 .b8 k_param_0[176],\n").as_deref(),
            Some("\t.param .align 64 .b8 k_param_0[176],\n")
        );
        // Already 64 (or more), or no `.align` to raise: left alone.
        assert_eq!(aligned_64("\t.param .align 64 .b8 k_param_0[176],\n"), None);
        assert_eq!(aligned_64("\t.param .f32 k_param_0,\n"), None);
        assert_eq!(aligned_64("\t.param .u64 .ptr .global .align 16 k_param_0,\n"), None);
        assert_eq!(
            aligned_params(".visible .global .align 1 .b8 k__dlmd_param_align[3] = {0, 64};"),
            Some(("k", vec![1]))
        );
        assert_eq!(
            aligned_params(".visible .global .align 1 .b8 k__dlmd_launch_bounds[8] = {0, 64};"),
            None
        );
    }
}
