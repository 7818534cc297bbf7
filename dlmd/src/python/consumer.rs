//! The consumer side: [`from_dlpack`] and its variants import any DLPack producer, through the
//! producer's C exchange table where its type publishes one, through `__dlpack__` otherwise.

use super::capsule::take_capsule;
use super::interned::ConsumerArgs;
use super::math_bits::refuse_math_bits;
use super::request::device_pair;
use super::table::{
    REQUIRES_GRAD, differentiable, entry_error, requires_grad, table_export, table_work_stream, type_name, usable_table,
};
use crate::dlpack::{DLDevice, DLDeviceType, DLPackExchangeAPI, DLTensor};
use crate::exchange;
pub use crate::exchange::WorkStream;
use crate::managed::ManagedTensor;
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, ffi};

/// What a consumer asks of [`from_dlpack_with`]: the keywords of the array API's
/// `from_dlpack(x, /, *, device=None, copy=None)` and the stream of `__dlpack__`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromDlpack {
    /// The stream the consumer uses the data on (a DLPack stream value: `1` the legacy default
    /// stream, `2` the per-thread one, `-1` no synchronisation, or a handle). `None`, for data
    /// on a CUDA device, means the legacy default stream; for managed or pinned CUDA memory,
    /// which the host reads, it means the host: the producer orders its work before the legacy
    /// default stream, and the import waits for that stream (with the `cuda` feature; without
    /// it, synchronise the producer yourself before reading).
    pub stream: Option<isize>,
    /// The device the data must be on (the producer copies it there if it can); `None`: where
    /// it is.
    pub dl_device: Option<DLDevice>,
    /// `Some(true)`: the producer copies; `Some(false)`: it must not; `None`: as it needs.
    pub copy: Option<bool>,
}

/// Imports any object with `__dlpack__` (a numpy array, a torch tensor, a dlmd export…) as an
/// owning [`ManagedTensor`], without copying.
///
/// Where the object's type publishes DLPack's C exchange table (`__dlpack_c_exchange_api__`,
/// or DLPack 1.2's `__c_dlpack_exchange_api__`), the tensor comes from the table's C entry,
/// looked up once per type; otherwise from `__dlpack__`, whose object must also have a
/// `__dlpack_device__` that agrees with the tensor. The tensor's data stays valid until the
/// returned value is dropped. The object and any other consumer still reach the data meanwhile
/// (two calls on one array give two tensors over one buffer), so the tensor's views are
/// [aliased](crate::view::Aliased): elements by value, no references.
///
/// Errors follow the array API: `AttributeError` for an object that is no DLPack producer,
/// `BufferError` for data that cannot be exported as asked.
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
    from_dlpack_with(obj, &FromDlpack::default())
}

