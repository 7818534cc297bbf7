//! XLA FFI call frames, handed to a `dlmd::xla` handler's entry point as XLA would hand them,
//! every field the contract leaves to XLA drawn at random: struct sizes (older, shorter
//! versions and smaller than any), the API table's size and major version, the stage, counts
//! and kinds of the lists, each buffer's size, type, rank, extents and data, attributes of every
//! kind with any names, types and values, and requests for metadata. The counts and extents
//! stay what the contract says XLA keeps (a list holds its count, `dims` its rank, the data its
//! extents). Oracles: the entry point never panics out or aborts, and no refusal or panic inside
//! is reported as `INTERNAL` (the handler's checks return errors); an accepted view reaches only
//! the bytes of its buffer; a request for metadata is answered with version 0.3.
#![no_main]

use arbitrary::Arbitrary;
use dlmd::xla::ffi::{self, ArgType, AttrType, DataType, ErrorCode, ExecutionStage, RetType};
use dlmd::xla::{Call, Handler, HandlerError, Platform, entry};
use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut, Mdspan};
use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::{null, null_mut};

/// The XLA types a buffer or attribute is drawn from, and one XLA does not define.
const TYPES: [DataType; 8] = [
    DataType::F32,
    DataType::PRED,
    DataType::S64,
    DataType::U8,
    DataType::BF16,
    DataType::S4,
    DataType::TOKEN,
    DataType(77),
];

#[derive(Arbitrary, Debug)]
enum Rank {
    /// `dims.len()`: the contract.
    Exact,
    /// Refused before `dims` is read.
    Negative(i64),
    Huge(i64),
}

#[derive(Arbitrary, Debug)]
struct BufferSpec {
    /// Of `[0, 8, 16, 47, 48, 56]`.
    size: u8,
    dtype: u8,
    rank: Rank,
    /// Each 0 to 7 (at most four): small enough to allocate whole.
    dims: Vec<u8>,
    null_data: bool,
    null_dims: bool,
}

#[derive(Arbitrary, Debug)]
enum Value {
    Scalar { dtype: u8, bytes: [u8; 8], null: bool },
    Str(Vec<u8>),
    Array { dtype: u8, len: u8, misaligned: bool },
    Other(i32),
}

#[derive(Arbitrary, Debug)]
struct AttrSpec {
    /// Of `"a"`, `"b"`, `"c"`, `"d"`, `"e"`, or bytes that may not be UTF-8.
    name: Result<u8, Vec<u8>>,
    value: Value,
    null_name: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Of `[24, 100, 167, 168, 176]`.
    frame_size: u8,
    /// Of `[0, 48, 56, 64, 88, 184, 192]`.
    api_size: u8,
    api_major: bool,
    stage: u8,
    /// Kinds other than buffers, where `Some`.
    args: Vec<(Option<i32>, Option<BufferSpec>)>,
    rets: Vec<(Option<i32>, Option<BufferSpec>)>,
    attrs: Vec<AttrSpec>,
    /// A negative count in place of a list's, where `Some`.
    negative: Option<(u8, i64)>,
    /// `(extension size, metadata size, NULL metadata)`.
    metadata: Option<(u8, u8, bool)>,
    host: bool,
}

/// An error as the runtime here makes it.
struct FakeError {
    code: ErrorCode,
}

unsafe extern "C" fn error_create(args: *mut ffi::ErrorCreateArgs) -> *mut ffi::Error {
    // SAFETY: the handler passes its arguments, with a NUL-terminated message.
    let (code, message) = unsafe { ((*args).errc, (*args).message) };
    // SAFETY: as above.
    assert!(!unsafe { CStr::from_ptr(message) }.to_bytes().is_empty());
    Box::into_raw(Box::new(FakeError { code })).cast()
}

unsafe extern "C" fn error_get_message(args: *mut ffi::ErrorGetMessageArgs) {
    // SAFETY: the handler passes its arguments.
    unsafe { (*args).message = c"an error".as_ptr() };
}

unsafe extern "C" fn error_destroy(args: *mut ffi::ErrorDestroyArgs) {
    // SAFETY: an error made here, destroyed once.
    drop(unsafe { Box::from_raw((*args).error.cast::<FakeError>()) });
}

unsafe extern "C" fn no_stream(_: *mut ffi::StreamGetArgs) -> *mut ffi::Error {
    Box::into_raw(Box::new(FakeError {
        code: ErrorCode::UNIMPLEMENTED,
    }))
    .cast()
}

