//! Loading and launching kernels: a module of Rust kernels (a kernel crate's PTX) or of C++
//! ones (compiled by NVRTC) loaded on a device ([`Kernels`]), and a launch queued in a
//! [`Scope`] ([`Launch`]), which the launchers `#[dlmd::kernel]` writes take.

use super::arg::ArgInfo;
use super::capture::{capture_graph, hold_for_graph};
use super::event::HoldEvent;
use super::param_align::{declared_alignments, first_misaligned};
use super::release::{Held, hold_until_done};
use super::{CudaError, Scope};
use crate::kernel::Footprint;
use crate::kernel::disjoint::check_disjoint;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, result};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

/// A module of kernels loaded on one device: a kernel crate's PTX (`dlmd-build`'s, with the
/// signature digest of each `#[dlmd::kernel]` read from it), or C++ kernels over `view.cuh`
/// compiled by NVRTC.
#[derive(Debug)]
pub struct Kernels {
    module: Arc<CudaModule>,
    ordinal: usize,
    /// Each `#[dlmd::kernel]` of the module, by name: what a launch looks up, once.
    kernels: HashMap<String, Kernel>,
    /// Whether the module stays loaded for the rest of the process ([`leak`](Self::leak)).
    resident: bool,
}

/// How `dlmd-build` begins the PTX file of a kernel crate it did not build (for docs, or
/// `DLMD_PTX=skip`), followed by the reason.
const NOT_BUILT: &str = "// dlmd-build: not built: ";

/// Why `dlmd-build` did not build `ptx`, where it says so.
fn not_built(ptx: &str) -> Option<&str> {
    Some(ptx.strip_prefix(NOT_BUILT)?.lines().next().unwrap_or_default().trim())
}

/// The suffix of the symbol that carries a kernel's signature digest in the PTX.
const DIGEST_SUFFIX: &str = "__dlmd_signature";

impl Kernels {
    /// Loads `ptx` (a kernel crate's, from `dlmd-build`: [`kernels_ptx!`](crate::kernels_ptx))
    /// into `ctx`; the driver compiles it for the device.
    pub fn load(ctx: &Arc<CudaContext>, ptx: &str) -> Result<Self, CudaError> {
        if let Some(why) = not_built(ptx) {
            return Err(CudaError::Compile(super::CompileError::NotBuilt(why.into())));
        }
        Self::load_ptx(
            ctx,
            signature_digests(ptx),
            declared_alignments(ptx),
            Ptx::from_src(ptx),
        )
    }

    /// Compiles CUDA C++ `source` with NVRTC, [`view.cuh`](super::HEADER) before it, for the
    /// architecture of `ctx`'s device, and loads it into `ctx`: kernels over `dlmd::view<T, R>`,
    /// which take a view's [`kernel_view`](crate::Mdspan::kernel_view) and are launched through
    /// cudarc with [`function`](Self::function).
    pub fn compile_cxx(ctx: &Arc<CudaContext>, source: &str) -> Result<Self, CudaError> {
        let (major, minor) = ctx.compute_capability()?;
        let options = CompileOptions {
            options: vec![format!("--gpu-architecture=sm_{major}{minor}")],
            ..Default::default()
        };
        let ptx = super::compile_ptx(source, options)?;
        let src = ptx.to_src();
        Self::load_ptx(ctx, signature_digests(&src), declared_alignments(&src), ptx)
    }

    /// Loads `ptx`, once its header was checked against the device and the driver: a module
    /// the device cannot run, or the driver cannot compile, is a [`ModuleError`](super::ModuleError)
    /// that names both, not the driver's failure.
    fn load_ptx(
        ctx: &Arc<CudaContext>,
        digests: HashMap<String, u64>,
        declared: HashMap<String, Vec<Option<u32>>>,
        ptx: Ptx,
    ) -> Result<Self, CudaError> {
        check_target(ctx, &ptx.to_src())?;
        let module = ctx.load_module(ptx)?;
        let mut declared = declared;
        let kernels = digests
            .into_iter()
            .map(|(name, digest)| {
                let kernel = Kernel {
                    digest,
                    declared: declared.remove(&name).unwrap_or_default(),
                    function: OnceLock::new(),
                };
                (name, kernel)
            })
            .collect();
        Ok(Self {
            module,
            ordinal: ctx.ordinal(),
            kernels,
            resident: false,
        })
    }

