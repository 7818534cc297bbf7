//! The C ABI of `dlpack.h`, version 1.3.
//!
//! Every type here is `#[repr(C)]` (or `#[repr(transparent)]` over the C integer) and matches the
//! header field for field, so pointers to them can cross into C, C++, CUDA and Python unchanged.
//!
//! The two C enums, `DLDeviceType` and `DLDataTypeCode`, are newtypes over their integer with an
//! associated constant per value rather than Rust `enum`s: a producer on the other side of the ABI
//! can send any integer, and a Rust `enum` holding a value it does not list is undefined behaviour.
//! Code that reads a foreign [`DLTensor`] therefore matches on constants and keeps a fallback arm.

mod managed;

pub use managed::ManagedTensorAbi;

use core::ffi::{CStr, c_char, c_int, c_void};
use core::fmt;

/// Major version of the DLPack ABI these definitions follow (`DLPACK_MAJOR_VERSION`).
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// Minor version of the DLPack ABI these definitions follow (`DLPACK_MINOR_VERSION`).
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// Bit of [`DLManagedTensorVersioned::flags`]: the consumer must not write through the tensor
/// (`DLPACK_FLAG_BITMASK_READ_ONLY`).
pub const READ_ONLY: u64 = 1 << 0;
/// Bit of [`DLManagedTensorVersioned::flags`]: the producer copied the data for this export
/// (`DLPACK_FLAG_BITMASK_IS_COPIED`).
pub const IS_COPIED: u64 = 1 << 1;
/// Bit of [`DLManagedTensorVersioned::flags`]: sub-byte elements (FP6, FP4) are stored one per
/// byte rather than packed (`DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`).
pub const IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// The version a managed tensor was produced against (`DLPackVersion`).
///
/// ```
/// use dlmd::dlpack::DLPackVersion;
/// assert_eq!(DLPackVersion::CURRENT, DLPackVersion { major: 1, minor: 3 });
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DLPackVersion {
    /// Incremented on ABI-breaking changes.
    pub major: u32,
    /// Incremented on compatible additions.
    pub minor: u32,
}

impl DLPackVersion {
    /// The version of these definitions, 1.3.
    pub const CURRENT: Self = Self {
        major: DLPACK_MAJOR_VERSION,
        minor: DLPACK_MINOR_VERSION,
    };
}

/// Writes `NAME` for a known value and the bare integer otherwise.
/// `$standard` names the C header (DLPack 1.3 unless given).
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        $name:ident($repr:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        c_enum! {
            @standard "DLPack 1.3";
            $(#[$meta])*
            $name($repr) { $( $(#[$vmeta])* $variant = $value, )* }
        }
    };
    (
        @standard $standard:literal;
        $(#[$meta:meta])*
        $name:ident($repr:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $repr);

        impl $name {
            $( $(#[$vmeta])* pub const $variant: Self = Self($value); )*

            #[doc = concat!(
                "The name of the constant with this value, or `None` for a value ", $standard,
                " does not define."
            )]
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($variant)), )*
                    _ => None,
                }
            }

            #[doc = concat!("Whether ", $standard, " defines this value.")]
            pub const fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }

        impl From<$repr> for $name {
            fn from(value: $repr) -> Self {
                Self(value)
            }
        }

        impl From<$name> for $repr {
            fn from(value: $name) -> Self {
                value.0
            }
        }
    };
}
// XLA's FFI enums are C enums of the same kind.
#[cfg(feature = "xla")]
pub(crate) use c_enum;