unsafe extern "C" fn ordinal(args: *mut ffi::DeviceOrdinalGetArgs) -> *mut ffi::Error {
    // SAFETY: the handler passes its arguments.
    unsafe { (*args).device_ordinal = 0 };
    null_mut()
}

/// Every view it can ask for, of every buffer, and every attribute as every type.
struct ReadsAll<const HOST: bool>;

thread_local! {
    /// Where the buffers are, for the oracle: `(start, end)` of each.
    static SPANS: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

fn inside<T: dlmd::DlElement, const R: usize, A: dlmd::view::Access>(
    view: &Mdspan<'_, T, Dims<R>, dlmd::LayoutRight, dlmd::Host, A>,
) {
    if view.size() == 0 {
        return;
    }
    let start = view.data_handle() as usize;
    let end = start + view.size() * size_of::<T>();
    let inside = SPANS.with(|spans| spans.borrow().iter().any(|&(s, e)| s <= start && end <= e));
    assert!(inside, "a view outside its buffer");
}

macro_rules! views {
    ($buffer:expr, $($r:literal),*) => {$(
        if let Ok(v) = $buffer.view::<HostMdspanAliased<'_, f32, Dims<$r>>>() { inside(&v); }
        if let Ok(v) = $buffer.view::<HostMdspanAliased<'_, bool, Dims<$r>>>() { inside(&v); }
        if let Ok(v) = $buffer.view::<HostMdspanAliased<'_, i64, Dims<$r>>>() { inside(&v); }
        if let Ok(v) = $buffer.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<$r>>>() {
            inside(&v);
            v.fill(1.0);
        }
        if let Ok(v) = $buffer.bool_bytes_mut::<HostMdspanAliasedMut<'_, u8, Dims<$r>>>() {
            inside(&v);
            v.fill(1);
        }
    )*};
}

impl<const HOST: bool> Handler for ReadsAll<HOST> {
    const PLATFORM: Platform = if HOST { Platform::Host } else { Platform::Cuda };
    const TRAITS: ffi::Traits = ffi::Traits::COMMAND_BUFFER_COMPATIBLE;

    fn execute(call: &Call<'_>) -> Result<(), HandlerError> {
        for i in 0..call.arg_count() + 1 {
            if let Ok(mut b) = call.arg(i) {
                views!(b, 0, 1, 2, 3, 4);
            }
        }
        for i in 0..call.ret_count() + 1 {
            if let Ok(mut b) = call.ret(i) {
                views!(b, 0, 1, 2, 3, 4);
            }
        }
        let _ = call.stream();
        for name in ["a", "b", "c", "d", "e"] {
            let _ = call.attr::<i64>(name);
            let _ = call.attr::<f32>(name);
            let _ = call.attr::<bool>(name);
            let _ = call.attr::<u8>(name);
            let _ = call.attr::<&str>(name);
            let _ = call.attr::<&[i64]>(name);
            let _ = call.attr::<&[u8]>(name);
        }
        let _ = call.attr_names().count();
        Err(HandlerError::invalid_argument("read all"))
    }
}

/// A buffer, its extents and data, kept alive together.
struct Made {
    raw: Vec<u64>,
    _dims: Vec<i64>,
    _data: Vec<u64>,
}

fn make_buffer(spec: &BufferSpec) -> Made {
    let mut dims: Vec<i64> = spec.dims.iter().take(4).map(|&d| i64::from(d % 8)).collect();
    let count: usize = dims.iter().map(|&d| d as usize).product();
    let mut data = vec![0u64; count.max(1) * 2];
    let rank = match spec.rank {
        Rank::Exact => dims.len() as i64,
        Rank::Negative(r) => -(r.unsigned_abs() as i64).max(1),
        Rank::Huge(r) => i64::from(i32::MAX) + 1 + (r & 0xffff),
    };
    let buffer = ffi::Buffer {
        struct_size: [0, 8, 16, 47, 48, 56][usize::from(spec.size) % 6],
        extension_start: null_mut(),
        dtype: TYPES[usize::from(spec.dtype) % TYPES.len()],
        data: if spec.null_data {
            null_mut()
        } else {
            data.as_mut_ptr().cast()
        },
        rank,
        dims: if spec.null_dims { null_mut() } else { dims.as_mut_ptr() },
    };
    SPANS.with(|spans| {
        spans
            .borrow_mut()
            .push((data.as_ptr() as usize, data.as_ptr() as usize + data.len() * 8))
    });
    let mut raw = vec![0u64; 7];
    // SAFETY: the struct's bytes into words that hold them.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&raw const buffer).cast::<u8>(),
            raw.as_mut_ptr().cast(),
            size_of::<ffi::Buffer>(),
        )
    };
    raw[0] = buffer.struct_size as u64;
    Made {
        raw,
        _dims: dims,
        _data: data,
    }
}

