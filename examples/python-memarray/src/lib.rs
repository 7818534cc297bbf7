//! `dlmd_memarray`: the AMSO MemArray in Rust, built on dlmd. The AMSO MemArray (the seed this
//! example grows from) is a C++/CUDA n-dimensional array that Python frameworks share through
//! DLPack; "the seed's" names here are its names.
//!
//! A `MemArray(shape, dtype)` owns a host buffer of any numpy dtype except strings and objects,
//! rank 0 to 4, and exchanges it with every DLPack consumer (`np.from_dlpack(m)`) and producer
//! (`MemArray.from_dlpack(x)`, `m.read_numpy(x)`) without copies where DLPack allows.
//! `add_index` is the seed's test kernel: each element gains the sum of its indices.
//!
//! While a consumer holds an exported tensor, the MemArray cannot be changed from Rust (its
//! `&mut` methods raise `BufferError`), and it stays alive however many Python references go.
//!
//! Modules: `dtype` (the element types, typed, and their host and GPU buffers), `array` (the
//! class), `exported` (what an exported tensor owns), `cell` (the GIL-guarded cell the class
//! keeps its data in), `gpu` (the stream and the kernels), `jax` (`add_index` as XLA FFI
//! handlers, for JAX inside `jax.jit`), `bench` (what the benchmarks and
//! tests call beside the module's API: one consumer path at a time, and the table switch).

/// Runs `$body` with `$R` the const rank `$rank` (0 to 4, dlmd's dispatch), or raises
/// `ValueError`.
macro_rules! with_rank {
    ($rank:expr, $R:ident => $body:expr) => {
        dlmd::with_rank!($rank, [0, 1, 2, 3, 4], $R => $body, r => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "rank {r} is not supported; MemArray holds rank 0 to {}",
            $crate::MAX_RANK
        ))))
    };
}

#[macro_use]
mod dtype;
mod array;
mod bench;
#[cfg(feature = "candle")]
mod candle;
mod cell;
mod collective;
mod exported;
mod gpu;
mod jax;
mod torch_native;

use array::MemArray;
use dlmd::cuda::ImportedMut;
use dlmd::dlpack::DLDeviceType;
use dlmd::managed::ManagedTensor;
use dlmd::oneapi::{self, Placed};
use dlmd::python::{
    add_dlpack_method, from_dlpack as import, import_for_kernel, publish_exchange_api_borrowing, with_dlpack_borrowed,
};
use dlmd::space::OneApi;
use dlmd::view::Aliased;
use dlmd::view::AliasedMut;
use dlmd::{Device, Dims, DlElement, Host, HostMdspanAliased, ImportError, LayoutStrideRelaxed, Mdspan, Opaque};
use dtype::{DType, dtype_arg};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The largest rank a MemArray has.
const MAX_RANK: usize = 4;

/// A host view of `tensor` for reading: CPU memory (or pinned or managed memory), or oneAPI host
/// and shared USM, which the oneAPI runtime tells from device USM.
fn host_view<T: DlElement, const R: usize>(
    tensor: &ManagedTensor,
) -> PyResult<HostMdspanAliased<'_, T, Dims<R>, LayoutStrideRelaxed>> {
    if tensor.dl_tensor().device.device_type == DLDeviceType::ONE_API {
        let view = tensor
            .view::<Mdspan<'_, T, Dims<R>, LayoutStrideRelaxed, Opaque<OneApi>, Aliased>>()
            .map_err(import_error)?;
        return match oneapi::place(view).map_err(oneapi_error)? {
            Placed::Host(view, _) => Ok(view),
            Placed::Device(_) => Err(device_usm()),
        };
    }
    tensor
        .view::<HostMdspanAliased<'_, T, Dims<R>, LayoutStrideRelaxed>>()
        .map_err(import_error)
}

/// A host view of `tensor` for writing, as [`host_view`].
fn host_view_mut<'a, T: DlElement, const R: usize>(
    tensor: &'a mut ImportedMut<'_>,
) -> PyResult<Mdspan<'a, T, Dims<R>, LayoutStrideRelaxed, Host, AliasedMut>> {
    if tensor.dl_tensor().device.device_type == DLDeviceType::ONE_API {
        let view = tensor
            .view_mut::<Mdspan<'_, T, Dims<R>, LayoutStrideRelaxed, Opaque<OneApi>, AliasedMut>>()
            .map_err(import_error)?;
        return match oneapi::place(view).map_err(oneapi_error)? {
            Placed::Host(view, _) => Ok(view),
            Placed::Device(_) => Err(device_usm()),
        };
    }
    tensor
        .view_mut::<Mdspan<'_, T, Dims<R>, LayoutStrideRelaxed, Host, AliasedMut>>()
        .map_err(import_error)
}

