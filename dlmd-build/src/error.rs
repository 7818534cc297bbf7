//! Why the PTX could not be built: [`BuildError`], and what each says to do.

use crate::{ARCHES, BASE_TARGET, MIN_NIGHTLY_DATE, MODE_ENV, TARGET, log};
use std::fmt;
use std::path::PathBuf;

/// Why the PTX could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// A variable cargo gives build scripts is missing.
    Env(&'static str),
    /// The nightly toolchain (or its `rust-src`) is not installed.
    Toolchain {
        /// What is missing.
        missing: String,
        /// The command that installs it.
        install: String,
    },
    /// The nested compilation failed; its output is in `log`.
    Compile {
        /// What the compiler printed.
        log: String,
    },
    /// The PTX calls functions it does not define (`.extern .func`), or names variables it does
    /// not define: the driver could not load it.
    NotSelfContained {
        /// The PTX file.
        ptx: PathBuf,
        /// The undefined functions.
        externs: Vec<String>,
    },
    /// The toolchain is older than the compiler fixes that keep a barrier one barrier: before
    /// them, rustc could copy `bar.sync` into the arms of a branch (rust#137086), and a block
    /// whose threads took different arms would wait forever.
    OldToolchain {
        /// The toolchain.
        toolchain: String,
        /// Its commit date, as `rustc -vV` prints it (`YYYY-MM-DD`).
        date: String,
    },
    /// [`PtxBuild::arch`](crate::PtxBuild::arch) names an architecture rustc's NVPTX target
    /// does not know (one of [`ARCHES`](crate::ARCHES) is needed).
    Arch(String),
    /// [`PtxBuild::ptx_isa`](crate::PtxBuild::ptx_isa) asks for a PTX ISA version rustc's NVPTX
    /// target does not write (it writes 7.0 to 7.8, 8.0 to 8.8, and 9.0).
    PtxIsa((u32, u32)),
    /// [`PtxBuild::ptx_isa`](crate::PtxBuild::ptx_isa) asks for a PTX ISA version older than the
    /// architecture needs.
    PtxIsaTooOld {
        /// The architecture.
        arch: String,
        /// The version asked for.
        isa: (u32, u32),
        /// The oldest version the architecture accepts.
        needs: (u32, u32),
    },
    /// `DLMD_PTX` has a value other than `build`, `skip` and `prebuilt`.
    Mode(String),
    /// `DLMD_PTX=prebuilt`, for a crate whose build script names no prebuilt PTX.
    NoPrebuilt(String),
    /// The specification of the kernels' target ([`TARGET`](crate::TARGET)) could not be
    /// derived from the one rustc prints for [`BASE_TARGET`](crate::BASE_TARGET).
    TargetSpec(String),
    /// Reading or writing a file, or starting a program, failed.
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Env(name) => write!(f, "{name} is not set: call dlmd-build from a build script"),
            BuildError::Toolchain { missing, install } => {
                write!(f, "building kernels needs {missing}; install it with `{install}`")
            }
            BuildError::Compile { log } => {
                let needing_std = log::needing_std(log);
                if !needing_std.is_empty() {
                    write!(f, "{}\n\n", log::explain_std(&needing_std))?;
                }
                if log::names_atomics(log) {
                    write!(f, "{}\n\n", log::explain_atomics())?;
                }
                let refused = log::refused_features(log);
                if !refused.is_empty() {
                    write!(f, "{}\n\n", log::explain_features(&refused))?;
                }
                write!(f, "compiling the kernels for {TARGET} failed:\n{}", log::readable(log))
            }
            BuildError::NotSelfContained { ptx, externs } => write!(
                f,
                "{} calls functions it does not define, which the CUDA driver cannot load: {}",
                ptx.display(),
                externs.join(", ")
            ),
            BuildError::OldToolchain { toolchain, date } => write!(
                f,
                "the {toolchain} toolchain is from {date}, before rustc kept GPU barriers out of divergent \
                 branches (rust#149637, rust#153995): a kernel's barrier could hang its block. Update it \
                 (`rustup update {toolchain}`) or pin one from {MIN_NIGHTLY_DATE} or later"
            ),
            BuildError::Arch(arch) => {
                let known: Vec<&str> = ARCHES.iter().map(|&(name, _)| name).collect();
                write!(
                    f,
                    "`{arch}` is not a GPU architecture rustc's NVPTX target knows; `PtxBuild::arch` takes one \
                     of: {}",
                    known.join(", ")
                )
            }
            BuildError::PtxIsa((major, minor)) => write!(
                f,
                "PTX ISA {major}.{minor} is not a version rustc's NVPTX target writes; `PtxBuild::ptx_isa` \
                 takes 7.0 to 7.8, 8.0 to 8.8 or 9.0 (or leave it out: the architecture's oldest is the default)"
            ),
            BuildError::PtxIsaTooOld { arch, isa, needs } => write!(
                f,
                "PTX ISA {}.{} is too old for {arch}, which needs {}.{} or later: ask for a later one with \
                 `PtxBuild::ptx_isa`, or leave it out (the default is the oldest {arch} accepts)",
                isa.0, isa.1, needs.0, needs.1
            ),
            BuildError::Mode(value) => write!(
                f,
                "{MODE_ENV}={value}: expected `build` (the default), `skip` (no PTX: for `cargo check` \
                 and editors; loading the kernels then fails) or `prebuilt` (the PTX the crate ships, \
                 named by `PtxBuild::prebuilt`)"
            ),
            BuildError::NoPrebuilt(name) => write!(
                f,
                "{MODE_ENV}=prebuilt, but the build script of {name} names no prebuilt PTX: ship one \
                 and name it with `PtxBuild::prebuilt(\"kernels.ptx\")`, or build the kernels \
                 ({MODE_ENV}=build)"
            ),
            BuildError::TargetSpec(why) => write!(
                f,
                "the kernels' target ({TARGET}, {BASE_TARGET} without atomics) could not be made: {why}"
            ),
            BuildError::Io(path, e) => write!(f, "{}: {e}", path.display()),
        }
    }
}

impl std::error::Error for BuildError {}