/// As [`from_dlpack`], asking a CUDA producer to make the data ready on `stream` (a DLPack
/// stream value: `1` for the legacy default stream, `2` for the per-thread one, `-1` for none,
/// or a handle). `None` asks nothing of the producer, which then makes it ready on the legacy
/// default stream.
pub fn from_dlpack_on_stream(obj: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<ManagedTensor> {
    from_dlpack_with(
        obj,
        &FromDlpack {
            stream,
            ..FromDlpack::default()
        },
    )
}

/// As [`from_dlpack`], with the array API's `device` and `copy` and the stream of `__dlpack__`.
///
/// The exchange table serves requests it can meet: data on the CPU, or on a device whose
/// producer's current work stream is the stream asked for (or with `stream=-1`); already on
/// `dl_device` where one is given; `copy` not `True`. Everything else goes to `__dlpack__` with
/// the keywords, and the tensor it gives is checked against them (`dl_device`, and no copy under
/// `copy=False`).
pub fn from_dlpack_with(obj: &Bound<'_, PyAny>, args: &FromDlpack) -> PyResult<ManagedTensor> {
    refuse_unimportable(obj)?;
    import_with(obj, args)
}

/// [`from_dlpack_with`] of an object [`refuse_unimportable`] let through.
fn import_with(obj: &Bound<'_, PyAny>, args: &FromDlpack) -> PyResult<ManagedTensor> {
    if args.copy != Some(true)
        && let Some(table) = usable_table(obj)?
    {
        let api = table.api;
        let tensor = table_export(obj, table)?;
        let device = tensor.dl_tensor().device;
        if args.dl_device.is_none_or(|wanted| wanted == device) {
            if device.device_type == DLDeviceType::CPU || args.stream == Some(-1) {
                return Ok(tensor);
            }
            let stream = table_work_stream(obj, api, device)?;
            if same_stream(args.stream, stream) {
                if args.stream.is_none() && host_reachable_cuda(device) {
                    ready_on_host(device, stream.0)?;
                }
                return Ok(tensor);
            }
        }
        // The table cannot order the data on another stream or move it: `__dlpack__` can.
    }
    dlpack_method(obj, args)
}

/// Imports `obj` for work queued on the producer's own stream (what library code that runs
/// kernels on framework tensors needs, and what keeps CUDA graph capture intact): no stream
/// synchronisation where the object's type publishes the C exchange table, whose
/// `current_work_stream` the returned [`WorkStream`] is; through `__dlpack__` otherwise, with
/// the data ready on the default stream.
pub fn from_dlpack_work_stream(obj: &Bound<'_, PyAny>) -> PyResult<(ManagedTensor, WorkStream)> {
    refuse_unimportable(obj)?;
    import_work_stream(obj)
}

/// [`from_dlpack_work_stream`] of an object [`refuse_unimportable`] let through.
fn import_work_stream(obj: &Bound<'_, PyAny>) -> PyResult<(ManagedTensor, WorkStream)> {
    if let Some(table) = usable_table(obj)? {
        let tensor = table_export(obj, table)?;
        let stream = table_work_stream(obj, table.api, tensor.dl_tensor().device)?;
        return Ok((tensor, stream));
    }
    Ok((dlpack_method(obj, &FromDlpack::default())?, WorkStream::DEFAULT))
}

/// Imports `obj` (a CUDA tensor of any producer) for `#[dlmd::kernel]` launches on the stream
/// its data is ready on: with `stream` `None`, the producer's current work stream where its type
/// publishes the C exchange table (no synchronisation at all), the legacy default stream through
/// `__dlpack__(stream=1)` otherwise (CPU data is imported as [`from_dlpack`] does, for work on
/// the host: [`Imported::tensor_mut`](crate::cuda::Imported::tensor_mut)); with a DLPack stream value (`1`, `2` or a handle, such as
/// `torch.cuda.current_stream().cuda_stream`), that stream, which the producer is asked to make
/// the data ready on. Launch with [`Imported::launch`](crate::cuda::Imported::launch): the
/// kernel is queued there, and the call returns without waiting for it.
///
/// On the `__dlpack__` path the producer orders its earlier work before the stream, but its
/// later work is ordered after the kernel only if it runs on that stream, or on one that
/// synchronises with the legacy default stream: pass the producer's current stream where it
/// has one (PyTorch's non-default streams do not synchronise with the legacy default stream).
///
/// Errors as [`from_dlpack`] (torch tensors with the negative or conjugate bit set are
/// refused too), and `BufferError` for `stream=-1` or `0`, which name no stream to order a
/// kernel on.
///
/// ```no_run
/// # use pyo3::prelude::*;
/// # fn f(x: &Bound<'_, PyAny>) -> PyResult<()> {
/// let x = dlmd::python::import_for_kernel(x, None)?;
/// assert!(x.ordinal().is_ok());
/// # Ok(()) }
/// # let _ = f;
/// ```
#[cfg(feature = "cuda")]
pub fn import_for_kernel(obj: &Bound<'_, PyAny>, stream: Option<isize>) -> PyResult<crate::cuda::Imported> {
    refuse_unimportable(obj)?;
    let (tensor, on) = match stream {
        None => match usable_table(obj)? {
            Some(table) => {
                let tensor = table_export(obj, table)?;
                let on = table_work_stream(obj, table.api, tensor.dl_tensor().device)?;
                (tensor, on)
            }
            // `stream=1` for CUDA device data, none for the CPU.
            None => (dlpack_method(obj, &FromDlpack::default())?, WorkStream(1)),
        },
        Some(value @ (-1 | 0)) => {
            return Err(PyBufferError::new_err(format!(
                "stream={value} names no stream to queue a kernel on: pass 1 (the legacy default stream), 2 (the \
                 per-thread one) or a stream handle"
            )));
        }
        Some(value) => {
            let args = FromDlpack {
                stream: Some(value),
                ..FromDlpack::default()
            };
            // DLPack stream values are non-negative, or -1 (refused above).
            let on = usize::try_from(value)
                .map_err(|_| PyBufferError::new_err(format!("stream={value} is not a DLPack stream value")))?;
            (import_with(obj, &args)?, WorkStream(on))
        }
    };
    // SAFETY: `on` is the stream the producer made the data ready on: its C exchange table's
    // current work stream (the stream its pending work on the tensor runs on, and its later
    // work too), or the stream `__dlpack__(stream=…)` was asked for, on which DLPack has the
    // producer order its work before returning (1, the legacy default stream, without a value;
    // a handle is checked against the device's context at each launch).
    Ok(unsafe { crate::cuda::Imported::new(tensor, on) })
}

/// Lends `f` the object's tensor for the duration of the call: through the C exchange table's
/// non-owning `dltensor_from_py_object_no_sync` where the producer has it, which allocates
/// nothing (neither side); through an owning import ([`from_dlpack_work_stream`]) released
/// after `f` otherwise.
///
/// The [`LentTensor`]'s `DLTensor` is the producer's, unchecked: read it through
/// [`Mdspan::from_dlpack`](crate::Mdspan::from_dlpack) and friends, whose contract the lending
/// meets while `f` runs no Python code that frees or changes `obj` (the table's promise lasts
/// until control returns to Python); for a mutable view, only where
/// [`writes_refused`](LentTensor::writes_refused) is `None`. `writes_refused` itself may run
/// Python code (it asks the producer's object), so ask it before any view is made. Its
/// [`work_stream`](LentTensor::work_stream) is asked of the producer only if `f` asks.
pub fn with_dlpack_borrowed<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&LentTensor<'_, '_>) -> R) -> PyResult<R> {
    refuse_unimportable(obj)?;
    if let Some(table) = usable_table(obj)?
        // SAFETY: `table.api` is the table `type(obj)` published; the entry takes `obj`,
        // borrowed for the call, with the GIL held.
        && let Some(lent) = unsafe { exchange::lend(table.api, obj.as_ptr().cast()) }
    {
        let tensor = lent.map_err(|e| entry_error(obj, e))?;
        return Ok(f(&LentTensor {
            tensor: &tensor,
            obj,
            stream: Stream::Table(table.api),
            writes: match table.autograd {
                true => Writes::AskRequiresGrad,
                false => Writes::Allowed,
            },
        }));
    }
    let (tensor, stream) = import_work_stream(obj)?;
    Ok(f(&LentTensor {
        tensor: tensor.dl_tensor(),
        obj,
        stream: Stream::Known(stream),
        writes: match tensor.is_read_only() {
            true => Writes::ReadOnly,
            false => Writes::Allowed,
        },
    }))
}

