//! Compiles a crate of `#[dlmd::kernel]`s to self-contained PTX, from its build script.
//!
//! The kernel crate is compiled for `nvptx64-nvidia-cuda` without atomic types ([`TARGET`], a
//! target specification derived from rustc's, [why](#no-atomics)) by the nightly toolchain, with
//! `core` built from source (`-Zbuild-std=core`), panics that abort at once (`trap`), and every
//! function of its dependencies available to it, so the PTX calls nothing outside itself. The
//! host build stays on whatever toolchain builds it: only the PTX needs nightly.
//!
//! The nested build has the features of the build whose build script starts it (cargo's
//! `CARGO_CFG_FEATURE`, passed with `--no-default-features --features …`): a dependant that
//! turns a kernel crate's default feature off gets kernels built without it, as its launchers
//! are. A feature of the kernel crate must therefore build for `nvptx64` too (keep host-only
//! dependencies under `cfg(not(target_arch = "nvptx64"))`).
//!
//! LLVM's loop strength reduction is off (`-Cllvm-args=-disable-lsr`): on a GPU it turns the
//! index arithmetic of a kernel's loops into many 64-bit induction variables, each two
//! registers, and registers decide how many threads an SM keeps in flight (`benchmarks/` in the
//! repository has what it cost the example `add_index`).
//!
//! Every function a kernel calls is inlined where LLVM can (`-Cllvm-args=-inline-threshold=100000`):
//! a kernel's closures are its own code, and a call on the GPU passes their captures through
//! local memory; a call between a `wgmma` and its wait serialises the products.
//!
//! In the kernel crate's `build.rs`:
//!
//! ```no_run
//! // build.rs, in `fn main`:
//! dlmd_build::PtxBuild::from_env().arch("sm_70").build_or_exit();
//! ```
//!
//! and in its `lib.rs`, beside the kernels:
//!
//! ```text
//! #![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]
//!
//! /// The kernels' PTX, for `dlmd::cuda::Kernels::load`.
//! #[cfg(not(target_arch = "nvptx64"))]
//! pub const PTX: &str = dlmd::kernels_ptx!();
//! ```
//!
//! [`PtxBuild::arch`] chooses the architecture (`sm_80`, `sm_90a`, …, one of [`ARCHES`]) and
//! [`PtxBuild::ptx_isa`] the PTX ISA version (`.ptx_isa(8, 0)` for 8.0; by default the oldest
//! the architecture accepts); both are checked before anything is compiled, and a wrong one is
//! a [`BuildError`] that says what to write. `dlmd::cuda::Kernels::load` reads both back from
//! the PTX and refuses, by name, a module the device cannot run or the driver cannot compile:
//!
//! ```no_run
//! // Hopper's architecture-specific features (`sm_90a` runs on compute capability 9.0 only).
//! dlmd_build::PtxBuild::from_env().arch("sm_90a").ptx_isa(8, 0).build_or_exit();
//! ```
//!
//! The nightly toolchain and its `rust-src` component are what the machine needs beyond the
//! host toolchain (`rustup toolchain install nightly`, `rustup component add rust-src
//! --toolchain nightly`); nothing is downloaded at build time. A missing one is an error that
//! names the command to run.
//!
//! # No atomics
//!
//! A kernel's uniform code (a cooperative kernel's body, a warpgroup's role) takes the same
//! branches on every thread, so that each barrier and warp-wide instruction runs on all the
//! threads that must run it together. dlmd's types keep per-thread values out of that code; the
//! one thing they cannot see is state that a per-thread closure writes without capturing it
//! mutably and uniform code reads back. Safe Rust names two such kinds:
//!
//! - **an atomic**, a `static AtomicBool` or one that a `Fn + Sync` closure captures by
//!   reference, whose value may differ from thread to thread. The kernels' target has none. Its
//!   `max-atomic-width` is 0, so `core` defines no atomic type and a kernel that names one does
//!   not compile (the build's error says why); dlmd itself does not compile for an `nvptx64`
//!   target that has them. dlmd's own atomic operations on views (`Thread::atomic_add`, `Sums`)
//!   are instructions whose results reach per-thread code only;
//! - **a `#[thread_local]` static** of a `Cell` (nightly's `thread_local` feature), which a
//!   closure sets without capturing it. The kernel crate may turn on only the nightly features
//!   of [`KERNEL_FEATURES`] (`-Zallow-features`), which leave it out.
//!
//! The kernel crate's dependencies other than dlmd are trusted here as their `unsafe` code is: a
//! dependency, even one with no `unsafe`, could turn `thread_local` on for itself and lend safe
//! code a thread-local `Cell`.
//!
//! A tool that compiles a kernel crate itself (a linter, an editor) takes the same target from
//! [`kernel_target_spec`]:
//!
//! ```text
//! cargo +nightly clippy -Zbuild-std=core -Zjson-target-spec --target "$(path printed by kernel_target_spec)"
//! ```
#![deny(missing_docs)]