/// Device USM cannot be touched from the host.
fn device_usm() -> PyErr {
    PyBufferError::new_err(
        "the data is oneAPI device USM, which the host cannot reach; MemArray.from_dlpack(x, device=\"cpu\") asks the producer for a host copy",
    )
}

/// A oneAPI tensor refused: `BufferError` (what cannot be imported), or the import's own error.
fn oneapi_error(e: oneapi::OneApiError) -> PyErr {
    match e {
        oneapi::OneApiError::Import(e) => import_error(e),
        e => PyBufferError::new_err(e.to_string()),
    }
}

/// An import refused: `BufferError` for a device, data type or layout MemArray cannot take,
/// `ValueError` for a malformed tensor (dlmd's mapping, as the array API asks).
fn import_error(e: ImportError) -> PyErr {
    e.into()
}

/// The element type and rank of `tensor`, where a MemArray has them.
fn dtype_and_rank(tensor: &ManagedTensor) -> PyResult<(DType, usize)> {
    let t = tensor.dl_tensor();
    let (dtype, ndim) = (t.dtype, t.ndim);
    let rank = usize::try_from(ndim).map_err(|_| PyValueError::new_err(format!("ndim {ndim} is negative")))?;
    let dtype =
        DType::from_dlpack(dtype).ok_or_else(|| PyTypeError::new_err(format!("dtype {dtype} is not supported")))?;
    Ok((dtype, rank))
}

