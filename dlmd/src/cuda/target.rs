//! What a PTX module's header says it needs (`.version X.Y`, `.target sm_NN[a|f]`), and whether
//! a device and its driver give it: read before the module is handed to the driver, so that a
//! module the device cannot run, or the driver cannot compile, is a [`ModuleError`] that names
//! both sides. Pure text and numbers, no driver calls: the PTX is untrusted text, and every
//! malformed header is an error, never a panic.

use super::ModuleError;

/// Which devices PTX for an architecture runs on: the suffix of `sm_NN`, `sm_NNa`, `sm_NNf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// `sm_NN`: compute capability NN and every later one (the driver compiles it forward).
    Portable,
    /// `sm_NNa`: architecture-specific features, compute capability NN only.
    Specific,
    /// `sm_NNf`: family-specific features, NN's major version with a minor one at least NN's.
    Family,
}

/// The architecture a module's `.target` names: `sm_90a` is compute capability 9.0, specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arch {
    /// The compute capability, `(major, minor)`: `sm_121` is `(12, 1)`.
    pub capability: (u32, u32),
    /// Which devices beside that one run it.
    pub variant: Variant,
}

impl Arch {
    /// `sm_NN`, `sm_NNa` or `sm_NNf`, NN of two or three digits (its last the minor version).
    pub fn parse(name: &str) -> Option<Self> {
        let digits = name.strip_prefix("sm_")?;
        let (digits, variant) = match digits.as_bytes().last()? {
            b'a' => (&digits[..digits.len() - 1], Variant::Specific),
            b'f' => (&digits[..digits.len() - 1], Variant::Family),
            _ => (digits, Variant::Portable),
        };
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: u32 = digits.parse().ok()?;
        Some(Self {
            capability: (number / 10, number % 10),
            variant,
        })
    }

    /// Whether a device of compute capability `device` runs PTX for this architecture.
    pub fn runs_on(self, device: (u32, u32)) -> bool {
        match self.variant {
            Variant::Portable => device >= self.capability,
            Variant::Specific => device == self.capability,
            Variant::Family => device.0 == self.capability.0 && device.1 >= self.capability.1,
        }
    }

    /// Which devices run it, in words: "compute capability 9.0 only".
    pub fn rule(self) -> String {
        let (major, minor) = self.capability;
        match self.variant {
            Variant::Portable => format!("compute capability {major}.{minor} and later"),
            Variant::Specific => format!("compute capability {major}.{minor} only"),
            Variant::Family => format!("compute capability {major}.{minor} to {major}.9"),
        }
    }
}

/// What a PTX module's header says: its ISA version and its architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// `.version`'s `(major, minor)`.
    pub version: (u32, u32),
    /// `.target`'s architecture, as written (`sm_90a`).
    pub target: String,
    /// That architecture, read.
    pub arch: Arch,
}

/// The options `.target` may carry beside the architecture.
const TARGET_OPTIONS: &[&str] = &["texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"];

/// The directives of `ptx`, comments (`//` to the line's end, `/* … */`, which may span
/// lines) and blank lines left out, each trimmed: one a line.
fn directives(ptx: &str) -> impl Iterator<Item = String> {
    let mut in_block = false;
    ptx.lines().filter_map(move |line| {
        let mut clean = String::new();
        let mut rest = line;
        loop {
            if in_block {
                let Some(end) = rest.find("*/") else { break };
                rest = &rest[end + 2..];
                in_block = false;
                clean.push(' ');
            }
            match (rest.find("//"), rest.find("/*")) {
                (Some(line_comment), block) if block.is_none_or(|b| line_comment < b) => {
                    clean.push_str(&rest[..line_comment]);
                    break;
                }
                (_, Some(block)) => {
                    clean.push_str(&rest[..block]);
                    rest = &rest[block + 2..];
                    in_block = true;
                }
                _ => {
                    clean.push_str(rest);
                    break;
                }
            }
        }
        let text = clean.trim();
        (!text.is_empty()).then(|| text.to_string())
    })
}

