//! `dlmd_memarray`: the AMSO MemArray in Rust, built on dlmd.
//!
//! A `MemArray(shape, dtype)` owns a host buffer of any numpy dtype except strings and objects,
//! rank 0 to 4, and exchanges it with every DLPack consumer (`np.from_dlpack(m)`) and producer
//! (`MemArray.from_dlpack(x)`, `m.read_numpy(x)`) without copies where DLPack allows.
//! `add_index` is the seed's test kernel: each element gains the sum of its indices.
//!
//! While a consumer holds an exported tensor, the MemArray cannot be changed from Rust (its
//! `&mut` methods raise `BufferError`), and it stays alive however many Python references go.

use cudarc::driver::{CudaModule, CudaSlice, CudaStream, DevicePtrMut, LaunchConfig, PushKernelArg};
use dlmd::cuda::KernelView;
use dlmd::dlpack::DLDataType;
use dlmd::half::f16;
use dlmd::managed::{ManagedTensor, TensorOwner};
use dlmd::num_complex::Complex;
use dlmd::python::{
    DlpackExporter, DlpackRequest, PyKeepAlive, add_dlpack_method, export_cpu, export_cuda, from_dlpack as import,
    from_dlpack_on_stream,
};
use dlmd::view::{Access, AliasedMut, Unique};
use dlmd::{Dims, DlElement, Extents, HostMdspanMut, ImportError, LayoutRight, LayoutStrideRelaxed, Mdspan};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// The largest rank a MemArray has.
const MAX_RANK: usize = 4;

/// The seed's kernel on one element: add the sum of its indices.
trait AddIndex: DlElement {
    fn add_index(&mut self, sum: usize);
}

macro_rules! add_index_int {
    ($($t:ty),*) => {$(
        impl AddIndex for $t {
            fn add_index(&mut self, sum: usize) {
                *self = self.wrapping_add(sum as $t);
            }
        }
    )*};
}
add_index_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl AddIndex for bool {
    /// `bool` has no addition: the element becomes true where the index sum is not zero.
    fn add_index(&mut self, sum: usize) {
        *self |= sum != 0;
    }
}
impl AddIndex for f16 {
    fn add_index(&mut self, sum: usize) {
        *self = f16::from_f32(self.to_f32() + sum as f32);
    }
}
impl AddIndex for f32 {
    fn add_index(&mut self, sum: usize) {
        *self += sum as f32;
    }
}
impl AddIndex for f64 {
    fn add_index(&mut self, sum: usize) {
        *self += sum as f64;
    }
}
impl AddIndex for Complex<f32> {
    fn add_index(&mut self, sum: usize) {
        self.re += sum as f32;
    }
}
impl AddIndex for Complex<f64> {
    fn add_index(&mut self, sum: usize) {
        self.re += sum as f64;
    }
}

macro_rules! buffers {
    ($($variant:ident($t:ty) = $name:literal),* $(,)?) => {
        /// The elements of a MemArray, row-major.
        enum Buffer {
            $($variant(Vec<$t>),)*
        }

        impl Buffer {
            fn zeros(dtype: &str, len: usize) -> PyResult<Self> {
                Ok(match dtype {
                    $($name => Buffer::$variant(vec![<$t>::default(); len]),)*
                    other => return Err(PyTypeError::new_err(format!(
                        "unsupported dtype {other:?}; MemArray holds {}",
                        [$($name),*].join(", ")
                    ))),
                })
            }

            fn dtype_name(&self) -> &'static str {
                match self {
                    $(Buffer::$variant(_) => $name,)*
                }
            }

            fn dtype_of(dtype: DLDataType) -> Option<&'static str> {
                $(if dtype == <$t as DlElement>::DTYPE { return Some($name); })*
                None
            }
        }

        /// Runs `$body` with `$v` bound to the buffer's `Vec<T>` (by `$how` reference).
        macro_rules! with_buffer {
            ($buffer:expr, |$v:ident| $body:expr) => {
                match $buffer {
                    $(Buffer::$variant($v) => $body,)*
                }
            };
        }

        /// Runs `$body` with the type `$T` named by the data type `$dtype`.
        macro_rules! with_dtype {
            ($dtype:expr, $T:ident => $body:expr, else $other:expr) => {{
                let dtype = $dtype;
                $(if dtype == <$t as DlElement>::DTYPE { type $T = $t; $body } else)* { $other }
            }};
        }
    };
}

