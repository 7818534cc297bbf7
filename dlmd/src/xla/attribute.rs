//! A call's attributes: found by name (XLA sorts them), each read as the Rust type the
//! handler asks for when its XLA kind and type are that type's.

use super::error::{FrameError, kind_name};
use super::ffi::{self, AttrType, DataType};
use core::ffi::c_void;
use half::{bf16, f16};
use std::string::{String, ToString};

/// The attributes of a call, checked as a list: `len` kinds, names and values.
#[derive(Clone, Copy)]
pub(crate) struct Attrs<'a> {
    kinds: &'a [AttrType],
    names: &'a [*mut ffi::ByteSpan],
    values: &'a [*mut c_void],
}

impl<'a> Attrs<'a> {
    /// The list `attrs` describes.
    ///
    /// # Safety
    ///
    /// Unless `attrs.size` is 0, its three arrays hold `size` values each, valid for `'a`, and
    /// each name and value points to what its kind says, valid for `'a`.
    pub(crate) unsafe fn new(attrs: &ffi::Attrs) -> Result<Self, FrameError> {
        let len = usize::try_from(attrs.size)
            .ok()
            .filter(|&n| n <= isize::MAX as usize / size_of::<*mut c_void>())
            .ok_or(FrameError::Attributes("a negative count"))?;
        if len == 0 {
            return Ok(Self {
                kinds: &[],
                names: &[],
                values: &[],
            });
        }
        if attrs.types.is_null() || attrs.names.is_null() || attrs.attrs.is_null() {
            return Err(FrameError::Attributes("a NULL list"));
        }
        // SAFETY: `len` values at each non-NULL pointer, valid for `'a` (the caller); integer
        // newtypes and pointers have no invalid values.
        let kinds = unsafe { core::slice::from_raw_parts(attrs.types, len) };
        // SAFETY: as above.
        let names = unsafe { core::slice::from_raw_parts(attrs.names, len) };
        // SAFETY: as above.
        let values = unsafe { core::slice::from_raw_parts(attrs.attrs, len) };
        let list = Self { kinds, names, values };
        // A name that is not UTF-8 (or NULL) is refused once, here: lookups then never fail on one.
        for i in 0..len {
            list.name(i)
                .ok_or(FrameError::Attributes("a name that is NULL or not UTF-8"))?;
        }
        Ok(list)
    }

    /// Name `i`, if it is a UTF-8 string.
    fn name(&self, i: usize) -> Option<&'a str> {
        // SAFETY: each name is NULL or points to a byte span valid for `'a` (`new`).
        let span = unsafe { self.names.get(i)?.as_ref()? };
        // SAFETY: as above: `len` bytes at `ptr`, unless `len` is 0.
        let bytes = unsafe { bytes(span.ptr.cast(), span.len)? };
        core::str::from_utf8(bytes).ok()
    }

    /// The names, in XLA's order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        (0..self.kinds.len()).filter_map(|i| self.name(i))
    }

    /// The attribute `name` as `T`.
    pub(crate) fn get<T: Attribute<'a>>(&self, name: &str) -> Result<T, FrameError> {
        // The first of equal names (XLA sorts them, and makes them unique).
        let i = (0..self.kinds.len())
            .find(|&i| self.name(i) == Some(name))
            .ok_or_else(|| FrameError::NoAttribute { name: name.to_string() })?;
        let value = self.values[i];
        if value.is_null() {
            return Err(FrameError::Attributes("a NULL value"));
        }
        // SAFETY: a value of kind `kinds[i]`, valid for `'a` (`new`).
        unsafe { T::read(self.kinds[i], value) }.map_err(|found| FrameError::AttributeType {
            name: name.to_string(),
            found,
            expected: T::describe(),
        })
    }
}

/// `len` bytes at `ptr`, or `None` for NULL with a positive length.
///
/// # Safety
///
/// Unless `len` is 0 or `ptr` NULL, `ptr` points to `len` bytes valid for `'a`.
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    match (ptr.is_null(), len) {
        (_, 0) => Some(&[]),
        (true, _) => None,
        // SAFETY: `len` bytes at `ptr` (the caller).
        (false, _) => Some(unsafe { core::slice::from_raw_parts(ptr, len) }),
    }
}

/// A Rust type an attribute is read as: dlmd reads [`Scalar`]s, `bool`, `&str` and slices of
/// scalars; a handler may read others (a dictionary) through its own implementation.
///
/// # Safety
///
/// `read` returns a `Self` only from a value whose kind and XLA type hold a valid `Self`, and
/// nothing in it outlives the data valid for `'a`. It is called with every kind XLA passes,
/// known or not: a `DICTIONARY` value points to an `XLA_FFI_Attrs`, and an unknown kind must be
/// refused.
pub unsafe trait Attribute<'a>: Sized {
    /// What the handler takes, for a message.
    fn describe() -> String;

    /// The value at `value`, of XLA kind `kind`, or what it is instead.
    ///
    /// # Safety
    ///
    /// `value` points to what `kind` says (an `XLA_FFI_Scalar`, `XLA_FFI_Array` or
    /// `XLA_FFI_ByteSpan`), valid for `'a`, whose data holds values of the type it names.
    unsafe fn read(kind: AttrType, value: *mut c_void) -> Result<Self, String>;
}

mod sealed {
    /// Only dlmd's scalar types are [`Scalar`](super::Scalar)s.
    pub trait Sealed {}
}

