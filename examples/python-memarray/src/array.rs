//! The `MemArray` class.

use crate::MAX_RANK;
use crate::cell::GilCell;
use crate::dtype::{AddIndex, Buffer, DType, DeviceBuffer, dtype_arg};
use crate::exported::{ExportCount, Exported};
use crate::gpu::{cuda_error, gpu};
use dlmd::dlpack::{DLDevice, DLDeviceType, DLTensor};
use dlmd::managed::ManagedTensor;
use dlmd::python::{
    DlpackBorrowedExport, DlpackExchange, DlpackExport, DlpackExporter, DlpackRequest, FromDlpack, TensorPrototype,
    export_cpu, export_cuda, from_dlpack as import, from_dlpack_with,
};
use dlmd::view::Unique;
use dlmd::{Dims, DlElement, Extents, Host, HostMdspanMut, LayoutRight, Mdspan};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::cell::RefMut;
use std::sync::Arc;

// Internals: the class is `frozen`, its data in a `GilCell` that exports borrow without the
// atomic operations of pyo3's own borrow flag; `exports` counts the tensors consumers hold.

/// An n-dimensional array (rank 0 to 4) of a numpy dtype (bool, integers, float16/32/64,
/// complex64/128) or of torch's `float4_e2m1fn_x2` (two FP4 values per byte), zero-filled, that
/// any DLPack consumer reads and writes in place: `numpy.from_dlpack(m)`, `torch.from_dlpack(m)`,
/// `cupy.from_dlpack(m)`. It moves to the GPU with `to_device()` and back with `to_host()`.
///
/// While a consumer holds one of its tensors (`exports` > 0), the array stays alive and its
/// methods that change it raise `BufferError`.
#[pyclass(module = "dlmd_memarray", frozen)]
pub struct MemArray {
    data: GilCell<Data>,
    exports: Arc<ExportCount>,
}

/// What a MemArray holds.
struct Data {
    shape: Vec<usize>,
    /// The shape and row-major strides as DLPack's `int64_t`s, for the non-owning export, which
    /// points into them.
    dl_shape: [i64; MAX_RANK],
    dl_strides: [i64; MAX_RANK],
    buffer: Buffer,
    /// The copy on a GPU, once `to_device` made one.
    device: Option<DeviceBuffer>,
    /// The CUDA device of that copy.
    ordinal: usize,
    /// Whether the copy on the GPU is the current one.
    on_device: bool,
}

impl MemArray {
    fn of(data: Data) -> Self {
        Self {
            data: GilCell::new(data),
            exports: Arc::default(),
        }
    }

    /// The data, to change: refused while consumers hold exported tensors. Exports that kernels
    /// still hold (`add_index` on the GPU) are waited for first: the host is about to change
    /// the data, which must follow them anyway.
    fn data_mut<'a>(&'a self, py: Python<'a>) -> PyResult<RefMut<'a, Data>> {
        if self.exports.get() > 0 && dlmd::cuda::release_completed().map_err(cuda_error)? > 0 {
            // The deleters run on dlmd's releasing thread and take the GIL: wait without it.
            py.detach(dlmd::cuda::wait_released).map_err(cuda_error)?;
        }
        match self.exports.get() {
            0 => self.data.borrow_mut(py),
            n => Err(PyBufferError::new_err(format!(
                "{n} exported tensor(s) of this MemArray are alive; release them before changing it"
            ))),
        }
    }
}

impl Data {
    fn new(shape: Vec<usize>, dtype: DType) -> PyResult<Self> {
        if shape.len() > MAX_RANK {
            return Err(PyValueError::new_err(format!(
                "rank {} is more than {MAX_RANK}",
                shape.len()
            )));
        }
        let len = shape
            .iter()
            .try_fold(1usize, |a, &n| a.checked_mul(n))
            .ok_or_else(|| PyValueError::new_err("the shape holds more elements than memory can"))?;
        let mut dl_shape = [0i64; MAX_RANK];
        let mut dl_strides = [0i64; MAX_RANK];
        let mut stride = 1i64;
        for d in (0..shape.len()).rev() {
            dl_shape[d] = i64::try_from(shape[d])
                .map_err(|_| PyValueError::new_err(format!("extent {} is too large", shape[d])))?;
            dl_strides[d] = stride;
            stride = stride.saturating_mul(dl_shape[d].max(1));
        }
        Ok(Self {
            shape,
            dl_shape,
            dl_strides,
            buffer: Buffer::zeros(dtype, len),
            device: None,
            ordinal: 0,
            on_device: false,
        })
    }

