//! What a handler reports to XLA: a frame it refuses ([`FrameError`]), or its own failure
//! ([`HandlerError`]), each becoming an `XLA_FFI_Error` with a status code and a message.

use super::ffi::{self, AttrType, DataType, ErrorCode, ExecutionStage};
use crate::import::ImportError;
use crate::managed::ManagedError;
use core::ffi::CStr;
use core::fmt;
use std::ffi::CString;
use std::string::{String, ToString};
use std::vec::Vec;

/// Which list of a frame a buffer is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The arguments: read only.
    Argument,
    /// The results: written.
    Result,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Argument => "argument",
            Self::Result => "result",
        })
    }
}

/// A call frame, or a part of it, that is not what XLA's FFI API 0.3 defines or not what the
/// handler takes. Each becomes an `INVALID_ARGUMENT` error in XLA (a `JaxRuntimeError` in JAX).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A struct is smaller than the version this handler speaks defines.
    #[error(
        "XLA's {what} is {found} bytes, and XLA's FFI API 0.3 defines at least {expected}: XLA is older than the handler"
    )]
    StructSize {
        /// The struct.
        what: &'static str,
        /// The size the frame gives.
        found: usize,
        /// The size 0.3 defines.
        expected: usize,
    },
    /// XLA's API is of another major version.
    #[error("XLA's FFI API is version {major}.{minor}; this handler speaks 0.3 and needs major version 0")]
    ApiVersion {
        /// The major version.
        major: i32,
        /// The minor version.
        minor: i32,
    },
    /// A pointer the frame must hold is NULL.
    #[error("the call frame's {0} is NULL")]
    Null(&'static str),
    /// The handler runs at another stage.
    #[error("the handler runs at the EXECUTE stage, and XLA called it for {0:?}")]
    Stage(ExecutionStage),
    /// A count that cannot be one.
    #[error("the call frame holds {count} {side}s")]
    Count {
        /// Arguments or results.
        side: Side,
        /// The count the frame gives.
        count: i64,
    },
    /// A buffer past the last.
    #[error("the handler takes {side} {index}, and the call has {count}")]
    Missing {
        /// Arguments or results.
        side: Side,
        /// The buffer asked for.
        index: usize,
        /// How many there are.
        count: usize,
    },
    /// Not a buffer.
    #[error("{side} {index} is of XLA kind {kind}, not a buffer")]
    NotBuffer {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// The kind the frame gives.
        kind: i32,
    },
    /// A NULL buffer, or one whose struct is too small.
    #[error("{side} {index}: {why}")]
    Buffer {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A rank DLPack cannot hold.
    #[error("{side} {index} has rank {rank}")]
    Rank {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// The rank the frame gives.
        rank: i64,
    },
    /// A view of a `PRED` buffer as `bool`.
    #[error(
        "{side} {index} is PRED: its bytes are read and written as u8 (Buffer::bool_bytes, bool_bytes_mut), \
         never as bool, since another buffer of the call may share its memory"
    )]
    Pred {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
    },
    /// An element type with no DLPack type.
    #[error("{side} {index} is of XLA type {dtype:?}, which has no DLPack element type")]
    DataType {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// The type.
        dtype: DataType,
    },
    /// Extents whose elements no address holds.
    #[error("{side} {index} has extents {dims:?} (the first 8), which no buffer holds")]
    Extents {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// The extents (the first 8).
        dims: Vec<i64>,
    },
    /// The buffer, as a tensor, is not what the handler takes.
    #[error("{side} {index}: {source}")]
    Import {
        /// Arguments or results.
        side: Side,
        /// Which.
        index: usize,
        /// What the import found.
        source: ImportError,
    },
    /// A named attribute the call lacks.
    #[error("the call has no attribute `{name}`")]
    NoAttribute {
        /// The name.
        name: String,
    },
    /// An attribute of another kind or type.
    #[error("attribute `{name}` is {found}, and the handler takes {expected}")]
    AttributeType {
        /// The name.
        name: String,
        /// What the call gives.
        found: String,
        /// What the handler takes.
        expected: String,
    },
    /// An attribute list that is not one.
    #[error("the call's attributes: {0}")]
    Attributes(&'static str),
    /// XLA gave no stream or device.
    #[error("XLA gave no {what}: {message}")]
    Context {
        /// The stream or the device ordinal.
        what: &'static str,
        /// XLA's error, or why it was not asked.
        message: String,
    },
}

/// A handler's failure: a status code and a message, which XLA raises (JAX as a
/// `JaxRuntimeError` naming the code).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerError {
    code: ErrorCode,
    message: String,
}

