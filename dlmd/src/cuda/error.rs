//! Why CUDA work could not start: [`CudaError`], whose variants group the concerns a caller
//! matches on whole ([`CompileError`], [`StreamError`], [`LaunchError`], [`PlacementError`]),
//! beside the driver's, the views' and the mirrored array's own.

use super::Current;
use crate::import::ImportError;
use crate::view::ViewError;

/// Why CUDA work could not start.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// No CUDA driver library could be loaded on this machine.
    #[error("no CUDA driver library could be loaded (libcuda.so); is there an NVIDIA GPU and driver?")]
    NoDriver,
    /// The driver reported an error.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// The device ordinal is not a valid `i32`.
    #[error("device ordinal {0} does not fit a DLPack device id")]
    Ordinal(usize),
    /// A device ordinal names no device (it is negative).
    #[error("device ordinal {ordinal} names no CUDA device")]
    NoSuchDevice {
        /// The ordinal given.
        ordinal: i32,
    },
    /// The allocation does not fit the view.
    #[error(transparent)]
    View(#[from] ViewError),
    /// A tensor does not fit the view asked for.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A host slice given for a [`DeviceArray`](super::DeviceArray) whose length is not the
    /// number of elements of its extents.
    #[error("the host data holds {len} elements, but extents {extents:?} hold exactly {needed}")]
    HostLength {
        /// The number of elements of the extents.
        needed: usize,
        /// The host slice's length.
        len: usize,
        /// The extents.
        extents: Vec<usize>,
    },
    /// A copy or collective would write memory that another of its views, or work queued in a
    /// [`scope`](super::scope) that has not ended, reaches (or read memory such work writes).
    /// Views of imported tensors are aliased (`Copy`), so their borrows exclude nothing: this is
    /// checked when the work is queued.
    #[error(
        "{operation}: {}; end the scope that queued it first, or use separate tensors",
        if *with_queued { "it shares memory with work queued in a scope that has not ended, and one of the two writes it" } else { "two of its views share memory, and it writes one of them" }
    )]
    ScopeOverlap {
        /// The copy or collective.
        operation: &'static str,
        /// Whether the other side is earlier queued work (else another view of the same call).
        with_queued: bool,
    },
    /// Work was to be queued in a [`scope`](super::scope) on a stream that is capturing a CUDA
    /// graph: it would run when the graph runs, after the scope has ended and let go of its
    /// views.
    #[error(
        "{operation}: stream {stream:#x} is capturing a CUDA graph, and work queued in a scope must run before the scope ends; queue it outside the capture, or capture launches over imports (which the graph keeps)"
    )]
    ScopeCapture {
        /// The launch's kernel, the copy or the collective.
        operation: &'static str,
        /// The capturing stream's handle.
        stream: usize,
    },
    /// A collective was to be queued in a [`scope`](super::scope) that began inside an NCCL
    /// `nccl::group`: NCCL queues it when the group ends, after the scope has
    /// ended and let go of its views.
    #[error(
        "{operation}: this scope began inside an NCCL group, which queues its collectives only when it ends, after the scope; begin the scope first and the group inside it"
    )]
    ScopeGroup {
        /// The collective.
        operation: &'static str,
    },
    /// A copy's source and destination have different extents.
    #[error("cannot copy a view of extents {src:?} into one of extents {dst:?}: the extents must be equal")]
    CopyExtents {
        /// The source's extents.
        src: Vec<usize>,
        /// The destination's extents.
        dst: Vec<usize>,
    },
    /// NVRTC could not compile C++ kernels.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A copy of a [`MirroredArray`](super::MirroredArray) was asked for while the other one holds newer values.
    #[error("the {want} copy is stale (current: {current:?}); move the data first (to_host / to_device)")]
    Stale {
        /// The copy asked for.
        want: &'static str,
        /// Which copy is current.
        current: Current,
    },
    /// A consumer's stream could not be ordered after the producer's work (DLPack's stream
    /// protocol).
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// A kernel launch was refused before anything was queued.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// An imported tensor's memory is not where, or not as large as, its fields say.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// A PTX module was refused before the driver saw it: the device cannot run its
    /// architecture, the driver cannot compile its PTX ISA version, or its header is malformed.
    #[error(transparent)]
    Module(#[from] ModuleError),
    /// A TMA tensor map could not be made.
    #[error(transparent)]
    TensorMap(#[from] super::TensorMapError),
    /// [`wait_released`](super::wait_released) was called from a deleter that the releasing
    /// thread runs, which would wait for itself.
    #[error("wait_released was called from a deleter run by the releasing thread, which would wait for itself")]
    WaitInDeleter,
}

/// Why kernels could not be compiled: NVRTC's C++ kernels, or a Rust kernel crate's PTX that
/// was not built.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// NVRTC could not be loaded.
    #[error("NVRTC (libnvrtc.so) could not be loaded; install the CUDA runtime compiler")]
    Unavailable,
    /// NVRTC refused the program.
    #[error("NVRTC: {0}")]
    Refused(String),
    /// The kernel crate's PTX was not built: `dlmd-build` skipped it (for docs, or
    /// `DLMD_PTX=skip`, as a `cargo check` or an editor may set), and it has nothing to load.
    #[error("the kernels' PTX was not built ({0}); build the kernel crate without DLMD_PTX=skip to load its kernels")]
    NotBuilt(String),
}