    /// Refuses host access while the copy on the GPU is current.
    fn check_host(&self) -> PyResult<()> {
        if self.on_device {
            return Err(PyBufferError::new_err("the data is on the GPU; call to_host() first"));
        }
        Ok(())
    }

    /// A new host array holding a copy of `tensor`, which must be on the CPU.
    fn copied(tensor: &ManagedTensor) -> PyResult<Self> {
        let t = tensor.dl_tensor();
        let dtype = DType::from_dlpack(t.dtype)
            .ok_or_else(|| PyBufferError::new_err(format!("dtype {} is not one MemArray holds", t.dtype)))?;
        let rank = usize::try_from(t.ndim)
            .ok()
            .filter(|&r| r <= MAX_RANK)
            .ok_or_else(|| PyBufferError::new_err(format!("rank {} is not supported (0 to {MAX_RANK})", t.ndim)))?;
        // The shape, read through a checked view: the tensor's fields are foreign.
        let shape = with_dtype!(dtype, T => with_rank!(rank, R => {
            let view = crate::host_view::<T, R>(tensor)?;
            Ok(view.extents().to_array().to_vec())
        }))?;
        let mut data = Data::new(shape, dtype)?;
        data.fill_from(tensor)?;
        Ok(data)
    }

    /// Copies the elements of `tensor` into this array, which has its shape and dtype.
    fn fill_from(&mut self, tensor: &ManagedTensor) -> PyResult<()> {
        let Data { shape, buffer, .. } = self;
        with_buffer!(buffer, |dst| copy_into(tensor, shape, dst))
    }
}

/// The extents of `shape` as `Dims<R>`.
fn dims<const R: usize>(shape: &[usize]) -> Dims<R> {
    Dims::new(std::array::from_fn(|d| shape[d]))
}

/// Copies `tensor`'s elements, row-major, into `dst` (of the same shape and element type).
fn copy_into<T: DlElement>(tensor: &ManagedTensor, shape: &[usize], dst: &mut [T]) -> PyResult<()> {
    with_rank!(shape.len(), R => {
        let view = crate::host_view::<T, R>(tensor)?;
        if view.extents().to_array().as_slice() != shape {
            return Err(PyValueError::new_err(format!(
                "shape {:?} does not match {:?}", view.extents().to_array(), shape
            )));
        }
        for (d, s) in dst.iter_mut().zip(view.values()) {
            *d = s;
        }
        Ok(())
    })
}

/// Adds the index sum to each element of a view the array owns.
fn add_index_view<T: AddIndex, E: Extents>(view: &mut Mdspan<'_, T, E, LayoutRight, Host, Unique>) {
    view.for_each_mut(|index, x| x.add_index(index.as_ref().iter().sum()));
}