/// Adds to each element of `x` the sum of its indices, in place and without a copy. `x` is any
/// DLPack producer: a numpy array (C or Fortran order, sliced, transposed, negatively strided),
/// a MemArray, a torch tensor on the CPU or a GPU, a cupy array, a jax array, a dpnp array in
/// oneAPI host or shared USM. Raises `BufferError` for read-only or overlapping data, and for
/// oneAPI device USM.
///
/// On a GPU, the kernel is queued on the stream the data is ready on, and the call returns
/// without waiting for it: `stream` (a DLPack stream value, such as
/// `torch.cuda.current_stream().cuda_stream`) where given; otherwise the producer's current
/// stream where its type publishes DLPack's C exchange table (torch:
/// `torch.cuda.current_stream()`), the legacy default stream through `__dlpack__` for others.
/// So the work is ordered like the producer's own and can be captured in a CUDA graph.
#[pyfunction]
#[pyo3(signature = (x, /, *, stream = None))]
fn add_index(x: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<()> {
    let mut imported = import_for_kernel(x, stream)?;
    let device = imported.tensor().dl_tensor().device.device_type;
    if !matches!(device, DLDeviceType::CPU | DLDeviceType::ONE_API) {
        return gpu::add_index(&imported);
    }
    let mut tensor = imported
        .tensor_mut()
        .expect("a tensor no launch has taken is held once");
    let (dtype, rank) = dtype_and_rank(&tensor)?;
    with_dtype!(dtype, T => with_rank!(rank, R => {
        let view = host_view_mut::<T, R>(&mut tensor)?;
        view.update(|index, mut x| {
            dtype::AddIndex::add_index(&mut x, index.as_ref().iter().sum());
            x
        });
        Ok(())
    }))
}

/// `add_index` on a CUDA tensor through CUDA C++ kernels compiled by NVRTC, over the same
/// `dlmd::view` argument, on the same stream, waited for: the reference `add_index`'s kernel
/// is measured against.
#[pyfunction]
#[pyo3(signature = (x, /, *, stream = None))]
fn add_index_cxx(x: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<()> {
    let mut imported = import_for_kernel(x, stream)?;
    let on = imported.work_stream();
    let mut tensor = imported
        .tensor_mut()
        .expect("a tensor no launch has taken is held once");
    let (dtype, rank) = dtype_and_rank(&tensor)?;
    with_dtype!(dtype, T => with_rank!(rank, R => {
        let view = tensor
            .view_mut::<Mdspan<'_, T, Dims<R>, LayoutStrideRelaxed, Device, AliasedMut>>()
            .map_err(import_error)?;
        let stream = gpu::work_stream(on, gpu::ordinal_of(view.space())?)?;
        gpu::add_index_cxx(&view, &stream)
    }))
}

/// Adds `x` to `out` in place (`out += x`), for `float32` CUDA tensors of rank 1 or 2 and one
/// shape, from any producers: a kernel of two arguments, queued on `out`'s stream as
/// `add_index` is (both must be ready on it), without waiting. Raises `BufferError` where `out`
/// and `x` share memory (the same tensor, overlapping views of one).
#[pyfunction]
#[pyo3(signature = (out, x, /, *, stream = None))]
fn accumulate(out: &Bound<'_, PyAny>, x: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<()> {
    let out = import_for_kernel(out, stream)?;
    let x = import_for_kernel(x, stream)?;
    gpu::accumulate(&out, &x)
}

/// Attention's forward pass, `o = softmax(q · kᵀ · scale) · v`, and each query row's
/// log-sum-exp into `lse`, on a Hopper GPU (`sm_90a`): `q`, `k`, `v` and `o` CUDA tensors of
/// `bfloat16` or `float16`, `q` and `o` `(b, h_q, s_q, d)`, `k` and `v` `(b, h_kv, s_k, d)`
/// (`h_kv` dividing `h_q`), `d` 64 or 128, any strides a TMA tensor map takes (torch's
/// `(b, s, h, d)` tensors transposed to `(b, h, s, d)` as they are), `lse` `float32`
/// `(b, h_q, s_q)`. `causal` masks keys after each query, aligned to the bottom right. `q`, `k`
/// and `v` are only read; `o` and `lse` are written. Queued on `stream` (every tensor must be
/// ready on it) or each producer's current stream, without waiting.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, lse, /, *, scale, causal, stream = None))]
#[allow(clippy::too_many_arguments)]
fn attention_forward(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    o: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    scale: f32,
    causal: bool,
    stream: Option<isize>,
) -> PyResult<()> {
    let [q, k, v, o, lse] = [q, k, v, o, lse].map(|x| import_for_kernel(x, stream));
    gpu::attention([&q?, &k?, &v?], &o?, &lse?, scale, causal)
}

/// Attention's backward pass on a Hopper GPU: from `q`, `k`, `v`, the forward pass's `o` and
/// `lse`, and the output's gradient `do`, the gradients `dq`, `dk` and `dv`, as
/// `attention_forward`'s tensors (`do` and `dq` of `q`'s shape, `dk` and `dv` of `k`'s, one
/// dtype), with `delta` a `float32` `(b, h_q, s_q)` scratch tensor. The forward pass's
/// `scale` and `causal`. Every element of each gradient is written once, with no atomics: the
/// same inputs give the same bits. `delta`, `dq`, `dk` and `dv` are written; the others only
/// read. Queued on `stream` (every tensor must be ready on it) or each producer's current
/// stream, without waiting.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, d_o, lse, delta, dq, dk, dv, /, *, scale, causal, stream = None))]
#[allow(clippy::too_many_arguments)]
fn attention_backward(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    o: &Bound<'_, PyAny>,
    d_o: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    delta: &Bound<'_, PyAny>,
    dq: &Bound<'_, PyAny>,
    dk: &Bound<'_, PyAny>,
    dv: &Bound<'_, PyAny>,
    scale: f32,
    causal: bool,
    stream: Option<isize>,
) -> PyResult<()> {
    let [q, k, v, o, d_o, lse, delta, dq, dk, dv] =
        [q, k, v, o, d_o, lse, delta, dq, dk, dv].map(|x| import_for_kernel(x, stream));
    gpu::attention_backward(
        [&q?, &k?, &v?, &o?, &d_o?],
        &lse?,
        &delta?,
        [&dq?, &dk?, &dv?],
        scale,
        causal,
    )
}

/// Attention's forward pass over sequences of different lengths packed together, as
/// `flash_attn_varlen_func` takes them: `q` and `o` `(1, h_q, total_q, d)`, `k` and `v`
/// `(1, h_kv, total_k, d)` (torch's packed `(total, h, d)` tensors transposed and unsqueezed
/// as they are), `lse` `float32` `(1, h_q, total_q)`, `cu_seqlens_q` and `cu_seqlens_k` the
/// `int32` CUDA tensors of the sequences' cumulative lengths (`b + 1` each), `max_seqlen_q` the
/// longest query sequence. Otherwise as `attention_forward`. The offsets are read on the
/// device: where they are not offsets of the tensors (negative, decreasing, past the rows)
/// nothing is written.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, /, *, max_seqlen_q, scale, causal, stream = None))]
#[allow(clippy::too_many_arguments)]
fn attention_varlen_forward(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    o: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    cu_seqlens_q: &Bound<'_, PyAny>,
    cu_seqlens_k: &Bound<'_, PyAny>,
    max_seqlen_q: usize,
    scale: f32,
    causal: bool,
    stream: Option<isize>,
) -> PyResult<()> {
    let [q, k, v, o, lse, cu_q, cu_k] =
        [q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k].map(|x| import_for_kernel(x, stream));
    gpu::attention_varlen(
        [&q?, &k?, &v?],
        &o?,
        &lse?,
        [&cu_q?, &cu_k?],
        max_seqlen_q,
        scale,
        causal,
    )
}

/// Attention's backward pass over sequences packed together: `attention_backward`'s tensors
/// shaped as `attention_varlen_forward`'s, its offsets, and the longest query and key
/// sequences.
#[pyfunction]
#[pyo3(signature = (
    q, k, v, o, d_o, lse, delta, dq, dk, dv, cu_seqlens_q, cu_seqlens_k, /, *,
    max_seqlen_q, max_seqlen_k, scale, causal, stream = None
))]
#[allow(clippy::too_many_arguments)]
fn attention_varlen_backward(
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    o: &Bound<'_, PyAny>,
    d_o: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    delta: &Bound<'_, PyAny>,
    dq: &Bound<'_, PyAny>,
    dk: &Bound<'_, PyAny>,
    dv: &Bound<'_, PyAny>,
    cu_seqlens_q: &Bound<'_, PyAny>,
    cu_seqlens_k: &Bound<'_, PyAny>,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    scale: f32,
    causal: bool,
    stream: Option<isize>,
) -> PyResult<()> {
    let [q, k, v, o, d_o, lse, delta, dq, dk, dv, cu_q, cu_k] =
        [q, k, v, o, d_o, lse, delta, dq, dk, dv, cu_seqlens_q, cu_seqlens_k].map(|x| import_for_kernel(x, stream));
    gpu::attention_varlen_backward(
        [&q?, &k?, &v?, &o?, &d_o?],
        &lse?,
        &delta?,
        [&dq?, &dk?, &dv?],
        [&cu_q?, &cu_k?],
        [max_seqlen_q, max_seqlen_k],
        scale,
        causal,
    )
}