buffers! {
    Bool(bool) = "bool",
    I8(i8) = "int8",
    I16(i16) = "int16",
    I32(i32) = "int32",
    I64(i64) = "int64",
    U8(u8) = "uint8",
    U16(u16) = "uint16",
    U32(u32) = "uint32",
    U64(u64) = "uint64",
    F16(f16) = "float16",
    F32(f32) = "float32",
    F64(f64) = "float64",
    C64(Complex<f32>) = "complex64",
    C128(Complex<f64>) = "complex128",
}

/// Runs `$body` with `$R` the const rank `$rank` (0 to 4).
macro_rules! with_rank {
    ($rank:expr, $R:ident => $body:expr) => {
        match $rank {
            0 => {
                const $R: usize = 0;
                $body
            }
            1 => {
                const $R: usize = 1;
                $body
            }
            2 => {
                const $R: usize = 2;
                $body
            }
            3 => {
                const $R: usize = 3;
                $body
            }
            4 => {
                const $R: usize = 4;
                $body
            }
            r => Err(PyValueError::new_err(format!(
                "rank {r} is not supported; MemArray holds rank 0 to {MAX_RANK}"
            ))),
        }
    };
}

fn import_error(e: ImportError) -> PyErr {
    match e {
        ImportError::ReadOnly | ImportError::Layout(_) => PyBufferError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// The dtype name of a numpy dtype, a numpy scalar type or a string.
fn dtype_name(dtype: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(name) = dtype.extract::<String>() {
        return Ok(name);
    }
    for attr in ["name", "__name__"] {
        if let Ok(name) = dtype.getattr(attr).and_then(|n| n.extract::<String>()) {
            return Ok(name);
        }
    }
    Err(PyTypeError::new_err(
        "dtype must be a string, a numpy dtype or a numpy scalar type",
    ))
}

/// The number of a MemArray's exports that consumers hold, touched only with the GIL held: in
/// `__dlpack__`, in `MemArray::data_mut` and the `exports` getter, and when an export is
/// released (`PyKeepAlive::release_with`). This module is built for the stable ABI, which loads
/// only into interpreters with a GIL (checked when the module is imported), so the GIL orders
/// every access and a plain cell does.
#[derive(Default)]
struct ExportCount(Cell<usize>);

// SAFETY: every access holds the GIL (see the type), which orders them.
unsafe impl Sync for ExportCount {}

impl ExportCount {
    fn get(&self) -> usize {
        self.0.get()
    }
}

/// The owner of an exported MemArray tensor, of the host buffer or of the device copy: keeps the
/// MemArray alive and unchangeable from Rust until the consumer releases it.
struct Exported<T> {
    ptr: *mut T,
    len: usize,
    /// The MemArray's count of exports held by consumers, counting this one. It points into the
    /// MemArray's `Arc` rather than sharing it: `array` keeps the MemArray, and so the counter,
    /// alive.
    exports: NonNull<ExportCount>,
    /// Released on any thread, at once (consumers release tensors from anywhere).
    array: ManuallyDrop<PyKeepAlive>,
}

impl<T> Exported<T> {
    /// An owner of `len` elements at `ptr` in `array`, whose export counter is `exports`.
    fn new(ptr: *mut T, len: usize, array: Bound<'_, MemArray>, exports: &Arc<ExportCount>) -> Self {
        // The GIL is held: `array` is bound.
        exports.0.set(exports.get() + 1);
        Self {
            ptr,
            len,
            exports: NonNull::from(&**exports),
            array: ManuallyDrop::new(PyKeepAlive::new(array.into_any())),
        }
    }
}

impl<T> Drop for Exported<T> {
    fn drop(&mut self) {
        let exports = self.exports;
        // SAFETY: `array` is not used again after this.
        let array = unsafe { ManuallyDrop::take(&mut self.array) };
        array.release_with(|_| {
            // SAFETY: the counter is alive until the reference `array` holds is released,
            // after this; the GIL is held.
            let exports = unsafe { exports.as_ref() };
            exports.0.set(exports.get() - 1);
        });
    }
}

// SAFETY: the pointer is into the MemArray's buffer, which `array` keeps alive and the count of
// exports keeps from being reallocated or written from Rust; the counter is changed only with
// the GIL held; `PyKeepAlive` may be released on any thread.
unsafe impl<T: DlElement> Send for Exported<T> {}

// SAFETY: `ptr` stays valid for `len` elements for as long as this owner lives (see `Send`), and
// its address does not depend on where the owner moves.
unsafe impl<T: DlElement> TensorOwner for Exported<T> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// Element types the GPU `add_index` kernels handle: dtype name and C type.
const GPU_TYPES: [(&str, &str); 11] = [
    ("bool", "bool"),
    ("int8", "signed char"),
    ("int16", "short"),
    ("int32", "int"),
    ("int64", "long long"),
    ("uint8", "unsigned char"),
    ("uint16", "unsigned short"),
    ("uint32", "unsigned int"),
    ("uint64", "unsigned long long"),
    ("float32", "float"),
    ("float64", "double"),
];

/// The GPU kernels: `add_index_<dtype>_<rank>` for every type above and ranks 1 to 4.
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
"#,
    );
    for (name, c) in GPU_TYPES {
        for r in 1..=MAX_RANK {
            src += &format!(
                "extern \"C\" __global__ void add_index_{name}_{r}(dlmd::view<{c}, {r}> v) {{ add_index_impl(v); }}\n"
            );
        }
    }
    src
}

