//! The C functions of torch's stable ABI that operators need (the shims behind
//! `STABLE_TORCH_LIBRARY`), found at run time in the torch libraries the process has loaded.

use super::error::TorchError;
use crate::dlpack::{DLDataType, DLDataTypeCode};
use core::ffi::{c_char, c_void};
use std::sync::OnceLock;
use std::vec::Vec;

/// A value on a boxed kernel's stack: a tensor handle, an integer, a float's bits, a bool.
pub type StableIValue = u64;
/// An owned reference to a torch tensor (`at::Tensor*`).
pub(crate) type TensorHandle = *mut c_void;
/// A `torch::Library` torch made for a registration.
pub(crate) type LibraryHandle = *mut c_void;
/// torch's status: 0 for success.
pub(crate) type Status = i32;
/// A boxed kernel: the stack, the number of arguments on it, the number of returns to leave.
pub type BoxedKernel = unsafe extern "C-unwind" fn(*mut StableIValue, u64, u64);

/// torch's stable C functions, as found in the process (or, in tests, stand-ins).
pub struct Torch {
    pub(crate) init_fragment: unsafe extern "C" fn(*const c_char, *const c_char, u32, *mut LibraryHandle) -> Status,
    pub(crate) init_impl:
        unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, u32, *mut LibraryHandle) -> Status,
    pub(crate) def: unsafe extern "C" fn(LibraryHandle, *const c_char) -> Status,
    pub(crate) implement: unsafe extern "C" fn(LibraryHandle, *const c_char, BoxedKernel) -> Status,
    pub(crate) delete_library: unsafe extern "C" fn(LibraryHandle) -> Status,
    /// `aoti_torch__reinterpret_tensor`: a new tensor over a tensor's storage, of the extents,
    /// strides and offset (added to the tensor's) given.
    /// `aoti_torch_zero_`: torch's `zero_` of a tensor.
    pub(crate) zero: unsafe extern "C" fn(TensorHandle) -> Status,
    pub(crate) reinterpret:
        unsafe extern "C" fn(TensorHandle, i64, *const i64, *const i64, i64, *mut TensorHandle) -> Status,
    pub(crate) delete_tensor: unsafe extern "C" fn(TensorHandle) -> Status,
    pub(crate) data_ptr: unsafe extern "C" fn(TensorHandle, *mut *mut c_void) -> Status,
    pub(crate) dim: unsafe extern "C" fn(TensorHandle, *mut i64) -> Status,
    pub(crate) sizes: unsafe extern "C" fn(TensorHandle, *mut *mut i64) -> Status,
    pub(crate) strides: unsafe extern "C" fn(TensorHandle, *mut *mut i64) -> Status,
    pub(crate) dtype: unsafe extern "C" fn(TensorHandle, *mut i32) -> Status,
    pub(crate) device_type: unsafe extern "C" fn(TensorHandle, *mut i32) -> Status,
    pub(crate) device_index: unsafe extern "C" fn(TensorHandle, *mut i32) -> Status,
    pub(crate) empty_strided:
        unsafe extern "C" fn(i64, *const i64, *const i64, i32, i32, i32, *mut TensorHandle) -> Status,
    /// `torch::autograd::impl::bump_version(const at::Tensor&)`: what torch's own in-place
    /// operations do to the tensors they write. It throws for an inference tensor outside
    /// inference mode.
    pub(crate) bump_version: unsafe extern "C-unwind" fn(TensorHandle),
    /// Throws a C++ `std::runtime_error` with the message: how a kernel reports an error to
    /// the dispatcher, which Python raises as `RuntimeError`.
    pub(crate) raise: unsafe extern "C-unwind" fn(*const c_char) -> !,
    /// torch's current CUDA stream on a device (`libtorch_cuda`; `None` in a build of torch
    /// without CUDA).
    pub(crate) cuda_stream: Option<unsafe extern "C" fn(i32, *mut *mut c_void) -> Status>,
    /// torch's codes of the element types DLPack has.
    pub(crate) dtypes: Vec<(i32, DLDataType)>,
    /// torch's codes of its CPU and CUDA devices.
    pub(crate) cpu: i32,
    pub(crate) cuda: i32,
    /// The libraries the functions are in, open while the process lives.
    #[allow(dead_code)]
    pub(crate) libraries: Vec<libloading::Library>,
}