mod arch;
mod bounds;
mod dirs;
mod error;
mod log;
mod param_align;
mod target;
mod toolchain;

pub use arch::{ARCHES, min_ptx_isa};
pub use error::BuildError;
pub use target::{BASE_TARGET, TARGET};

use std::path::{Path, PathBuf};
use std::process::Command;

/// The architecture PTX is built for unless [`PtxBuild::arch`] says otherwise: `sm_70` (Volta),
/// which the driver compiles forward for every later GPU (Ampere `sm_80`, Hopper `sm_90`, …).
pub const DEFAULT_ARCH: &str = "sm_70";

/// The PTX file's name in `OUT_DIR`.
const PTX_FILE: &str = "kernels.ptx";

/// The variable that tells the kernel crate's compilation where its PTX is, for
/// `dlmd::kernels_ptx!()`.
pub const PTX_ENV: &str = "DLMD_KERNELS_PTX";

/// The variable that chooses what the build script does: `build` (the default) compiles the
/// kernels; `skip` writes no PTX, for `cargo check` and editors that need no kernels
/// (`Kernels::load` then says so); `prebuilt` takes the PTX the crate ships
/// ([`PtxBuild::prebuilt`]). On docs.rs (`DOCS_RS`) nothing is built either, nor in a host
/// build that type-checks kernel bodies (`--cfg dlmd_kernel_check`, `dlmd::kernel::check`).
pub const MODE_ENV: &str = "DLMD_PTX";

/// How the PTX file of a crate whose kernels were not built begins (then the reason); dlmd's
/// `Kernels::load` recognises it.
const NOT_BUILT: &str = "// dlmd-build: not built: ";

/// A kernel crate to compile to PTX.
#[derive(Clone, Debug)]
pub struct PtxBuild {
    manifest_dir: PathBuf,
    out_dir: PathBuf,
    name: String,
    arch: String,
    ptx_isa: Option<(u32, u32)>,
    toolchain: String,
    features: Vec<String>,
    target_dir: Option<PathBuf>,
    prebuilt: Option<PathBuf>,
}

/// The nightly features a kernel crate may turn on (`#![feature(…)]`); any other is refused
/// when its kernels are compiled. They are what kernels need: the PTX calling convention, inline
/// assembly and the GPU's intrinsics (none of which gives safe code mutable state), and the launch's dynamic shared
/// memory. Left out on purpose is `thread_local`: a `#[thread_local] static` of a `Cell` is
/// state of each thread that safe code writes in a per-thread closure and reads in uniform code
/// ([no atomics](crate#no-atomics) says why that must not be). The list is closed: a feature is
/// added here once it is known to give safe code no state shared between threads or kept by
/// each, so that no build script can open the guarantee.
pub const KERNEL_FEATURES: [&str; 6] = [
    "abi_ptx",
    "asm_experimental_arch",
    "stdarch_nvptx",
    "core_intrinsics",
    "gpu_intrinsics",
    "gpu_launch_sized_workgroup_mem",
];

/// The first nightly with both fixes for barriers in divergent code: MIR jump threading off
/// for GPU targets (rust#149637) and every GPU function `convergent` (rust#153995).
pub const MIN_NIGHTLY_DATE: &str = "2026-04-15";