/// The device, its stream (the legacy default stream) and the compiled kernels, made once.
struct Gpu {
    stream: Arc<CudaStream>,
    kernels: OnceLock<Result<Arc<CudaModule>, String>>,
}

fn gpu() -> PyResult<&'static Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(|| {
        let ctx = dlmd::cuda::context(0).map_err(|e| e.to_string())?;
        Ok(Gpu {
            stream: ctx.default_stream(),
            kernels: OnceLock::new(),
        })
    })
    .as_ref()
    .map_err(|e| PyBufferError::new_err(format!("no GPU: {e}")))
}

fn cuda_error(e: impl std::fmt::Display) -> PyErr {
    PyBufferError::new_err(format!("CUDA: {e}"))
}

/// Runs `add_index_<dtype>_<R>` over a device view on the GPU's stream.
fn add_index_device<T: DlElement, const R: usize, L: dlmd::layout::Layout, A: Access>(
    view: &Mdspan<'_, T, Dims<R>, L, dlmd::Device, A>,
) -> PyResult<()> {
    const { assert!(A::MUTABLE, "add_index writes: pass a Unique or AliasedMut view") };
    let gpu = gpu()?;
    let dtype = Buffer::dtype_of(T::DTYPE).unwrap_or("?");
    if R == 0 || !GPU_TYPES.iter().any(|(n, _)| *n == dtype) {
        return Err(PyTypeError::new_err(format!(
            "add_index on the GPU handles rank 1 to 4 of {}, not rank {R} {dtype}",
            GPU_TYPES.map(|t| t.0).join(", ")
        )));
    }
    let module = gpu
        .kernels
        .get_or_init(|| {
            let ptx = dlmd::cuda::compile_ptx(&kernel_source(), Default::default()).map_err(|e| e.to_string())?;
            gpu.stream.context().load_module(ptx).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(cuda_error)?;
    let func = module
        .load_function(&format!("add_index_{dtype}_{R}"))
        .map_err(cuda_error)?;
    let kv: KernelView<T, R> = view.kernel_view();
    let n = view.size();
    if n == 0 {
        return Ok(());
    }
    let blocks = n.div_ceil(256).min(65_535) as u32;
    let mut launch = gpu.stream.launch_builder(&func);
    launch.arg(&kv);
    // SAFETY: the kernel reads and writes exactly the view's elements (a writable view, checked
    // unique by its importer), which the view's owner keeps alive until the stream is
    // synchronised below; the producer made them ready on this stream.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .map_err(cuda_error)?;
    gpu.stream.synchronize().map_err(cuda_error)
}

/// Data that only code holding the GIL touches, borrowed like a `RefCell` (a second mutable
/// borrow, say from a producer's Python code that calls back into the array while it is being
/// filled, is a `BufferError`, not undefined behaviour). Every access needs a `Python` token;
/// this module loads only into interpreters with a GIL (checked when it is imported), so the
/// GIL orders all of them, and a plain `RefCell` needs no atomic operations.
struct GilCell<T>(RefCell<T>);

// SAFETY: the value is reached only through `borrow`/`borrow_mut`, which take a `Python` token:
// the calling thread holds the GIL, and the GIL orders every access (see the type).
unsafe impl<T: Send> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    fn new(value: T) -> Self {
        Self(RefCell::new(value))
    }

    fn borrow<'a>(&'a self, _py: Python<'a>) -> PyResult<Ref<'a, T>> {
        self.0
            .try_borrow()
            .map_err(|_| PyBufferError::new_err("the MemArray is being changed"))
    }

    fn borrow_mut<'a>(&'a self, _py: Python<'a>) -> PyResult<RefMut<'a, T>> {
        self.0
            .try_borrow_mut()
            .map_err(|_| PyBufferError::new_err("the MemArray is in use"))
    }
}

/// An n-dimensional array in host memory, exchanged through DLPack.
///
/// The class is `frozen`: its data lives in a [`GilCell`], which exports borrow without the
/// atomic operations of pyo3's own borrow flag.
#[pyclass(module = "dlmd_memarray", frozen)]
struct MemArray {
    data: GilCell<Data>,
    exports: Arc<ExportCount>,
}

/// What a MemArray holds.
struct Data {
    shape: Vec<usize>,
    buffer: Buffer,
    /// The device copy, as bytes, once `to_device` made one.
    device: Option<CudaSlice<u8>>,
    /// Whether the device copy is the current one.
    on_device: bool,
}

impl MemArray {
    fn new_checked(shape: Vec<usize>, dtype: &str) -> PyResult<Self> {
        Ok(Self::of(Data::new_checked(shape, dtype)?))
    }

    fn of(data: Data) -> Self {
        Self {
            data: GilCell::new(data),
            exports: Arc::default(),
        }
    }

    /// The data, to change: refused while consumers hold exported tensors.
    fn data_mut<'a>(&'a self, py: Python<'a>) -> PyResult<RefMut<'a, Data>> {
        match self.exports.get() {
            0 => self.data.borrow_mut(py),
            n => Err(PyBufferError::new_err(format!(
                "{n} exported tensor(s) of this MemArray are alive; release them before changing it from Rust"
            ))),
        }
    }
}

impl Data {
    fn new_checked(shape: Vec<usize>, dtype: &str) -> PyResult<Self> {
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
        Ok(Self {
            shape,
            buffer: Buffer::zeros(dtype, len)?,
            device: None,
            on_device: false,
        })
    }

    /// Runs `f` with the dtype, the device address of the device copy and the shape; cudarc
    /// counts the copy as being written until `f` returns.
    fn with_device_copy<R>(&mut self, f: impl FnOnce(&'static str, usize, &[usize]) -> PyResult<R>) -> PyResult<R> {
        let gpu = gpu()?;
        let Data {
            shape, buffer, device, ..
        } = self;
        let device = device
            .as_mut()
            .ok_or_else(|| PyBufferError::new_err("no device copy"))?;
        let (ptr, _write) = device.device_ptr_mut(&gpu.stream);
        f(buffer.dtype_name(), ptr as usize, shape)
    }

    /// Refuses host access while the device copy is current.
    fn check_host(&self) -> PyResult<()> {
        if self.on_device {
            return Err(PyBufferError::new_err("the data is on the GPU; call to_host() first"));
        }
        Ok(())
    }

    /// The host copy's bytes.
    fn host_bytes(&mut self) -> &mut [u8] {
        with_buffer!(&mut self.buffer, |v| {
            let bytes = std::mem::size_of_val(v.as_slice());
            // SAFETY: DLPack element types are plain data without padding; the bytes written
            // here come from the device copy of the same elements (valid values of the type).
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), bytes) }
        })
    }

    /// Copies the elements of `tensor` into this array, which has its shape and dtype.
    fn fill_from(&mut self, tensor: &ManagedTensor) -> PyResult<()> {
        let t = tensor.dl_tensor();
        if t.ndim < 0 || t.ndim as usize != self.shape.len() {
            return Err(PyValueError::new_err(format!(
                "rank {} does not match {}",
                t.ndim,
                self.shape.len()
            )));
        }
        let Data { shape, buffer, .. } = self;
        with_buffer!(buffer, |dst| copy_into(tensor, shape, dst))
    }
}