#[pymethods]
impl MemArray {
    #[new]
    fn py_new(shape: Vec<usize>, dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self::of(Data::new(shape, dtype_arg(dtype)?)?))
    }

    /// The shape, a list of sizes.
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        Ok(self.data.borrow(py)?.shape.clone())
    }

    /// The numpy name of the element type, such as "float32".
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.data.borrow(py)?.buffer.dtype().name())
    }

    /// How many tensors exported from this array consumers still hold (kernels queued on it
    /// among them, until they are done).
    #[getter]
    fn exports(&self, py: Python<'_>) -> PyResult<usize> {
        // Kernels done whose holds the releasing thread is letting go of (their deleters wait
        // for the GIL) are waited for, without the GIL; those still running count.
        if self.exports.get() > 0 && dlmd::cuda::release_completed().map_err(cuda_error)? == 0 {
            py.detach(dlmd::cuda::wait_released).map_err(cuda_error)?;
        }
        Ok(self.exports.get())
    }

    /// The DLPack device of the data, `(device_type, device_id)`: `(1, 0)` on the CPU,
    /// `(2, n)` on CUDA device `n`.
    fn __dlpack_device__(&self, py: Python<'_>) -> PyResult<(i32, i32)> {
        let data = self.data.borrow(py)?;
        Ok(if data.on_device {
            (2, data.ordinal as i32)
        } else {
            (1, 0)
        })
    }

    /// Where the data is: "cpu" or "cuda:n".
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<String> {
        let data = self.data.borrow(py)?;
        Ok(if data.on_device {
            format!("cuda:{}", data.ordinal)
        } else {
            "cpu".to_owned()
        })
    }

    /// Moves the data to CUDA device `device` (0 by default; one host-to-device copy, through
    /// the host from another device); exports and `add_index` then use it there. Raises
    /// `BufferError` without that device or while tensors are exported.
    // The seed's Python names; they move the data in place.
    #[allow(clippy::wrong_self_convention)]
    #[pyo3(signature = (device = 0))]
    fn to_device(&self, py: Python<'_>, device: usize) -> PyResult<()> {
        let ordinal = device;
        {
            let data = self.data_mut(py)?;
            if data.on_device && data.ordinal == ordinal {
                return Ok(());
            }
        }
        let gpu = gpu(ordinal)?;
        self.to_host(py)?;
        let mut data = self.data_mut(py)?;
        if data.ordinal != ordinal {
            // The old copy is on another device: allocate afresh on this one.
            data.device = None;
            data.ordinal = ordinal;
        }
        let Data { buffer, device, .. } = &mut *data;
        let fresh = with_buffers!(buffer, device.as_mut(), |v, d, wrap| {
            match d {
                // Copied straight from the host buffer into the allocation made before.
                Some(d) if d.len() >= v.len() => {
                    gpu.stream
                        .memcpy_htod(v.as_slice(), &mut d.slice_mut(..v.len()))
                        .map_err(cuda_error)?;
                    None
                }
                _ => {
                    // SAFETY: the first `v.len()` elements are written by the copy below before
                    // anything reads them; the one more allocated for an empty array is never
                    // read.
                    let mut d = unsafe { gpu.stream.alloc(v.len().max(1)) }.map_err(cuda_error)?;
                    gpu.stream
                        .memcpy_htod(v.as_slice(), &mut d.slice_mut(..v.len()))
                        .map_err(cuda_error)?;
                    Some(wrap(d))
                }
            }
        });
        if let Some(fresh) = fresh {
            *device = Some(fresh);
        }
        data.on_device = true;
        Ok(())
    }

    /// Moves the data back to the host (one device-to-host copy).
    #[allow(clippy::wrong_self_convention)]
    fn to_host(&self, py: Python<'_>) -> PyResult<()> {
        let mut data = self.data_mut(py)?;
        if !data.on_device {
            return Ok(());
        }
        let gpu = gpu(data.ordinal)?;
        let Data { buffer, device, .. } = &mut *data;
        with_buffers!(buffer, device.as_mut(), |v, d, _wrap| {
            let d = d.expect("the data is on the GPU, so a copy of its type is there");
            gpu.stream
                .memcpy_dtoh(&d.slice(..v.len()), v.as_mut_slice())
                .map_err(cuda_error)
        })?;
        data.on_device = false;
        Ok(())
    }

    /// Adds to each element the sum of its indices (for `m[i, j]`, `i + j`), in place, on the
    /// GPU when the data is there. `bool` elements become true where the sum is not zero.
    ///
    /// On the GPU the array lends itself to the kernel as any producer does (through its
    /// DLPack exchange table, on its stream), and the call returns without waiting: the export
    /// is held until the kernel is done, so the array cannot be changed under it.
    fn add_index(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        if slf.get().data.borrow(py)?.on_device {
            return crate::gpu::add_index(&dlmd::python::import_for_kernel(slf.as_any(), None)?);
        }
        let mut data = slf.get().data_mut(py)?;
        let Data { shape, buffer, .. } = &mut *data;
        with_buffer!(buffer, |v| with_rank!(shape.len(), R => {
            let mut view = HostMdspanMut::<_, Dims<R>, LayoutRight>::from_slice_mut(v, dims::<R>(shape))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            add_index_view(&mut view);
            Ok(())
        }))
    }

    /// Copies the data of `x`, any DLPack producer of the same shape and dtype (a numpy array,
    /// a torch tensor, another MemArray), into this array.
    #[pyo3(signature = (x, /))]
    fn read_numpy(&self, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = x.py();
        // Checked before the producer runs, and again after: its Python code may call back.
        self.data_mut(py)?.check_host()?;
        let tensor = import(x)?;
        let mut data = self.data_mut(py)?;
        data.check_host()?;
        let dtype = tensor.dl_tensor().dtype;
        let ours = data.buffer.dtype();
        if DType::from_dlpack(dtype) != Some(ours) {
            return Err(PyTypeError::new_err(format!(
                "dtype {dtype} does not match {}",
                ours.name()
            )));
        }
        let ndim = tensor.dl_tensor().ndim;
        if usize::try_from(ndim).ok() != Some(data.shape.len()) {
            return Err(PyValueError::new_err(format!(
                "rank {ndim} does not match {}",
                data.shape.len()
            )));
        }
        data.fill_from(&tensor)
    }

    /// A new MemArray holding a copy of the data of `x`, any DLPack producer (the array API's
    /// `from_dlpack`), oneAPI host and shared USM included. `device` is where the new array
    /// lives: `None` or `"cpu"` (the producer is asked for CPU data, which it copies there if it
    /// can), or `"cuda"`/`"cuda:n"` (then copied from the CPU to CUDA device `n`, 0 by default). MemArray always holds its own copy, so `copy=False` raises
    /// `BufferError`; `copy=True` also asks the producer for a copy.
    #[staticmethod]
    #[pyo3(signature = (x, /, *, device = None, copy = None))]
    fn from_dlpack(x: &Bound<'_, PyAny>, device: Option<&str>, copy: Option<bool>) -> PyResult<Self> {
        let on_device = match device {
            None | Some("cpu") => None,
            Some("cuda") => Some(0),
            Some(other) => match other.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(n)) => Some(n),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "device {other:?} is not one MemArray has (\"cpu\", \"cuda\" or \"cuda:n\")"
                    )));
                }
            },
        };
        if copy == Some(false) {
            return Err(PyBufferError::new_err(
                "copy=False: a MemArray always holds its own copy of the data",
            ));
        }
        // With a device named, the producer is asked for CPU data (as numpy's `from_dlpack` asks
        // for `device="cpu"`); without, it is not asked (producers before DLPack 1.0 would
        // refuse the keyword) and data elsewhere is refused.
        let args = FromDlpack {
            dl_device: device.map(|_| DLDevice::CPU),
            copy,
            ..FromDlpack::default()
        };
        let tensor = from_dlpack_with(x, &args)?;
        let array = Self::of(Data::copied(&tensor)?);
        if let Some(ordinal) = on_device {
            array.to_device(x.py(), ordinal)?;
        }
        Ok(array)
    }

    /// `MemArray(shape=[...], dtype='...')`.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let data = self.data.borrow(py)?;
        Ok(format!(
            "MemArray(shape={:?}, dtype={:?})",
            data.shape,
            data.buffer.dtype().name()
        ))
    }
}

