//! The GPU: its stream and the `add_index` kernels: Rust kernels (`kernels/`, PTX from
//! `dlmd-build`), and as their benchmark reference the same kernel in CUDA C++, compiled once
//! with NVRTC.

use crate::MAX_RANK;
use crate::dtype::{AddIndex, DType};
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use dlmd::cuda::{CudaError, Imported, Kernels};
use dlmd::kernel::ViewParam;
use dlmd::layout::Layout;
use dlmd::view::Access;
use dlmd::{Device, Dims, Mdspan};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use std::sync::{Arc, OnceLock};

/// One device, its stream (the legacy default stream) and the kernels loaded on it, made once
/// per device.
pub struct Gpu {
    pub stream: Arc<CudaStream>,
    kernels: OnceLock<Result<&'static Kernels, String>>,
    cxx: OnceLock<Result<Kernels, String>>,
    /// The Hopper kernels (`sm_90a`): attention's forward pass.
    hopper: OnceLock<Result<&'static Kernels, String>>,
}

/// The most CUDA devices a MemArray uses.
pub const MAX_GPUS: usize = 16;

/// CUDA device `ordinal`, or `BufferError` where there is none.
pub fn gpu(ordinal: usize) -> PyResult<&'static Gpu> {
    gpu_or_why(ordinal).map_err(PyBufferError::new_err)
}

/// CUDA device `ordinal`, or why there is none (without Python: XLA's handlers call this).
pub fn gpu_or_why(ordinal: usize) -> Result<&'static Gpu, String> {
    static GPUS: [OnceLock<Result<Gpu, String>>; MAX_GPUS] = [const { OnceLock::new() }; MAX_GPUS];
    let slot = GPUS
        .get(ordinal)
        .ok_or_else(|| format!("CUDA device {ordinal}: a MemArray uses devices 0 to {}", MAX_GPUS - 1))?;
    slot.get_or_init(|| {
        let ctx = dlmd::cuda::context(ordinal).map_err(|e| e.to_string())?;
        Ok(Gpu {
            stream: ctx.default_stream(),
            kernels: OnceLock::new(),
            cxx: OnceLock::new(),
            hopper: OnceLock::new(),
        })
    })
    .as_ref()
    .map_err(|e| format!("no CUDA device {ordinal}: {e}"))
}

/// The ordinal of a CUDA view's device, as an index.
pub fn ordinal_of(device: Device) -> PyResult<usize> {
    usize::try_from(device.ordinal())
        .map_err(|_| PyBufferError::new_err(format!("CUDA device {} does not exist", device.ordinal())))
}

pub fn cuda_error(e: impl std::fmt::Display) -> PyErr {
    PyBufferError::new_err(format!("CUDA: {e}"))
}

/// The kernels: `add_index_<dtype>_<rank>` for every type with a C name and ranks 0 to 4 (rank 0
/// adds the empty index's sum, 0, as the CPU does).
fn kernel_source() -> String {
    let mut src = String::from(
        r#"
template <typename T> __device__ T add_sum(T x, long long s) { return x + (T)s; }
template <> __device__ bool add_sum<bool>(bool x, long long s) { return x || s != 0; }
template <typename T, int R> __device__ void add_index_impl(dlmd::view<T, R> v) {
    long long n = v.size();
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
        long long idx[R];
        v.unravel(t, idx);
        long long s = 0, offset = 0;
        for (int r = 0; r < R; ++r) { s += idx[r]; offset += idx[r] * v.strides[r]; }
        v.data[offset] = add_sum(v.data[offset], s);
    }
}
template <typename T> __device__ void add_index_impl(dlmd::view<T, 0> v) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { v() = add_sum(v(), 0); }
}
"#,
    );
    for dtype in DType::ALL {
        let Some(c) = dtype.c_type() else { continue };
        let name = dtype.name();
        for r in 0..=MAX_RANK {
            src += &format!(
                "extern \"C\" __global__ void add_index_{name}_{r}(dlmd::view<{c}, {r}> v) {{ add_index_impl(v); }}\n"
            );
        }
    }
    src
}

/// Queues the Rust `add_index` over an imported CUDA tensor on the stream its producer named,
/// without waiting: the launch keeps the tensor until the kernel is done.
pub fn add_index(x: &Imported) -> PyResult<()> {
    dlmd_memarray_kernels::add_index(kernels(x)?, x).map_err(kernel_error)
}

/// The Rust kernels on `x`'s device, loaded once.
fn kernels(x: &Imported) -> PyResult<&'static Kernels> {
    kernels_on(x.ordinal().map_err(cuda_error)?).map_err(PyBufferError::new_err)
}