/// A scalar type attributes hold: the integers, `f16`, `bf16`, `f32` and `f64` (`bool` is read
/// apart, its byte checked). Sealed: XLA's scalar types are a closed set.
///
/// # Safety
///
/// `Self` is as wide as `DTYPE`, and every bit pattern XLA writes for `DTYPE` is a valid `Self`.
pub unsafe trait Scalar: sealed::Sealed + Copy + 'static {
    /// The XLA type.
    const DTYPE: DataType;
}

macro_rules! scalars {
    ($($t:ty => $dtype:ident),*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: XLA writes `$t`'s own representation, of its width, for this type; every
        // bit pattern of it is a `$t`.
        unsafe impl Scalar for $t {
            const DTYPE: DataType = DataType::$dtype;
        }
    )*};
}
scalars!(i8 => S8, i16 => S16, i32 => S32, i64 => S64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
         f16 => F16, bf16 => BF16, f32 => F32, f64 => F64);

/// How a type reads in a message.
fn type_name(dtype: DataType) -> String {
    std::format!("{dtype:?}")
}

/// The value of a scalar attribute of XLA type `dtype`, or what the attribute is instead.
///
/// # Safety
///
/// `value` points to what `kind` says, valid for the call (as [`Attribute::read`]'s caller
/// promises).
unsafe fn scalar_of(kind: AttrType, value: *mut c_void, dtype: DataType) -> Result<*mut c_void, String> {
    if kind != AttrType::SCALAR {
        return Err(kind_name(kind));
    }
    // SAFETY: a scalar (the caller).
    let scalar = unsafe { &*value.cast::<ffi::Scalar>() };
    if scalar.dtype != dtype {
        return Err(std::format!("a scalar of {}", type_name(scalar.dtype)));
    }
    if scalar.value.is_null() {
        return Err("a scalar with a NULL value".to_string());
    }
    Ok(scalar.value)
}

// SAFETY: a value is returned only from a scalar of `T`'s XLA type.
unsafe impl<'a, T: Scalar> Attribute<'a> for T {
    fn describe() -> String {
        std::format!("a scalar of {}", type_name(T::DTYPE))
    }

    unsafe fn read(kind: AttrType, value: *mut c_void) -> Result<Self, String> {
        // SAFETY: forwarded from the caller.
        let value = unsafe { scalar_of(kind, value, T::DTYPE) }?;
        // SAFETY: a value of `T`'s XLA type (the caller), whose bits are a `T` (`Scalar`);
        // XLA need not align it.
        Ok(unsafe { value.cast::<T>().read_unaligned() })
    }
}

// SAFETY: a `bool` is returned only from a `PRED` scalar whose byte is 0 or 1.
unsafe impl<'a> Attribute<'a> for bool {
    fn describe() -> String {
        "a scalar of PRED".to_string()
    }

    unsafe fn read(kind: AttrType, value: *mut c_void) -> Result<Self, String> {
        // SAFETY: forwarded from the caller.
        let value = unsafe { scalar_of(kind, value, DataType::PRED) }?;
        // SAFETY: one byte of a `PRED` (the caller), read as a byte.
        match unsafe { value.cast::<u8>().read() } {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(std::format!("a PRED scalar whose byte is {b}")),
        }
    }
}

// SAFETY: a string is returned only from a UTF-8 byte span.
unsafe impl<'a> Attribute<'a> for &'a str {
    fn describe() -> String {
        "a string".to_string()
    }

    unsafe fn read(kind: AttrType, value: *mut c_void) -> Result<Self, String> {
        if kind != AttrType::STRING {
            return Err(kind_name(kind));
        }
        // SAFETY: a byte span valid for `'a` (the caller).
        let span = unsafe { &*value.cast::<ffi::ByteSpan>() };
        // SAFETY: `len` bytes at `ptr` (the caller).
        let bytes = unsafe { bytes(span.ptr.cast(), span.len) }.ok_or("a NULL string")?;
        core::str::from_utf8(bytes).map_err(|_| "a string that is not UTF-8".to_string())
    }
}

// SAFETY: a slice is returned only over an array of `T`'s XLA type, aligned for `T`.
unsafe impl<'a, T: Scalar> Attribute<'a> for &'a [T] {
    fn describe() -> String {
        std::format!("an array of {}", type_name(T::DTYPE))
    }

    unsafe fn read(kind: AttrType, value: *mut c_void) -> Result<Self, String> {
        if kind != AttrType::ARRAY {
            return Err(kind_name(kind));
        }
        // SAFETY: an array (the caller).
        let array = unsafe { &*value.cast::<ffi::Array>() };
        if array.dtype != T::DTYPE {
            return Err(std::format!("an array of {}", type_name(array.dtype)));
        }
        if array.size == 0 {
            return Ok(&[]);
        }
        if array.data.is_null() || !array.data.cast::<T>().is_aligned() {
            return Err("an array whose data is NULL or not aligned".to_string());
        }
        if array.size > isize::MAX as usize / size_of::<T>() {
            return Err(std::format!("an array of {} elements", array.size));
        }
        // SAFETY: `size` values of `T`'s XLA type at `data` (the caller), aligned, valid for
        // `'a`, each a valid `T` (`Scalar`); XLA does not write attributes during a call.
        Ok(unsafe { core::slice::from_raw_parts(array.data.cast::<T>(), array.size) })
    }
}