/// Reads `.version MAJOR.MINOR` (one to three digits each).
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('.')?;
    let number = |s: &str| {
        ((1..=3).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((number(major)?, number(minor)?))
}

/// The header of `ptx`: its first directive is `.version X.Y`, its second `.target`, with one
/// `sm_NN[a|f]` among the target's comma-separated entries, as the PTX ISA has it.
pub(crate) fn parse_header(ptx: &str) -> Result<Header, ModuleError> {
    let malformed = |why: &'static str| ModuleError::Header(why);
    if ptx.contains('\0') {
        return Err(malformed("the text holds a NUL byte, which ends PTX for the driver"));
    }
    let mut directives = directives(ptx);
    let Some(first) = directives.next() else {
        return Err(malformed("it is empty or only comments, with no `.version`"));
    };
    let version = match first.split_whitespace().collect::<Vec<_>>()[..] {
        [".version", number] => parse_version(number).ok_or(ModuleError::Header(
            "`.version` is not followed by a version MAJOR.MINOR",
        ))?,
        [".version", ..] => return Err(malformed("`.version` is not followed by a version MAJOR.MINOR")),
        _ => return Err(malformed("its first directive is not `.version`")),
    };
    let Some(second) = directives.next() else {
        return Err(ModuleError::NoTarget);
    };
    let Some(entries) = second.strip_prefix(".target") else {
        return Err(ModuleError::NoTarget);
    };
    if !entries.starts_with(char::is_whitespace) {
        return Err(ModuleError::NoTarget);
    }
    let mut target = None;
    for entry in entries.split(',').map(str::trim) {
        if TARGET_OPTIONS.contains(&entry) {
            continue;
        }
        let arch = Arch::parse(entry).ok_or(ModuleError::Header(
            "`.target` has an entry that is neither an architecture sm_NN nor a target option",
        ))?;
        if target.replace((entry, arch)).is_some() {
            return Err(malformed("`.target` names more than one architecture"));
        }
    }
    let Some((name, arch)) = target else {
        return Err(ModuleError::NoTarget);
    };
    Ok(Header {
        version,
        target: name.into(),
        arch,
    })
}

/// The first CUDA driver (as `cuDriverGetVersion` reports it: 12.8 is 12080) to compile each
/// PTX ISA version, oldest first (the PTX ISA's release history).
const DRIVER_PTX_ISA: &[(i32, (u32, u32))] = &[
    (9000, (6, 0)),
    (9010, (6, 1)),
    (9020, (6, 2)),
    (10000, (6, 3)),
    (10010, (6, 4)),
    (10020, (6, 5)),
    (11000, (7, 0)),
    (11010, (7, 1)),
    (11020, (7, 2)),
    (11030, (7, 3)),
    (11040, (7, 4)),
    (11050, (7, 5)),
    (11060, (7, 6)),
    (11070, (7, 7)),
    (11080, (7, 8)),
    (12000, (8, 0)),
    (12010, (8, 1)),
    (12020, (8, 2)),
    (12030, (8, 3)),
    (12040, (8, 4)),
    (12050, (8, 5)),
    (12070, (8, 6)),
    (12080, (8, 7)),
    (12090, (8, 8)),
    (13000, (9, 0)),
    (13010, (9, 1)),
];

/// The newest PTX ISA a driver of CUDA `driver` (`cuDriverGetVersion`'s number) compiles. A
/// driver newer than the table's newest compiles at least what that one does, and CUDA 13's
/// releases each brought ISA 9.minor: one of CUDA 13.minor (or later) is taken to compile
/// 9.minor (or its major version less 4). A driver older than CUDA 9.0 is taken to compile 5.0.
pub(crate) fn driver_ptx_isa(driver: i32) -> (u32, u32) {
    let known = DRIVER_PTX_ISA
        .iter()
        .rev()
        .find(|&&(first, _)| driver >= first)
        .map_or((5, 0), |&(_, isa)| isa);
    let newest = DRIVER_PTX_ISA[DRIVER_PTX_ISA.len() - 1];
    if driver > newest.0 {
        let (major, minor) = (driver / 1000, (driver % 1000) / 10);
        let extrapolated = (u32::try_from(major - 4).unwrap_or(0), u32::try_from(minor).unwrap_or(0));
        return known.max(extrapolated);
    }
    known
}

/// The CUDA version a driver's number names: 12080 is `(12, 8)`.
pub(crate) fn cuda_version(driver: i32) -> (i32, i32) {
    (driver / 1000, (driver % 1000) / 10)
}

/// Whether a device of compute capability `device`, with a driver of CUDA `driver`
/// (`cuDriverGetVersion`'s number), can run the module whose header is `header`.
pub(crate) fn check(header: &Header, device: (i32, i32), driver: i32) -> Result<(), ModuleError> {
    let capability = (
        u32::try_from(device.0).unwrap_or(0),
        u32::try_from(device.1).unwrap_or(0),
    );
    if !header.arch.runs_on(capability) {
        return Err(ModuleError::Arch {
            module: header.target.clone(),
            device,
        });
    }
    let accepts = driver_ptx_isa(driver);
    if header.version > accepts {
        return Err(ModuleError::PtxIsa {
            module: header.version,
            driver: accepts,
            cuda: cuda_version(driver),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLVM: &str = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.0\n.target sm_90a\n.address_size 64\n\n\t// .globl\tk\n.visible .entry k()\n{\n\tret;\n}\n";

    fn header(ptx: &str) -> Result<Header, ModuleError> {
        parse_header(ptx)
    }

    #[test]
    fn headers_as_llvm_and_nvrtc_write_them_are_read() {
        let h = header(LLVM).unwrap();
        assert_eq!(h.version, (8, 0));
        assert_eq!(h.target, "sm_90a");
        assert_eq!(
            h.arch,
            Arch {
                capability: (9, 0),
                variant: Variant::Specific
            }
        );
        let nvrtc = "//\n// Generated by NVIDIA NVVM Compiler\n//\n// Compiler Build ID: CL-1\n// Cuda compilation tools, release 12.4, V12.4.131\n// Based on NVVM 7.0.1\n//\n\n.version 8.4\n.target sm_80\n.address_size 64\n";
        let h = header(nvrtc).unwrap();
        assert_eq!((h.version, h.target.as_str()), ((8, 4), "sm_80"));
        // Options beside the architecture, comments, CRLF and block comments.
        let h = header("/* a\n b */ .version 7.8 // x\r\n.target sm_120f, debug /* y */\r\n").unwrap();
        assert_eq!((h.version, h.target.as_str()), ((7, 8), "sm_120f"));
        assert_eq!(
            h.arch,
            Arch {
                capability: (12, 0),
                variant: Variant::Family
            }
        );
        let h = header(".version 9.0\n.target texmode_independent, sm_121\n").unwrap();
        assert_eq!(
            h.arch,
            Arch {
                capability: (12, 1),
                variant: Variant::Portable
            }
        );
    }

    #[test]
    fn malformed_headers_are_named_errors() {
        let cases = [
            "",
            "// only a comment\n",
            "/* never closed\n.version 8.0\n.target sm_80\n",
            ".target sm_80\n.version 8.0\n",
            ".version\n.target sm_80\n",
            ".version 8\n.target sm_80\n",
            ".version 8.\n.target sm_80\n",
            ".version .0\n.target sm_80\n",
            ".version 8.0.1\n.target sm_80\n",
            ".version 8.0 extra\n.target sm_80\n",
            ".version -8.0\n.target sm_80\n",
            ".version 99999999999.0\n.target sm_80\n",
            ".version 8.0\n.target sm_80, sm_90\n",
            ".version 8.0\n.target sm_80, wat\n",
            ".version 8.0\n.target sm_8\n",
            ".version 8.0\n.target sm_8000\n",
            ".version 8.0\n.target sm_80b\n",
            ".version 8.0\n.target sm_\n",
            ".version 8.0\n.target sm_a\n",
            ".version 8.0\n.target compute_80\n",
            ".version 8.0\n.target sm_٨٠\n",
            ".version 8.0\n.target sm_80\0\n",
            ".versión 8.0\n",
        ];
        for ptx in cases {
            assert!(
                matches!(header(ptx), Err(ModuleError::Header(_))),
                "{ptx:?}: {:?}",
                header(ptx)
            );
        }
        // No `.target` where the header should have it: whether the device runs it is unknown.
        for ptx in [
            ".version 8.0\n",
            ".version 8.0\n.address_size 64\n.target sm_80\n",
            ".version 8.0\n.targetsm_80\n",
            ".version 8.0\n.target\n",
            ".version 8.0\n.target debug\n",
        ] {
            assert!(
                matches!(header(ptx), Err(ModuleError::NoTarget)),
                "{ptx:?}: {:?}",
                header(ptx)
            );
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe arithmetic or parsing alone: run natively")]
    fn arbitrary_text_never_panics() {
        // A deterministic spread of short texts over the characters a header is made of.
        let alphabet: Vec<char> = ".versiontargm_0189af /*\n\r,\u{0}é".chars().collect();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 40) as usize;
            let mut s = String::new();
            let mut x = state;
            for _ in 0..len {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                s.push(alphabet[(x >> 33) as usize % alphabet.len()]);
            }
            let _ = header(&s);
            let _ = header(&format!(".version 8.0\n.target {s}\n"));
            let _ = header(&format!(".version {s}\n.target sm_80\n"));
        }
    }

    #[test]
    fn architectures_run_where_their_suffix_says() {
        let arch = |name| Arch::parse(name).unwrap();
        assert!(arch("sm_80").runs_on((8, 0)) && arch("sm_80").runs_on((9, 0)) && arch("sm_80").runs_on((12, 1)));
        assert!(!arch("sm_80").runs_on((7, 5)));
        assert!(arch("sm_90a").runs_on((9, 0)));
        assert!(!arch("sm_90a").runs_on((10, 0)) && !arch("sm_90a").runs_on((8, 9)));
        assert!(!arch("sm_100a").runs_on((9, 0)));
        assert!(arch("sm_100f").runs_on((10, 0)) && arch("sm_100f").runs_on((10, 3)));
        assert!(!arch("sm_100f").runs_on((12, 0)) && !arch("sm_103f").runs_on((10, 0)));
        assert!(arch("sm_120").runs_on((12, 1)) && !arch("sm_121").runs_on((12, 0)));
        assert_eq!(arch("sm_90a").rule(), "compute capability 9.0 only");
    }

    #[test]
    fn the_driver_version_gives_the_newest_ptx_isa() {
        assert_eq!(driver_ptx_isa(11080), (7, 8));
        assert_eq!(driver_ptx_isa(12000), (8, 0));
        assert_eq!(driver_ptx_isa(12040), (8, 4));
        assert_eq!(driver_ptx_isa(12060), (8, 5));
        assert_eq!(driver_ptx_isa(12080), (8, 7));
        assert_eq!(driver_ptx_isa(12090), (8, 8));
        assert_eq!(driver_ptx_isa(13000), (9, 0));
        assert_eq!(driver_ptx_isa(13010), (9, 1));
        // Newer than the table: at least its newest, and 9.minor for CUDA 13.minor.
        assert_eq!(driver_ptx_isa(13020), (9, 2));
        assert_eq!(driver_ptx_isa(14000), (10, 0));
        assert_eq!(driver_ptx_isa(8000), (5, 0));
        assert_eq!(driver_ptx_isa(0), (5, 0));
        assert_eq!(driver_ptx_isa(i32::MIN), (5, 0));
        let _ = driver_ptx_isa(i32::MAX);
        assert_eq!(cuda_version(12080), (12, 8));
    }

    #[test]
    fn the_check_names_what_the_device_or_driver_lacks() {
        let h = header(".version 8.0\n.target sm_100a\n").unwrap();
        let e = check(&h, (9, 0), 12040).unwrap_err();
        assert!(
            matches!(&e, ModuleError::Arch { module, device: (9, 0) } if module == "sm_100a"),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("sm_100a") && message.contains("9.0") && message.contains("10.0 only"),
            "{message}"
        );
        let h = header(".version 8.0\n.target sm_80\n").unwrap();
        assert!(check(&h, (9, 0), 12040).is_ok());
        let e = check(&h, (9, 0), 11080).unwrap_err();
        assert!(
            matches!(
                e,
                ModuleError::PtxIsa {
                    module: (8, 0),
                    driver: (7, 8),
                    cuda: (11, 8)
                }
            ),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("8.0") && message.contains("7.8") && message.contains("11.8"),
            "{message}"
        );
        let h = header(".version 99.0\n.target sm_80\n").unwrap();
        assert!(matches!(
            check(&h, (9, 0), 13000),
            Err(ModuleError::PtxIsa { module: (99, 0), .. })
        ));
        // Negative attributes from a broken driver are refused, not wrapped.
        assert!(check(&header(".version 7.0\n.target sm_70\n").unwrap(), (-1, -1), 12000).is_err());
    }
}