    /// The kernels, loaded for the rest of the process: the module is never unloaded, so a
    /// launch outside a scope need not keep it until its kernel is done. Where a launch's
    /// arguments need no hold either ([`Imported::lent`](super::Imported::lent), elements),
    /// it records no event after the kernel. For kernels kept in a `static`, as `Box::leak`
    /// is for any value.
    pub fn leak(self) -> &'static Self {
        std::boxed::Box::leak(std::boxed::Box::new(Self { resident: true, ..self }))
    }

    /// The entry point `name`, for a launch through cudarc's `launch_builder`: how C++ kernels
    /// ([`compile_cxx`](Self::compile_cxx)) are launched. A `#[dlmd::kernel]` is launched
    /// through its typed launcher instead, which checks its signature and arguments.
    pub fn function(&self, name: &str) -> Result<CudaFunction, CudaError> {
        Ok(self.module.load_function(name)?)
    }

    /// The ordinal of the device the kernels are loaded on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The names of the kernels, those `#[dlmd::kernel]` made.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }

    /// The signature digest of the module's kernel `name`, as its PTX carries it.
    pub fn digest(&self, name: &str) -> Option<u64> {
        self.kernels.get(name).map(|k| k.digest)
    }

    /// The entry point `name`, once its digest was checked against `digest` (on every call, so
    /// that a launcher of another kernel of the same name is refused even after this one ran),
    /// and its parameters declared as aligned as `aligned` asks (by PTX index; 0: as declared).
    fn checked_function(&self, name: &'static str, digest: u64, aligned: &[u8]) -> Result<CudaFunction, CudaError> {
        let kernel = check_digest(self.kernels.get(name).map(|k| (k.digest, k)), name, digest)?;
        if let Some(m) = first_misaligned(aligned, Some(&kernel.declared)) {
            return Err(CudaError::Launch(super::LaunchError::ParamAlignment {
                kernel: name,
                param: m.param,
                needed: m.needed,
                declared: m.declared,
            }));
        }
        if let Some(f) = kernel.function.get() {
            return Ok(f.clone());
        }
        let f = self.module.load_function(name)?;
        // Another thread may have set it meanwhile: the same entry point.
        Ok(kernel.function.get_or_init(|| f).clone())
    }
}

/// A `#[dlmd::kernel]` of a module.
#[derive(Debug)]
struct Kernel {
    /// Its signature digest, as the PTX carries it.
    digest: u64,
    /// The alignment its entry point declares of each parameter, by PTX index.
    declared: Vec<Option<u32>>,
    /// Its entry point, found at the first launch.
    function: OnceLock<CudaFunction>,
}

/// Whether `ctx`'s device and the driver can run `ptx`, from its header.
fn check_target(ctx: &Arc<CudaContext>, ptx: &str) -> Result<(), CudaError> {
    let header = super::target::parse_header(ptx)?;
    let device = ctx.compute_capability()?;
    let mut driver = 0;
    // SAFETY: the driver is loaded (`ctx` is one of its contexts), and the call writes one
    // `c_int` through the pointer, to a local that outlives it.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }.result()?;
    Ok(super::target::check(&header, device, driver)?)
}

/// The module's kernel `name` (`found`: its digest, and what it is), if it was built from the
/// signature whose digest is `digest`.
fn check_digest<K>(found: Option<(u64, K)>, name: &'static str, digest: u64) -> Result<K, CudaError> {
    match found {
        Some((found, kernel)) if found == digest => Ok(kernel),
        found => Err(CudaError::Launch(super::LaunchError::Signature {
            kernel: name,
            found: found.is_some(),
        })),
    }
}

