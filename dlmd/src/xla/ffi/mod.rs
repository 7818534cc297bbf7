//! XLA's FFI C ABI (`xla/ffi/api/c_api.h`, API version 0.3): the structs XLA hands a handler,
//! and the entries of its API table a handler calls.
//!
//! Every struct crossing the boundary starts with its size, and XLA's newer versions only append
//! fields, so a handler reads a field only where the size the other side wrote covers it
//! (each struct's `STRUCT_SIZE` is the size this version defines: up to its last field). The C
//! enums are integer newtypes, as in [`dlpack`](crate::dlpack): a foreign frame can hold any
//! value there.

mod codes;

pub use codes::{ArgType, AttrType, DataType, ErrorCode, ExecutionStage, ExtensionType, RetType};
use core::ffi::{c_char, c_int, c_void};
use core::fmt;
use core::marker::{PhantomData, PhantomPinned};
use core::mem::{offset_of, size_of};

/// The API version this module defines (`XLA_FFI_API_MAJOR`, `XLA_FFI_API_MINOR`).
pub const API_VERSION: (c_int, c_int) = (0, 3);

/// `offsetof(T, field) + sizeof(field)`: the size `XLA_FFI_STRUCT_SIZE` gives a struct whose
/// last field is `field`.
macro_rules! size_through {
    ($t:ty, $field:ident: $ft:ty) => {
        offset_of!($t, $field) + size_of::<$ft>()
    };
}

/// An opaque C type: never built or read from Rust, only pointed to.
macro_rules! opaque {
    ($($(#[$meta:meta])* $name:ident;)*) => {$(
        $(#[$meta])*
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            _pinned: PhantomData<(*mut u8, PhantomPinned)>,
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    )*};
}

opaque! {
    /// An error XLA creates (`XLA_FFI_Error`, an `absl::Status`); whoever receives one owns it.
    Error;
    /// Per-call state: the stream, the device (`XLA_FFI_ExecutionContext`).
    ExecutionContext;
    /// XLA's internal API (`XLA_FFI_InternalApi`), never used here.
    InternalApi;
    /// An asynchronous result (`XLA_FFI_Future`), never used here.
    Future;
}

/// One link of a struct's extension chain (`XLA_FFI_Extension_Base`).
#[repr(C)]
#[derive(Debug)]
pub struct ExtensionBase {
    /// The size of the whole extension.
    pub struct_size: usize,
    /// Which extension this is.
    pub kind: ExtensionType,
    /// The next extension, or NULL.
    pub next: *mut ExtensionBase,
}

impl ExtensionBase {
    /// `XLA_FFI_Extension_Base_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, next: *mut ExtensionBase);
}

/// An API version (`XLA_FFI_Api_Version`).
#[repr(C)]
#[derive(Debug)]
pub struct ApiVersion {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// Incremented by changes that break the ABI.
    pub major_version: c_int,
    /// Incremented by additions.
    pub minor_version: c_int,
}

impl ApiVersion {
    /// `XLA_FFI_Api_Version_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, minor_version: c_int);
}

/// The arguments of `XLA_FFI_Error_Create`.
#[repr(C)]
#[derive(Debug)]
pub struct ErrorCreateArgs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The message, NUL-terminated; XLA copies it.
    pub message: *const c_char,
    /// The status code.
    pub errc: ErrorCode,
}

impl ErrorCreateArgs {
    /// `XLA_FFI_Error_Create_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, errc: ErrorCode);
}

/// The arguments of `XLA_FFI_Error_GetMessage`.
#[repr(C)]
#[derive(Debug)]
pub struct ErrorGetMessageArgs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The error.
    pub error: *mut Error,
    /// Out: its message, NUL-terminated, alive as long as the error.
    pub message: *const c_char,
}

impl ErrorGetMessageArgs {
    /// `XLA_FFI_Error_GetMessage_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, message: *const c_char);
}

/// The arguments of `XLA_FFI_Error_Destroy`.
#[repr(C)]
#[derive(Debug)]
pub struct ErrorDestroyArgs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The error, destroyed.
    pub error: *mut Error,
}

impl ErrorDestroyArgs {
    /// `XLA_FFI_Error_Destroy_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, error: *mut Error);
}

/// A dense array on the call's device (`XLA_FFI_Buffer`): row-major, `rank` extents.
#[repr(C)]
#[derive(Debug)]
pub struct Buffer {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The element type.
    pub dtype: DataType,
    /// The first element.
    pub data: *mut c_void,
    /// The number of extents.
    pub rank: i64,
    /// `rank` extents.
    pub dims: *mut i64,
}

impl Buffer {
    /// `XLA_FFI_Buffer_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, dims: *mut i64);
}

/// A string that need not end in NUL (`XLA_FFI_ByteSpan`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ByteSpan {
    /// The first byte.
    pub ptr: *const c_char,
    /// The number of bytes.
    pub len: usize,
}