/// `__dlpack__`, added to the class by `add_dlpack_method` when the module loads, and the
/// exports of the C exchange table.
impl DlpackExporter for MemArray {
    fn dlpack(slf: &Bound<'_, Self>, request: &DlpackRequest) -> PyResult<DlpackExport> {
        let py = slf.py();
        let this = slf.get();
        let mut data = this.data.borrow_mut(py)?;
        let exports = &this.exports;
        let array = slf.clone();
        let Data {
            shape,
            buffer,
            device,
            ordinal,
            on_device,
            ..
        } = &mut *data;
        if *on_device {
            let gpu = gpu(*ordinal)?;
            return with_buffers!(buffer, device.as_mut(), |_v, d, _wrap| with_rank!(shape.len(), R => {
                let d = d.expect("the data is on the GPU, so a copy of its type is there");
                let view = dlmd::cuda::device_view_mut::<_, Dims<R>, LayoutRight>(d, dims::<R>(shape))
                    .map_err(cuda_error)?;
                let (ptr, len) = (view.data_handle(), view.size());
                // SAFETY: `ptr` is the array's device copy, a cudarc allocation on `gpu`'s device
                // (the stream's), which the owner keeps alive through `array`.
                unsafe {
                    export_cuda(request, dims::<R>(shape), &gpu.stream, || {
                        Ok(Exported::new(ptr, len, array, exports))
                    })
                }
            }));
        }
        with_buffer!(buffer, |v| {
            let (ptr, len) = (v.as_mut_ptr(), v.len());
            with_rank!(shape.len(), R => export_cpu(
                request,
                dims::<R>(shape),
                || Ok(Exported::new(ptr, len, array, exports)),
                || Ok(v.clone()),
            ))
        })
    }
}