/// The signature digest of each `#[dlmd::kernel]` in a kernel crate's PTX, by kernel name: what
/// [`Kernels::load`] reads, and what a launcher's digest must equal. Each is the value of the
/// kernel's `NAME__dlmd_signature` global, in any form LLVM writes a `u64` in:
/// `.global .align 8 .u64 NAME__dlmd_signature = DIGEST;`, its little-endian bytes,
/// `.global .align 8 .b8 NAME__dlmd_signature[8] = {b0, …, b7};`, where PTX leaves out
/// trailing zero bytes (an initializer shorter than the array is filled with zeros), or no
/// initializer at all for a digest of 0.
pub fn signature_digests(ptx: &str) -> HashMap<String, u64> {
    ptx.lines()
        .filter_map(|line| {
            let (declaration, value) = match line.split_once('=') {
                Some((declaration, value)) => (declaration, Some(value)),
                None => (line.trim_end().strip_suffix(';')?, None),
            };
            let symbol = declaration.split_whitespace().last()?;
            let name = symbol
                .strip_suffix("[8]")
                .unwrap_or(symbol)
                .strip_suffix(DIGEST_SUFFIX)?;
            let Some(value) = value else {
                // A global PTX declares without an initializer is zero.
                return Some((name.to_string(), 0));
            };
            let value = value.trim().trim_end_matches(';').trim();
            let digest = match value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                Some(bytes) => {
                    let mut le = [0u8; 8];
                    let mut parts = bytes.split(',').map(str::trim).filter(|b| !b.is_empty());
                    // The bytes given, then zeros: at most eight.
                    for byte in &mut le {
                        match parts.next() {
                            Some(b) => *byte = b.parse().ok()?,
                            None => break,
                        }
                    }
                    parts.next().is_none().then_some(u64::from_le_bytes(le))?
                }
                None => value.parse().ok()?,
            };
            Some((name.to_string(), digest))
        })
        .collect()
}

/// Where and how a kernel runs: the stream, the loaded module, the grid, and the [`Scope`] that
/// waits for it, if any. Made by [`Scope::launch`] (views borrowed for the scope), by
/// [`Imported::launch`](super::Imported::launch) (the producer's stream, no scope) or by
/// [`Kernels::launch_on`] (no scope); taken by a `#[dlmd::kernel]` launcher.
///
/// A launch without a scope has `'scope = 'static`: its views are imports, which it keeps until
/// the kernel is done, or views that borrow for `'static`.
#[derive(Debug)]
pub struct Launch<'a, 'scope, 'env> {
    scope: Option<&'a Scope<'scope, 'env>>,
    stream: Arc<CudaStream>,
    kernels: &'a Kernels,
    config: LaunchConfig,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// A launch of one of `kernels` on `stream` with `config`, queued in this scope: pass it
    /// to the kernel's launcher, with the kernel's arguments. The launcher refuses it on a
    /// stream that is capturing a CUDA graph ([`CudaError::ScopeCapture`]).
    pub fn launch<'a>(
        &'a self,
        stream: &'a Arc<CudaStream>,
        kernels: &'scope Kernels,
        config: LaunchConfig,
    ) -> Launch<'a, 'scope, 'env> {
        Launch {
            scope: Some(self),
            stream: stream.clone(),
            kernels,
            config,
        }
    }
}

impl Kernels {
    /// A launch of one of these kernels on `stream` with `config`, outside any scope: it is
    /// queued and returns at once, and keeps its imported arguments and the module until the
    /// kernel is done. Its views are [imports](super::Imported) whose producer named `stream`,
    /// or views that borrow for `'static`.
    pub fn launch_on<'a>(&'a self, stream: &Arc<CudaStream>, config: LaunchConfig) -> Launch<'a, 'static, 'static> {
        Launch {
            scope: None,
            stream: stream.clone(),
            kernels: self,
            config,
        }
    }
}