c_enum! {
    /// Kind of memory a tensor lives in (`DLDeviceType`, a C `enum` of `int32_t` width).
    ///
    /// ```
    /// use dlmd::dlpack::DLDeviceType;
    /// assert_eq!(format!("{:?}", DLDeviceType::CUDA_MANAGED), "CUDA_MANAGED");
    /// assert_eq!(format!("{:?}", DLDeviceType(99)), "DLDeviceType(99)");
    /// ```
    DLDeviceType(i32) {
        /// CPU memory (`kDLCPU`).
        CPU = 1,
        /// CUDA device memory (`kDLCUDA`).
        CUDA = 2,
        /// Pinned CUDA host memory allocated by `cudaMallocHost` (`kDLCUDAHost`).
        CUDA_HOST = 3,
        /// OpenCL device memory (`kDLOpenCL`).
        OPEN_CL = 4,
        /// Vulkan buffer (`kDLVulkan`).
        VULKAN = 7,
        /// Metal buffer (`kDLMetal`).
        METAL = 8,
        /// Verilog simulator buffer (`kDLVPI`).
        VPI = 9,
        /// ROCm device memory (`kDLROCM`).
        ROCM = 10,
        /// Pinned ROCm host memory (`kDLROCMHost`).
        ROCM_HOST = 11,
        /// Reserved for extension devices (`kDLExtDev`).
        EXT_DEV = 12,
        /// CUDA managed (unified) memory (`kDLCUDAManaged`).
        CUDA_MANAGED = 13,
        /// Unified shared memory of oneAPI (`kDLOneAPI`).
        ONE_API = 14,
        /// WebGPU buffer (`kDLWebGPU`).
        WEB_GPU = 15,
        /// Qualcomm Hexagon DSP (`kDLHexagon`).
        HEXAGON = 16,
        /// Microsoft MAIA device (`kDLMAIA`).
        MAIA = 17,
        /// AWS Trainium (`kDLTrn`).
        TRN = 18,
        /// Google TPU (`kDLTPU`, after DLPack 1.3).
        TPU = 19,
        /// Host memory pinned for a TPU (`kDLTPUHost`, after DLPack 1.3).
        TPU_HOST = 20,
        /// Huawei Ascend NPU (`kDLAscend`, after DLPack 1.3).
        ASCEND = 21,
    }
}

c_enum! {
    /// Kind of number an element holds (`DLDataTypeCode`, stored as `uint8_t` in [`DLDataType`]).
    ///
    /// ```
    /// use dlmd::dlpack::DLDataTypeCode;
    /// assert_eq!(DLDataTypeCode::FLOAT8_E4M3FN.0, 10);
    /// assert_eq!(DLDataTypeCode(200).name(), None);
    /// ```
    DLDataTypeCode(u8) {
        /// Signed integer (`kDLInt`).
        INT = 0,
        /// Unsigned integer (`kDLUInt`).
        UINT = 1,
        /// IEEE 754 binary floating point (`kDLFloat`).
        FLOAT = 2,
        /// Opaque handle, reserved for testing (`kDLOpaqueHandle`).
        OPAQUE_HANDLE = 3,
        /// bfloat16 (`kDLBfloat`).
        BFLOAT = 4,
        /// Complex number of two floats; `bits` counts both parts (`kDLComplex`).
        COMPLEX = 5,
        /// Boolean stored in one byte holding 0 or 1 (`kDLBool`).
        BOOL = 6,
        /// FP8 with 3 exponent and 4 mantissa bits (`kDLFloat8_e3m4`).
        FLOAT8_E3M4 = 7,
        /// FP8 with 4 exponent and 3 mantissa bits, IEEE-like (`kDLFloat8_e4m3`).
        FLOAT8_E4M3 = 8,
        /// FP8 E4M3 with bias 11, finite, unsigned zero (`kDLFloat8_e4m3b11fnuz`).
        FLOAT8_E4M3B11FNUZ = 9,
        /// FP8 E4M3, finite with NaN (OCP `E4M3`, `kDLFloat8_e4m3fn`).
        FLOAT8_E4M3FN = 10,
        /// FP8 E4M3, finite, unsigned zero (`kDLFloat8_e4m3fnuz`).
        FLOAT8_E4M3FNUZ = 11,
        /// FP8 with 5 exponent and 2 mantissa bits (OCP `E5M2`, `kDLFloat8_e5m2`).
        FLOAT8_E5M2 = 12,
        /// FP8 E5M2, finite, unsigned zero (`kDLFloat8_e5m2fnuz`).
        FLOAT8_E5M2FNUZ = 13,
        /// Power-of-two scale of the OCP MX formats (`kDLFloat8_e8m0fnu`).
        FLOAT8_E8M0FNU = 14,
        /// FP6 with 2 exponent and 3 mantissa bits (OCP MX, `kDLFloat6_e2m3fn`).
        FLOAT6_E2M3FN = 15,
        /// FP6 with 3 exponent and 2 mantissa bits (OCP MX, `kDLFloat6_e3m2fn`).
        FLOAT6_E3M2FN = 16,
        /// FP4 with 2 exponent and 1 mantissa bit (OCP MX, `kDLFloat4_e2m1fn`).
        FLOAT4_E2M1FN = 17,
        /// Complex number of two bfloat16; `bits` counts both parts (`kDLBcomplex`, after DLPack
        /// 1.3).
        BCOMPLEX = 18,
    }
}