/// A scalar attribute (`XLA_FFI_Scalar`).
#[repr(C)]
#[derive(Debug)]
pub struct Scalar {
    /// Its type.
    pub dtype: DataType,
    /// Its value.
    pub value: *mut c_void,
}

/// An array attribute (`XLA_FFI_Array`).
#[repr(C)]
#[derive(Debug)]
pub struct Array {
    /// The element type.
    pub dtype: DataType,
    /// The number of elements.
    pub size: usize,
    /// The first element.
    pub data: *mut c_void,
}

/// A call's arguments (`XLA_FFI_Args`).
#[repr(C)]
#[derive(Debug)]
pub struct Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The number of arguments.
    pub size: i64,
    /// `size` kinds.
    pub types: *mut ArgType,
    /// `size` arguments, each pointing to what its kind says.
    pub args: *mut *mut c_void,
}

impl Args {
    /// `XLA_FFI_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, args: *mut *mut c_void);
}

/// A call's results (`XLA_FFI_Rets`).
#[repr(C)]
#[derive(Debug)]
pub struct Rets {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The number of results.
    pub size: i64,
    /// `size` kinds.
    pub types: *mut RetType,
    /// `size` results, each pointing to what its kind says.
    pub rets: *mut *mut c_void,
}

impl Rets {
    /// `XLA_FFI_Rets_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, rets: *mut *mut c_void);
}

/// A call's attributes, sorted by name (`XLA_FFI_Attrs`).
#[repr(C)]
#[derive(Debug)]
pub struct Attrs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The number of attributes.
    pub size: i64,
    /// `size` kinds.
    pub types: *mut AttrType,
    /// `size` names.
    pub names: *mut *mut ByteSpan,
    /// `size` attributes, each pointing to what its kind says.
    pub attrs: *mut *mut c_void,
}

impl Attrs {
    /// `XLA_FFI_Attrs_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, attrs: *mut *mut c_void);
}

/// What XLA passes a handler (`XLA_FFI_CallFrame`).
#[repr(C)]
#[derive(Debug)]
pub struct CallFrame {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL: a [`MetadataExtension`] asks for the handler's metadata.
    pub extension_start: *mut ExtensionBase,
    /// XLA's API table.
    pub api: *const Api,
    /// The execution context.
    pub ctx: *mut ExecutionContext,
    /// The stage this call is for.
    pub stage: ExecutionStage,
    /// The arguments.
    pub args: Args,
    /// The results.
    pub rets: Rets,
    /// The attributes.
    pub attrs: Attrs,
    /// Out: a future for an asynchronous handler (past `STRUCT_SIZE`: read only where the
    /// frame's size covers it).
    pub future: *mut Future,
}

impl CallFrame {
    /// `XLA_FFI_CallFrame_STRUCT_SIZE` (through `attrs`).
    pub const STRUCT_SIZE: usize = size_through!(Self, attrs: Attrs);
}

/// A handler: XLA calls it with a frame and owns the error it returns (NULL for success).
pub type Handler = unsafe extern "C" fn(call_frame: *mut CallFrame) -> *mut Error;

/// Traits of a handler, a bit set (`XLA_FFI_Handler_Traits`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Traits(pub u32);

impl Traits {
    /// None.
    pub const NONE: Self = Self(0);
    /// Every call launches the same device work (for equal attributes), so XLA may capture it
    /// into a command buffer (a CUDA graph) and replay it
    /// (`XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE`).
    pub const COMMAND_BUFFER_COMPATIBLE: Self = Self(1);
}

/// A user type's id (`XLA_FFI_TypeId`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeId {
    /// The id; 0 is `XLA_FFI_UNKNOWN_TYPE_ID`.
    pub type_id: i64,
}

/// A handler's metadata, written when XLA asks (`XLA_FFI_Metadata`).
#[repr(C)]
#[derive(Debug)]
pub struct Metadata {
    /// This struct's size, written by XLA.
    pub struct_size: usize,
    /// The API version the handler was built against.
    pub api_version: ApiVersion,
    /// The handler's traits.
    pub traits: Traits,
    /// The type of a stateful handler's state; 0 otherwise (past `STRUCT_SIZE`).
    pub state_type_id: TypeId,
}

impl Metadata {
    /// `XLA_FFI_Metadata_STRUCT_SIZE` (through `traits`).
    pub const STRUCT_SIZE: usize = size_through!(Self, traits: Traits);
}

/// XLA's request for a handler's metadata, in a frame's extension chain
/// (`XLA_FFI_Metadata_Extension`).
#[repr(C)]
#[derive(Debug)]
pub struct MetadataExtension {
    /// The link, of kind [`ExtensionType::METADATA`].
    pub extension_base: ExtensionBase,
    /// Where the handler writes.
    pub metadata: *mut Metadata,
}

impl MetadataExtension {
    /// `XLA_FFI_Metadata_Extension_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, metadata: *mut Metadata);
}

/// The arguments of `XLA_FFI_Stream_Get`.
#[repr(C)]
#[derive(Debug)]
pub struct StreamGetArgs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The call's context.
    pub ctx: *mut ExecutionContext,
    /// Out: the platform's stream (for CUDA a `CUstream`).
    pub stream: *mut c_void,
}

