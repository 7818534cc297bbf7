//! Handlers: a Rust type's `execute`, behind the C entry point XLA calls.

use super::call::{Call, Platform};
use super::error::{FrameError, HandlerError};
use super::ffi::{self, ExtensionType};
use core::ffi::CStr;
use std::string::{String, ToString};

/// An XLA FFI handler: what a call does, on which platform, with which traits.
///
/// [`entry::<H>`](entry) is its C entry point, to register with XLA
/// (`jax.ffi.register_ffi_target(name, capsule, platform=…)`, the capsule from
/// [`python::xla_capsule`](crate::python::xla_capsule) or any other way of handing XLA a
/// function pointer).
///
/// ```
/// use dlmd::xla::{Call, Handler, HandlerError, Platform};
/// use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
///
/// /// `y = x + b`, on the host: `b` an `f32` attribute.
/// struct AddScalar;
///
/// impl Handler for AddScalar {
///     const PLATFORM: Platform = Platform::Host;
///
///     fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
///         let b: f32 = call.attr("b")?;
///         let x = call.arg(0)?;
///         let mut y = call.ret(0)?;
///         let x = x.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
///         let y = y.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
///         if x.extent(0) != y.extent(0) {
///             return Err(HandlerError::invalid_argument("x and y differ in length"));
///         }
///         for i in 0..x.extent(0) {
///             y.store([i], x.load([i]) + b);
///         }
///         Ok(())
///     }
/// }
///
/// let entry: dlmd::xla::ffi::Handler = dlmd::xla::entry::<AddScalar>;
/// # let _ = entry;
/// ```
pub trait Handler {
    /// Where the call's buffers are: the platform the handler is registered for.
    const PLATFORM: Platform;

    /// The traits reported to XLA when it asks for the handler's metadata. A handler that
    /// launches the same device work on every call (for equal attributes) may say
    /// [`COMMAND_BUFFER_COMPATIBLE`](ffi::Traits::COMMAND_BUFFER_COMPATIBLE), and XLA may then
    /// capture it into a CUDA graph (the traits given at registration must say so too).
    const TRAITS: ffi::Traits = ffi::Traits::NONE;

    /// The call: reads its arguments and attributes, writes its results (on CUDA: queues the
    /// work on XLA's stream). An `Err` is raised by XLA with its code and message; so is a
    /// panic, as an `INTERNAL` error.
    fn execute(call: &Call<'_>) -> Result<(), HandlerError>;
}

/// The C entry point of `H`, to register with XLA. It answers XLA's request for metadata (API
/// version 0.3 and `H::TRAITS`), refuses a frame that is not what version 0.3 defines, and
/// otherwise runs [`H::execute`](Handler::execute), its error or panic becoming XLA's error.
///
/// A frame without a usable API table (NULL, or too small to hold `XLA_FFI_Error_Create`)
/// cannot be answered with an error: the call returns success and does nothing. XLA always
/// passes its own table.
///
/// # Safety
///
/// `frame` is NULL or points to a call frame as XLA passes it to a handler: valid for the
/// call, its `struct_size` true, and so every struct it points to as far as each one's
/// `struct_size` says, with lists as long as their counts and buffers as their extents say.
pub unsafe extern "C" fn entry<H: Handler>(frame: *mut ffi::CallFrame) -> *mut ffi::Error {
    // SAFETY: the frame as XLA passes it (the caller).
    let Some((frame, api)) = (unsafe { frame_and_api(frame) }) else {
        return core::ptr::null_mut();
    };
    let result = match check_api(api) {
        Err(e) => Err(HandlerError::from(e)),
        // SAFETY: as above.
        Ok(()) => match unsafe { metadata_request(frame) } {
            Some(extension) => {
                // SAFETY: as above.
                unsafe { write_metadata(extension, H::TRAITS) }.map_err(HandlerError::from)
            }
            None => std::panic::catch_unwind(|| {
                // SAFETY: as above; `api` passed `check_api`.
                let call = unsafe { Call::new(frame, api, H::PLATFORM) }?;
                H::execute(&call)
            })
            .unwrap_or_else(|panic| Err(HandlerError::internal(panic_message(panic.as_ref())))),
        },
    };
    match result {
        Ok(()) => core::ptr::null_mut(),
        // SAFETY: `api` has an `XLA_FFI_Error_Create` (`frame_and_api`).
        Err(e) => unsafe { e.to_xla(api) },
    }
}

/// The frame and its API table, if the table can at least create errors.
///
/// # Safety
///
/// As for [`entry`].
unsafe fn frame_and_api<'a>(frame: *mut ffi::CallFrame) -> Option<(&'a ffi::CallFrame, &'a ffi::Api)> {
    // The frame's first three fields (size, extensions, table) are in every version.
    const THROUGH_API: usize = core::mem::offset_of!(ffi::CallFrame, api) + size_of::<*const ffi::Api>();
    if frame.is_null() {
        return None;
    }
    // SAFETY: a frame whose size is true (the caller): the size is read first, and the whole
    // struct only where the size covers it.
    let size = unsafe { (*frame).struct_size };
    if size < THROUGH_API {
        return None;
    }
    // SAFETY: the frame holds its API table's pointer; a struct shorter than this version's is
    // refused by `Call::new` before any later field is read, and `&CallFrame` is only read.
    let frame = unsafe { &*frame };
    // SAFETY: NULL or XLA's table, whose size is true (the caller).
    let api = unsafe { frame.api.as_ref()? };
    (api.struct_size >= ffi::Api::THROUGH_ERROR_CREATE && api.error_create.is_some()).then_some((frame, api))
}