/// A tensor lent by [`with_dlpack_borrowed`] for the duration of its closure.
pub struct LentTensor<'a, 'py> {
    tensor: &'a DLTensor,
    obj: &'a Bound<'py, PyAny>,
    stream: Stream,
    writes: Writes,
}

/// Whether a lent tensor may be written.
#[derive(Clone, Copy)]
enum Writes {
    Allowed,
    /// Lent by a table whose type's objects have `requires_grad`, asked on demand.
    AskRequiresGrad,
    /// Lent through `__dlpack__`, flagged `READ_ONLY`.
    ReadOnly,
}

/// Where a lent tensor's work stream comes from.
enum Stream {
    /// The producer's table, asked on demand.
    Table(&'static DLPackExchangeAPI),
    /// Already known.
    Known(WorkStream),
}

impl LentTensor<'_, '_> {
    /// The producer's tensor, unchecked (see [`with_dlpack_borrowed`]).
    pub fn dl_tensor(&self) -> &DLTensor {
        self.tensor
    }

    /// Why the tensor must not be written, where the producer forbids it: a mutable view of a
    /// lent tensor is for `None` only. Through a table the producer's objects are asked now
    /// (a torch tensor that requires grad, which torch's `__dlpack__` refuses to export, says
    /// so); through `__dlpack__`, the `READ_ONLY` flag answers.
    ///
    /// Asking the producer's object may run Python code (an attribute read), which may change
    /// or free what the lent `DLTensor` describes: ask before any view of the tensor is made,
    /// and make the views after.
    pub fn writes_refused(&self) -> PyResult<Option<&'static str>> {
        match self.writes {
            Writes::Allowed => Ok(None),
            Writes::AskRequiresGrad if differentiable(self.tensor.dtype) => {
                Ok(requires_grad(self.obj)?.then_some(REQUIRES_GRAD))
            }
            Writes::AskRequiresGrad => Ok(None),
            Writes::ReadOnly => Ok(Some("the producer flagged it READ_ONLY")),
        }
    }

