//! `add_index` for JAX inside `jax.jit`: XLA FFI handlers (`dlmd::xla`) for XLA's CPU and CUDA
//! backends, registered by `jax_op.py`, which gives them a batching rule (`jax.vmap`) and a
//! gradient (`jax.grad`).
//!
//! The call is `y = add_index(x)` with `y` sharing `x`'s buffer (`input_output_aliases={0: 0}`):
//! on CUDA the kernel is the one `MemArray.add_index` and the torch operator launch, in place on
//! XLA's stream; on the host the same element arithmetic. The attribute `batch_dims` (an
//! `int64`) is the number of leading dimensions that index a batch, left out of the sum.

use crate::dtype::{AddIndex, DType};
use dlmd::dlpack::DLDataType;
use dlmd::xla::{Buffer, Call, Handler, HandlerError, Platform, ffi};
use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicU64, Ordering};

/// The batch dimensions of a call on `x`: the attribute, checked against its rank.
fn batch_dims(call: &Call<'_>, x: &Buffer<'_>) -> Result<u32, HandlerError> {
    let batch: i64 = call.attr("batch_dims")?;
    let rank = x.shape().len();
    u32::try_from(batch)
        .ok()
        .filter(|&b| b as usize <= rank)
        .ok_or_else(|| HandlerError::invalid_argument(format!("batch_dims is {batch}, and x has rank {rank}")))
}

/// That the result (its extents and type) is the argument's.
fn same_as_argument(x: &Buffer<'_>, (shape, dtype): (&[i64], DLDataType)) -> Result<(), HandlerError> {
    if x.shape() != shape || x.dtype() != dtype {
        return Err(HandlerError::invalid_argument(format!(
            "add_index returns its argument's shape and type: x is {:?} of {}, the result {shape:?} of {dtype}",
            x.shape(),
            x.dtype(),
        )));
    }
    Ok(())
}

/// `add_index` on XLA's CPU backend: `y[i] = x[i] + Σ i[batch_dims..]`, whether or not `y`
/// shares `x`'s buffer.
pub struct AddIndexHost;