/// The Rust kernels on device `ordinal`, loaded once, or why they cannot be (without Python).
pub fn kernels_on(ordinal: usize) -> Result<&'static Kernels, String> {
    let gpu = gpu_or_why(ordinal)?;
    gpu.kernels
        .get_or_init(|| {
            // Loaded for the process: launches need not keep the module until they are done.
            Kernels::load(gpu.stream.context(), dlmd_memarray_kernels::PTX)
                .map(Kernels::leak)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| format!("CUDA: {e}"))
}

/// A kernel refused or failed, as Python sees it: `TypeError` for an element type or rank no
/// kernel takes, the import's own error for a tensor that does not fit, `BufferError` for the
/// rest (a refused launch, CUDA failing).
fn kernel_error(e: dlmd_memarray_kernels::Error) -> PyErr {
    match e {
        dlmd_memarray_kernels::Error::Unsupported { .. } => PyTypeError::new_err(e.to_string()),
        dlmd_memarray_kernels::Error::Shapes | dlmd_memarray_kernels::Error::Batch { .. } => {
            pyo3::exceptions::PyValueError::new_err(e.to_string())
        }
        dlmd_memarray_kernels::Error::Cuda(CudaError::Import(e)) => e.into(),
        dlmd_memarray_kernels::Error::Cuda(e) => cuda_error(e),
    }
}

/// Queues attention's forward pass (`dlmd-example-hopper-kernels`) over imported CUDA tensors
/// on the stream their producer named, without waiting: `o` and `lse` are written, `q`, `k`
/// and `v` only read. A GPU that cannot run `sm_90a` code raises `RuntimeError`; a call whose
/// tensors do not fit (shapes, strides, memory, an output sharing memory with another tensor),
/// `ValueError` (`TypeError` for an element type no kernel takes); CUDA refusing or failing
/// (tensors ready on different streams, or on different devices), `BufferError`.
pub fn attention(qkv: [&Imported; 3], o: &Imported, lse: &Imported, scale: f32, causal: bool) -> PyResult<()> {
    let kernels = hopper(o)?;
    dlmd_example_hopper_kernels::attention_forward_imported(kernels, qkv, o, lse, scale, causal)
        .map_err(attention_error)
}

/// Queues attention's backward pass (`dlmd-example-hopper-kernels`) over imported CUDA tensors
/// on the stream their producer named, without waiting: `delta` (scratch), `dq`, `dk` and `dv`
/// are written, the others only read. Exceptions as for [`attention`].
#[allow(clippy::too_many_arguments)]
pub fn attention_backward(
    forward: [&Imported; 5],
    lse: &Imported,
    delta: &Imported,
    grads: [&Imported; 3],
    scale: f32,
    causal: bool,
) -> PyResult<()> {
    let kernels = hopper(grads[0])?;
    dlmd_example_hopper_kernels::attention_backward_imported(kernels, forward, lse, delta, grads, scale, causal)
        .map_err(attention_error)
}

/// Queues attention's forward pass over sequences packed together
/// (`attention_varlen_forward_imported`) on the stream the tensors' producer named, without
/// waiting. Exceptions as for [`attention`].
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen(
    qkv: [&Imported; 3],
    o: &Imported,
    lse: &Imported,
    offsets: [&Imported; 2],
    max_q: usize,
    scale: f32,
    causal: bool,
) -> PyResult<()> {
    let kernels = hopper(o)?;
    dlmd_example_hopper_kernels::attention_varlen_forward_imported(kernels, qkv, o, lse, offsets, max_q, scale, causal)
        .map_err(attention_error)
}

/// Queues attention's backward pass over sequences packed together
/// (`attention_varlen_backward_imported`), as [`attention_backward`].
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen_backward(
    forward: [&Imported; 5],
    lse: &Imported,
    delta: &Imported,
    grads: [&Imported; 3],
    offsets: [&Imported; 2],
    longest: [usize; 2],
    scale: f32,
    causal: bool,
) -> PyResult<()> {
    let kernels = hopper(grads[0])?;
    dlmd_example_hopper_kernels::attention_varlen_backward_imported(
        kernels, forward, lse, delta, grads, offsets, longest, scale, causal,
    )
    .map_err(attention_error)
}

/// The Hopper kernels, loaded on the device of `x` (once a device).
fn hopper(x: &Imported) -> PyResult<&'static Kernels> {
    hopper_on(x.ordinal().map_err(cuda_error)?)
        .map_err(|e| PyRuntimeError::new_err(format!("attention's kernels cannot run here: {e}")))
}

