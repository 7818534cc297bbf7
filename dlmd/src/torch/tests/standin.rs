//! A stand-in torch: tensors are boxed `Arc`s over shared host memory (a storage), torch's
//! exception is a Rust panic, and every reference is counted.

use super::super::abi::{BoxedKernel, LibraryHandle, StableIValue, Status, TensorHandle, Torch};
use crate::dlpack::{DLDataType, DLDataTypeCode};
use core::ffi::{CStr, c_char, c_void};
use std::boxed::Box;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;
use std::{format, vec};

pub(super) const FLOAT: i32 = 6;
pub(super) const BOOL: i32 = 11;
pub(super) const BYTE: i32 = 0;
pub(super) const CPU: i32 = 0;
pub(super) const CUDA: i32 = 1;

/// A storage: host memory in words (aligned for any element).
pub(super) type Storage = Arc<Mutex<Vec<u64>>>;

/// A tensor of the stand-in torch: a storage of `f32`s or bytes, which `set_` replaces.
pub(super) struct Fake {
    pub(super) storage: Mutex<Storage>,
    pub(super) sizes: Vec<i64>,
    pub(super) strides: Vec<i64>,
    pub(super) dtype: i32,
    pub(super) device: i32,
    pub(super) version: AtomicU64,
    pub(super) inference: bool,
}

/// A tensor of `bytes`, `size` bytes an element (in words, aligned for any element).
pub(super) fn fake(bytes: &[u8], size: usize, dtype: i32) -> Arc<Fake> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (i, &b) in bytes.iter().enumerate() {
        words[i / 8] |= (b as u64) << (8 * (i % 8));
    }
    Arc::new(Fake {
        storage: Mutex::new(Arc::new(Mutex::new(words))),
        sizes: vec![(bytes.len() / size) as i64],
        strides: vec![1],
        dtype,
        device: CPU,
        version: AtomicU64::new(0),
        inference: false,
    })
}

/// A new reference to `t`, as torch hands one to a kernel.
pub(super) fn handle(t: &Arc<Fake>) -> StableIValue {
    Box::into_raw(Box::new(t.clone())).expose_provenance() as StableIValue
}

/// # Safety
/// `h` is a live handle of the stand-in.
unsafe fn tensor<'a>(h: TensorHandle) -> &'a Arc<Fake> {
    // SAFETY: the caller's.
    unsafe { &*h.cast::<Arc<Fake>>() }
}

/// A new tensor over `h`'s storage (an offset of 0 only).
unsafe extern "C" fn reinterpret(
    h: TensorHandle,
    rank: i64,
    sizes: *const i64,
    strides: *const i64,
    offset: i64,
    out: *mut TensorHandle,
) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    if offset != 0 || rank < 0 {
        return 1;
    }
    // SAFETY: `rank` extents.
    let sizes = unsafe { core::slice::from_raw_parts(sizes, rank as usize) }.to_vec();
    // SAFETY: `rank` strides.
    let strides = unsafe { core::slice::from_raw_parts(strides, rank as usize) }.to_vec();
    let alias = Arc::new(Fake {
        storage: Mutex::new(t.storage.lock().unwrap().clone()),
        sizes,
        strides,
        dtype: t.dtype,
        device: t.device,
        version: AtomicU64::new(0),
        inference: t.inference,
    });
    // SAFETY: a place for the result.
    unsafe { *out = Box::into_raw(Box::new(alias)).cast() };
    0
}
unsafe extern "C" fn zero(h: TensorHandle) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    t.storage.lock().unwrap().lock().unwrap().fill(0);
    0
}
pub(super) unsafe extern "C" fn delete_tensor(h: TensorHandle) -> Status {
    // SAFETY: an owned handle, deleted once.
    drop(unsafe { Box::from_raw(h.cast::<Arc<Fake>>()) });
    0
}
unsafe extern "C" fn data_ptr(h: TensorHandle, out: *mut *mut c_void) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.storage.lock().unwrap().lock().unwrap().as_mut_ptr().cast() };
    0
}
unsafe extern "C" fn dim(h: TensorHandle, out: *mut i64) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.sizes.len() as i64 };
    0
}
unsafe extern "C" fn sizes(h: TensorHandle, out: *mut *mut i64) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.sizes.as_ptr().cast_mut() };
    0
}
unsafe extern "C" fn strides(h: TensorHandle, out: *mut *mut i64) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.strides.as_ptr().cast_mut() };
    0
}
unsafe extern "C" fn dtype(h: TensorHandle, out: *mut i32) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.dtype };
    0
}
unsafe extern "C" fn device_type(h: TensorHandle, out: *mut i32) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.device };
    0
}
unsafe extern "C" fn device_index(_: TensorHandle, out: *mut i32) -> Status {
    // SAFETY: a place for the result.
    unsafe { *out = 0 };
    0
}
unsafe extern "C" fn empty_strided(
    rank: i64,
    sizes: *const i64,
    strides: *const i64,
    dtype: i32,
    device: i32,
    _: i32,
    out: *mut TensorHandle,
) -> Status {
    // SAFETY: `rank` extents and strides.
    let sizes = unsafe { core::slice::from_raw_parts(sizes, rank as usize) }.to_vec();
    // SAFETY: as above.
    let strides = unsafe { core::slice::from_raw_parts(strides, rank as usize) }.to_vec();
    // Elements of 8 bytes at most.
    let n = sizes.iter().product::<i64>() as usize;
    // Not zero, as torch's memory need not be: `empty` must clear it.
    let t = Arc::new(Fake {
        storage: Mutex::new(Arc::new(Mutex::new(vec![0xa5a5_a5a5_a5a5_a5a5; n]))),
        sizes,
        strides,
        dtype,
        device,
        version: AtomicU64::new(0),
        inference: false,
    });
    // SAFETY: a place for the new handle.
    unsafe { *out = Box::into_raw(Box::new(t)).cast() };
    0
}
unsafe extern "C-unwind" fn bump_version(h: TensorHandle) {
    // SAFETY: a live handle.
    let t = unsafe { tensor(h) };
    if t.inference {
        panic!("Inplace update to inference tensor outside InferenceMode");
    }
    t.version.fetch_add(1, Ordering::Relaxed);
}
unsafe extern "C-unwind" fn raise(message: *const c_char) -> ! {
    // SAFETY: a NUL-terminated message.
    let message = unsafe { CStr::from_ptr(message) }.to_str().unwrap().to_string();
    std::panic::panic_any(Raised(message))
}