    /// The stream the data is ready on, where the work that uses it is queued: the producer's
    /// current work stream (asked of its table now), or the default stream.
    pub fn work_stream(&self) -> PyResult<WorkStream> {
        match self.stream {
            Stream::Table(api) => table_work_stream(self.obj, api, self.tensor.device),
            Stream::Known(stream) => Ok(stream),
        }
    }
}

/// Refuses what no import path may take: bare capsules, which the array API refuses (their
/// lifetime and device are unknown), and tensors whose values are not their memory (torch's
/// negative and conjugate bits, [`math_bits`](super::math_bits)), which every path would
/// export as if they were.
fn refuse_unimportable(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    if obj.is_exact_instance_of::<PyCapsule>() {
        return Err(PyAttributeError::new_err(
            "from_dlpack takes an object with __dlpack__, not a bare capsule (its lifetime and device are unknown)",
        ));
    }
    refuse_math_bits(obj)
}

/// Whether data made ready on the producer's `work` stream is ready on the consumer's `stream`.
fn same_stream(stream: Option<isize>, work: WorkStream) -> bool {
    match stream {
        None | Some(1) => work.is_default(),
        Some(-1) => true,
        Some(s) => s > 2 && work.0 == s as usize || s == 2 && work.0 == 2,
    }
}

/// Whether `device` is CUDA memory the host reads too: managed (`kDLCUDAManaged`) or pinned
/// (`kDLCUDAHost`).
fn host_reachable_cuda(device: DLDevice) -> bool {
    matches!(device.device_type, DLDeviceType::CUDA_MANAGED | DLDeviceType::CUDA_HOST)
}

/// Waits on the host for the producer's `stream` (0 or 1: the legacy default one), behind which
/// the producer ordered its work on the data: the host may read the data next.
#[cfg(feature = "cuda")]
fn ready_on_host(device: DLDevice, stream: usize) -> PyResult<()> {
    // Pinned memory's id is no device ordinal (it is 0): its producer's streams are of device 0.
    let ordinal = if device.device_type == DLDeviceType::CUDA_HOST {
        0
    } else {
        device.device_id
    };
    crate::cuda::wait_for_stream(ordinal, stream).map_err(|e| PyBufferError::new_err(e.to_string()))
}

/// Without the `cuda` feature there is no driver to wait with: the caller synchronises the
/// producer before the host reads managed or pinned memory (see [`FromDlpack::stream`]).
#[cfg(not(feature = "cuda"))]
fn ready_on_host(_: DLDevice, _: usize) -> PyResult<()> {
    Ok(())
}