impl Handler for AddIndexHost {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let x = call.arg(0)?;
        let mut y = call.ret(0)?;
        same_as_argument(&x, (y.shape(), y.dtype()))?;
        let batch = batch_dims(call, &x)?;
        if x.dtype() == <bool as dlmd::DlElement>::DTYPE {
            // `PRED` buffers are read and written as bytes (any byte but 0 is true).
            let mut x = x;
            return dlmd::with_rank!(x.shape().len(), [0, 1, 2, 3, 4], R => {
                add_bools(&x.bool_bytes::<HostMdspanAliased<'_, u8, Dims<R>>>()?,
                          &y.bool_bytes_mut::<HostMdspanAliasedMut<'_, u8, Dims<R>>>()?, batch);
                Ok(())
            }, r => Err(HandlerError::invalid_argument(format!("add_index has no kernel for rank {r} (ranks 0 to 4)"))));
        }
        let dtype = DType::from_dlpack(x.dl_tensor().dtype).ok_or_else(|| {
            HandlerError::invalid_argument(format!("add_index takes no {} arrays", x.dl_tensor().dtype))
        })?;
        with_dtype!(dtype, T => dlmd::with_rank!(x.shape().len(), [0, 1, 2, 3, 4], R => {
            add(&x.view::<HostMdspanAliased<'_, T, Dims<R>>>()?,
                &y.view_mut::<HostMdspanAliasedMut<'_, T, Dims<R>>>()?, batch);
            Ok(())
        }, r => Err(HandlerError::invalid_argument(format!("add_index has no kernel for rank {r} (ranks 0 to 4)")))))
    }
}

/// `y[i] = x[i] + Σ i[batch..]`, element by element (`y` may be `x`).
fn add<T: AddIndex, const R: usize>(
    x: &HostMdspanAliased<'_, T, Dims<R>>,
    y: &HostMdspanAliasedMut<'_, T, Dims<R>>,
    batch: u32,
) {
    y.update(|index, _| {
        let mut v = x.load(index);
        v.add_index(dlmd_memarray_kernels::batch_sum(index, batch));
        v
    });
}

/// How many times XLA has called [`AddIndexCuda`]: a program XLA replays from a command buffer
/// runs the kernel without calling the handler.
static CUDA_CALLS: AtomicU64 = AtomicU64::new(0);

/// The number of calls of the CUDA handler so far (XLA calls it once to capture a command
/// buffer, not at its replays).
#[pyfunction]
pub fn xla_cuda_calls() -> u64 {
    CUDA_CALLS.load(Ordering::Relaxed)
}

/// `y[i] = x[i] || Σ i[batch..] ≠ 0` over bytes, written 0 or 1 (`y` may be `x`).
fn add_bools<const R: usize>(
    x: &HostMdspanAliased<'_, u8, Dims<R>>,
    y: &HostMdspanAliasedMut<'_, u8, Dims<R>>,
    batch: u32,
) {
    y.update(|index, _| u8::from(x.load(index) != 0 || dlmd_memarray_kernels::batch_sum(index, batch) != 0));
}

/// `add_index` on XLA's CUDA backend: the Rust kernel, in place on the result (which must be
/// the argument's buffer), queued on XLA's stream without a host wait. The same launch every
/// call, so XLA may capture it into a CUDA graph.
pub struct AddIndexCuda;

impl Handler for AddIndexCuda {
    const PLATFORM: Platform = Platform::Cuda;
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        CUDA_CALLS.fetch_add(1, Ordering::Relaxed);
        let x = call.arg(0)?;
        let y = call.cuda_ret(0)?;
        let result = y.tensor().dl_tensor();
        same_as_argument(&x, (y.tensor().shape().unwrap_or(&[]), result.dtype))?;
        if x.dl_tensor().data != result.data {
            return Err(HandlerError::invalid_argument(
                "add_index runs in place on CUDA: its result must share the argument's buffer \
                 (input_output_aliases={0: 0})",
            ));
        }
        let batch = batch_dims(call, &x)?;
        let ordinal = call.device().device_id as usize;
        let kernels = crate::gpu::kernels_on(ordinal).map_err(HandlerError::internal)?;
        dlmd_memarray_kernels::add_index_batched(kernels, &y, batch).map_err(|e| match e {
            dlmd_memarray_kernels::Error::Cuda(e) => HandlerError::from(e),
            e => HandlerError::invalid_argument(e.to_string()),
        })
    }
}

/// What [`AddIndexCuda`] does before its launch, and no launch: for `bench_jax.py`, which
/// times the launch apart from the call's checks and XLA's own cost of a custom call.
pub struct ChecksOnly;

impl Handler for ChecksOnly {
    const PLATFORM: Platform = Platform::Cuda;
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let x = call.arg(0)?;
        let y = call.cuda_ret(0)?;
        same_as_argument(&x, (y.tensor().shape().unwrap_or(&[]), y.tensor().dl_tensor().dtype))?;
        batch_dims(call, &x)?;
        crate::gpu::kernels_on(call.device().device_id as usize).map_err(HandlerError::internal)?;
        Ok(())
    }
}

/// [`AddIndexCuda`]'s steps up to the one the attribute `steps` names, for `bench_jax.py`,
/// which times each step of a call: 0, the call's checks; 1, the two imports (`arg`,
/// `cuda_ret`); 2, the kernel argument (the import's checks, the allocation asked of the
/// driver); 3, the launch on XLA's stream, made and not run; 4, the kernel launched. On a
/// one-dimensional `float32` array only.
pub struct Steps;

/// The host time [`Steps`] took, in nanoseconds, its calls timed, and all its calls, by its
/// `steps` attribute.
static STEPS_HOST: [[AtomicU64; 3]; 5] = [const { [const { AtomicU64::new(0) }; 3] }; 5];

/// Calls of each step left out of its time: the first ones load the kernels and their code.
const STEPS_WARMUP: u64 = 1000;

/// The mean host time of a [`Steps`] call, in microseconds, for each value of its `steps`
/// attribute (0 to 4), past each one's first calls: what the handler itself costs XLA's
/// thread, where `bench_jax.py` times the whole call.
#[pyfunction]
pub fn xla_steps_host_us() -> Vec<f64> {
    STEPS_HOST
        .iter()
        .map(|[ns, timed, _]| ns.load(Ordering::Relaxed) as f64 / 1e3 / timed.load(Ordering::Relaxed).max(1) as f64)
        .collect()
}

