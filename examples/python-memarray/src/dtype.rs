//! The element types a MemArray holds, as a typed `DType`, and their buffers on the host and
//! on the GPU.

use cudarc::driver::{CudaSlice, DeviceRepr};
use dlmd::DlElement;
use dlmd::dlpack::DLDataType;
use dlmd::half::f16;
use dlmd::num_complex::Complex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A `complex64` that can live on the GPU: cudarc copies only types it knows as `DeviceRepr`,
/// and `num_complex::Complex` is not one; the derive, with dlmd's `cuda` feature, makes this
/// newtype one. `#[repr(transparent)]` keeps the DLPack data type of the complex number it
/// wraps.
#[derive(Clone, Copy, Debug, Default, PartialEq, DlElement)]
#[repr(transparent)]
pub struct Complex64(pub Complex<f32>);

/// A `complex128` that can live on the GPU (see [`Complex64`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, DlElement)]
#[repr(transparent)]
pub struct Complex128(pub Complex<f64>);

/// torch's `float4_e2m1fn_x2`: two FP4 E2M1 values packed in each byte (dlmd's `F4E2M1FNx2`),
/// in a newtype cudarc can hold on the GPU. Shapes count bytes, as torch's do.
#[derive(Clone, Copy, Debug, Default, PartialEq, DlElement)]
#[repr(transparent)]
pub struct Fp4x2(pub dlmd::F4E2M1FNx2);

/// The seed's kernel on one element: add the sum of its indices.
pub trait AddIndex: DlElement + DeviceRepr + Default {
    /// Adds `sum`, as the element type adds.
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
impl AddIndex for Fp4x2 {
    /// Both values of the byte gain the index sum, rounded (and saturated) to FP4.
    fn add_index(&mut self, sum: usize) {
        let (lo, hi) = self.0.to_f32_pair();
        self.0 = dlmd::F4E2M1FNx2::from_f32_pair(lo + sum as f32, hi + sum as f32);
    }
}
impl AddIndex for Complex64 {
    fn add_index(&mut self, sum: usize) {
        self.0.re += sum as f32;
    }
}
impl AddIndex for Complex128 {
    fn add_index(&mut self, sum: usize) {
        self.0.re += sum as f64;
    }
}

macro_rules! dtypes {
    ($($variant:ident($t:ty) = $name:literal, $c:expr;)*) => {
        /// An element type a MemArray holds.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum DType {
            $(#[doc = concat!("numpy's `", $name, "`.")] $variant,)*
        }

        impl DType {
            /// Every element type, in numpy's order.
            pub const ALL: &[DType] = &[$(DType::$variant),*];

            /// numpy's name.
            pub fn name(self) -> &'static str {
                match self {
                    $(DType::$variant => $name,)*
                }
            }

            /// The DLPack data type.
            pub fn dlpack(self) -> DLDataType {
                match self {
                    $(DType::$variant => <$t as DlElement>::DTYPE,)*
                }
            }

            /// The type a GPU kernel names it by, where the kernels handle it.
            pub fn c_type(self) -> Option<&'static str> {
                match self {
                    $(DType::$variant => $c,)*
                }
            }

            /// The element type of a numpy name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(DType::$variant),)*
                    _ => None,
                }
            }

            /// The element type of a DLPack data type.
            pub fn from_dlpack(dtype: DLDataType) -> Option<Self> {
                $(if dtype == <$t as DlElement>::DTYPE { return Some(DType::$variant); })*
                None
            }
        }

        /// Each element type by its variant's name, for `with_dtype!`.
        pub mod elem {
            use super::*;
            $(pub type $variant = $t;)*
        }

        /// The elements of a MemArray on the host, row-major.
        pub enum Buffer {
            $(#[allow(missing_docs)] $variant(Vec<$t>),)*
        }

        /// The elements of a MemArray's copy on the GPU, row-major.
        pub enum DeviceBuffer {
            $(#[allow(missing_docs)] $variant(CudaSlice<$t>),)*
        }

        impl Buffer {
            /// `len` zeros of `dtype`.
            pub fn zeros(dtype: DType, len: usize) -> Self {
                match dtype {
                    $(DType::$variant => Buffer::$variant(vec![<$t>::default(); len]),)*
                }
            }

            /// The element type.
            pub fn dtype(&self) -> DType {
                match self {
                    $(Buffer::$variant(_) => DType::$variant,)*
                }
            }
        }

        /// Runs `$body` with `$v` bound to the buffer's `Vec<T>`.
        macro_rules! with_buffer {
            ($buffer:expr, |$v:ident| $body:expr) => {
                match $buffer {
                    $($crate::dtype::Buffer::$variant($v) => $body,)*
                }
            };
        }

        /// Runs `$body` with `$v` bound to the host buffer's `Vec<T>`, `$d` to the device copy's
        /// `CudaSlice<T>` (`None` when there is none yet) and `$wrap` to the `DeviceBuffer`
        /// variant that holds a `CudaSlice<T>`.
        macro_rules! with_buffers {
            ($buffer:expr, $device:expr, |$v:ident, $d:ident, $wrap:ident| $body:expr) => {
                match ($buffer, $device) {
                    $(($crate::dtype::Buffer::$variant($v), device) => {
                        let $d = match device {
                            Some($crate::dtype::DeviceBuffer::$variant(d)) => Some(d),
                            _ => None,
                        };
                        let $wrap = $crate::dtype::DeviceBuffer::$variant;
                        $body
                    })*
                }
            };
        }

        /// Runs `$body` with `$T` the element type `$dtype` names.
        macro_rules! with_dtype {
            ($dtype:expr, $T:ident => $body:expr) => {
                match $dtype {
                    $($crate::dtype::DType::$variant => {
                        type $T = $crate::dtype::elem::$variant;
                        $body
                    })*
                }
            };
        }
    };
}

dtypes! {
    Bool(bool) = "bool", Some("bool");
    I8(i8) = "int8", Some("signed char");
    I16(i16) = "int16", Some("short");
    I32(i32) = "int32", Some("int");
    I64(i64) = "int64", Some("long long");
    U8(u8) = "uint8", Some("unsigned char");
    U16(u16) = "uint16", Some("unsigned short");
    U32(u32) = "uint32", Some("unsigned int");
    U64(u64) = "uint64", Some("unsigned long long");
    F16(f16) = "float16", None;
    F32(f32) = "float32", Some("float");
    F64(f64) = "float64", Some("double");
    C64(Complex64) = "complex64", None;
    C128(Complex128) = "complex128", None;
    F4x2(Fp4x2) = "float4_e2m1fn_x2", None;
}

/// The element type of a Python dtype: a string, a numpy dtype or a numpy scalar type.
pub fn dtype_arg(dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let name = if let Ok(name) = dtype.extract::<String>() {
        name
    } else {
        ["name", "__name__"]
            .iter()
            .find_map(|attr| dtype.getattr(*attr).and_then(|n| n.extract::<String>()).ok())
            .ok_or_else(|| PyTypeError::new_err("dtype must be a string, a numpy dtype or a numpy scalar type"))?
    };
    DType::from_name(&name).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        PyTypeError::new_err(format!(
            "unsupported dtype {name:?}; MemArray holds {}",
            names.join(", ")
        ))
    })
}