/// Lets go of the tensors that queued kernels held and that are done now, without waiting for
/// the others; returns how many launches still hold theirs. (They are let go of by themselves
/// when their kernels are done: this only makes it happen on this thread, at once.)
#[pyfunction]
fn release_completed() -> PyResult<usize> {
    dlmd::cuda::release_completed().map_err(gpu::cuda_error)
}

/// Waits until the kernels launched so far are done and the tensors they held are let go of,
/// with the GIL released (the tensors' deleters may need it). Registered to run at exit, so
/// that no deleter runs while the interpreter shuts down.
#[pyfunction]
fn wait_released(py: Python<'_>) -> PyResult<()> {
    py.detach(dlmd::cuda::wait_released).map_err(gpu::cuda_error)
}

/// The module that defines the torch operators (on the first call, which imports torch).
fn torch_ops(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    // The module, kept for good: the operators' definitions live as long as its library object.
    static MODULE: pyo3::sync::PyOnceLock<Py<PyModule>> = pyo3::sync::PyOnceLock::new();
    python_module(
        py,
        &MODULE,
        include_str!("python/torch_op.py"),
        c"dlmd_memarray/torch_op.py",
        c"dlmd_memarray.torch_op",
    )
}

/// The Python module of `code`, made once into `module` (the first call runs it).
fn python_module<'py>(
    py: Python<'py>,
    module: &'static pyo3::sync::PyOnceLock<Py<PyModule>>,
    code: &str,
    file: &std::ffi::CStr,
    name: &std::ffi::CStr,
) -> PyResult<&'py Bound<'py, PyModule>> {
    let module = module.get_or_try_init(py, || {
        let code = std::ffi::CString::new(code).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok::<_, PyErr>(PyModule::from_code(py, &code, file, name)?.unbind())
    })?;
    Ok(module.bind(py))
}