/// Whether XLA's API is of the major version this handler speaks.
pub(crate) fn check_api(api: &ffi::Api) -> Result<(), FrameError> {
    let version = &api.api_version;
    if version.struct_size < ffi::ApiVersion::STRUCT_SIZE {
        return Err(FrameError::StructSize {
            what: "XLA_FFI_Api_Version",
            found: version.struct_size,
            expected: ffi::ApiVersion::STRUCT_SIZE,
        });
    }
    if version.major_version != ffi::API_VERSION.0 {
        return Err(FrameError::ApiVersion {
            major: version.major_version,
            minor: version.minor_version,
        });
    }
    Ok(())
}

/// The metadata extension at the start of the frame's chain, if XLA asks for metadata.
///
/// # Safety
///
/// As for [`entry`].
unsafe fn metadata_request(frame: &ffi::CallFrame) -> Option<*mut ffi::MetadataExtension> {
    // SAFETY: NULL or an extension whose size is true (the caller).
    let base = unsafe { frame.extension_start.as_ref()? };
    (base.struct_size >= ffi::ExtensionBase::STRUCT_SIZE && base.kind == ExtensionType::METADATA)
        .then_some(frame.extension_start.cast())
}

/// Writes the handler's metadata where XLA asks.
///
/// # Safety
///
/// `extension` points to a metadata extension whose sizes are true, as XLA passes it.
unsafe fn write_metadata(extension: *mut ffi::MetadataExtension, traits: ffi::Traits) -> Result<(), FrameError> {
    // SAFETY: a metadata extension (the caller), read as far as its size says.
    let size = unsafe { (*extension).extension_base.struct_size };
    if size < ffi::MetadataExtension::STRUCT_SIZE {
        return Err(FrameError::StructSize {
            what: "XLA_FFI_Metadata_Extension",
            found: size,
            expected: ffi::MetadataExtension::STRUCT_SIZE,
        });
    }
    // SAFETY: the extension holds its `metadata` pointer (size checked); NULL or XLA's struct.
    let metadata = unsafe { (*extension).metadata };
    if metadata.is_null() {
        return Err(FrameError::Null("metadata"));
    }
    // SAFETY: XLA's metadata struct, whose size is true.
    let size = unsafe { (*metadata).struct_size };
    if size < ffi::Metadata::STRUCT_SIZE {
        return Err(FrameError::StructSize {
            what: "XLA_FFI_Metadata",
            found: size,
            expected: ffi::Metadata::STRUCT_SIZE,
        });
    }
    // SAFETY: XLA's struct, writable as far as its size says, which covers `traits`; the
    // fields are written through raw places (XLA may read the struct concurrently with
    // nothing, but no reference to its fields is made).
    unsafe {
        (*metadata).api_version = ffi::ApiVersion {
            struct_size: ffi::ApiVersion::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            major_version: ffi::API_VERSION.0,
            minor_version: ffi::API_VERSION.1,
        };
    }
    // SAFETY: as above.
    unsafe { (*metadata).traits = traits };
    if size >= core::mem::offset_of!(ffi::Metadata, state_type_id) + size_of::<ffi::TypeId>() {
        // SAFETY: as above, the size covering the state's type: a stateless handler's is 0.
        unsafe { (*metadata).state_type_id = ffi::TypeId { type_id: 0 } };
    }
    Ok(())
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

/// A panic's message, as `panic!` formats it.
fn panic_message(panic: &(dyn core::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    std::format!("the handler panicked: {what}")
}
