//! XLA FFI handlers against a runtime written here: XLA's API table (errors, stream, device
//! ordinal) and call frames, well formed and malformed, as `c_api.h` (version 0.3) lays them out.

use dlmd::xla::ffi::{self, ArgType, AttrType, DataType, ErrorCode, ExecutionStage, RetType};
use dlmd::xla::{Call, Handler, HandlerError, Platform, entry};
use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr::{null, null_mut};

/// An error as the runtime here makes it.
struct FakeError {
    code: ErrorCode,
    message: CString,
}

unsafe extern "C" fn error_create(args: *mut ffi::ErrorCreateArgs) -> *mut ffi::Error {
    // SAFETY: the handler passes its arguments, with a NUL-terminated message.
    let args = unsafe { &*args };
    assert!(args.struct_size >= ffi::ErrorCreateArgs::STRUCT_SIZE);
    // SAFETY: as above.
    let message = unsafe { CStr::from_ptr(args.message) }.to_owned();
    Box::into_raw(Box::new(FakeError {
        code: args.errc,
        message,
    }))
    .cast()
}

unsafe extern "C" fn error_get_message(args: *mut ffi::ErrorGetMessageArgs) {
    // SAFETY: the handler passes its arguments.
    let args = unsafe { &mut *args };
    // SAFETY: an error made by `error_create` or `failing_stream`, alive.
    let error = unsafe { &*args.error.cast::<FakeError>() };
    args.message = error.message.as_ptr();
}

unsafe extern "C" fn error_destroy(args: *mut ffi::ErrorDestroyArgs) {
    // SAFETY: the handler passes its arguments.
    let error = unsafe { (*args).error };
    // SAFETY: an error made by `error_create` or `failing_stream`, destroyed once.
    drop(unsafe { Box::from_raw(error.cast::<FakeError>()) });
}

unsafe extern "C" fn failing_stream(_: *mut ffi::StreamGetArgs) -> *mut ffi::Error {
    Box::into_raw(Box::new(FakeError {
        code: ErrorCode::UNIMPLEMENTED,
        message: c"no stream on this platform".to_owned(),
    }))
    .cast()
}

unsafe extern "C" fn device_ordinal(args: *mut ffi::DeviceOrdinalGetArgs) -> *mut ffi::Error {
    // SAFETY: the handler passes its arguments.
    unsafe { (*args).device_ordinal = 3 };
    null_mut()
}

fn api() -> ffi::Api {
    ffi::Api {
        struct_size: ffi::Api::STRUCT_SIZE,
        extension_start: null_mut(),
        api_version: ffi::ApiVersion {
            struct_size: ffi::ApiVersion::STRUCT_SIZE,
            extension_start: null_mut(),
            major_version: 0,
            minor_version: 3,
        },
        internal_api: null(),
        error_create: Some(error_create),
        error_get_message: Some(error_get_message),
        error_destroy: Some(error_destroy),
        handler_register: None,
        stream_get: Some(failing_stream),
        type_register: None,
        execution_context_get: None,
        state_set: None,
        state_get: None,
        device_memory_allocate: None,
        device_memory_free: None,
        thread_pool_schedule: None,
        thread_pool_num_threads: None,
        future_create: None,
        future_set_available: None,
        future_set_error: None,
        run_id_get: None,
        device_ordinal_get: Some(device_ordinal),
    }
}

/// A buffer: its struct, extents and data, kept alive together.
struct Buf {
    raw: ffi::Buffer,
    _dims: Vec<i64>,
}

fn buffer(dtype: DataType, data: *mut c_void, dims: &[i64]) -> Box<Buf> {
    let mut dims = dims.to_vec();
    let mut b = Box::new(Buf {
        raw: ffi::Buffer {
            struct_size: ffi::Buffer::STRUCT_SIZE,
            extension_start: null_mut(),
            dtype,
            data,
            rank: dims.len() as i64,
            dims: dims.as_mut_ptr(),
        },
        _dims: Vec::new(),
    });
    b._dims = dims;
    b
}

/// A frame over buffers and attributes, each list kept alive beside it.
struct Frame {
    raw: ffi::CallFrame,
    _lists: (Vec<ArgType>, Vec<*mut c_void>, Vec<RetType>, Vec<*mut c_void>),
    _attrs: AttrLists,
}