/// The Hopper kernels on device `ordinal`, loaded once, or why they cannot be (without Python).
pub fn hopper_on(ordinal: usize) -> Result<&'static Kernels, String> {
    let gpu = gpu_or_why(ordinal)?;
    gpu.hopper
        .get_or_init(|| {
            Kernels::load(gpu.stream.context(), dlmd_example_hopper_kernels::PTX)
                .map(Kernels::leak)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// The Python exception of a refused attention call, by cause.
fn attention_error(e: dlmd_example_hopper_kernels::AttentionError) -> PyErr {
    use dlmd::cuda::{LaunchError, TensorMapError};
    use dlmd_example_hopper_kernels::AttentionError as E;
    match &e {
        E::DataType { .. }
        | E::Argument {
            source: CudaError::Import(dlmd::ImportError::DataType { .. }),
            ..
        } => PyTypeError::new_err(e.to_string()),
        // A tensor that does not fit: its shape, strides, memory, or an output sharing memory
        // with another argument.
        E::Argument {
            source: CudaError::Import(_) | CudaError::Placement(_),
            ..
        }
        | E::Argument {
            source:
                CudaError::TensorMap(
                    TensorMapError::Alignment { .. }
                    | TensorMapError::InnerStride { .. }
                    | TensorMapError::RowStride { .. }
                    | TensorMapError::Stride { .. }
                    | TensorMapError::Rank { .. }
                    | TensorMapError::Extent { .. },
                ),
            ..
        }
        | E::Cuda(CudaError::Launch(LaunchError::Arguments { .. }))
        | E::Shape { .. }
        | E::HeadDim { .. }
        | E::KeysValues { .. }
        | E::QueriesKeys { .. }
        | E::NoKeys { .. }
        | E::Output { .. }
        | E::Lse { .. }
        | E::Gradient { .. }
        | E::Scale { .. }
        | E::Packed { .. }
        | E::Offsets { .. }
        | E::Map { .. } => pyo3::exceptions::PyValueError::new_err(e.to_string()),
        // CUDA refusing or failing: the driver, the streams, the device.
        _ => cuda_error(e),
    }
}

/// Queues the Rust `out += x` on `out`'s producer's stream, without waiting.
pub fn accumulate(out: &Imported, x: &Imported) -> PyResult<()> {
    dlmd_memarray_kernels::accumulate(kernels(out)?, out, x).map_err(kernel_error)
}

/// Runs the C++ `add_index_<dtype>_<R>` over a writable device view on `stream` and waits for
/// it: the benchmark reference of the Rust kernel.
pub fn add_index_cxx<T: AddIndex, const R: usize, L: Layout, A: Access>(
    view: &Mdspan<'_, T, Dims<R>, L, Device, A>,
    stream: &Arc<CudaStream>,
) -> PyResult<()> {
    const { assert!(A::MUTABLE, "add_index writes: pass a Unique or AliasedMut view") };
    // The kernels are loaded into, and launched in, the context of the view's device.
    let gpu = gpu(ordinal_of(view.space())?)?;
    let dtype = DType::from_dlpack(T::DTYPE).expect("every AddIndex type is a DType");
    if dtype.c_type().is_none() {
        let names: Vec<&str> = DType::ALL
            .iter()
            .filter(|d| d.c_type().is_some())
            .map(|d| d.name())
            .collect();
        return Err(PyTypeError::new_err(format!(
            "the C++ add_index handles {}, not {}",
            names.join(", "),
            dtype.name()
        )));
    }
    let kernels = gpu
        .cxx
        .get_or_init(|| Kernels::compile_cxx(gpu.stream.context(), &kernel_source()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(cuda_error)?;
    let func = kernels
        .function(&format!("add_index_{}_{R}", dtype.name()))
        .map_err(cuda_error)?;
    let kv: ViewParam<T, R> = view.kernel_view();
    let n = view.size();
    if n == 0 {
        return Ok(());
    }
    let blocks = n.div_ceil(256).min(65_535) as u32;
    let mut launch = stream.launch_builder(&func);
    launch.arg(&kv);
    // SAFETY: the kernel reads and writes exactly the view's elements (a writable view, checked
    // unique by its importer), which the view's owner keeps alive until the kernel has run (the
    // stream is synchronised below); the producer made them ready on this stream.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .map_err(cuda_error)?;
    stream.synchronize().map_err(cuda_error)
}

/// The stream behind a consumer's [`WorkStream`](dlmd::python::WorkStream) on device
/// `ordinal`: the device's own for the default stream, otherwise the producer's stream, checked
/// to be a stream of the device's context before it is used.
pub fn work_stream(stream: dlmd::python::WorkStream, ordinal: usize) -> PyResult<Arc<CudaStream>> {
    let gpu = gpu(ordinal)?;
    if stream.is_default() {
        return Ok(gpu.stream.clone());
    }
    let handle = dlmd::cuda::check_stream(stream.handle() as usize, gpu.stream.context()).map_err(cuda_error)?;
    // SAFETY: `handle` is a stream of this context (checked above), kept alive by its producer
    // while the work queued on it for the import runs; ordering with the producer's own work is
    // what queueing on its work stream gives.
    Ok(unsafe { gpu.stream.context().wrap_borrowed_stream(handle) })
}