/// A device: its kind and its ordinal among devices of that kind (`DLDevice`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// Kind of memory.
    pub device_type: DLDeviceType,
    /// Ordinal of the device; 0 for the CPU.
    pub device_id: i32,
}

impl DLDevice {
    /// The host CPU, `{kDLCPU, 0}`.
    pub const CPU: Self = Self {
        device_type: DLDeviceType::CPU,
        device_id: 0,
    };

    /// CUDA device number `ordinal`, `{kDLCUDA, ordinal}`.
    pub const fn cuda(ordinal: i32) -> Self {
        Self {
            device_type: DLDeviceType::CUDA,
            device_id: ordinal,
        }
    }
}

/// The type of one element: a number kind, its width in bits and a lane count for vector
/// types (`DLDataType`).
///
/// ```
/// use dlmd::dlpack::{DLDataType, DLDataTypeCode};
/// let float4 = DLDataType::new(DLDataTypeCode::FLOAT, 32, 4);
/// assert_eq!(float4.to_string(), "float32x4");
/// ```
#[repr(C)]
#[derive(Clone, Copy, Eq)]
pub struct DLDataType {
    /// A [`DLDataTypeCode`] value. Kept as the raw byte, as in the header: a foreign tensor can
    /// hold any value here.
    pub code: u8,
    /// Width of one lane in bits.
    pub bits: u8,
    /// Number of lanes; 1 for scalars.
    pub lanes: u16,
}

impl DLDataType {
    /// A data type from its parts.
    pub const fn new(code: DLDataTypeCode, bits: u8, lanes: u16) -> Self {
        Self {
            code: code.0,
            bits,
            lanes,
        }
    }

    /// The code as a [`DLDataTypeCode`], which may be a value DLPack does not define.
    pub const fn type_code(self) -> DLDataTypeCode {
        DLDataTypeCode(self.code)
    }
}

impl DLDataType {
    /// The three fields packed into one word, for a single comparison.
    #[inline(always)]
    const fn to_word(self) -> u32 {
        self.code as u32 | (self.bits as u32) << 8 | (self.lanes as u32) << 16
    }
}

impl PartialEq for DLDataType {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.to_word() == other.to_word()
    }
}

impl core::hash::Hash for DLDataType {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.to_word().hash(state);
    }
}

impl fmt::Debug for DLDataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DLDataType")
            .field("code", &self.type_code())
            .field("bits", &self.bits)
            .field("lanes", &self.lanes)
            .finish()
    }
}