/// The attribute lists of a frame: kinds, name pointers, values, names.
type AttrLists = (
    Vec<AttrType>,
    Vec<*mut ffi::ByteSpan>,
    Vec<*mut c_void>,
    Vec<Box<ffi::ByteSpan>>,
);

/// An attribute: its name and a pointer to its value (a `Scalar`, `ByteSpan` or `Array`).
type Attr = (&'static str, AttrType, *mut c_void);

fn frame(api: &ffi::Api, args: &mut [Box<Buf>], rets: &mut [Box<Buf>], attrs: &[Attr]) -> Frame {
    let mut arg_types = vec![ArgType::BUFFER; args.len()];
    let mut arg_ptrs: Vec<*mut c_void> = args.iter_mut().map(|b| (&raw mut b.raw).cast()).collect();
    let mut ret_types = vec![RetType::BUFFER; rets.len()];
    let mut ret_ptrs: Vec<*mut c_void> = rets.iter_mut().map(|b| (&raw mut b.raw).cast()).collect();
    let mut names: Vec<Box<ffi::ByteSpan>> = attrs
        .iter()
        .map(|(n, _, _)| {
            Box::new(ffi::ByteSpan {
                ptr: n.as_ptr().cast::<c_char>(),
                len: n.len(),
            })
        })
        .collect();
    let mut attr_types: Vec<AttrType> = attrs.iter().map(|a| a.1).collect();
    let mut name_ptrs: Vec<*mut ffi::ByteSpan> = names.iter_mut().map(|n| &raw mut **n).collect();
    let mut values: Vec<*mut c_void> = attrs.iter().map(|a| a.2).collect();
    let raw = ffi::CallFrame {
        struct_size: ffi::CallFrame::STRUCT_SIZE,
        extension_start: null_mut(),
        api,
        ctx: null_mut(),
        stage: ExecutionStage::EXECUTE,
        args: ffi::Args {
            struct_size: ffi::Args::STRUCT_SIZE,
            extension_start: null_mut(),
            size: args.len() as i64,
            types: arg_types.as_mut_ptr(),
            args: arg_ptrs.as_mut_ptr(),
        },
        rets: ffi::Rets {
            struct_size: ffi::Rets::STRUCT_SIZE,
            extension_start: null_mut(),
            size: rets.len() as i64,
            types: ret_types.as_mut_ptr(),
            rets: ret_ptrs.as_mut_ptr(),
        },
        attrs: ffi::Attrs {
            struct_size: ffi::Attrs::STRUCT_SIZE,
            extension_start: null_mut(),
            size: attrs.len() as i64,
            types: attr_types.as_mut_ptr(),
            names: name_ptrs.as_mut_ptr(),
            attrs: values.as_mut_ptr(),
        },
        future: null_mut(),
    };
    Frame {
        raw,
        _lists: (arg_types, arg_ptrs, ret_types, ret_ptrs),
        _attrs: (attr_types, name_ptrs, values, names),
    }
}

/// Calls `H` with `frame`: `None` for success, the error's code and message otherwise.
fn call<H: Handler>(frame: &mut ffi::CallFrame) -> Option<(ErrorCode, String)> {
    // SAFETY: a frame laid out as XLA lays it out, its lists and buffers alive.
    let error = unsafe { entry::<H>(frame) };
    (!error.is_null()).then(|| {
        // SAFETY: an error `error_create` made, owned here.
        let e = unsafe { Box::from_raw(error.cast::<FakeError>()) };
        (e.code, e.message.to_string_lossy().into_owned())
    })
}

/// `y = x · a + b` over one dimension of `f32`, with `a` an `f64` and `b` an `i32` attribute.
struct Axpb;

impl Handler for Axpb {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let a: f64 = call.attr("a")?;
        let b: i32 = call.attr("b")?;
        let x = call.arg(0)?;
        let mut y = call.ret(0)?;
        let x = x.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
        let y = y.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
        if x.extents() != y.extents() {
            return Err(HandlerError::invalid_argument("x and y differ"));
        }
        for i in 0..x.extent(0) {
            y.store([i], (f64::from(x.load([i])) * a) as f32 + b as f32);
        }
        Ok(())
    }
}

fn scalar<T>(dtype: DataType, value: *mut T) -> Box<ffi::Scalar> {
    Box::new(ffi::Scalar {
        dtype,
        value: value.cast(),
    })
}