/// Copies `tensor`'s elements, row-major, into `dst` (of the same shape and element type).
fn copy_into<T: DlElement>(tensor: &ManagedTensor, shape: &[usize], dst: &mut [T]) -> PyResult<()> {
    with_rank!(shape.len(), R => {
        let view = tensor.as_host_mdspan::<T, R, LayoutStrideRelaxed>().map_err(import_error)?;
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

/// Adds the index sum to each element of a mutable view.
fn add_index_view<T: AddIndex, E: Extents, L: dlmd::layout::Layout>(
    view: &mut Mdspan<'_, T, E, L, dlmd::Host, Unique>,
) {
    view.for_each_mut(|index, x| x.add_index(index.as_ref().iter().sum()));
}

/// Adds the index sum to each element of a view of memory others share, by value.
fn add_index_aliased<T: AddIndex, E: Extents, L: dlmd::layout::Layout>(
    view: &Mdspan<'_, T, E, L, dlmd::Host, AliasedMut>,
) {
    view.update(|index, mut x| {
        x.add_index(index.as_ref().iter().sum());
        x
    });
}

#[pymethods]
impl MemArray {
    /// A zero-filled array of `shape` (a sequence of up to 4 sizes) and `dtype`.
    #[new]
    fn py_new(shape: Vec<usize>, dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::new_checked(shape, &dtype_name(dtype)?)
    }

    /// The shape.
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        Ok(self.data.borrow(py)?.shape.clone())
    }

    /// The numpy name of the element type.
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.data.borrow(py)?.buffer.dtype_name())
    }

    /// The number of exported tensors consumers still hold.
    #[getter]
    fn exports(&self) -> usize {
        self.exports.get()
    }

    /// `(device_type, device_id)`: `(1, 0)` for the CPU, `(2, 0)` once on the GPU.
    fn __dlpack_device__(&self, py: Python<'_>) -> PyResult<(i32, i32)> {
        Ok(if self.data.borrow(py)?.on_device {
            (2, 0)
        } else {
            (1, 0)
        })
    }

    /// Where the current copy is: `"cpu"` or `"cuda:0"`.
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(if self.data.borrow(py)?.on_device {
            "cuda:0"
        } else {
            "cpu"
        })
    }

    /// Moves the data to the GPU (a host-to-device copy); later work and exports use it there.
    // The seed's Python names; they move the data in place.
    #[allow(clippy::wrong_self_convention)]
    fn to_device(&self, py: Python<'_>) -> PyResult<()> {
        let mut data = self.data_mut(py)?;
        if data.on_device {
            return Ok(());
        }
        let gpu = gpu()?;
        let bytes = data.host_bytes().len();
        if data.device.is_none() {
            data.device = Some(gpu.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(cuda_error)?);
        }
        let host: Vec<u8> = data.host_bytes().to_vec();
        let device = data.device.as_mut().expect("allocated above");
        gpu.stream
            .memcpy_htod(&host, &mut device.slice_mut(..bytes))
            .map_err(cuda_error)?;
        data.on_device = true;
        Ok(())
    }

    /// Moves the data back to the host (a device-to-host copy).
    #[allow(clippy::wrong_self_convention)]
    fn to_host(&self, py: Python<'_>) -> PyResult<()> {
        let mut data = self.data_mut(py)?;
        if !data.on_device {
            return Ok(());
        }
        let gpu = gpu()?;
        let bytes = data.host_bytes().len();
        let device = data.device.take().expect("on_device implies a device copy");
        let host = data.host_bytes();
        gpu.stream
            .memcpy_dtoh(&device.slice(..bytes), host)
            .map_err(cuda_error)?;
        data.device = Some(device);
        data.on_device = false;
        Ok(())
    }

    /// Adds to each element the sum of its indices (the seed's test kernel), on the GPU when the
    /// data is there.
    fn add_index(&self, py: Python<'_>) -> PyResult<()> {
        let mut data = self.data_mut(py)?;
        if data.on_device {
            return data.with_device_copy(|dtype, ptr, shape| with_dtype!(dlmd_dtype(dtype), T => with_rank!(shape.len(), R => {
                let dims: [usize; R] = std::array::from_fn(|d| shape[d]);
                let mapping = dlmd::layout::RightMapping::new(Dims::new(dims)).map_err(|e| PyValueError::new_err(e.to_string()))?;
                // SAFETY: the device copy holds the array's elements of type `T`, borrowed
                // exclusively (`data_mut`) for the kernel, which finishes before return.
                let view = unsafe { Mdspan::<T, Dims<R>, LayoutRight, dlmd::Device, Unique>::from_raw_parts(ptr as *mut T, mapping, dlmd::Device::new(0)) };
                add_index_device(&view)
            }), else Err(PyTypeError::new_err("unsupported dtype"))));
        }
        let Data { shape, buffer, .. } = &mut *data;
        with_buffer!(buffer, |v| with_rank!(shape.len(), R => {
            let dims: [usize; R] = std::array::from_fn(|d| shape[d]);
            let mut view = HostMdspanMut::<_, Dims<R>, LayoutRight>::from_slice_mut(v, Dims::new(dims))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            add_index_view(&mut view);
            Ok(())
        }))
    }

    /// Fills this array from any DLPack producer of the same shape and dtype (a copy).
    fn read_numpy(&self, source: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = source.py();
        // Checked before the producer runs, and again after: its Python code may call back.
        self.data_mut(py)?.check_host()?;
        let tensor = import(source)?;
        let mut data = self.data_mut(py)?;
        data.check_host()?;
        let dtype = tensor.dl_tensor().dtype;
        if Buffer::dtype_of(dtype) != Some(data.buffer.dtype_name()) {
            return Err(PyTypeError::new_err(format!(
                "dtype {dtype} does not match {}",
                data.buffer.dtype_name()
            )));
        }
        data.fill_from(&tensor)
    }

    /// A new MemArray holding a copy of any DLPack producer's data.
    #[staticmethod]
    fn from_dlpack(source: &Bound<'_, PyAny>) -> PyResult<Self> {
        let tensor = import(source)?;
        let t = tensor.dl_tensor();
        let dtype = Buffer::dtype_of(t.dtype)
            .ok_or_else(|| PyTypeError::new_err(format!("dtype {} is not one MemArray holds", t.dtype)))?;
        if t.ndim < 0 || t.ndim as usize > MAX_RANK {
            return Err(PyValueError::new_err(format!(
                "rank {} is not supported (0 to {MAX_RANK})",
                t.ndim
            )));
        }
        let shape = with_rank!(t.ndim as usize, R => {
            // Read the shape through a checked view: the tensor's fields are foreign.
            with_dtype!(t.dtype, T => {
                let view = tensor.as_host_mdspan::<T, R, LayoutStrideRelaxed>().map_err(import_error)?;
                Ok(view.extents().to_array().to_vec())
            }, else Err(PyTypeError::new_err("unsupported dtype")))
        })?;
        let mut data = Data::new_checked(shape, dtype)?;
        data.fill_from(&tensor)?;
        Ok(Self::of(data))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let data = self.data.borrow(py)?;
        Ok(format!(
            "MemArray(shape={:?}, dtype={:?})",
            data.shape,
            data.buffer.dtype_name()
        ))
    }
}