impl Handler for Steps {
    const PLATFORM: Platform = Platform::Cuda;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let start = std::time::Instant::now();
        let steps: i64 = call.attr("steps")?;
        let result = Self::steps(call, steps);
        if let Some([ns, timed, calls]) = usize::try_from(steps).ok().and_then(|s| STEPS_HOST.get(s))
            && calls.fetch_add(1, Ordering::Relaxed) >= STEPS_WARMUP
        {
            ns.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            timed.fetch_add(1, Ordering::Relaxed);
        }
        result
    }
}

impl Steps {
    fn steps(call: &Call<'_>, steps: i64) -> Result<(), HandlerError> {
        if steps < 1 {
            return Ok(());
        }
        let _x = call.arg(0)?;
        let y = call.cuda_ret(0)?;
        if steps < 2 {
            return Ok(());
        }
        let arg = y.arg::<dlmd::DeviceMdspanMut<'_, f32, Dims<1>, dlmd::LayoutStrideRelaxed>>()?;
        if steps < 3 {
            return Ok(());
        }
        let kernels = crate::gpu::kernels_on(call.device().device_id as usize).map_err(HandlerError::internal)?;
        let launch = y.launch(kernels, dlmd_memarray_kernels::grid(y.tensor().shape().unwrap_or(&[])))?;
        if steps < 4 {
            return Ok(());
        }
        dlmd_memarray_kernels::add_index_float32_1(launch, 0, arg).map_err(HandlerError::from)
    }
}