#[test]
fn a_host_handler_reads_its_arguments_and_attributes_and_writes_its_result() {
    let api = api();
    let mut x = vec![1.0f32, 2.0, 3.0];
    let mut y = vec![0.0f32; 3];
    let (mut a, mut b) = (2.0f64, 10i32);
    let (mut sa, mut sb) = (scalar(DataType::F64, &raw mut a), scalar(DataType::S32, &raw mut b));
    let attrs = [
        ("a", AttrType::SCALAR, (&raw mut *sa).cast()),
        ("b", AttrType::SCALAR, (&raw mut *sb).cast()),
    ];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[3])];
    let mut rets = [buffer(DataType::F32, y.as_mut_ptr().cast(), &[3])];
    let mut f = frame(&api, &mut args, &mut rets, &attrs);
    assert_eq!(call::<Axpb>(&mut f.raw), None);
    assert_eq!(y, [12.0, 14.0, 16.0]);
}

#[test]
fn a_result_sharing_an_argument_s_memory_is_written_in_place() {
    let api = api();
    let mut x = vec![1.0f32, 2.0];
    let (mut a, mut b) = (3.0f64, 1i32);
    let (mut sa, mut sb) = (scalar(DataType::F64, &raw mut a), scalar(DataType::S32, &raw mut b));
    let attrs = [
        ("a", AttrType::SCALAR, (&raw mut *sa).cast()),
        ("b", AttrType::SCALAR, (&raw mut *sb).cast()),
    ];
    let p = x.as_mut_ptr().cast();
    let mut args = [buffer(DataType::F32, p, &[2])];
    let mut rets = [buffer(DataType::F32, p, &[2])];
    let mut f = frame(&api, &mut args, &mut rets, &attrs);
    assert_eq!(call::<Axpb>(&mut f.raw), None);
    assert_eq!(x, [4.0, 7.0]);
}

/// `y = 2 · x` over `f32` buffers of rank 8 or 9, once the argument's strides are found
/// row-major, as XLA lays buffers out.
struct Twice;

impl Twice {
    fn twice<const R: usize>(x: &dlmd::xla::Buffer<'_>, y: &mut dlmd::xla::Buffer<'_>) -> Result<(), HandlerError> {
        let x = x.view::<HostMdspanAliased<'_, f32, Dims<R>>>()?;
        let y = y.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<R>>>()?;
        if x.extents() != y.extents() {
            return Err(HandlerError::invalid_argument("x and y differ"));
        }
        y.update(|i, _| 2.0 * x.load(i));
        Ok(())
    }
}

impl Handler for Twice {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let x = call.arg(0)?;
        let mut y = call.ret(0)?;
        let t = x.dl_tensor();
        let shape = x.shape();
        // SAFETY: a buffer's tensor has `ndim` strides, alive with it.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) };
        let mut step = 1;
        for d in (0..shape.len()).rev() {
            if strides[d] != step {
                return Err(HandlerError::internal(format!(
                    "strides {strides:?} of extents {shape:?}"
                )));
            }
            step *= shape[d];
        }
        match x.shape().len() {
            8 => Self::twice::<8>(&x, &mut y),
            9 => Self::twice::<9>(&x, &mut y),
            r => Err(HandlerError::invalid_argument(format!("rank {r}"))),
        }
    }
}

#[test]
fn buffers_of_ranks_8_and_9_are_laid_out_row_major() {
    let api = api();
    for dims in [&[2i64, 1, 3, 1, 2, 1, 1, 2][..], &[1, 2, 1, 3, 1, 2, 1, 1, 2]] {
        let n = dims.iter().product::<i64>() as usize;
        let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut y = vec![0.0f32; n];
        let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), dims)];
        let mut rets = [buffer(DataType::F32, y.as_mut_ptr().cast(), dims)];
        let mut f = frame(&api, &mut args, &mut rets, &[]);
        assert_eq!(call::<Twice>(&mut f.raw), None, "rank {}", dims.len());
        assert!(
            y.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32),
            "rank {}: {y:?}",
            dims.len()
        );
    }
}