/// `__dlpack__`, added to the class by `add_dlpack_method` (see the module function).
impl DlpackExporter for MemArray {
    fn dlpack<'py>(slf: &Bound<'py, Self>, request: &DlpackRequest) -> PyResult<Bound<'py, PyCapsule>> {
        let py = slf.py();
        let this = slf.get();
        let mut data = this.data.borrow_mut(py)?;
        let exports = &this.exports;
        let array = slf.clone();
        if data.on_device {
            let gpu = gpu()?;
            return data.with_device_copy(|dtype, ptr, shape| {
                let len = shape.iter().product::<usize>();
                with_dtype!(dlmd_dtype(dtype), T => with_rank!(shape.len(), R => {
                let dims: [usize; R] = std::array::from_fn(|d| shape[d]);
                export_cuda(py, request, Dims::new(dims), &gpu.stream, || {
                    Ok(Exported::<T>::new(ptr as *mut T, len, array, exports))
                })
            }), else Err(PyTypeError::new_err("unsupported dtype")))
            });
        }
        let Data { shape, buffer, .. } = &mut *data;
        with_buffer!(buffer, |v| {
            let (ptr, len) = (v.as_mut_ptr(), v.len());
            with_rank!(shape.len(), R => {
                let dims: [usize; R] = std::array::from_fn(|d| shape[d]);
                export_cpu(
                    py,
                    request,
                    Dims::new(dims),
                    || Ok(Exported::new(ptr, len, array, exports)),
                    || Ok(v.clone()),
                )
            })
        })
    }
}