/// `add_index` as the torch operator `dlmd::add_index` (defined on the first call, which imports
/// torch), for `torch.compile(fullgraph=True)` and CUDA graphs, with a fake implementation for
/// tracing: on a GPU it runs on torch's current stream, passed explicitly, and never waits.
/// Returns the operator, also reachable as `torch.ops.dlmd.add_index`.
#[pyfunction]
fn torch_op(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(torch_ops(py)?.getattr("add_index")?.unbind())
}

/// Attention's forward pass as the torch operator `dlmd::attention(q, k, v, scale, causal)`,
/// returning `(o, lse)` (defined on the first call, which imports torch): for
/// `torch.compile(fullgraph=True)` and CUDA graphs, with a fake implementation for tracing; on
/// torch's current stream, passed explicitly, and never waiting. Returns the operator, also
/// reachable as `torch.ops.dlmd.attention`.
#[pyfunction]
fn torch_attention(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(torch_ops(py)?.getattr("attention")?.unbind())
}

/// Attention over sequences packed together as the torch operator
/// `dlmd::attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
/// scale, causal)`, `flash_attn_varlen_func`'s tensors (`q` `(total_q, h_q, d)`, `k` and `v`
/// `(total_k, h_kv, d)`), returning `(o, lse)` with `lse` `(h_q, total_q)`; differentiable in
/// `q`, `k` and `v` as `dlmd::attention` is. Returns the operator, also reachable as
/// `torch.ops.dlmd.attention_varlen`.
#[pyfunction]
fn torch_attention_varlen(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(torch_ops(py)?.getattr("attention_varlen")?.unbind())
}

