//! Handlers: a Rust type's `execute`, behind the C entry point XLA calls.

use super::call::{Call, Platform};
use super::error::{FrameError, HandlerError};
use super::ffi;
use super::prefix;

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
/// cannot be answered with an error: the call returns success and does nothing. A request for
/// metadata needs no table and is answered; one that cannot be (its structs NULL or too small)
/// then returns success with nothing written, which XLA reads as a handler of version 0.0.
///
/// # Safety
///
/// `frame` is NULL or points to a call frame as XLA passes it to a handler, valid for the call:
/// - every struct (the frame, the API table, the lists' structs, each buffer, each extension)
///   begins with its true `struct_size`, and that many bytes of it are readable (a metadata
///   extension's metadata struct, writable);
/// - every list holds as many values as its count says, and every buffer's `dims` as many as
///   its `rank`, each buffer's data as its extents and type say, valid for the call;
/// - two buffers share memory only as XLA's `input_output_aliases` makes them share it: an
///   argument and a result of the same type and extents over the same bytes; during the call,
///   nothing else reads or writes the buffers the handler writes.
pub unsafe extern "C" fn entry<H: Handler>(frame: *mut ffi::CallFrame) -> *mut ffi::Error {
    // SAFETY: NULL or the frame as XLA passes it (the caller), read as far as its size says.
    let Some(mut frame) = (unsafe { prefix::read(frame.cast_const()) }) else {
        return core::ptr::null_mut();
    };
    // A size that ends inside a pointer leaves part of it: that pointer is taken as NULL.
    let covers = |offset: usize| frame.struct_size >= offset + size_of::<usize>();
    if !covers(core::mem::offset_of!(ffi::CallFrame, extension_start)) {
        frame.extension_start = core::ptr::null_mut();
    }
    if !covers(core::mem::offset_of!(ffi::CallFrame, api)) {
        frame.api = core::ptr::null();
    }
    // SAFETY: as above.
    let metadata = unsafe { metadata_request(&frame) };
    // SAFETY: NULL or XLA's table (the caller), read as far as its size says.
    let api = unsafe { prefix::read(frame.api) }
        .filter(|api| api.struct_size >= ffi::Api::THROUGH_ERROR_CREATE && api.error_create.is_some());
    let result = match (metadata, &api) {
        // Metadata needs no table: XLA may ask without one.
        // SAFETY: as above.
        (Some(extension), _) => unsafe { write_metadata(extension, H::TRAITS) }.map_err(HandlerError::from),
        (None, None) => return core::ptr::null_mut(),
        (None, Some(api)) => match check_api(api) {
            Err(e) => Err(HandlerError::from(e)),
            Ok(()) => std::panic::catch_unwind(|| {
                // SAFETY: as above; `api` passed `check_api`.
                let call = unsafe { Call::new(&frame, api, H::PLATFORM) }?;
                H::execute(&call)
            })
            .unwrap_or_else(|panic| {
                Err(HandlerError::internal(std::format!(
                    "the handler panicked: {}",
                    crate::panic::message(panic)
                )))
            }),
        },
    };
    match (result, &api) {
        (Ok(()), _) | (Err(_), None) => core::ptr::null_mut(),
        // SAFETY: `api` has an `XLA_FFI_Error_Create` (filtered above).
        (Err(e), Some(api)) => unsafe { e.to_xla(api) },
    }
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
    // SAFETY: NULL or an extension whose size is true (the caller), read as far as it says.
    let base = unsafe { prefix::read(frame.extension_start.cast_const()) }?;
    (base.struct_size >= ffi::ExtensionBase::STRUCT_SIZE && base.kind == ffi::ExtensionType::METADATA)
        .then_some(frame.extension_start.cast())
}

/// Writes the handler's metadata where XLA asks.
///
/// # Safety
///
/// `extension` points to a metadata extension whose sizes are true, as XLA passes it.
unsafe fn write_metadata(extension: *mut ffi::MetadataExtension, traits: ffi::Traits) -> Result<(), FrameError> {
    // SAFETY: a metadata extension (the caller), read as far as its size says.
    let extension = unsafe { prefix::read(extension.cast_const()) }.ok_or(FrameError::Null("metadata extension"))?;
    let size = extension.extension_base.struct_size;
    if size < ffi::MetadataExtension::STRUCT_SIZE {
        return Err(FrameError::StructSize {
            what: "XLA_FFI_Metadata_Extension",
            found: size,
            expected: ffi::MetadataExtension::STRUCT_SIZE,
        });
    }
    // NULL or XLA's struct (size checked: the copy holds the pointer).
    let metadata = extension.metadata;
    if metadata.is_null() {
        return Err(FrameError::Null("metadata"));
    }
    // SAFETY: XLA's metadata struct, whose first field is its true size.
    let size = unsafe { metadata.cast::<usize>().read_unaligned() };
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