impl fmt::Display for DLDataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.type_code() {
            DLDataTypeCode::INT => "int",
            DLDataTypeCode::UINT => "uint",
            DLDataTypeCode::FLOAT => "float",
            DLDataTypeCode::OPAQUE_HANDLE => "handle",
            DLDataTypeCode::BFLOAT => "bfloat",
            DLDataTypeCode::COMPLEX => "complex",
            DLDataTypeCode::BOOL => "bool",
            DLDataTypeCode::FLOAT8_E3M4 => "float8_e3m4",
            DLDataTypeCode::FLOAT8_E4M3 => "float8_e4m3",
            DLDataTypeCode::FLOAT8_E4M3B11FNUZ => "float8_e4m3b11fnuz",
            DLDataTypeCode::FLOAT8_E4M3FN => "float8_e4m3fn",
            DLDataTypeCode::FLOAT8_E4M3FNUZ => "float8_e4m3fnuz",
            DLDataTypeCode::FLOAT8_E5M2 => "float8_e5m2",
            DLDataTypeCode::FLOAT8_E5M2FNUZ => "float8_e5m2fnuz",
            DLDataTypeCode::FLOAT8_E8M0FNU => "float8_e8m0fnu",
            DLDataTypeCode::FLOAT6_E2M3FN => "float6_e2m3fn",
            DLDataTypeCode::FLOAT6_E3M2FN => "float6_e3m2fn",
            DLDataTypeCode::FLOAT4_E2M1FN => "float4_e2m1fn",
            DLDataTypeCode::BCOMPLEX => "bcomplex",
            DLDataTypeCode(other) => return write!(f, "code{other}:{}x{}", self.bits, self.lanes),
        };
        // The formats whose name already fixes the width are printed without it.
        let named_width = (DLDataTypeCode::FLOAT8_E3M4.0..=DLDataTypeCode::FLOAT4_E2M1FN.0).contains(&self.code)
            || (self.code == DLDataTypeCode::BOOL.0 && self.bits == 8);
        if named_width {
            f.write_str(kind)?;
        } else {
            write!(f, "{kind}{}", self.bits)?;
        }
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// A borrowed n-dimensional array: pointer, device, type, shape and strides (`DLTensor`).
///
/// Nothing about a `DLTensor` received from elsewhere is trusted by dlmd: its fields are plain
/// data until the import functions have checked them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// Start of the allocation (plus [`byte_offset`](Self::byte_offset) to reach element 0).
    /// May be NULL for a tensor with no elements.
    pub data: *mut c_void,
    /// Where `data` lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Type of one element.
    pub dtype: DLDataType,
    /// `ndim` extents. NULL only when `ndim` is 0.
    pub shape: *mut i64,
    /// `ndim` strides counted in elements, or NULL for a compact row-major tensor
    /// (DLPack before 1.2 only: later versions must always set it when `ndim > 0`).
    pub strides: *mut i64,
    /// Offset in bytes from `data` to element 0.
    pub byte_offset: u64,
}

/// A tensor handed over with its ownership (`DLManagedTensor`, the legacy pre-1.0 form).
///
/// The consumer calls `deleter(self)` once when it is done with the tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Whatever the producer needs to free the tensor.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor and this struct; may be `None`.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

/// A tensor handed over with its ownership, its version and flags (`DLManagedTensorVersioned`).
///
/// The consumer must check [`version`](Self::version)`.major` before touching any other field,
/// and calls `deleter(self)` once when it is done with the tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer followed.
    pub version: DLPackVersion,
    /// Whatever the producer needs to free the tensor.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor and this struct; may be `None`.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    /// [`READ_ONLY`], [`IS_COPIED`] and [`IS_SUBBYTE_TYPE_PADDED`] bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// The error callback a [`DLPackManagedTensorAllocator`] reports through:
/// `SetError(error_ctx, kind, message)`, with `kind` an error class name such as
/// `"BufferError"` and both strings NUL-terminated.
pub type DLPackSetError =
    Option<unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char)>;

/// Allocates a tensor like `prototype` (its `ndim`, `shape`, `dtype` and `device`; strides and
/// data ignored), owned by the producer framework, into `*out`
/// (`DLPackManagedTensorAllocator`). Returns 0, or -1 after calling `SetError`.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: DLPackSetError,
    ) -> c_int,
>;

/// Exports a Python object of the table's type as an owning tensor into `*out`, without stream
/// synchronisation (`DLPackManagedTensorFromPyObjectNoSync`). Returns 0, or -1 with a Python
/// exception set. Called with the GIL held.
pub type DLPackManagedTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int>;

/// Fills `*out` with a non-owning view of a Python object of the table's type, valid until
/// control returns to the caller's caller (`DLPackDLTensorFromPyObjectNoSync`). Returns 0, or
/// -1 with a Python exception set. Called with the GIL held.
pub type DLPackDLTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut DLTensor) -> c_int>;