/// Why a PTX module was refused before the driver saw it, from its header (`.version X.Y`, then
/// `.target sm_NN`, `sm_NNa` or `sm_NNf`) and what the device and its driver are.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// The device cannot run the module's architecture: PTX for `sm_NN` runs on compute
    /// capability NN and later, for `sm_NNa` on NN only, for `sm_NNf` on NN's major version with
    /// a minor one at least NN's.
    #[error(
        "the PTX module is built for {module}, which runs on {}, and this device is compute capability {}.{}: build it for an architecture the device has (dlmd-build's `PtxBuild::arch`, such as sm_{}{})",
        super::target::Arch::parse(module).map_or_else(String::new, |arch| arch.rule()),
        device.0,
        device.1,
        device.0,
        device.1
    )]
    Arch {
        /// The module's `.target` architecture, as written (`sm_90a`).
        module: String,
        /// The device's compute capability, `(major, minor)`.
        device: (i32, i32),
    },
    /// The module's PTX ISA version is newer than the driver compiles: each CUDA driver's
    /// compiler reads the ISA of its own release and older ones.
    #[error(
        "the PTX module is PTX ISA {}.{}, and this driver (CUDA {}.{}) compiles PTX ISA {}.{} and older: update the driver, or build the module for an older ISA (dlmd-build's `PtxBuild::ptx_isa`)",
        module.0,
        module.1,
        cuda.0,
        cuda.1,
        driver.0,
        driver.1
    )]
    PtxIsa {
        /// The module's `.version`, `(major, minor)`.
        module: (u32, u32),
        /// The newest PTX ISA version the driver compiles.
        driver: (u32, u32),
        /// The driver's CUDA version, `(major, minor)`.
        cuda: (i32, i32),
    },
    /// The module's header names no architecture (no `.target` directive right after
    /// `.version`), so whether the device can run it is unknown.
    #[error(
        "the PTX module names no architecture (`.target sm_NN` after `.version`), so whether this device can run it is unknown; it is not loaded"
    )]
    NoTarget,
    /// The module's header is not PTX's: `.version MAJOR.MINOR` first, then `.target` with one
    /// architecture, comments aside. What is wrong with it is the field.
    #[error("the PTX module's header is malformed: {0}")]
    Header(&'static str),
}