/// What the stand-in's `raise` threw.
#[derive(Debug)]
pub(super) struct Raised(pub(super) String);

/// What was registered: (library, what, name or schema, kernel).
pub(super) type Record = (usize, &'static str, String, Option<BoxedKernel>);
pub(super) static REGISTERED: Mutex<Vec<Record>> = Mutex::new(Vec::new());
static NEXT_LIBRARY: AtomicU64 = AtomicU64::new(1);

unsafe extern "C" fn init_fragment(ns: *const c_char, _: *const c_char, _: u32, out: *mut LibraryHandle) -> Status {
    let id = NEXT_LIBRARY.fetch_add(1, Ordering::Relaxed) as usize;
    // SAFETY: a NUL-terminated namespace.
    let ns = unsafe { CStr::from_ptr(ns) }.to_str().unwrap().to_string();
    REGISTERED.lock().unwrap().push((id, "fragment", ns, None));
    // SAFETY: a place for the library.
    unsafe { *out = core::ptr::without_provenance_mut(id) };
    0
}
unsafe extern "C" fn init_impl(
    ns: *const c_char,
    key: *const c_char,
    _: *const c_char,
    _: u32,
    out: *mut LibraryHandle,
) -> Status {
    let id = NEXT_LIBRARY.fetch_add(1, Ordering::Relaxed) as usize;
    // SAFETY: NUL-terminated strings.
    let ns = unsafe { CStr::from_ptr(ns) };
    // SAFETY: as above.
    let key = unsafe { CStr::from_ptr(key) };
    let what = format!("{}/{}", ns.to_str().unwrap(), key.to_str().unwrap());
    REGISTERED.lock().unwrap().push((id, "impl", what, None));
    // SAFETY: a place for the library.
    unsafe { *out = core::ptr::without_provenance_mut(id) };
    0
}
unsafe extern "C" fn def(library: LibraryHandle, schema: *const c_char) -> Status {
    // SAFETY: a NUL-terminated schema.
    let schema = unsafe { CStr::from_ptr(schema) }.to_str().unwrap().to_string();
    let mut registered = REGISTERED.lock().unwrap();
    // An operator defined twice is refused, as torch refuses it.
    let name = schema.split('(').next().unwrap().to_string();
    if registered
        .iter()
        .any(|(_, what, s, _)| *what == "def" && s.split('(').next() == Some(&name))
    {
        return 1;
    }
    registered.push((library.addr(), "def", schema, None));
    0
}
unsafe extern "C" fn implement(library: LibraryHandle, name: *const c_char, kernel: BoxedKernel) -> Status {
    // SAFETY: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap().to_string();
    REGISTERED
        .lock()
        .unwrap()
        .push((library.addr(), "kernel", name, Some(kernel)));
    0
}
unsafe extern "C" fn delete_library(library: LibraryHandle) -> Status {
    REGISTERED.lock().unwrap().retain(|r| r.0 != library.addr());
    0
}

pub(super) fn torch() -> &'static Torch {
    Torch::install(Torch {
        init_fragment,
        init_impl,
        def,
        implement,
        delete_library,
        reinterpret,
        zero,
        delete_tensor,
        data_ptr,
        dim,
        sizes,
        strides,
        dtype,
        device_type,
        device_index,
        empty_strided,
        bump_version,
        raise,
        cuda_stream: None,
        dtypes: vec![
            (FLOAT, DLDataType::new(DLDataTypeCode::FLOAT, 32, 1)),
            (BOOL, DLDataType::new(DLDataTypeCode::BOOL, 8, 1)),
            (BYTE, DLDataType::new(DLDataTypeCode::UINT, 8, 1)),
        ],
        cpu: CPU,
        cuda: CUDA,
        libraries: Vec::new(),
    })
}

/// The kernel registered for `name`, the last one.
pub(super) fn kernel(name: &str) -> BoxedKernel {
    REGISTERED
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r.1 == "kernel" && r.2 == name)
        .and_then(|r| r.3)
        .expect("registered")
}

/// Calls `kernel` on `stack`: `Err` with what it raised.
pub(super) fn call(kernel: BoxedKernel, stack: &mut [StableIValue], args: u64, returns: u64) -> Result<(), String> {
    // SAFETY: the stack as torch would pass it for the kernel's schema (each test's).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        kernel(stack.as_mut_ptr(), args, returns)
    }))
    .map_err(|p| match p.downcast::<Raised>() {
        Ok(raised) => raised.0,
        Err(other) => format!("not raised: {}", crate::panic::message(other)),
    })
}