/// Runs `Axpb` on a frame `spoil` changes, and returns its error.
fn refused(spoil: impl FnOnce(&mut ffi::CallFrame, &mut ffi::Buffer)) -> (ErrorCode, String) {
    let api = api();
    let mut x = vec![1.0f32, 2.0];
    let mut y = vec![0.0f32; 2];
    let (mut a, mut b) = (1.0f64, 1i32);
    let (mut sa, mut sb) = (scalar(DataType::F64, &raw mut a), scalar(DataType::S32, &raw mut b));
    let attrs = [
        ("a", AttrType::SCALAR, (&raw mut *sa).cast()),
        ("b", AttrType::SCALAR, (&raw mut *sb).cast()),
    ];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[2])];
    let mut rets = [buffer(DataType::F32, y.as_mut_ptr().cast(), &[2])];
    let mut f = frame(&api, &mut args, &mut rets, &attrs);
    // The argument's buffer, through the pointer the frame holds.
    // SAFETY: the frame's one argument slot.
    let slot = unsafe { *f.raw.args.args };
    // SAFETY: the frame's one argument, alive in `args`.
    let x_buffer = unsafe { &mut *slot.cast::<ffi::Buffer>() };
    spoil(&mut f.raw, x_buffer);
    let error = call::<Axpb>(&mut f.raw).expect("refused");
    assert_eq!(y, [0.0, 0.0], "nothing is written");
    error
}

#[track_caller]
fn assert_refused(error: (ErrorCode, String), code: ErrorCode, words: &str) {
    assert_eq!(error.0, code, "{}", error.1);
    assert!(error.1.contains(words), "{:?} does not say {words:?}", error.1);
}

#[test]
fn malformed_frames_are_refused_with_named_errors() {
    use ErrorCode as C;
    assert_refused(
        refused(|f, _| f.struct_size = 24),
        C::INVALID_ARGUMENT,
        "XLA_FFI_CallFrame is 24 bytes",
    );
    assert_refused(
        refused(|f, _| f.args.struct_size = 8),
        C::INVALID_ARGUMENT,
        "XLA_FFI_Args",
    );
    assert_refused(
        refused(|f, _| f.stage = ExecutionStage::PREPARE),
        C::INVALID_ARGUMENT,
        "PREPARE",
    );
    assert_refused(
        refused(|f, _| f.stage = ExecutionStage(9)),
        C::INVALID_ARGUMENT,
        "ExecutionStage(9)",
    );
    assert_refused(
        refused(|f, _| f.args.size = -1),
        C::INVALID_ARGUMENT,
        "holds -1 arguments",
    );
    assert_refused(refused(|f, _| f.args.size = i64::MAX), C::INVALID_ARGUMENT, "arguments");
    assert_refused(
        refused(|f, _| f.args.types = null_mut()),
        C::INVALID_ARGUMENT,
        "argument list is NULL",
    );
    assert_refused(
        refused(|f, _| f.args.size = 0),
        C::INVALID_ARGUMENT,
        "takes argument 0, and the call has 0",
    );
    assert_refused(
        refused(|f, _| f.rets.rets = null_mut()),
        C::INVALID_ARGUMENT,
        "result list is NULL",
    );
    assert_refused(refused(|f, _| f.attrs.size = -3), C::INVALID_ARGUMENT, "attributes");
    assert_refused(
        refused(|f, _| f.attrs.size = 1),
        C::INVALID_ARGUMENT,
        "no attribute `b`",
    );
    assert_refused(
        refused(|f, _| f.attrs.names = null_mut()),
        C::INVALID_ARGUMENT,
        "NULL list",
    );
    assert_refused(
        refused(|f, _| {
            // SAFETY: the frame's second kind.
            let kind = unsafe { f.attrs.types.add(1) };
            // SAFETY: as above.
            unsafe { *kind = AttrType::STRING }
        }),
        C::INVALID_ARGUMENT,
        "attribute `b` is a string, and the handler takes a scalar of S32",
    );
    assert_refused(
        refused(|f, _| {
            // SAFETY: the frame's one kind.
            unsafe { *f.args.types = ArgType(7) }
        }),
        C::INVALID_ARGUMENT,
        "argument 0 is of XLA kind 7",
    );
}