impl core::fmt::Debug for Torch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Torch")
            .field("cuda", &self.cuda_stream.is_some())
            .field("dtypes", &self.dtypes.len())
            .finish_non_exhaustive()
    }
}

static TORCH: OnceLock<Result<Torch, TorchError>> = OnceLock::new();

impl Torch {
    /// torch's stable C functions in this process, found once: torch must be loaded already
    /// (`import torch` in Python, or a program linking libtorch). A torch older than 2.9, whose
    /// libraries lack one of the functions, is refused by name.
    pub fn get() -> Result<&'static Torch, TorchError> {
        TORCH.get_or_init(Torch::load).as_ref().map_err(Clone::clone)
    }

    /// The functions already found, if [`get`](Self::get) succeeded.
    pub(crate) fn loaded() -> Option<&'static Torch> {
        TORCH.get().and_then(|t| t.as_ref().ok())
    }

    /// In tests: stand-ins for torch's functions, in place of a process's torch.
    #[cfg(test)]
    pub(crate) fn install(torch: Torch) -> &'static Torch {
        let _ = TORCH.set(Ok(torch));
        Torch::loaded().expect("installed")
    }

    /// torch's code of a DLPack element type.
    pub(crate) fn torch_dtype(&self, dtype: DLDataType) -> Option<i32> {
        self.dtypes.iter().find(|&&(_, d)| d == dtype).map(|&(code, _)| code)
    }

    /// The DLPack element type of torch's code.
    pub(crate) fn dl_dtype(&self, code: i32) -> Option<DLDataType> {
        self.dtypes.iter().find(|&&(c, _)| c == code).map(|&(_, d)| d)
    }

    #[cfg(unix)]
    fn load() -> Result<Torch, TorchError> {
        let cpu = open("libtorch_cpu.so")?;
        let stdcxx = open("libstdc++.so.6")?;
        // A torch without CUDA has no libtorch_cuda.
        let cuda = open("libtorch_cuda.so").ok();
        // One of torch's stable C functions (or libstdc++'s throw), declared in torch's headers
        // with the signature of the field it is stored in.
        macro_rules! sym {
            ($lib:expr, $name:literal) => {
                // SAFETY: as above; the library stays open in `libraries` as long as the
                // pointer lives.
                unsafe { symbol($lib, $name) }?
            };
        }
        let mut dtypes = Vec::new();
        for &(name, code, bits) in DTYPES {
            if let Some(torch) = constant(&cpu, name) {
                dtypes.push((torch, DLDataType::new(code, bits, 1)));
            }
        }
        let device = |name: &'static str| constant(&cpu, name).ok_or(TorchError::Symbol(name));
        Ok(Torch {
            init_fragment: sym!(&cpu, "aoti_torch_library_init_fragment"),
            init_impl: sym!(&cpu, "aoti_torch_library_init_impl"),
            def: sym!(&cpu, "aoti_torch_library_def"),
            implement: sym!(&cpu, "aoti_torch_library_impl"),
            delete_library: sym!(&cpu, "aoti_torch_delete_library_object"),
            reinterpret: sym!(&cpu, "aoti_torch__reinterpret_tensor"),
            zero: sym!(&cpu, "aoti_torch_zero_"),
            delete_tensor: sym!(&cpu, "aoti_torch_delete_tensor_object"),
            data_ptr: sym!(&cpu, "aoti_torch_get_data_ptr"),
            dim: sym!(&cpu, "aoti_torch_get_dim"),
            sizes: sym!(&cpu, "aoti_torch_get_sizes"),
            strides: sym!(&cpu, "aoti_torch_get_strides"),
            dtype: sym!(&cpu, "aoti_torch_get_dtype"),
            device_type: sym!(&cpu, "aoti_torch_get_device_type"),
            device_index: sym!(&cpu, "aoti_torch_get_device_index"),
            empty_strided: sym!(&cpu, "aoti_torch_empty_strided"),
            bump_version: sym!(&cpu, "_ZN5torch8autograd4impl12bump_versionERKN2at6TensorE"),
            raise: sym!(&stdcxx, "_ZSt21__throw_runtime_errorPKc"),
            cuda_stream: match &cuda {
                Some(lib) => Some(sym!(lib, "aoti_torch_get_current_cuda_stream")),
                None => None,
            },
            dtypes,
            cpu: device("aoti_torch_device_type_cpu")?,
            cuda: device("aoti_torch_device_type_cuda")?,
            libraries: [Some(cpu), Some(stdcxx), cuda].into_iter().flatten().collect(),
        })
    }

    #[cfg(not(unix))]
    fn load() -> Result<Torch, TorchError> {
        Err(TorchError::Load {
            library: "libtorch_cpu",
            why: "torch's libraries are found on Unix only".into(),
        })
    }
}