impl HandlerError {
    /// A failure with `code`. [`ErrorCode::OK`] (an error is never a success) and values XLA does
    /// not define are taken as [`ErrorCode::UNKNOWN`].
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let code = if code == ErrorCode::OK || !code.is_known() {
            ErrorCode::UNKNOWN
        } else {
            code
        };
        Self {
            code,
            message: message.into(),
        }
    }

    /// The call's arguments are not what the handler takes.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_ARGUMENT, message)
    }

    /// Something failed that the call could not have avoided (a driver error).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL, message)
    }

    /// The status code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error as XLA's, created through `api` (which copies the message), or NULL where
    /// `api` has no `XLA_FFI_Error_Create`.
    ///
    /// # Safety
    ///
    /// `api` is (a copy of) XLA's API table, whose `struct_size` is true and at least
    /// [`Api::THROUGH_ERROR_CREATE`](ffi::Api::THROUGH_ERROR_CREATE).
    pub(crate) unsafe fn to_xla(&self, api: &ffi::Api) -> *mut ffi::Error {
        let Some(create) = api.error_create else {
            return core::ptr::null_mut();
        };
        // A NUL inside the message would cut it short: it is shown as U+FFFD instead.
        let message = CString::new(self.message.replace('\0', "\u{fffd}")).unwrap_or_default();
        let mut args = ffi::ErrorCreateArgs {
            struct_size: ffi::ErrorCreateArgs::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            message: message.as_ptr(),
            errc: self.code,
        };
        // SAFETY: `create` is XLA's `XLA_FFI_Error_Create`, given arguments of its version's
        // size whose message lives across the call (XLA copies it).
        unsafe { create(&mut args) }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for HandlerError {}

impl From<FrameError> for HandlerError {
    fn from(e: FrameError) -> Self {
        Self::invalid_argument(e.to_string())
    }
}

impl From<ImportError> for HandlerError {
    fn from(e: ImportError) -> Self {
        Self::invalid_argument(e.to_string())
    }
}

impl From<ManagedError> for HandlerError {
    fn from(e: ManagedError) -> Self {
        Self::invalid_argument(e.to_string())
    }
}

#[cfg(feature = "cuda")]
impl From<crate::cuda::CudaError> for HandlerError {
    /// An argument CUDA cannot take (`Import`, `View`) is the call's; anything else, the driver's.
    fn from(e: crate::cuda::CudaError) -> Self {
        use crate::cuda::CudaError;
        match e {
            CudaError::Import(_) | CudaError::View(_) => Self::invalid_argument(e.to_string()),
            _ => Self::internal(e.to_string()),
        }
    }
}

/// How an attribute's kind reads in a message.
pub(crate) fn kind_name(kind: AttrType) -> String {
    match kind {
        AttrType::ARRAY => "an array".to_string(),
        AttrType::DICTIONARY => "a dictionary".to_string(),
        AttrType::SCALAR => "a scalar".to_string(),
        AttrType::STRING => "a string".to_string(),
        other => std::format!("of XLA kind {}", other.0),
    }
}

/// Takes an error XLA's API returned: `Ok` for NULL, its message otherwise (the error
/// destroyed).
///
/// # Safety
///
/// `error` is NULL or an error `api`'s entries returned, owned by the caller; `api`'s size is
/// true. (An error that cannot be destroyed, where the table lacks the entries, is left.)
pub(crate) unsafe fn take_error(api: &ffi::Api, error: *mut ffi::Error) -> Result<(), String> {
    if error.is_null() {
        return Ok(());
    }
    let mut message = String::from("XLA reported an error");
    let entries =
        (api.struct_size >= ffi::Api::THROUGH_ERROR_DESTROY).then_some((api.error_get_message, api.error_destroy));
    if let Some((Some(get), Some(destroy))) = entries {
        let mut args = ffi::ErrorGetMessageArgs {
            struct_size: ffi::ErrorGetMessageArgs::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            error,
            message: core::ptr::null(),
        };
        // SAFETY: XLA's entry, with an error it made and arguments of its version's size.
        unsafe { get(&mut args) };
        if !args.message.is_null() {
            // SAFETY: XLA's NUL-terminated message, alive until the error is destroyed.
            message = unsafe { CStr::from_ptr(args.message) }.to_string_lossy().into_owned();
        }
        let mut args = ffi::ErrorDestroyArgs {
            struct_size: ffi::ErrorDestroyArgs::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            error,
        };
        // SAFETY: XLA's entry, destroying the error it made, once.
        unsafe { destroy(&mut args) };
    }
    Err(message)
}