#[test]
fn malformed_buffers_are_refused_with_named_errors() {
    use ErrorCode as C;
    assert_refused(
        refused(|_, b| b.dtype = DataType::S32),
        C::INVALID_ARGUMENT,
        "argument 0",
    );
    assert_refused(
        refused(|_, b| b.dtype = DataType::S4),
        C::INVALID_ARGUMENT,
        "S4, which has no DLPack",
    );
    assert_refused(
        refused(|_, b| b.dtype = DataType(77)),
        C::INVALID_ARGUMENT,
        "DataType(77)",
    );
    assert_refused(refused(|_, b| b.rank = 0), C::INVALID_ARGUMENT, "argument 0");
    assert_refused(
        refused(|_, b| b.rank = -1),
        C::INVALID_ARGUMENT,
        "argument 0 has rank -1",
    );
    assert_refused(
        refused(|_, b| b.rank = 1 << 40),
        C::INVALID_ARGUMENT,
        "rank 1099511627776",
    );
    assert_refused(
        refused(|_, b| b.dims = null_mut()),
        C::INVALID_ARGUMENT,
        "dims are NULL",
    );
    assert_refused(
        refused(|_, b| b.struct_size = 16),
        C::INVALID_ARGUMENT,
        "XLA_FFI_Buffer is smaller",
    );
    assert_refused(
        refused(|_, b| {
            // SAFETY: the buffer's one extent.
            unsafe { *b.dims = -2 }
        }),
        C::INVALID_ARGUMENT,
        "argument 0",
    );
    assert_refused(
        refused(|f, _| {
            // SAFETY: the frame's one argument slot.
            unsafe { *f.args.args = null_mut() };
        }),
        C::INVALID_ARGUMENT,
        "argument 0: the buffer is NULL",
    );
    assert_refused(refused(|_, b| b.data = null_mut()), C::INVALID_ARGUMENT, "argument 0");
}

#[test]
fn a_table_of_another_major_version_or_too_small_is_refused() {
    let mut api = api();
    api.api_version.major_version = 1;
    let mut f = frame(&api, &mut [], &mut [], &[]);
    assert_refused(
        call::<Axpb>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "version 1.3",
    );
    // A table that cannot make errors: nothing is done, and nothing can be reported.
    let mut api = self::api();
    api.struct_size = ffi::Api::THROUGH_ERROR_CREATE - 8;
    let mut f = frame(&api, &mut [], &mut [], &[]);
    assert_eq!(call::<Axpb>(&mut f.raw), None);
    f.raw.api = null();
    assert_eq!(call::<Axpb>(&mut f.raw), None);
    // SAFETY: NULL is a frame `entry` takes.
    assert!(unsafe { entry::<Axpb>(null_mut()) }.is_null());
}

/// Writes its argument.
struct WritesArgument;

impl Handler for WritesArgument {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let mut x = call.arg(0)?;
        x.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?.store([0], 1.0);
        Ok(())
    }
}

/// Panics.
struct Panics;

impl Handler for Panics {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        panic!("{} arguments is too many", call.arg_count());
    }
}

#[test]
fn arguments_are_read_only_and_a_panic_is_an_internal_error() {
    let api = api();
    let mut x = vec![0.0f32; 2];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[2])];
    let mut f = frame(&api, &mut args, &mut [], &[]);
    assert_refused(
        call::<WritesArgument>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "read-only",
    );
    assert_eq!(x, [0.0, 0.0]);
    let mut f = frame(&api, &mut args, &mut [], &[]);
    assert_refused(
        call::<Panics>(&mut f.raw).unwrap(),
        ErrorCode::INTERNAL,
        "1 arguments is too many",
    );
}

/// Reads every kind of attribute, and the stream a host call does not have.
struct Attributes;

impl Handler for Attributes {
    const PLATFORM: Platform = Platform::Host;
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let names: Vec<&str> = call.attr_names().collect();
        let flag: bool = call.attr("flag")?;
        let name: &str = call.attr("name")?;
        let sizes: &[i64] = call.attr("sizes")?;
        if names != ["flag", "name", "sizes"] || !flag || name != "axpb" || sizes != [2, 3] {
            return Err(HandlerError::internal(format!("{names:?} {flag} {name} {sizes:?}")));
        }
        assert_eq!(call.device(), dlmd::dlpack::DLDevice::CPU);
        // The wrong type for each.
        let e = call.attr::<i64>("flag").unwrap_err().to_string();
        assert!(
            e.contains("attribute `flag` is a scalar of PRED, and the handler takes a scalar of S64"),
            "{e}"
        );
        let e = call.attr::<&[i32]>("sizes").unwrap_err().to_string();
        assert!(
            e.contains("an array of S64, and the handler takes an array of S32"),
            "{e}"
        );
        Err(HandlerError::new(ErrorCode::OK, "an error is never OK"))
    }
}