/// The element types torch and DLPack share, by the name of torch's getter of its code.
const DTYPES: &[(&str, DLDataTypeCode, u8)] = &[
    ("aoti_torch_dtype_bool", DLDataTypeCode::BOOL, 8),
    ("aoti_torch_dtype_int8", DLDataTypeCode::INT, 8),
    ("aoti_torch_dtype_int16", DLDataTypeCode::INT, 16),
    ("aoti_torch_dtype_int32", DLDataTypeCode::INT, 32),
    ("aoti_torch_dtype_int64", DLDataTypeCode::INT, 64),
    ("aoti_torch_dtype_uint8", DLDataTypeCode::UINT, 8),
    ("aoti_torch_dtype_uint16", DLDataTypeCode::UINT, 16),
    ("aoti_torch_dtype_uint32", DLDataTypeCode::UINT, 32),
    ("aoti_torch_dtype_uint64", DLDataTypeCode::UINT, 64),
    ("aoti_torch_dtype_float16", DLDataTypeCode::FLOAT, 16),
    ("aoti_torch_dtype_float32", DLDataTypeCode::FLOAT, 32),
    ("aoti_torch_dtype_float64", DLDataTypeCode::FLOAT, 64),
    ("aoti_torch_dtype_bfloat16", DLDataTypeCode::BFLOAT, 16),
    ("aoti_torch_dtype_complex64", DLDataTypeCode::COMPLEX, 64),
    ("aoti_torch_dtype_complex128", DLDataTypeCode::COMPLEX, 128),
    ("aoti_torch_dtype_float8_e5m2", DLDataTypeCode::FLOAT8_E5M2, 8),
    ("aoti_torch_dtype_float8_e4m3fn", DLDataTypeCode::FLOAT8_E4M3FN, 8),
    ("aoti_torch_dtype_float8_e5m2fnuz", DLDataTypeCode::FLOAT8_E5M2FNUZ, 8),
    ("aoti_torch_dtype_float8_e4m3fnuz", DLDataTypeCode::FLOAT8_E4M3FNUZ, 8),
];

/// A library the process has loaded already, by its name (never loads one).
#[cfg(unix)]
fn open(name: &'static str) -> Result<libloading::Library, TorchError> {
    // SAFETY: RTLD_NOLOAD opens only a library already loaded, so no initialiser runs.
    unsafe { libloading::os::unix::Library::open(Some(name), libc::RTLD_NOW | libc::RTLD_NOLOAD) }
        .map(Into::into)
        .map_err(|e| TorchError::Load {
            library: name,
            why: std::format!("{e} (import torch first)"),
        })
}

/// The value of torch's constant getter `name` (an element type's or a device type's code).
#[cfg(unix)]
fn constant(library: &libloading::Library, name: &str) -> Option<i32> {
    // SAFETY: torch's getters of codes are `int32_t name(void)`.
    let getter = unsafe { library.get::<unsafe extern "C" fn() -> i32>(name.as_bytes()) }.ok()?;
    // SAFETY: as above: no argument, no state.
    Some(unsafe { getter() })
}

/// The function `name` in `library`.
///
/// # Safety
///
/// `T` is the function pointer type of the symbol's C declaration.
#[cfg(unix)]
unsafe fn symbol<T: Copy>(library: &libloading::Library, name: &'static str) -> Result<T, TorchError> {
    // SAFETY: the caller's.
    unsafe { library.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| TorchError::Symbol(name))
}