impl Launch<'_, '_, '_> {
    /// The launch, checked for a kernel that needs blocks of `threads` threads: its block must
    /// be `(threads, 1, 1)`. With `reserved` (a cooperative kernel's
    /// [`Block`](crate::kernel::Block): its tiles and scratch) the launch asks for no dynamic
    /// shared memory, and gets `reserved` bytes of it; without (an element-wise kernel built
    /// for one block size), it keeps what it asks. `threads` `None` checks nothing.
    pub fn block(
        mut self,
        kernel: &'static str,
        threads: Option<u32>,
        reserved: Option<u32>,
    ) -> Result<Self, CudaError> {
        let Some(threads) = threads else {
            return Ok(self);
        };
        let block_dim = self.config.block_dim;
        match reserved {
            Some(bytes) if block_dim == (threads, 1, 1) && self.config.shared_mem_bytes == 0 => {
                self.config.shared_mem_bytes = bytes;
                Ok(self)
            }
            Some(_) => Err(CudaError::Launch(super::LaunchError::Block {
                kernel,
                threads,
                block_dim,
                shared_mem_bytes: self.config.shared_mem_bytes,
            })),
            None if block_dim == (threads, 1, 1) => Ok(self),
            None => Err(CudaError::Launch(super::LaunchError::BlockSize {
                kernel,
                threads,
                block_dim,
            })),
        }
    }

    /// Queues the kernel `name` with `params` on the stream, after checking that the stream,
    /// the module and every view (`args`) are on one device, that every imported argument was
    /// made ready on this stream, that no argument the kernel writes shares memory with another
    /// ([`check_disjoint`](crate::kernel::disjoint::check_disjoint)) and that the module's
    /// kernel was built from the signature whose digest is `digest`, with each parameter declared
    /// as aligned as `aligned` asks (by PTX index; 64 for the parameters the kernel reads in
    /// place, [`KernelParam::IN_PLACE`](crate::kernel::KernelParam::IN_PLACE)). The kernel runs after the
    /// work queued on the views' memory before the views were made, whatever stream that work
    /// is on. In a scope, the scope waits for it; without one, the imports (but
    /// [lent](super::Imported::lent) ones, which their owners keep) and the module are kept
    /// until it is done, and nothing waits.
    ///
    /// # Safety
    ///
    /// `args` are what the arguments' [`KernelArg::info`](super::KernelArg::info) gave, and
    /// `params` point at the same arguments' parameter forms, in order, for a kernel whose
    /// signature digest is `digest` (what a `#[dlmd::kernel]` launcher passes); the memory of
    /// every view among them that is not imported stays valid, and accessed only as the view
    /// allows, until the scope ends (for a launch without a scope: forever).
    pub unsafe fn run(
        self,
        name: &'static str,
        digest: u64,
        aligned: &[u8],
        args: &[ArgInfo<'_>],
        params: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        let stream = self.stream.context().ordinal();
        if stream != self.kernels.ordinal {
            return Err(CudaError::Launch(super::LaunchError::Device {
                kernel: name,
                what: "its module",
                device: self.kernels.ordinal as i64,
                stream,
            }));
        }
        if let Some(device) = args
            .iter()
            .filter_map(|a| a.device)
            .find(|&d| d as i64 != stream as i64)
        {
            return Err(CudaError::Launch(super::LaunchError::Device {
                kernel: name,
                what: "a view",
                device: i64::from(device),
                stream,
            }));
        }
        let handle = self.stream.cu_stream() as usize;
        for producer in args.iter().filter_map(|a| a.held) {
            if !producer.stream.is(handle) {
                return Err(CudaError::Launch(super::LaunchError::Stream {
                    kernel: name,
                    producer: producer.stream.0,
                    launch: handle,
                }));
            }
            // The per-thread default stream is the importing thread's only there.
            if producer.thread.is_some_and(|t| t != std::thread::current().id()) {
                return Err(CudaError::Launch(super::LaunchError::PerThreadStream { kernel: name }));
            }
        }
        // On the stack for the usual few arguments: an allocation costs as much as a check.
        let mut few = [None; 16];
        let many: Vec<Option<Footprint>>;
        let footprints: &[Option<Footprint>] = if args.len() <= few.len() {
            for (slot, a) in few.iter_mut().zip(args) {
                *slot = a.footprint;
            }
            &few[..args.len()]
        } else {
            many = args.iter().map(|a| a.footprint).collect();
            &many
        };
        check_disjoint(footprints)
            .map_err(|overlap| CudaError::Launch(super::LaunchError::Arguments { kernel: name, overlap }))?;
        let function = self.kernels.checked_function(name, digest, aligned)?;
        // In a scope: an event of the scope's, on a stream that is not capturing.
        let slot = self.scope.map(|scope| scope.slot(name, &self.stream)).transpose()?;
        self.stream.context().bind_to_thread()?;
        for footprint in footprints.iter().flatten() {
            super::order::order_after(&self.stream, footprint.start, footprint.bytes, name)?;
            super::order::order_after_queued(&self.stream, footprint, slot.as_ref().map(|s| s.event()), name)?;
        }
        // Imports whose owner keeps their memory for this stream's work (`Imported::lent`)
        // are not held, and filed only in a scope (below): later work on them is the owner's
        // to order.
        let mut held = Held {
            tensors: args
                .iter()
                .filter_map(|a| a.held.and_then(|producer| producer.tensor).cloned())
                .collect(),
            // Without a scope nothing else keeps the module loaded while the kernel runs,
            // unless it is loaded for the process.
            module: (self.scope.is_none() && !self.kernels.resident).then(|| self.kernels.module.clone()),
            filed: None,
        };
        let imported: Vec<Footprint> = if held.tensors.is_empty() {
            Vec::new()
        } else {
            args.iter()
                .filter(|a| a.held.is_some_and(|producer| producer.tensor.is_some()))
                .filter_map(|a| a.footprint)
                .collect()
        };
        let mut replays = None;
        if !held.is_empty()
            && let Some(graph) = capture_graph(&self.stream, name)?
        {
            // Captured, not run: the graph keeps the hold, from before the kernel is in it. Its
            // runs record an event after the kernel, under which the imported bytes are filed
            // for as long as the graph lives (entries whose event never ran wait for nothing).
            if !imported.is_empty() {
                let event = Arc::new(HoldEvent::new(self.stream.context())?);
                held.filed = Some(super::order::file_captured(&imported, &event));
                replays = Some(event);
            }
            hold_for_graph(graph, core::mem::take(&mut held))?;
        }
        let LaunchConfig {
            grid_dim,
            block_dim,
            shared_mem_bytes,
        } = self.config;
        opt_in_shared(&self.stream, function.cu_function(), name, shared_mem_bytes)?;
        // SAFETY: `function` is the entry point `name` of the module, whose parameters are the
        // forms `params` points at (the digest matched; the caller promises the forms); the
        // context is bound; the memory of the views stays valid until the kernel is done: Rust's
        // until the scope ends, which waits for the event recorded after the kernel below (on a
        // stream that was not capturing: `slot`; or forever, without a scope: the caller),
        // imports' because they are held below until an event after the kernel (or, captured
        // into a graph, as long as the graph: above), or lent by an owner who keeps them for
        // this stream's work (`Imported::lent`'s contract), and the module's because it is held
        // likewise or never unloaded (`Kernels::leak`).
        unsafe {
            result::launch_kernel(
                function.cu_function(),
                grid_dim,
                block_dim,
                shared_mem_bytes,
                self.stream.cu_stream(),
                params,
            )
        }?;
        if let Some(event) = replays
            && let Err(e) = event.record_in_capture(&self.stream)
        {
            // Without the node, the graph's runs would be ordered against nothing: a
            // synchronization, which a capture forbids, invalidates it, so that no graph is made.
            let _ = self.stream.synchronize();
            return Err(e.into());
        }
        // Both, whichever fails: each waits for the stream at once where its record fails.
        // In a scope, the bytes of every argument the hold does not file (views, lent imports)
        // are filed under the scope's event of this stream until the scope ends: a copy, a
        // collective or a launch on another stream over the same bytes (an aliased or atomic
        // view is `Copy`: one view may go to a kernel and to a copy) waits for the kernel.
        let scoped = match (self.scope, slot) {
            (Some(scope), Some(slot)) => {
                let unheld: Vec<Footprint> = args
                    .iter()
                    .filter(|a| a.held.is_none_or(|producer| producer.tensor.is_none()))
                    .filter_map(|a| a.footprint)
                    .collect();
                scope.queued(slot, &unheld)
            }
            _ => Ok(()),
        };
        let holding = if held.is_empty() {
            Ok(())
        } else {
            hold_until_done(&self.stream, held, &imported, name)
        };
        scoped.and(holding)
    }
}