/// The C exchange table's allocator makes zero-filled arrays on the CPU or a GPU; a tensor
/// handed to the table becomes a new array holding a copy of it (a MemArray owns its buffer).
/// The work stream is the default one, where MemArray queues its GPU work.
// SAFETY: `current_work_stream` keeps its default, NULL: the legacy default stream, valid on
// every device.
unsafe impl DlpackExchange for MemArray {
    fn allocate<'py>(py: Python<'py>, prototype: &TensorPrototype<'_>) -> PyResult<Bound<'py, Self>> {
        let dtype = DType::from_dlpack(prototype.dtype)
            .ok_or_else(|| PyBufferError::new_err(format!("dtype {} is not one MemArray holds", prototype.dtype)))?;
        let on_device = match prototype.device {
            DLDevice::CPU => None,
            d if d.device_type == DLDeviceType::CUDA && d.device_id >= 0 => Some(d.device_id as usize),
            d => {
                return Err(PyBufferError::new_err(format!(
                    "a MemArray lives on the CPU or a CUDA device, not on ({}, {})",
                    d.device_type.0, d.device_id
                )));
            }
        };
        let array = Bound::new(py, Self::of(Data::new(prototype.shape.to_vec(), dtype)?))?;
        if let Some(ordinal) = on_device {
            array.get().to_device(py, ordinal)?;
        }
        Ok(array)
    }

    fn from_tensor<'py>(py: Python<'py>, tensor: dlmd::managed::ManagedTensor) -> PyResult<Bound<'py, Self>> {
        Bound::new(py, Self::of(Data::copied(&tensor)?))
    }
}

// SAFETY: the tensor points into the array's `Data`, inside the Python object: its buffer (host,
// or the GPU copy while that is current) and its `dl_shape`/`dl_strides`, which describe the
// buffer compactly. They change only through the array's methods, which are Python calls.
unsafe impl DlpackBorrowedExport for MemArray {
    fn dltensor(slf: &Bound<'_, Self>) -> PyResult<DLTensor> {
        let py = slf.py();
        let mut data = slf.get().data.borrow_mut(py)?;
        let Data {
            shape,
            dl_shape,
            dl_strides,
            buffer,
            device,
            ordinal: _,
            on_device,
        } = &mut *data;
        let dtype = buffer.dtype().dlpack();
        let (pointer, dl_device) = if *on_device {
            with_buffers!(buffer, device.as_mut(), |v, d, _wrap| {
                let d = d.expect("the data is on the GPU, so a copy of its type is there");
                let view = dlmd::cuda::device_view_mut::<_, Dims<1>, LayoutRight>(d, Dims::new([v.len()]))
                    .map_err(cuda_error)?;
                Ok::<_, PyErr>((view.data_handle().cast(), DLDevice::cuda(view.space().ordinal())))
            })?
        } else {
            with_buffer!(buffer, |v| (v.as_mut_ptr().cast(), DLDevice::CPU))
        };
        Ok(DLTensor {
            data: pointer,
            device: dl_device,
            ndim: shape.len() as i32,
            dtype,
            shape: dl_shape.as_mut_ptr(),
            strides: dl_strides.as_mut_ptr(),
            byte_offset: 0,
        })
    }
}