impl StreamGetArgs {
    /// `XLA_FFI_Stream_Get_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, stream: *mut c_void);
}

/// The arguments of `XLA_FFI_DeviceOrdinal_Get`.
#[repr(C)]
#[derive(Debug)]
pub struct DeviceOrdinalGetArgs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The call's context.
    pub ctx: *mut ExecutionContext,
    /// Out: the device's ordinal.
    pub device_ordinal: i32,
}

impl DeviceOrdinalGetArgs {
    /// `XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE`.
    pub const STRUCT_SIZE: usize = size_through!(Self, device_ordinal: i32);
}

/// An entry of the API table this module does not call: its place only.
pub type Entry = Option<unsafe extern "C" fn()>;

/// XLA's API table (`XLA_FFI_Api`), as far as version 0.3 defines it.
#[repr(C)]
#[allow(missing_docs)] // The entries are XLA's functions of the same names.
pub struct Api {
    /// The table's size: entries past it are not there.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut ExtensionBase,
    /// The version XLA implements.
    pub api_version: ApiVersion,
    /// XLA's internal API, never used here.
    pub internal_api: *const InternalApi,
    pub error_create: Option<unsafe extern "C" fn(args: *mut ErrorCreateArgs) -> *mut Error>,
    pub error_get_message: Option<unsafe extern "C" fn(args: *mut ErrorGetMessageArgs)>,
    pub error_destroy: Option<unsafe extern "C" fn(args: *mut ErrorDestroyArgs)>,
    pub handler_register: Entry,
    pub stream_get: Option<unsafe extern "C" fn(args: *mut StreamGetArgs) -> *mut Error>,
    pub type_register: Entry,
    pub execution_context_get: Entry,
    pub state_set: Entry,
    pub state_get: Entry,
    pub device_memory_allocate: Entry,
    pub device_memory_free: Entry,
    pub thread_pool_schedule: Entry,
    pub thread_pool_num_threads: Entry,
    pub future_create: Entry,
    pub future_set_available: Entry,
    pub future_set_error: Entry,
    pub run_id_get: Entry,
    pub device_ordinal_get: Option<unsafe extern "C" fn(args: *mut DeviceOrdinalGetArgs) -> *mut Error>,
}

/// The type of an `Api` entry that creates errors.
type ErrorCreate = Option<unsafe extern "C" fn(args: *mut ErrorCreateArgs) -> *mut Error>;

impl Api {
    /// The size of a table through `XLA_FFI_Error_Create`, the least a handler needs to report.
    pub const THROUGH_ERROR_CREATE: usize = size_through!(Self, error_create: ErrorCreate);
    /// The size of a table through `XLA_FFI_Error_Destroy`.
    pub const THROUGH_ERROR_DESTROY: usize =
        size_through!(Self, error_destroy: Option<unsafe extern "C" fn(args: *mut ErrorDestroyArgs)>);
    /// The size of a table through `XLA_FFI_Stream_Get`.
    pub const THROUGH_STREAM_GET: usize =
        size_through!(Self, stream_get: Option<unsafe extern "C" fn(args: *mut StreamGetArgs) -> *mut Error>);
    /// `XLA_FFI_Api_STRUCT_SIZE` of version 0.3 (through `XLA_FFI_DeviceOrdinal_Get`).
    pub const STRUCT_SIZE: usize = size_of::<Self>();
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("struct_size", &self.struct_size)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes `c_api.h` gives on a 64-bit target.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn struct_sizes_are_the_headers() {
        assert_eq!(ExtensionBase::STRUCT_SIZE, 24);
        assert_eq!(ApiVersion::STRUCT_SIZE, 24);
        assert_eq!(ErrorCreateArgs::STRUCT_SIZE, 28);
        assert_eq!(Buffer::STRUCT_SIZE, 48);
        assert_eq!(Args::STRUCT_SIZE, 40);
        assert_eq!(Attrs::STRUCT_SIZE, 48);
        assert_eq!(offset_of!(CallFrame, args), 40);
        assert_eq!(CallFrame::STRUCT_SIZE, 40 + 40 + 40 + 48);
        assert_eq!(Metadata::STRUCT_SIZE, 36);
        assert_eq!(MetadataExtension::STRUCT_SIZE, 32);
        assert_eq!(StreamGetArgs::STRUCT_SIZE, 32);
        assert_eq!(DeviceOrdinalGetArgs::STRUCT_SIZE, 28);
        assert_eq!(Api::THROUGH_ERROR_CREATE, 56);
        assert_eq!(Api::THROUGH_ERROR_DESTROY, 72);
        assert_eq!(ErrorGetMessageArgs::STRUCT_SIZE, 32);
        assert_eq!(ErrorDestroyArgs::STRUCT_SIZE, 24);
        assert_eq!(Api::THROUGH_STREAM_GET, 88);
        assert_eq!(Api::STRUCT_SIZE, 48 + 18 * 8);
    }
}