impl PtxBuild {
    /// The crate whose build script this is, from cargo's variables (`CARGO_MANIFEST_DIR`,
    /// `CARGO_PKG_NAME`, `OUT_DIR`).
    ///
    /// # Panics
    ///
    /// Outside a build script, where those are not set; [`try_from_env`](Self::try_from_env)
    /// returns an error instead.
    pub fn from_env() -> Self {
        Self::try_from_env().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`from_env`](Self::from_env), with an error outside a build script.
    pub fn try_from_env() -> Result<Self, BuildError> {
        let var = |name: &'static str| std::env::var_os(name).ok_or(BuildError::Env(name));
        Ok(Self {
            manifest_dir: var("CARGO_MANIFEST_DIR")?.into(),
            out_dir: var("OUT_DIR")?.into(),
            name: var("CARGO_PKG_NAME")?.to_string_lossy().replace('-', "_"),
            arch: DEFAULT_ARCH.into(),
            ptx_isa: None,
            toolchain: "nightly".into(),
            features: enabled_features(std::env::var("CARGO_CFG_FEATURE").ok().as_deref()),
            target_dir: None,
            prebuilt: None,
        })
    }

    /// The kernel crate at `manifest_dir` (its `Cargo.toml`'s directory), whose library is
    /// named `crate_name`, built into `out_dir`: for a build of kernels from outside their own
    /// build script (a test, a tool). No features are on unless [`features`](Self::features)
    /// names them.
    pub fn new(manifest_dir: impl Into<PathBuf>, crate_name: &str, out_dir: impl Into<PathBuf>) -> Self {
        Self {
            manifest_dir: manifest_dir.into(),
            out_dir: out_dir.into(),
            name: crate_name.replace('-', "_"),
            arch: DEFAULT_ARCH.into(),
            ptx_isa: None,
            toolchain: "nightly".into(),
            features: Vec::new(),
            target_dir: None,
            prebuilt: None,
        }
    }

    /// The features the kernels are compiled with, instead of those of the build that runs
    /// the build script (which [`from_env`](Self::from_env) takes, so that the launchers and
    /// the kernels see the same `cfg`s). `default` is a feature like any other here: the
    /// nested build turns on exactly these.
    pub fn features<I: IntoIterator<Item = S>, S: Into<String>>(mut self, features: I) -> Self {
        self.features = features.into_iter().map(Into::into).collect();
        self
    }