dlmd_fuzz::fuzz_cases!(|input: Input| {
    SPANS.with(|spans| spans.borrow_mut().clear());
    let api = ffi::Api {
        struct_size: [0, 48, 56, 64, 88, 184, 192][usize::from(input.api_size) % 7],
        extension_start: null_mut(),
        api_version: ffi::ApiVersion {
            struct_size: ffi::ApiVersion::STRUCT_SIZE,
            extension_start: null_mut(),
            major_version: i32::from(input.api_major),
            minor_version: 3,
        },
        internal_api: null(),
        error_create: Some(error_create),
        error_get_message: Some(error_get_message),
        error_destroy: Some(error_destroy),
        handler_register: None,
        stream_get: Some(no_stream),
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
        device_ordinal_get: Some(ordinal),
    };
    // Entries past the size are not there.
    let mut table = vec![0u64; 24];
    // SAFETY: the table's bytes into words that hold them.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&raw const api).cast::<u8>(),
            table.as_mut_ptr().cast(),
            api.struct_size,
        )
    };
    let lists = |specs: &[(Option<i32>, Option<BufferSpec>)]| {
        let made: Vec<Option<Made>> = specs.iter().take(6).map(|(_, b)| b.as_ref().map(make_buffer)).collect();
        let kinds: Vec<i32> = specs.iter().take(6).map(|(k, _)| k.unwrap_or(1)).collect();
        (made, kinds)
    };
    let (mut args, arg_kinds) = lists(&input.args);
    let (mut rets, ret_kinds) = lists(&input.rets);
    let mut arg_ptrs: Vec<*mut c_void> = args
        .iter_mut()
        .map(|m| m.as_mut().map_or(null_mut(), |m| m.raw.as_mut_ptr().cast()))
        .collect();
    let mut ret_ptrs: Vec<*mut c_void> = rets
        .iter_mut()
        .map(|m| m.as_mut().map_or(null_mut(), |m| m.raw.as_mut_ptr().cast()))
        .collect();
    let mut arg_types: Vec<ArgType> = arg_kinds.into_iter().map(ArgType).collect();
    let mut ret_types: Vec<RetType> = ret_kinds.into_iter().map(RetType).collect();
    // Attributes.
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut spans: Vec<Box<ffi::ByteSpan>> = Vec::new();
    let mut values: Vec<Box<[u64; 4]>> = Vec::new();
    let mut arrays: Vec<Vec<u64>> = Vec::new();
    let mut strings: Vec<Vec<u8>> = Vec::new();
    let mut attr_types = Vec::new();
    for spec in input.attrs.iter().take(6) {
        names.push(match &spec.name {
            Ok(n) => vec![b"abcde"[usize::from(*n) % 5]],
            Err(bytes) => bytes.iter().take(8).copied().collect(),
        });
        let mut value = Box::new([0u64; 4]);
        let kind = match &spec.value {
            Value::Scalar { dtype, bytes, null } => {
                arrays.push(vec![u64::from_le_bytes(*bytes)]);
                let held = arrays.last_mut().unwrap();
                let scalar = ffi::Scalar {
                    dtype: TYPES[usize::from(*dtype) % TYPES.len()],
                    value: if *null { null_mut() } else { held.as_mut_ptr().cast() },
                };
                // SAFETY: the struct's bytes into words that hold them.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (&raw const scalar).cast::<u8>(),
                        value.as_mut_ptr().cast(),
                        size_of::<ffi::Scalar>(),
                    )
                };
                AttrType::SCALAR
            }
            Value::Str(bytes) => {
                strings.push(bytes.iter().take(16).copied().collect());
                let s = strings.last().unwrap();
                let span = ffi::ByteSpan {
                    ptr: s.as_ptr().cast::<c_char>(),
                    len: s.len(),
                };
                // SAFETY: as above.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (&raw const span).cast::<u8>(),
                        value.as_mut_ptr().cast(),
                        size_of::<ffi::ByteSpan>(),
                    )
                };
                AttrType::STRING
            }
            Value::Array { dtype, len, misaligned } => {
                arrays.push(vec![0u64; usize::from(*len % 16) + 1]);
                let a = arrays.last_mut().unwrap();
                let data = if *misaligned {
                    a.as_mut_ptr().cast::<u8>().wrapping_add(1)
                } else {
                    a.as_mut_ptr().cast()
                };
                let array = ffi::Array {
                    dtype: TYPES[usize::from(*dtype) % TYPES.len()],
                    size: usize::from(*len % 16),
                    data: data.cast(),
                };
                // SAFETY: as above.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (&raw const array).cast::<u8>(),
                        value.as_mut_ptr().cast(),
                        size_of::<ffi::Array>(),
                    )
                };
                AttrType::ARRAY
            }
            Value::Other(kind) => AttrType(*kind),
        };
        attr_types.push(kind);
        values.push(value);
    }
    for (i, name) in names.iter().enumerate() {
        let no_name = input.attrs[i].null_name;
        spans.push(Box::new(ffi::ByteSpan {
            ptr: if no_name { null() } else { name.as_ptr().cast() },
            len: name.len(),
        }));
    }
    let mut name_ptrs: Vec<*mut ffi::ByteSpan> = spans.iter_mut().map(|s| &raw mut **s).collect();
    let mut value_ptrs: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
    let mut metadata = [0u64; 8];
    let mut extension = [0u64; 4];
    let mut frame = ffi::CallFrame {
        struct_size: [24, 100, 167, 168, 176][usize::from(input.frame_size) % 5],
        extension_start: null_mut(),
        api: table.as_ptr().cast(),
        ctx: null_mut(),
        stage: ExecutionStage(i32::from(input.stage % 5)),
        args: ffi::Args {
            struct_size: ffi::Args::STRUCT_SIZE,
            extension_start: null_mut(),
            size: arg_ptrs.len() as i64,
            types: arg_types.as_mut_ptr(),
            args: arg_ptrs.as_mut_ptr(),
        },
        rets: ffi::Rets {
            struct_size: ffi::Rets::STRUCT_SIZE,
            extension_start: null_mut(),
            size: ret_ptrs.len() as i64,
            types: ret_types.as_mut_ptr(),
            rets: ret_ptrs.as_mut_ptr(),
        },
        attrs: ffi::Attrs {
            struct_size: ffi::Attrs::STRUCT_SIZE,
            extension_start: null_mut(),
            size: name_ptrs.len() as i64,
            types: attr_types.as_mut_ptr(),
            names: name_ptrs.as_mut_ptr(),
            attrs: value_ptrs.as_mut_ptr(),
        },
        future: null_mut(),
    };
    if let Some((which, count)) = input.negative {
        let count = -(count.unsigned_abs() as i64).max(1);
        match which % 3 {
            0 => frame.args.size = count,
            1 => frame.rets.size = count,
            _ => frame.attrs.size = count,
        }
    }
    if let Some((ext_size, meta_size, null_meta)) = input.metadata {
        metadata[0] = [8u64, 36, 48][usize::from(meta_size) % 3];
        extension[0] = [8u64, 24, 32][usize::from(ext_size) % 3];
        extension[1] = ffi::ExtensionType::METADATA.0 as u64;
        extension[3] = if null_meta { 0 } else { metadata.as_mut_ptr() as u64 };
        frame.extension_start = extension.as_mut_ptr().cast();
    }
    // The frame as long as its size says.
    let mut words = vec![0u64; 22];
    // SAFETY: the frame's bytes (at most its size) into words that hold them.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&raw const frame).cast::<u8>(),
            words.as_mut_ptr().cast(),
            frame.struct_size,
        )
    };
    let handler = if input.host {
        entry::<ReadsAll<true>>
    } else {
        entry::<ReadsAll<false>>
    };
    // SAFETY: a frame laid out as XLA lays it out: each struct's size true, its lists, buffers
    // and attributes alive and as long as their counts and extents.
    let error = unsafe { handler(words.as_mut_ptr().cast()) };
    if !error.is_null() {
        // SAFETY: an error `error_create` or `no_stream` made, owned here.
        let error = unsafe { Box::from_raw(error.cast::<FakeError>()) };
        assert_ne!(
            error.code,
            ErrorCode::INTERNAL,
            "a refusal or a panic inside: {input:?}"
        );
    }
    // A request XLA's version makes (an extension and a metadata struct of 0.3's sizes) is
    // answered: version 0.3 (its struct's size, then major and minor) and the traits.
    if input
        .metadata
        .is_some_and(|(e, m, null)| !null && e % 3 == 2 && m % 3 != 0)
    {
        assert_eq!(metadata[1], ffi::ApiVersion::STRUCT_SIZE as u64);
        assert_eq!(metadata[3], 3 << 32);
        assert_eq!(metadata[4] as u32, ffi::Traits::COMMAND_BUFFER_COMPATIBLE.0);
    }
});