#[test]
fn attributes_are_read_as_their_types_and_nothing_else() {
    let api = api();
    let mut flag = 1u8;
    let pflag = &raw mut flag;
    let mut sflag = scalar(DataType::PRED, pflag);
    let text = "axpb";
    let mut sname = Box::new(ffi::ByteSpan {
        ptr: text.as_ptr().cast(),
        len: text.len(),
    });
    let mut sizes = [2i64, 3];
    let mut ssizes = Box::new(ffi::Array {
        dtype: DataType::S64,
        size: 2,
        data: sizes.as_mut_ptr().cast(),
    });
    let attrs = [
        ("flag", AttrType::SCALAR, (&raw mut *sflag).cast()),
        ("name", AttrType::STRING, (&raw mut *sname).cast()),
        ("sizes", AttrType::ARRAY, (&raw mut *ssizes).cast()),
    ];
    let mut f = frame(&api, &mut [], &mut [], &attrs);
    assert_refused(
        call::<Attributes>(&mut f.raw).unwrap(),
        ErrorCode::UNKNOWN,
        "an error is never OK",
    );
    // A PRED that is not 0 or 1 is not a `bool`.
    // SAFETY: the byte the attribute points to, written between calls.
    unsafe { *pflag = 2 };
    let e = call::<Attributes>(&mut f.raw).unwrap();
    assert_refused(e, ErrorCode::INVALID_ARGUMENT, "a PRED scalar whose byte is 2");
}

/// A metadata struct of this version, its fields not what a handler writes.
fn blank_metadata() -> ffi::Metadata {
    ffi::Metadata {
        struct_size: std::mem::size_of::<ffi::Metadata>(),
        api_version: ffi::ApiVersion {
            struct_size: 0,
            extension_start: null_mut(),
            major_version: -1,
            minor_version: -1,
        },
        traits: ffi::Traits(0xdead),
        state_type_id: ffi::TypeId { type_id: 7 },
    }
}

/// XLA's request for the metadata at `metadata`.
fn metadata_request(metadata: *mut ffi::Metadata) -> ffi::MetadataExtension {
    ffi::MetadataExtension {
        extension_base: ffi::ExtensionBase {
            struct_size: ffi::MetadataExtension::STRUCT_SIZE,
            kind: ffi::ExtensionType::METADATA,
            next: null_mut(),
        },
        metadata,
    }
}

#[test]
fn metadata_is_written_where_xla_asks_for_it() {
    let api = api();
    let mut metadata = blank_metadata();
    let mut extension = metadata_request(&raw mut metadata);
    let pext = &raw mut extension;
    let pmeta = extension.metadata;
    let mut f = frame(&api, &mut [], &mut [], &[]);
    f.raw.extension_start = pext.cast();
    assert_eq!(call::<Attributes>(&mut f.raw), None);
    // SAFETY: the struct the handler wrote, read after the call.
    let written = unsafe { &*pmeta };
    assert_eq!(
        (written.api_version.major_version, written.api_version.minor_version),
        (0, 3)
    );
    assert_eq!(written.api_version.struct_size, ffi::ApiVersion::STRUCT_SIZE);
    assert_eq!(written.traits, ffi::Traits::COMMAND_BUFFER_COMPATIBLE);
    assert_eq!(written.state_type_id.type_id, 0);
    // A metadata struct smaller than 0.3's is refused; so is a NULL one.
    // SAFETY: the structs, changed between calls through the pointers the frame holds.
    unsafe { (*pmeta).struct_size = 16 };
    assert_refused(
        call::<Axpb>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "XLA_FFI_Metadata is 16",
    );
    // SAFETY: as above.
    unsafe { (*pext).metadata = null_mut() };
    assert_refused(
        call::<Axpb>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "metadata is NULL",
    );
}

/// A CUDA handler's device is XLA's ordinal; a host call has no stream.
struct DeviceOf;

impl Handler for DeviceOf {
    const PLATFORM: Platform = Platform::Cuda;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let device = call.device();
        if device.device_type != dlmd::dlpack::DLDeviceType::CUDA || device.device_id != 3 {
            return Err(HandlerError::internal(format!("{device:?}")));
        }
        Err(call.stream().unwrap_err().into())
    }
}