/// Adds the index sum to each element of any DLPack producer's data, in place and without a
/// copy: numpy arrays (C or Fortran order, sliced, transposed, negatively strided), MemArrays,
/// torch tensors on the CPU.
#[pyfunction]
fn add_index(source: &Bound<'_, PyAny>) -> PyResult<()> {
    // CUDA producers make the data ready on the legacy default stream (1), where the kernel runs.
    let mut tensor = from_dlpack_on_stream(source, Some(1))?;
    let t = tensor.dl_tensor();
    let (dtype, ndim) = (t.dtype, t.ndim);
    if ndim < 0 {
        return Err(PyValueError::new_err(format!("ndim {ndim} is negative")));
    }
    if t.device.device_type != dlmd::dlpack::DLDeviceType::CPU {
        return with_dtype!(dtype, T => with_rank!(ndim as usize, R => {
            let view = tensor
                .as_mdspan_mut::<T, Dims<R>, LayoutStrideRelaxed, dlmd::Device>()
                .map_err(import_error)?;
            add_index_device(&view)
        }), else Err(PyTypeError::new_err(format!("dtype {dtype} is not supported"))));
    }
    with_dtype!(dtype, T => with_rank!(ndim as usize, R => {
        let view = tensor
            .as_mdspan_mut::<T, Dims<R>, LayoutStrideRelaxed, dlmd::Host>()
            .map_err(import_error)?;
        add_index_aliased(&view);
        Ok(())
    }), else Err(PyTypeError::new_err(format!("dtype {dtype} is not supported"))))
}