/// Makes a torch operator differentiable by another: `differentiable(forward, backward, *,
/// saved, differentiated)` (operator names `"namespace::name"`; `saved(inputs, outputs)` the
/// values the backward operator takes after the gradients of the outputs listed in
/// `differentiated`; it returns one gradient for each tensor input). This is how
/// `dlmd::attention` gets its backward pass: a pair of Rust kernels becomes a differentiable
/// operator in a few lines. Imports torch on the first call.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs))]
fn differentiable(
    py: Python<'_>,
    args: &Bound<'_, pyo3::types::PyTuple>,
    kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<()> {
    torch_ops(py)?.getattr("differentiable")?.call(args, kwargs)?;
    Ok(())
}

/// The DLPack device `(14, id)` that dlmd computes for the oneAPI USM allocation holding `x`'s
/// data, as dpctl's exporters compute it (the position of its root device), or `None` where no
/// default platform context knows it.
#[pyfunction]
#[pyo3(signature = (x, /))]
fn oneapi_device_of(x: &Bound<'_, PyAny>) -> PyResult<Option<(i32, i32)>> {
    let address = with_dlpack_borrowed(x, |t| t.dl_tensor().data as usize)?;
    match oneapi::space_of(address) {
        Ok(space) => Ok(Some((DLDeviceType::ONE_API.0, space.id()))),
        Err(oneapi::OneApiError::NotUsm) => Ok(None),
        Err(e) => Err(oneapi_error(e)),
    }
}

/// One element of `x` (any producer's float32 or float64 tensor in host memory, read in place) as
/// a Python float, at `index`, one entry a dimension. An index outside the shape raises
/// `IndexError`, as numpy does: dlmd's `checked_load` says which dimension, and its error is
/// Python's `IndexError`.
#[pyfunction]
#[pyo3(signature = (x, index, /))]
fn element(x: &Bound<'_, PyAny>, index: Vec<usize>) -> PyResult<f64> {
    let tensor = import(x)?;
    let (dtype, rank) = dtype_and_rank(&tensor)?;
    if index.len() != rank {
        return Err(pyo3::exceptions::PyIndexError::new_err(format!(
            "{} indices for a tensor of rank {rank}",
            index.len()
        )));
    }
    with_rank!(rank, R => {
        let at: [usize; R] = std::array::from_fn(|d| index[d]);
        match dtype {
            DType::F32 => Ok(f64::from(host_view::<f32, R>(&tensor)?.checked_load(at)?)),
            DType::F64 => Ok(host_view::<f64, R>(&tensor)?.checked_load(at)?),
            other => Err(PyTypeError::new_err(format!(
                "element reads float32 and float64 tensors, not {}",
                other.name()
            ))),
        }
    })
}

/// The DLPack data type `(code, bits, lanes)` of a dtype MemArray holds (a name, a numpy dtype
/// or a numpy scalar type): `dlpack_dtype("float32") == (2, 32, 1)`.
#[pyfunction]
#[pyo3(signature = (dtype, /))]
fn dlpack_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<(u8, u8, u16)> {
    let d = dtype_arg(dtype)?.dlpack();
    Ok((d.code, d.bits, d.lanes))
}

/// MemArray: an n-dimensional array that Python frameworks share through DLPack.
///
/// `MemArray(shape, dtype)` makes a zero-filled array; `numpy.from_dlpack`, `torch.from_dlpack`,
/// `cupy.from_dlpack` and `jax.dlpack.from_dlpack` read and write it in place, on the CPU or
/// (after `to_device()`) on the GPU. `MemArray.from_dlpack(x)` copies any producer's data into a
/// new array; `add_index(x)` works in place on any producer's data.
#[pymodule]
fn dlmd_memarray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Free-threaded interpreters do not load stable-ABI modules, but the export count relies on
    // the GIL: say so plainly should one ever try.
    let sys = m.py().import("sys")?;
    if sys.hasattr("_is_gil_enabled")? && !sys.call_method0("_is_gil_enabled")?.extract::<bool>()? {
        return Err(pyo3::exceptions::PyImportError::new_err(
            "dlmd_memarray needs an interpreter with the GIL enabled",
        ));
    }
    m.add_class::<MemArray>()?;
    add_dlpack_method::<MemArray>(m.py())?;
    publish_exchange_api_borrowing::<MemArray>(m.py())?;
    m.add_function(wrap_pyfunction!(add_index, m)?)?;
    m.add_function(wrap_pyfunction!(add_index_cxx, m)?)?;
    m.add_function(wrap_pyfunction!(torch_op, m)?)?;
    m.add_function(wrap_pyfunction!(torch_native::register_torch_ops, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_add_index, m)?)?;
    m.add_function(wrap_pyfunction!(jax::jax_add_index, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_checks_only, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_steps, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_steps_host_us, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_cuda_calls, m)?)?;
    m.add_function(wrap_pyfunction!(jax::xla_attention, m)?)?;
    m.add_function(wrap_pyfunction!(jax::jax_attention, m)?)?;
    m.add_function(wrap_pyfunction!(torch_attention, m)?)?;
    m.add_function(wrap_pyfunction!(differentiable, m)?)?;
    m.add_function(wrap_pyfunction!(accumulate, m)?)?;
    m.add_function(wrap_pyfunction!(attention_forward, m)?)?;
    m.add_function(wrap_pyfunction!(attention_backward, m)?)?;
    m.add_function(wrap_pyfunction!(attention_varlen_forward, m)?)?;
    m.add_function(wrap_pyfunction!(attention_varlen_backward, m)?)?;
    m.add_function(wrap_pyfunction!(torch_attention_varlen, m)?)?;
    m.add_function(wrap_pyfunction!(release_completed, m)?)?;
    let wait = wrap_pyfunction!(wait_released, m)?;
    m.add_function(wait.clone())?;
    m.py().import("atexit")?.call_method1("register", (wait,))?;
    m.add_function(wrap_pyfunction!(dlpack_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(element, m)?)?;
    m.add_function(wrap_pyfunction!(bench::import_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(bench::borrow_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(bench::import_batch, m)?)?;
    m.add_function(wrap_pyfunction!(oneapi_device_of, m)?)?;
    m.add_function(wrap_pyfunction!(bench::use_exchange_api, m)?)?;
    m.add_function(wrap_pyfunction!(collective::all_reduce, m)?)?;
    #[cfg(feature = "candle")]
    {
        m.add_class::<candle::CandleTensor>()?;
        add_dlpack_method::<candle::CandleTensor>(m.py())?;
        m.add_function(wrap_pyfunction!(candle::candle_import, m)?)?;
        m.add_function(wrap_pyfunction!(candle::candle_softmax, m)?)?;
        m.add_function(wrap_pyfunction!(candle::candle_import_batch, m)?)?;
    }
    Ok(())
}