/// The launch's dynamic shared memory: past the 48 KiB a block gets without asking, the
/// function opts in to it (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), which the device
/// allows up to its own limit; more is refused by name, where the driver would fail the launch
/// with no word of why.
fn opt_in_shared(
    stream: &Arc<CudaStream>,
    function: cudarc::driver::sys::CUfunction,
    kernel: &'static str,
    bytes: u32,
) -> Result<(), CudaError> {
    use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
    const WITHOUT_ASKING: u32 = 48 * 1024;
    if bytes <= WITHOUT_ASKING {
        return Ok(());
    }
    let device_max = stream
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let device_max = u32::try_from(device_max).unwrap_or(0);
    if bytes > device_max {
        return Err(CudaError::Launch(super::LaunchError::SharedMemory {
            kernel,
            shared_mem_bytes: bytes,
            device_max,
        }));
    }
    // SAFETY: `function` is a loaded entry point of a module of the stream's context, which is
    // bound; the value is within the device's limit (checked above).
    unsafe {
        cudarc::driver::result::function::set_function_attribute(
            function,
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_that_dlmd_build_skipped_says_why() {
        assert_eq!(
            not_built("// dlmd-build: not built: DOCS_RS is set\n"),
            Some("DOCS_RS is set")
        );
        assert_eq!(not_built(".version 7.0\n.target sm_70\n"), None);
        let error = CudaError::Compile(super::super::CompileError::NotBuilt("DLMD_PTX=skip".into()));
        assert!(error.to_string().contains("without DLMD_PTX=skip"), "{error}");
    }

    #[test]
    fn digests_are_read_as_llvm_writes_them() {
        let ptx = "
.visible .global .align 8 .u64 add_index__dlmd_signature = 1234567890123;
.visible .global .align 8 .u64 sums__dlmd_signature = 42;
.visible .global .align 8 .b8 transpose__dlmd_signature[8] = {230, 46, 253, 4, 234, 15, 146, 220};
.visible .global .align 8 .b8 short__dlmd_signature[8] = {218, 128, 70, 193, 148, 249};
.visible .global .align 8 .b8 zero__dlmd_signature[8];
.visible .global .align 8 .b8 long__dlmd_signature[8] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
.visible .global .align 8 .b8 bad__dlmd_signature[8] = {1, x};
.visible .global .align 8 .u64 other = 7;
.visible .entry add_index(
";
        let found = signature_digests(ptx);
        assert_eq!(found.len(), 5, "{found:?}");
        assert_eq!(found["add_index"], 1234567890123);
        assert_eq!(found["sums"], 42);
        assert_eq!(
            found["transpose"],
            u64::from_le_bytes([230, 46, 253, 4, 234, 15, 146, 220])
        );
        // PTX leaves out trailing zero bytes, and the initializer of a zero.
        assert_eq!(found["short"], u64::from_le_bytes([218, 128, 70, 193, 148, 249, 0, 0]));
        assert_eq!(found["zero"], 0);
        // Nine bytes, or one that is not a byte, is no digest.
        assert!(!found.contains_key("long") && !found.contains_key("bad"));
    }

    #[test]
    fn every_check_compares_the_digest() {
        let found = signature_digests(".visible .global .align 8 .u64 scale__dlmd_signature = 11;\n");
        assert!(check_digest(found.get("scale").map(|&d| (d, ())), "scale", 11).is_ok());
        assert!(matches!(
            check_digest(found.get("scale").map(|&d| (d, ())), "scale", 12),
            Err(CudaError::Launch(crate::cuda::LaunchError::Signature {
                kernel: "scale",
                found: true
            }))
        ));
        assert!(check_digest(found.get("scale").map(|&d| (d, ())), "scale", 11).is_ok());
        assert!(matches!(
            check_digest(found.get("other").map(|&d| (d, ())), "other", 11),
            Err(CudaError::Launch(crate::cuda::LaunchError::Signature {
                kernel: "other",
                found: false
            }))
        ));
    }
}