/// Imports any DLPack producer and releases it at once, returning its rank: the consumer path
/// alone, for benchmarks.
#[pyfunction]
fn import_tensor(source: &Bound<'_, PyAny>) -> PyResult<i32> {
    Ok(import(source)?.dl_tensor().ndim)
}

/// The DLPack data type a dtype name maps to, as `(code, bits, lanes)`.
#[pyfunction]
fn dlpack_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<(u8, u8, u16)> {
    let name = dtype_name(dtype)?;
    let buffer = Buffer::zeros(&name, 0)?;
    let d = with_buffer!(&buffer, |v| dtype_of_vec(v));
    Ok((d.code, d.bits, d.lanes))
}

fn dtype_of_vec<T: DlElement>(_: &[T]) -> DLDataType {
    T::DTYPE
}

/// The DLPack data type of a dtype name MemArray holds.
fn dlmd_dtype(name: &str) -> DLDataType {
    Buffer::zeros(name, 0).map_or(
        DLDataType {
            code: 255,
            bits: 0,
            lanes: 0,
        },
        |b| with_buffer!(&b, |v| dtype_of_vec(v)),
    )
}

#[pymodule]
fn dlmd_memarray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Free-threaded interpreters do not load stable-ABI modules, but `ExportCount` relies on
    // the GIL: say so plainly should one ever try.
    let sys = m.py().import("sys")?;
    if sys.hasattr("_is_gil_enabled")? && !sys.call_method0("_is_gil_enabled")?.extract::<bool>()? {
        return Err(pyo3::exceptions::PyImportError::new_err(
            "dlmd_memarray needs an interpreter with the GIL enabled",
        ));
    }
    m.add_class::<MemArray>()?;
    add_dlpack_method::<MemArray>(m.py())?;
    m.add_function(wrap_pyfunction!(add_index, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(import_tensor, m)?)?;
    Ok(())
}