/// Writes the producer's current work stream on a device into `*out_current_stream` (NULL for
/// the CPU, or for CUDA's legacy default stream) (`DLPackCurrentWorkStream`). Returns 0, or -1
/// with a Python exception set.
pub type DLPackCurrentWorkStream = Option<
    unsafe extern "C" fn(device_type: DLDeviceType, device_id: i32, out_current_stream: *mut *mut c_void) -> c_int,
>;

/// Turns an owning tensor into a Python object of the producer's type, taking the tensor over
/// (`DLPackManagedTensorToPyObjectNoSync`). Returns 0 with a new reference in `*out_py_object`,
/// or -1 with a Python exception set. Called with the GIL held.
pub type DLPackManagedTensorToPyObjectNoSync =
    Option<unsafe extern "C" fn(tensor: *mut DLManagedTensorVersioned, out_py_object: *mut *mut c_void) -> c_int>;

/// The part of an exchange table that stays the same across DLPack versions
/// (`DLPackExchangeAPIHeader`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLPackExchangeAPIHeader {
    /// The DLPack version the table follows: a consumer checks `major` before reading past the
    /// header.
    pub version: DLPackVersion,
    /// A table of an older version from the same producer, or NULL: a consumer that does not
    /// know `version.major` walks this chain to one it knows.
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// The C exchange table of DLPack 1.3 (`DLPackExchangeAPI`): what a Python type publishes, as a
/// capsule named [`DLPackExchangeAPI::CAPSULE`] in its type attribute
/// `__dlpack_c_exchange_api__`, so that consumers exchange its objects through C calls instead
/// of `__dlpack__` and capsules. The table lives as long as the process.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLPackExchangeAPI {
    /// Version and older tables.
    pub header: DLPackExchangeAPIHeader,
    /// Allocates tensors owned by the producer. Required.
    pub managed_tensor_allocator: DLPackManagedTensorAllocator,
    /// Owning export of an object. Required.
    pub managed_tensor_from_py_object_no_sync: DLPackManagedTensorFromPyObjectNoSync,
    /// An owning tensor as an object of the producer's type. Required.
    pub managed_tensor_to_py_object_no_sync: DLPackManagedTensorToPyObjectNoSync,
    /// Non-owning export of an object into a caller's `DLTensor`. May be NULL.
    pub dltensor_from_py_object_no_sync: DLPackDLTensorFromPyObjectNoSync,
    /// The producer's current work stream. Required.
    pub current_work_stream: DLPackCurrentWorkStream,
}

impl DLPackExchangeAPI {
    /// The name of the capsule that holds a table (`"dlpack_exchange_api"`).
    pub const CAPSULE: &'static CStr = c"dlpack_exchange_api";
    /// The type attribute that holds the table's capsule (DLPack 1.3).
    pub const ATTRIBUTE: &'static str = "__dlpack_c_exchange_api__";
    /// The type attribute of DLPack 1.2 producers, which hold the table's address as an `int`.
    pub const ATTRIBUTE_1_2: &'static str = "__c_dlpack_exchange_api__";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_names_and_unknown_numbers() {
        assert_eq!(format!("{:?}", DLDeviceType::CPU), "CPU");
        assert_eq!(format!("{:?}", DLDeviceType(5)), "DLDeviceType(5)");
        assert_eq!(format!("{:?}", DLDataTypeCode::BOOL), "BOOL");
        assert_eq!(format!("{:?}", DLDataTypeCode(19)), "DLDataTypeCode(19)");
    }

    #[test]
    fn display_of_data_types() {
        let f = |c, b, l| DLDataType::new(c, b, l).to_string();
        assert_eq!(f(DLDataTypeCode::FLOAT, 32, 1), "float32");
        assert_eq!(f(DLDataTypeCode::COMPLEX, 64, 1), "complex64");
        assert_eq!(f(DLDataTypeCode::FLOAT4_E2M1FN, 4, 2), "float4_e2m1fnx2");
        assert_eq!(f(DLDataTypeCode::BCOMPLEX, 32, 1), "bcomplex32");
        assert_eq!(
            DLDataType {
                code: 99,
                bits: 8,
                lanes: 1
            }
            .to_string(),
            "code99:8x1"
        );
    }
}