#[test]
fn a_cuda_call_is_on_xla_s_device_and_stream() {
    let mut api = api();
    let mut f = frame(&api, &mut [], &mut [], &[]);
    assert_refused(
        call::<DeviceOf>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "no stream on this platform",
    );
    // A table without `XLA_FFI_DeviceOrdinal_Get` (older than 0.3) has no device to give.
    api.struct_size = ffi::Api::STRUCT_SIZE - 8;
    f.raw.api = &api;
    assert_refused(
        call::<DeviceOf>(&mut f.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "no device ordinal",
    );
}

/// `src`'s first `len` bytes in memory of exactly that size (8-byte aligned, rounded up to
/// whole words), its `struct_size` (the first word) `len`: a struct of an older, shorter version.
fn shortened<T>(src: &T, len: usize) -> Vec<u64> {
    let mut words = vec![0u64; len.div_ceil(8)];
    // SAFETY: `len` bytes of `src` (at most its size) into `words`, which holds at least `len`.
    unsafe { std::ptr::copy_nonoverlapping((src as *const T).cast::<u8>(), words.as_mut_ptr().cast::<u8>(), len) };
    words[0] = len as u64;
    words
}

#[test]
fn structs_of_older_versions_are_read_as_far_as_their_sizes_say() {
    let api = api();
    let mut x = vec![1.0f32, 2.0];
    let mut y = vec![0.0f32; 2];
    let (mut a, mut b) = (2.0f64, 1i32);
    let (mut sa, mut sb) = (scalar(DataType::F64, &raw mut a), scalar(DataType::S32, &raw mut b));
    let attrs = [
        ("a", AttrType::SCALAR, (&raw mut *sa).cast()),
        ("b", AttrType::SCALAR, (&raw mut *sb).cast()),
    ];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[2])];
    let mut rets = [buffer(DataType::F32, y.as_mut_ptr().cast(), &[2])];
    let f = frame(&api, &mut args, &mut rets, &attrs);
    // A frame of exactly the size 0.3 defines (through `attrs`, without `future`).
    let mut exact = shortened(&f.raw, ffi::CallFrame::STRUCT_SIZE);
    // SAFETY: the frame's bytes, its lists and buffers alive.
    assert!(unsafe { entry::<Axpb>(exact.as_mut_ptr().cast()) }.is_null());
    assert_eq!(y, [3.0, 5.0]);
    // An API table that holds no more than `XLA_FFI_Error_Create` still reports errors.
    let short_api = shortened(&api, ffi::Api::THROUGH_ERROR_CREATE);
    let mut g = frame(&api, &mut args, &mut rets, &[]);
    g.raw.api = short_api.as_ptr().cast();
    assert_refused(
        call::<Axpb>(&mut g.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "no attribute `a`",
    );
    // A frame of 24 bytes is refused through its table; a buffer of 16 bytes likewise.
    let mut small = shortened(&f.raw, 24);
    // SAFETY: as above.
    let error = unsafe { entry::<Axpb>(small.as_mut_ptr().cast()) };
    assert!(!error.is_null());
    // SAFETY: an error `error_create` made, owned here.
    let error = unsafe { Box::from_raw(error.cast::<FakeError>()) };
    let message = error.message.to_str().unwrap();
    assert!(message.contains("XLA_FFI_CallFrame is 24 bytes"), "{message}");
    let mut small_buffer = shortened(&args[0].raw, 16);
    let mut h = frame(&api, &mut args, &mut rets, &attrs);
    // SAFETY: the frame's one argument slot.
    unsafe { *h.raw.args.args = small_buffer.as_mut_ptr().cast() };
    assert_refused(
        call::<Axpb>(&mut h.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "XLA_FFI_Buffer is smaller",
    );
    // A size that ends inside the table's pointer leaves no table: nothing is done, or read.
    let mut torn = shortened(&f.raw, 20);
    // SAFETY: as above.
    assert!(unsafe { entry::<Axpb>(torn.as_mut_ptr().cast()) }.is_null());
    // An extension of 8 bytes is no request for metadata: the call runs.
    let mut extension = vec![8u64];
    h.raw.extension_start = extension.as_mut_ptr().cast();
    // SAFETY: as above.
    unsafe { *h.raw.args.args = (&raw mut args[0].raw).cast() };
    assert_eq!(call::<Axpb>(&mut h.raw), None);
}

#[test]
fn metadata_is_written_without_an_api_table() {
    let mut metadata = blank_metadata();
    let mut extension = metadata_request(&raw mut metadata);
    let api = api();
    let mut f = frame(&api, &mut [], &mut [], &[]);
    f.raw.api = null();
    f.raw.extension_start = (&raw mut extension).cast();
    // SAFETY: a frame as XLA builds it to ask for metadata.
    assert!(unsafe { entry::<Attributes>(&mut f.raw) }.is_null());
    assert_eq!(
        (metadata.api_version.major_version, metadata.api_version.minor_version),
        (0, 3)
    );
    assert_eq!(metadata.traits, ffi::Traits::COMMAND_BUFFER_COMPATIBLE);
}

/// Fails with codes XLA does not define.
struct BadCode;

impl Handler for BadCode {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        Err(HandlerError::new(
            ErrorCode(if call.arg_count() == 0 { 99 } else { -7 }),
            "odd",
        ))
    }
}