/// The import through `__dlpack_device__` and `__dlpack__`.
fn dlpack_method(obj: &Bound<'_, PyAny>, args: &FromDlpack) -> PyResult<ManagedTensor> {
    let py = obj.py();
    let names = ConsumerArgs::get(py)?;
    let device = device_of(&call_method(obj, names.dlpack_device.bind(py), &[], None)?)?;
    // oneAPI streams are SYCL queues, not integers: data left on its device is ordered on a
    // queue of that device, which is then waited for (the host reads it next). A copy to the
    // CPU takes no stream: the producer synchronises it itself (the array API's rule).
    let stays = args.dl_device.is_none_or(|d| d == device);
    let queue = match device.device_type {
        DLDeviceType::ONE_API if stays && args.stream != Some(-1) => Some(sycl_queue(py, device.device_id)?),
        _ => None,
    };
    // Managed and pinned CUDA memory is read on the host next unless a stream says otherwise:
    // the producer orders its work before the legacy default stream, which the host then waits
    // for. Data left on a CUDA or ROCm device is used on the default stream unless a stream
    // says otherwise. Either way the default stream is asked for by name (1 for CUDA's legacy
    // one, 0 for ROCm's), never left out: torch 2.10 and later read no `stream` as "no
    // synchronisation", and would hand over data its queued work has not written yet.
    let host_read = stays && args.stream.is_none() && host_reachable_cuda(device);
    let default_stream = match device.device_type {
        _ if !stays || args.stream.is_some() => None,
        DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED | DLDeviceType::CUDA_HOST => Some(1isize),
        DLDeviceType::ROCM | DLDeviceType::ROCM_HOST => Some(0),
        _ => None,
    };
    let stream = match (&queue, args.stream) {
        (Some(queue), _) => Some(queue.clone()),
        (None, Some(stream)) if device.device_type != DLDeviceType::CPU => Some(stream.into_pyobject(py)?.into_any()),
        (None, None) => match default_stream {
            Some(s) => Some(s.into_pyobject(py)?.into_any()),
            None => None,
        },
        _ => None,
    };
    let exported = if queue.is_some() || args.dl_device.is_some() || args.copy.is_some() {
        // The array API's keywords (or a SYCL queue): a producer that does not know them cannot
        // honour them, so its `TypeError` stands (as numpy's `from_dlpack` lets it).
        let kwargs = PyDict::new(py);
        kwargs.set_item(names.max_version_name.bind(py), names.max_version.bind(py))?;
        if let Some(stream) = &stream {
            kwargs.set_item("stream", stream)?;
        }
        if let Some(d) = args.dl_device {
            kwargs.set_item("dl_device", (d.device_type.0, d.device_id))?;
        }
        if let Some(copy) = args.copy {
            kwargs.set_item("copy", copy)?;
        }
        let exported = obj.getattr(names.dlpack.bind(py))?.call((), Some(&kwargs))?;
        if let Some(queue) = &queue {
            queue.call_method0("wait")?;
        }
        exported
    } else {
        let exported = match &stream {
            Some(stream) => call_method(
                obj,
                names.dlpack.bind(py),
                &[names.max_version.bind(py), stream],
                Some(names.max_version_stream_kw.bind(py)),
            ),
            None => call_method(
                obj,
                names.dlpack.bind(py),
                &[names.max_version.bind(py)],
                Some(names.max_version_kw.bind(py)),
            ),
        };
        match exported {
            Ok(capsule) => capsule,
            // Producers from before DLPack 1.0 do not know `max_version`.
            Err(e) if e.is_instance_of::<PyTypeError>(py) => call_method(obj, names.dlpack.bind(py), &[], None)?,
            Err(e) => return Err(e),
        }
    };
    let capsule = exported.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__dlpack__ returned {}, not a DLPack capsule",
            type_name(&exported.get_type())
        ))
    })?;
    // SAFETY: the object is a DLPack producer; its capsule follows the DLPack contract.
    let tensor = unsafe { take_capsule(capsule) }?;
    let actual = tensor.dl_tensor().device;
    if host_read && actual == device {
        ready_on_host(device, 1)?;
    }
    let expected = args.dl_device.unwrap_or(device);
    if actual != expected {
        let said = if args.dl_device.is_some() {
            "dl_device asked for"
        } else {
            "__dlpack_device__ said"
        };
        return Err(PyBufferError::new_err(format!(
            "{said} ({}, {}) but the tensor is on ({}, {})",
            expected.device_type.0, expected.device_id, actual.device_type.0, actual.device_id
        )));
    }
    if args.copy == Some(false) && tensor.is_copied() {
        return Err(PyBufferError::new_err("copy=False, but the producer copied the data"));
    }
    Ok(tensor)
}