    /// Where the nested build keeps its files. The default is `dlmd-nvptx` in the outer
    /// build's target directory: every kernel crate of a workspace, each of its feature sets,
    /// and every profile reuse the `core` and `dlmd` compiled there once.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// The GPU architecture to compile for (`sm_70`, `sm_80`, `sm_90`, …; default
    /// [`DEFAULT_ARCH`]), one of [`ARCHES`] ([`BuildError::Arch`] otherwise). The PTX's
    /// `.target` line names it, and `dlmd::cuda::Kernels::load` refuses the PTX on a device that
    /// cannot run it: PTX for `sm_NN` runs on compute capability NN and every later one, for
    /// `sm_NNa` (architecture-specific features, such as Hopper's `wgmma`) on NN only, and for
    /// `sm_NNf` on NN's family (the same major version, a minor one at least NN's).
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = arch.into();
        self
    }

    /// The PTX ISA version to write (its `.version` line), as `(major, minor)`: `(8, 0)` is PTX
    /// ISA 8.0, the first of CUDA 12.0. rustc's NVPTX target writes 7.0 to 7.8, 8.0 to 8.8 and
    /// 9.0 ([`BuildError::PtxIsa`] otherwise), and the [`arch`](Self::arch) needs a version at
    /// least its [`min_ptx_isa`] ([`BuildError::PtxIsaTooOld`] otherwise: `sm_90a` needs 8.0).
    /// Without it, the PTX has that oldest version, which the most drivers load: a driver JIT
    /// compiles PTX of its own CUDA version's ISA and older only (CUDA 12.4's driver up to 8.4),
    /// so ask for a later one only for the instructions it brings.
    pub fn ptx_isa(mut self, major: u32, minor: u32) -> Self {
        self.ptx_isa = Some((major, minor));
        self
    }

    /// The rustup toolchain that compiles the kernels (default `nightly`; a dated one such as
    /// `nightly-2026-05-19` pins it).
    pub fn toolchain(mut self, toolchain: &str) -> Self {
        self.toolchain = toolchain.into();
        self
    }

    /// Builds the PTX into `OUT_DIR/kernels.ptx` and returns its path, which it also hands the
    /// crate's compilation as `DLMD_KERNELS_PTX` (read by `dlmd::kernels_ptx!()`). In the nested
    /// build for `nvptx64` (the one this starts), does nothing and returns `None`.
    pub fn build(self) -> Result<Option<PathBuf>, BuildError> {
        if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("nvptx64") {
            return Ok(None);
        }
        println!("cargo::rerun-if-changed={}", self.manifest_dir.join("src").display());
        println!(
            "cargo::rerun-if-changed={}",
            self.manifest_dir.join("Cargo.toml").display()
        );
        println!("cargo::rerun-if-env-changed={MODE_ENV}");
        // Before anything is skipped, so that every build refuses a wrong architecture.
        let codegen = self.codegen_args()?;
        let mode = std::env::var(MODE_ENV).unwrap_or_default();
        if std::env::var_os("DOCS_RS").is_some() {
            return self.write_ptx(&format!("{NOT_BUILT}DOCS_RS is set (docs.rs builds no kernels)\n"));
        }
        // A host build that type-checks kernel bodies (`dlmd::kernel::check`) runs none.
        if std::env::var_os("CARGO_CFG_DLMD_KERNEL_CHECK").is_some() {
            return self.write_ptx(&format!(
                "{NOT_BUILT}the build type-checks kernel bodies (--cfg dlmd_kernel_check)\n"
            ));
        }
        match mode.as_str() {
            "" | "build" => {}
            "skip" => return self.write_ptx(&format!("{NOT_BUILT}{MODE_ENV}=skip\n")),
            "prebuilt" => return self.use_prebuilt(),
            other => return Err(BuildError::Mode(other.into())),
        }
        let sysroot = match self.sysroot() {
            Ok(sysroot) => sysroot,
            // No nightly here: a crate that ships its PTX still builds.
            Err(BuildError::Toolchain { missing, .. }) if self.prebuilt.is_some() => {
                println!("cargo::warning={missing} is not installed: using the prebuilt PTX this crate ships");
                return self.use_prebuilt();
            }
            Err(e) => return Err(e),
        };
        let target = std::env::var("TARGET").ok();
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| dirs::nested_target_dir(&self.out_dir, target.as_deref()));
        let spec = target::write_target_spec(&sysroot, &target_dir)?;
        let output = cargo(&sysroot)
            .args(["rustc", "--lib", "--release", "-Zjson-target-spec", "--target"])
            .arg(&spec)
            .args([
                "-Zbuild-std=core",
                "--no-default-features",
                "--message-format=json-render-diagnostics",
                "--features",
            ])
            .arg(self.features.join(","))
            .arg("--manifest-path")
            .arg(self.manifest_dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .arg("--")
            .args(codegen)
            .env(
                "CARGO_ENCODED_RUSTFLAGS",
                [
                    "-Zunstable-options",
                    "-Cpanic=immediate-abort",
                    "-Zcross-crate-inline-threshold=always",
                    "-Cllvm-args=-disable-lsr",
                    "-Cllvm-args=-inline-threshold=100000",
                ]
                .join("\x1f"),
            )
            .output()
            .map_err(|e| BuildError::Io("cargo".into(), e))?;
        if !output.status.success() {
            return Err(BuildError::Compile {
                log: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let release = target_dir.join(TARGET).join("release");
        // Every source the PTX came from (the crate's and its path dependencies', as cargo's
        // dep-info lists them): a change to any rebuilds it. (The file is the crate's last
        // build's; builds of its other feature sets compile the same files, less any module
        // a feature leaves out.)
        let dep_info = release.join(format!("lib{}.d", self.name));
        let sources = std::fs::read_to_string(&dep_info).map_err(|e| BuildError::Io(dep_info.clone(), e))?;
        for source in dep_info_sources(&sources) {
            if !source.starts_with(&sysroot) {
                println!("cargo::rerun-if-changed={}", source.display());
            }
        }
        // This feature set's assembly: the crate's files carry the metadata hash cargo gave
        // this build, which its artifact message names.
        let stdout = String::from_utf8_lossy(&output.stdout);
        let deps = release.join("deps");
        let hash = artifact_hash(&stdout, &self.name).ok_or_else(|| {
            BuildError::Io(
                deps.join(format!("{}-*.s", self.name)),
                std::io::Error::new(std::io::ErrorKind::NotFound, "cargo named no artifact of the crate"),
            )
        })?;
        let asm = deps.join(format!("{}-{hash}.s", self.name));
        let ptx = std::fs::read_to_string(&asm).map_err(|e| BuildError::Io(asm.clone(), e))?;
        let ptx = param_align::with_param_alignment(&bounds::with_launch_bounds(&ptx));
        self.write_self_contained(&ptx, asm)
    }

    /// The kernel crate's own `rustc` arguments: PTX for the [`arch`](Self::arch), of the
    /// [`ptx_isa`](Self::ptx_isa) where one is asked for, both checked first, and only the
    /// nightly features of [`KERNEL_FEATURES`] (the crate's alone: `core` and dlmd have theirs).
    fn codegen_args(&self) -> Result<Vec<String>, BuildError> {
        let feature = arch::check(&self.arch, self.ptx_isa)?;
        let mut args = vec![
            "--emit=asm".to_string(),
            format!("-Ctarget-cpu={}", self.arch),
            format!("-Zallow-features={}", KERNEL_FEATURES.join(",")),
        ];
        args.extend(feature.map(|feature| format!("-Ctarget-feature={feature}")));
        Ok(args)
    }

    /// Writes `ptx` to `OUT_DIR/kernels.ptx` and tells the crate's compilation where it is.
    fn write_ptx(&self, ptx: &str) -> Result<Option<PathBuf>, BuildError> {
        std::fs::create_dir_all(&self.out_dir).map_err(|e| BuildError::Io(self.out_dir.clone(), e))?;
        let out = self.out_dir.join(PTX_FILE);
        std::fs::write(&out, ptx).map_err(|e| BuildError::Io(out.clone(), e))?;
        println!("cargo::rustc-env={PTX_ENV}={}", out.display());
        Ok(Some(out))
    }

    /// The PTX the crate ships ([`prebuilt`](Self::prebuilt)), checked self-contained, as the
    /// crate's PTX.
    fn use_prebuilt(&self) -> Result<Option<PathBuf>, BuildError> {
        let Some(path) = &self.prebuilt else {
            return Err(BuildError::NoPrebuilt(self.name.clone()));
        };
        let path = self.manifest_dir.join(path);
        println!("cargo::rerun-if-changed={}", path.display());
        let ptx = std::fs::read_to_string(&path).map_err(|e| BuildError::Io(path.clone(), e))?;
        self.write_self_contained(&ptx, path)
    }

    /// [`write_ptx`](Self::write_ptx) of `ptx` (read from `from`), refused where it calls
    /// functions it does not define.
    fn write_self_contained(&self, ptx: &str, from: PathBuf) -> Result<Option<PathBuf>, BuildError> {
        let externs = extern_functions(ptx);
        if !externs.is_empty() {
            return Err(BuildError::NotSelfContained { ptx: from, externs });
        }
        self.write_ptx(ptx)
    }

    /// PTX this crate ships (a path relative to its `Cargo.toml`; `OUT_DIR/kernels.ptx` of a
    /// build is one), used where the nightly toolchain is missing, or always with
    /// `DLMD_PTX=prebuilt`: a downstream host build then needs no nightly. The launchers still
    /// check each kernel's signature digest in it when they load it, so PTX built from other
    /// signatures is refused; a kernel body changed since it was built is not noticed, so
    /// rebuild it with every change. Nor is the build it came from: PTX built for a target with
    /// atomics, or with features this build refuses, is taken as it is.
    pub fn prebuilt(mut self, path: impl Into<PathBuf>) -> Self {
        self.prebuilt = Some(path.into());
        self
    }

    /// [`build`](Self::build), ending the build script with the error where there is one.
    pub fn build_or_exit(self) {
        if let Err(e) = self.build() {
            // `cargo::error` directives, a line each (cargo shows them once and fails the build
            // for them), and a normal exit, so that cargo does not print the script's output a
            // second time as a crashed script's.
            for line in e.to_string().lines() {
                println!("cargo::error={line}");
            }
        }
    }

    /// The sysroot of the kernels' toolchain, checked to hold `rust-src`.
    fn sysroot(&self) -> Result<PathBuf, BuildError> {
        toolchain::sysroot(&self.toolchain)
    }
}

/// Writes the specification of the target kernels are compiled for ([`TARGET`]: see
/// [no atomics](crate#no-atomics)) into `dir`, from `toolchain`'s rustc (`nightly`, or a dated
/// one), and returns its path: for tools that compile a kernel crate themselves, with
/// `-Zjson-target-spec --target PATH -Zbuild-std=core`. [`PtxBuild::build`] writes it into its
/// nested target directory.
pub fn kernel_target_spec(toolchain: &str, dir: impl AsRef<Path>) -> Result<PathBuf, BuildError> {
    target::write_target_spec(&toolchain::sysroot(toolchain)?, dir.as_ref())
}

/// The `cargo` of the toolchain at `sysroot`, driving its `rustc`, without what the outer
/// build set for itself (its compiler, wrappers, flags and target).
fn cargo(sysroot: &Path) -> Command {
    let mut command = Command::new(sysroot.join("bin").join("cargo"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let outer = (name.starts_with("CARGO_") && name != "CARGO_HOME")
            || name.starts_with("RUSTC")
            || matches!(
                &*name,
                "RUSTFLAGS" | "RUSTDOCFLAGS" | "RUSTUP_TOOLCHAIN" | "CARGO" | "TARGET" | "HOST"
            );
        if outer {
            command.env_remove(&*name);
        }
    }
    command.env("RUSTC", sysroot.join("bin").join("rustc"));
    command
}

/// The features of the build a build script runs in, from cargo's `CARGO_CFG_FEATURE` (their
/// names as the manifest spells them, comma-separated).
fn enabled_features(cfg: Option<&str>) -> Vec<String> {
    cfg.unwrap_or_default()
        .split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

/// The metadata hash of the library `name` in cargo's JSON messages (`--message-format=json`):
/// the `HASH` of its `libNAME-HASH.rlib` (or `.rmeta`), fresh or just built.
fn artifact_hash<'a>(messages: &'a str, name: &str) -> Option<&'a str> {
    let file = format!("lib{name}-");
    messages
        .lines()
        .filter(|line| line.contains(r#""reason":"compiler-artifact""#))
        .find_map(|line| {
            line.match_indices(&file).find_map(|(at, _)| {
                // The file name starts after a path separator (`/`, or `\\` escaped in JSON).
                let before = line[..at].chars().next_back()?;
                if before != '/' && before != '\\' {
                    return None;
                }
                let rest = &line[at + file.len()..];
                let hash = &rest[..rest.find(|c: char| !c.is_ascii_hexdigit())?];
                let tail = &rest[hash.len()..];
                (!hash.is_empty() && (tail.starts_with(".rlib\"") || tail.starts_with(".rmeta\""))).then_some(hash)
            })
        })
}

/// The files of a make-style dep-info file (`target: file file…`, spaces escaped with `\\`).
fn dep_info_sources(dep_info: &str) -> Vec<PathBuf> {
    let Some((_, files)) = dep_info.lines().next().and_then(|line| line.split_once(": ")) else {
        return Vec::new();
    };
    let mut sources = Vec::new();
    let mut current = String::new();
    let mut chars = files.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => sources.extend((!current.is_empty()).then(|| PathBuf::from(std::mem::take(&mut current)))),
            c => current.push(c),
        }
    }
    sources.extend((!current.is_empty()).then(|| PathBuf::from(current)));
    sources
}

/// What PTX declares `.extern` and does not define: the functions it calls and the variables
/// it names. An `.extern .shared` array of no length is not one of them: it is the launch's
/// dynamic shared memory (a cooperative kernel's tiles), which the launch itself provides.
pub fn extern_functions(ptx: &str) -> Vec<String> {
    ptx.lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with(".extern") && !is_dynamic_shared(line))
        .map(|line| {
            line.split(|c: char| c.is_whitespace() || c == '(')
                .rfind(|w| !w.is_empty() && !w.starts_with('.'))
                .unwrap_or(line)
                .to_string()
        })
        .collect()
}

/// Whether a declaration is of the launch's dynamic shared memory:
/// `.extern .shared .align N .b8 name[];`.
fn is_dynamic_shared(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next() == Some(".extern")
        && words.next() == Some(".shared")
        && words.last().is_some_and(|name| name.ends_with("[];"))
}

#[cfg(test)]
mod tests;