/// [`Steps`] as a capsule for `jax.ffi.register_ffi_target(…, platform="CUDA")`.
#[pyfunction]
pub fn xla_steps(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyCapsule>> {
    dlmd::python::xla_capsule(py, dlmd::xla::entry::<Steps>)
}

/// [`ChecksOnly`] as a capsule for `jax.ffi.register_ffi_target(…, platform="CUDA")`.
#[pyfunction]
pub fn xla_checks_only(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyCapsule>> {
    dlmd::python::xla_capsule(py, dlmd::xla::entry::<ChecksOnly>)
}

/// A refused or failed attention call, as XLA reports it: CUDA failing is `INTERNAL`, every
/// other refusal (shapes, types, memory, an output sharing memory) the call's.
fn attention_error(e: dlmd_example_hopper_kernels::AttentionError) -> HandlerError {
    use dlmd::cuda::CudaError;
    use dlmd_example_hopper_kernels::AttentionError as E;
    match e {
        E::Cuda(CudaError::Driver(_) | CudaError::NoDriver)
        | E::Argument {
            source: CudaError::Driver(_) | CudaError::NoDriver,
            ..
        } => HandlerError::internal(e.to_string()),
        e => HandlerError::invalid_argument(e.to_string()),
    }
}

/// Attention's kernels on the call's device, or `FAILED_PRECONDITION` where they cannot run
/// (a GPU without `sm_90a`).
fn hopper_kernels(call: &Call<'_>) -> Result<&'static dlmd::cuda::Kernels, HandlerError> {
    crate::gpu::hopper_on(call.device().device_id as usize).map_err(|e| {
        HandlerError::new(
            ffi::ErrorCode::FAILED_PRECONDITION,
            format!("attention's kernels cannot run here: {e}"),
        )
    })
}

/// Attention's forward pass on XLA's CUDA backend, the kernels of the torch operator
/// `dlmd::attention`: arguments `q` `(b, h_q, s_q, d)`, `k` and `v` `(b, h_kv, s_k, d)`
/// (`bfloat16` or `float16`, `d` 64 or 128); results `o` (`q`'s shape and type) and the
/// log-sum-exp `lse` (`float32`, `(b, h_q, s_q)`); attributes `scale` (`float32`) and `causal`
/// (`bool`).
pub struct AttentionCuda;

impl Handler for AttentionCuda {
    const PLATFORM: Platform = Platform::Cuda;
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let scale: f32 = call.attr("scale")?;
        let causal: bool = call.attr("causal")?;
        let [q, k, v] = [call.cuda_arg(0)?, call.cuda_arg(1)?, call.cuda_arg(2)?];
        let [o, lse] = [call.cuda_ret(0)?, call.cuda_ret(1)?];
        dlmd_example_hopper_kernels::attention_forward_imported(
            hopper_kernels(call)?,
            [&q, &k, &v],
            &o,
            &lse,
            scale,
            causal,
        )
        .map_err(attention_error)
    }
}

/// Attention's backward pass on XLA's CUDA backend, the kernels of `dlmd::attention_backward`:
/// arguments `q`, `k`, `v`, `o`, `do` (the output's gradient) and `lse`; results `dq`, `dk`,
/// `dv` and `delta` (`float32`, `(b, h_q, s_q)`, the kernels' scratch); attributes as
/// [`AttentionCuda`]'s. Deterministic: each gradient element is written once.
pub struct AttentionBackwardCuda;

impl Handler for AttentionBackwardCuda {
    const PLATFORM: Platform = Platform::Cuda;
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let scale: f32 = call.attr("scale")?;
        let causal: bool = call.attr("causal")?;
        let [q, k, v, o, d_o, lse] = [0, 1, 2, 3, 4, 5].map(|i| call.cuda_arg(i));
        let [dq, dk, dv, delta] = [0, 1, 2, 3].map(|i| call.cuda_ret(i));
        let (q, k, v, o, d_o, lse) = (q?, k?, v?, o?, d_o?, lse?);
        let (dq, dk, dv, delta) = (dq?, dk?, dv?, delta?);
        dlmd_example_hopper_kernels::attention_backward_imported(
            hopper_kernels(call)?,
            [&q, &k, &v, &o, &d_o],
            &lse,
            &delta,
            [&dq, &dk, &dv],
            scale,
            causal,
        )
        .map_err(attention_error)
    }
}

/// The handlers as capsules for `jax.ffi.register_ffi_target`: `{platform: capsule}`.
#[pyfunction]
pub fn xla_add_index(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let targets = PyDict::new(py);
    targets.set_item("cpu", dlmd::python::xla_capsule(py, dlmd::xla::entry::<AddIndexHost>)?)?;
    targets.set_item("CUDA", dlmd::python::xla_capsule(py, dlmd::xla::entry::<AddIndexCuda>)?)?;
    Ok(targets)
}

/// Attention's handlers as capsules for `jax.ffi.register_ffi_target(…, platform="CUDA")`:
/// `(forward, backward)`.
#[pyfunction]
pub fn xla_attention(
    py: Python<'_>,
) -> PyResult<(Bound<'_, pyo3::types::PyCapsule>, Bound<'_, pyo3::types::PyCapsule>)> {
    Ok((
        dlmd::python::xla_capsule(py, dlmd::xla::entry::<AttentionCuda>)?,
        dlmd::python::xla_capsule(py, dlmd::xla::entry::<AttentionBackwardCuda>)?,
    ))
}

/// The module that registers the handlers with JAX and defines the JAX functions (on the first
/// call, which imports jax).
fn jax_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static MODULE: pyo3::sync::PyOnceLock<Py<PyModule>> = pyo3::sync::PyOnceLock::new();
    crate::python_module(
        py,
        &MODULE,
        include_str!("python/jax_op.py"),
        c"dlmd_memarray/jax_op.py",
        c"dlmd_memarray.jax_op",
    )
}

/// `add_index` for JAX: `jax_add_index()(x)` returns `x` with each element plus the sum of its
/// indices, inside or outside `jax.jit`, under `jax.vmap` and `jax.grad` (defined on the first
/// call, which imports jax and registers the handlers).
#[pyfunction]
pub fn jax_add_index(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(jax_module(py)?.getattr("add_index")?.unbind())
}

/// Attention for JAX: `jax_attention()(q, k, v, scale, causal)` returns `(o, lse)`, inside or
/// outside `jax.jit`, differentiable in `q`, `k` and `v` (`jax.grad` runs the backward kernels
/// of the torch operator's backward pass); CUDA only.
#[pyfunction]
pub fn jax_attention(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(jax_module(py)?.getattr("attention")?.unbind())
}