/// The `(device_type, device_id)` a `__dlpack_device__` returned.
fn device_of(value: &Bound<'_, PyAny>) -> PyResult<DLDevice> {
    device_pair(value)
        .ok_or_else(|| PyTypeError::new_err("__dlpack_device__ must return a tuple (device_type, device_id)"))
}

/// Calls `obj.name(*args[..n], **dict(zip(kwnames, args[n..])))`, where `n` is `args.len()`
/// less the keyword names, without making a bound method, an argument tuple or a keyword
/// dictionary.
#[cfg(not(windows))]
fn call_method<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    args: &[&Bound<'py, PyAny>],
    kwnames: Option<&Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyAny>> {
    // `PyObject_VectorcallMethod`: part of the stable ABI from Python 3.12, and exported with
    // the same signature by every CPython since 3.9, so abi3 extensions for 3.10 and 3.11 find
    // it too. (Windows' `python3.dll` exports only the stable ABI; there the call goes through
    // `call_method_dict`.)
    unsafe extern "C" {
        fn PyObject_VectorcallMethod(
            name: *mut ffi::PyObject,
            args: *const *mut ffi::PyObject,
            nargsf: usize,
            kwnames: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject;
    }
    /// The callee may use the slot before the first argument.
    const ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);
    const MAX_ARGS: usize = 4;
    let kw = kwnames.map_or(0, |k| k.len());
    if args.len() > MAX_ARGS || kw > args.len() {
        return call_method_dict(obj, name, args, kwnames);
    }
    // Slot 0 is left free for the callee, slot 1 is `self`.
    let mut stack = [core::ptr::null_mut(); MAX_ARGS + 2];
    stack[1] = obj.as_ptr();
    for (slot, arg) in stack[2..].iter_mut().zip(args) {
        *slot = arg.as_ptr();
    }
    let positional = 1 + args.len() - kw;
    // SAFETY: `stack[1..]` holds `self` and the arguments, alive for the call (borrowed from
    // the caller), with the GIL held; slot 0 is ours for the callee to use, as the offset flag
    // says; `kwnames` is a tuple of strings naming the last `kw` arguments.
    let result = unsafe {
        PyObject_VectorcallMethod(
            name.as_ptr(),
            stack.as_ptr().wrapping_add(1),
            positional | ARGUMENTS_OFFSET,
            kwnames.map_or(core::ptr::null_mut(), |k| k.as_ptr()),
        )
    };
    // SAFETY: a new reference, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(obj.py(), result) }
}

#[cfg(windows)]
use call_method_dict as call_method;

/// [`call_method`] through a bound method and a keyword dictionary.
#[cfg_attr(not(windows), allow(dead_code))]
fn call_method_dict<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
    args: &[&Bound<'py, PyAny>],
    kwnames: Option<&Bound<'py, PyTuple>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let kw = kwnames.map_or(0, |k| k.len()).min(args.len());
    let (positional, keywords) = args.split_at(args.len() - kw);
    let kwargs = pyo3::types::PyDict::new(py);
    if let Some(kwnames) = kwnames {
        for (key, value) in kwnames.iter().zip(keywords) {
            kwargs.set_item(key, value)?;
        }
    }
    obj.getattr(name)?.call(PyTuple::new(py, positional)?, Some(&kwargs))
}

/// A new `dpctl.SyclQueue` on oneAPI device `id` (the position in `dpctl.get_devices()`, as
/// DLPack numbers oneAPI devices), for a oneAPI producer to order its data on.
fn sycl_queue(py: Python<'_>, id: i32) -> PyResult<Bound<'_, PyAny>> {
    let dpctl = py.import("dpctl").map_err(|e| {
        PyBufferError::new_err(format!(
            "oneAPI data is ordered on a SYCL queue, which needs dpctl: {e}"
        ))
    })?;
    let device = dpctl
        .call_method0("get_devices")?
        .get_item(id)
        .map_err(|_| PyBufferError::new_err(format!("oneAPI device {id} does not exist")))?;
    dpctl.getattr("SyclQueue")?.call1((device,))
}

/// `(device_type, device_id)` of CPU data, for `__dlpack_device__`.
pub fn cpu_device(py: Python<'_>) -> PyResult<Py<PyAny>> {
    (DLDeviceType::CPU.0, 0i32).into_py_any(py)
}