/// Why a consumer's stream could not be ordered after a producer's work: DLPack's `stream`
/// argument, and CUDA graph capture.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A consumer's `stream` argument is not one DLPack defines for CUDA.
    #[error("stream={value}: {why}")]
    Value {
        /// The value given.
        value: isize,
        /// Why it is refused.
        why: &'static str,
    },
    /// The consumer's stream is capturing a CUDA graph while the producer still has work in
    /// flight on another stream: a capture cannot wait for work queued outside it.
    #[error(
        "stream {stream:#x} is capturing a CUDA graph and the producer's stream still has work in flight, which a capture cannot wait for; synchronize the producer before capturing, or export with stream=-1 and order the work yourself"
    )]
    Capture {
        /// The consumer's stream handle.
        stream: usize,
    },
    /// A stream value from a consumer names no stream of this context.
    #[error("stream {value:#x} is not a CUDA stream of this context: {why}")]
    NotAStream {
        /// The value given.
        value: usize,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Why a kernel launch was refused, before anything was queued.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A module holds no kernel `kernel` built from the signature its launcher has: the PTX is
    /// of another kernel crate, or of another version of this one.
    #[error(
        "the module's kernel `{kernel}` {}",
        if *found { "was built from another signature than its launcher's: rebuild the PTX from the same source" } else { "is missing (no `#[dlmd::kernel]` of that name in its PTX)" }
    )]
    Signature {
        /// The kernel's name.
        kernel: &'static str,
        /// Whether the module has a kernel of that name (with another signature).
        found: bool,
    },
    /// The module declares a parameter that the kernel reads in place (a TMA tensor map) less
    /// aligned than the copy engine needs: its PTX was not written by `dlmd-build`, which
    /// declares such parameters 64-byte aligned.
    #[error(
        "the module's kernel `{kernel}` declares its parameter {param} {declared}-byte aligned, and it needs {needed} (a tensor map read in place): build the PTX with dlmd-build"
    )]
    ParamAlignment {
        /// The kernel's name.
        kernel: &'static str,
        /// The parameter's index in the PTX entry point.
        param: usize,
        /// The alignment it needs.
        needed: u32,
        /// The alignment it is declared with (0: none).
        declared: u32,
    },
    /// Two arguments of a launch share memory where the kernel writes one of them (the same
    /// tensor passed twice, or views of one tensor).
    #[error("cannot launch `{kernel}`: {overlap}")]
    Arguments {
        /// The kernel's name.
        kernel: &'static str,
        /// The two arguments and how the kernel uses them.
        overlap: crate::kernel::disjoint::Overlap,
    },
    /// A cooperative kernel's launch has another block shape than its `Block` says, or asks for
    /// dynamic shared memory (the launcher reserves its tiles').
    #[error(
        "cannot launch `{kernel}` with block {block_dim:?} and {shared_mem_bytes} bytes of dynamic shared memory: its `Block` needs block ({threads}, 1, 1) and no dynamic shared memory"
    )]
    Block {
        /// The kernel's name.
        kernel: &'static str,
        /// The threads of a block the kernel needs.
        threads: u32,
        /// The launch's block.
        block_dim: (u32, u32, u32),
        /// The launch's dynamic shared memory.
        shared_mem_bytes: u32,
    },
    /// A launch asks for more dynamic shared memory a block than the device gives one (a
    /// cooperative kernel's tiles: its `Block::SHARED_BYTES`).
    #[error(
        "cannot launch `{kernel}` with {shared_mem_bytes} bytes of dynamic shared memory a block: the device gives a block at most {device_max} (smaller tiles, or fewer stages)"
    )]
    SharedMemory {
        /// The kernel's name.
        kernel: &'static str,
        /// The launch's dynamic shared memory.
        shared_mem_bytes: u32,
        /// The most a block of the device may opt in to
        /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
        device_max: u32,
    },
    /// An element-wise kernel built for one block size (`#[dlmd::kernel(block_threads = N)]`)
    /// is launched with another.
    #[error("cannot launch `{kernel}` with block {block_dim:?}: it is built for blocks of ({threads}, 1, 1)")]
    BlockSize {
        /// The kernel's name.
        kernel: &'static str,
        /// The threads of a block the kernel is built for.
        threads: u32,
        /// The launch's block.
        block_dim: (u32, u32, u32),
    },
    /// A launch's module or view is on another device than its stream.
    #[error("cannot launch `{kernel}` on a stream of device {stream}: {what} is on device {device}")]
    Device {
        /// The kernel's name.
        kernel: &'static str,
        /// What is on the other device: its module, or a view.
        what: &'static str,
        /// That device's ordinal.
        device: i64,
        /// The stream's device ordinal.
        stream: usize,
    },
    /// An imported argument's producer made its data ready on another stream than the launch's:
    /// the kernel would not be ordered after the producer's work, nor the producer's next work
    /// after it.
    #[error(
        "cannot launch `{kernel}` on stream {launch:#x}: an imported argument's producer named stream {producer:#x} (launch on the producer's stream: `imported.launch(..)`)"
    )]
    Stream {
        /// The kernel's name.
        kernel: &'static str,
        /// The producer's stream (DLPack's value: 0 or 1 the legacy default stream, 2 the
        /// per-thread one, otherwise a handle).
        producer: usize,
        /// The launch's stream handle.
        launch: usize,
    },
    /// An imported argument's producer named the per-thread default stream (DLPack's stream 2),
    /// which is another stream on every thread, and the launch is made on another thread than
    /// the one that imported it: the kernel would not be ordered after the producer's work.
    #[error(
        "cannot launch `{kernel}` on this thread: an imported argument's producer named the per-thread default stream (2) of the thread that imported it, which is another stream here; launch on that thread"
    )]
    PerThreadStream {
        /// The kernel's name.
        kernel: &'static str,
    },
    /// The launch's stream is capturing a CUDA graph, and the driver cannot tie what the launch
    /// holds (its imported tensors, its module) to the graph: it lacks
    /// `cuStreamGetCaptureInfo_v2`, which user objects need too (CUDA 11.3).
    #[error(
        "cannot launch `{kernel}` into a CUDA graph capture: the driver cannot keep its arguments alive as long as the graph (cuStreamGetCaptureInfo_v2 and user objects need a CUDA 11.3 driver)"
    )]
    CaptureUnsupported {
        /// The kernel's name.
        kernel: &'static str,
    },
    /// The launch's stream is capturing a CUDA graph, and work queued earlier over the same
    /// memory (on another stream, or on this one before the capture began: a launch, work in a
    /// scope not yet ended, the memory's owner's copies) is still running: a capture cannot
    /// wait for work queued outside it.
    #[error(
        "cannot launch `{kernel}` on stream {stream:#x}, which is capturing a CUDA graph: work queued before the capture (on another stream, or on this one before it began: a launch, work in a scope not yet ended, or a copy by the memory's owner) still uses the same memory, and a capture cannot wait for work queued outside it; let that work finish (end its scope, or synchronize its stream) before capturing"
    )]
    CaptureOrder {
        /// The kernel's name.
        kernel: &'static str,
        /// The capturing stream's handle.
        stream: usize,
    },
    /// Another thread began capturing a CUDA graph on the launch's stream while the launch was
    /// queued: the kernel went into that graph, whose replays reach its arguments for as long
    /// as it lives, so what the launch holds is kept for good.
    #[error(
        "`{kernel}` was captured into a CUDA graph that another thread began on stream {stream:#x} during the launch: its arguments are kept for the rest of the process; capture on a stream no other thread launches on"
    )]
    CaptureBegun {
        /// The kernel's name.
        kernel: &'static str,
        /// The stream's handle.
        stream: usize,
    },
}

/// Why an imported tensor's memory is not where, or not as large as, its fields say (what
/// the driver answers for its data pointer).
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// An imported tensor's data pointer is not memory the CUDA driver knows.
    #[error("the tensor's data at {address:#x} is not CUDA memory (the driver knows no allocation there)")]
    NotDeviceMemory {
        /// The address of the span's first byte.
        address: usize,
    },
    /// An imported tensor's span reaches outside the allocation its data pointer is in.
    #[error(
        "the tensor's {bytes} bytes at {start:#x} reach outside the allocation they start in ({allocation_bytes} bytes at {allocation:#x}): its shape or strides are wrong"
    )]
    OutsideAllocation {
        /// The span's first byte.
        start: usize,
        /// The span's length in bytes.
        bytes: usize,
        /// The allocation's first byte.
        allocation: usize,
        /// The allocation's length in bytes.
        allocation_bytes: usize,
    },
    /// A tensor's device label disagrees with where its pointer really is.
    #[error("the tensor says device {labelled} but its pointer belongs to device {actual}")]
    WrongDevice {
        /// The `device_id` the tensor carries.
        labelled: i32,
        /// The device the driver reports for the pointer.
        actual: i32,
    },
}