/// A panic whose payload panics when dropped.
struct PanicsTwice;

struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("and again");
    }
}

impl Handler for PanicsTwice {
    const PLATFORM: Platform = Platform::Host;

    fn execute(_: &Call<'_>) -> Result<(), HandlerError> {
        std::panic::panic_any(Bomb)
    }
}

#[test]
fn codes_xla_does_not_define_are_unknown_and_a_panicking_payload_is_caught() {
    let api = api();
    let mut f = frame(&api, &mut [], &mut [], &[]);
    assert_refused(call::<BadCode>(&mut f.raw).unwrap(), ErrorCode::UNKNOWN, "odd");
    let mut x = [0.0f32];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[1])];
    let mut g = frame(&api, &mut args, &mut [], &[]);
    assert_refused(call::<BadCode>(&mut g.raw).unwrap(), ErrorCode::UNKNOWN, "odd");
    assert_refused(
        call::<PanicsTwice>(&mut f.raw).unwrap(),
        ErrorCode::INTERNAL,
        "a panic without a message",
    );
}

/// `y = !x` over `PRED` buffers, both as bytes (any byte but 0 is true).
struct Not;

impl Handler for Not {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let mut x = call.arg(0)?;
        let mut y = call.ret(0)?;
        // Never as `bool`: another buffer of the call may share the memory and write any byte.
        let refused = x
            .view::<HostMdspanAliased<'_, bool, Dims<1>>>()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("argument 0 is PRED"), "{refused}");
        if y.dtype() == <bool as dlmd::DlElement>::DTYPE {
            let refused = y
                .view_mut::<HostMdspanAliasedMut<'_, bool, Dims<1>>>()
                .unwrap_err()
                .to_string();
            assert!(refused.contains("result 0 is PRED"), "{refused}");
        }
        let x = x.bool_bytes::<HostMdspanAliased<'_, u8, Dims<1>>>()?;
        let y = y.bool_bytes_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>>>()?;
        y.update(|i, _| u8::from(x.load(i) == 0));
        Ok(())
    }
}

#[test]
fn a_pred_result_is_written_as_bytes() {
    let api = api();
    let mut x = [1u8, 0, 1];
    let mut y = [0xabu8; 3];
    let mut args = [buffer(DataType::PRED, x.as_mut_ptr().cast(), &[3])];
    let mut rets = [buffer(DataType::PRED, y.as_mut_ptr().cast(), &[3])];
    let mut f = frame(&api, &mut args, &mut rets, &[]);
    assert_eq!(call::<Not>(&mut f.raw), None);
    assert_eq!(y, [0, 1, 0]);
    // Not a `PRED` buffer: refused by name.
    let mut z = [0.0f32; 3];
    let mut rets = [buffer(DataType::F32, z.as_mut_ptr().cast(), &[3])];
    let mut g = frame(&api, &mut args, &mut rets, &[]);
    assert_refused(
        call::<Not>(&mut g.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "result 0: data type",
    );
}

/// Takes its argument, whatever its extents.
struct Shape;

impl Handler for Shape {
    const PLATFORM: Platform = Platform::Host;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        let x = call.arg(0)?;
        x.view::<HostMdspanAliased<'_, f32, Dims<3>>>()?;
        Ok(())
    }
}

#[test]
fn extents_with_a_zero_are_no_overflow_and_others_are_refused() {
    let api = api();
    let mut args = [buffer(DataType::F32, null_mut(), &[0, 1 << 40, 1 << 40])];
    let mut f = frame(&api, &mut args, &mut [], &[]);
    assert_eq!(call::<Shape>(&mut f.raw), None);
    let mut x = [0.0f32];
    let mut args = [buffer(DataType::F32, x.as_mut_ptr().cast(), &[1, 1 << 40, 1 << 40])];
    let mut g = frame(&api, &mut args, &mut [], &[]);
    assert_refused(
        call::<Shape>(&mut g.raw).unwrap(),
        ErrorCode::INVALID_ARGUMENT,
        "which no buffer holds",
    );
}
