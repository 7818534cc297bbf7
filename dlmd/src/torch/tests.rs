//! The registration and the boxed kernel against a stand-in torch: tensors are boxed `Arc`s
//! of host memory, torch's exception is a Rust panic, and every reference is counted.

use super::abi::{BoxedKernel, LibraryHandle, StableIValue, Status, TensorHandle, Torch};
use super::{DispatchKey, Op, OpError, Tensor, TensorMut, schema};
use crate::dlpack::{DLDataType, DLDataTypeCode};
use crate::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
use core::ffi::{CStr, c_char, c_void};
use std::boxed::Box;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;
use std::{format, vec};

const FLOAT: i32 = 6;
const BOOL: i32 = 11;
const BYTE: i32 = 0;
const CPU: i32 = 0;
const CUDA: i32 = 1;

/// A tensor of the stand-in torch: host memory of `f32`s or bytes.
struct Fake {
    data: Mutex<Vec<u64>>,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    dtype: i32,
    device: i32,
    version: AtomicU64,
    inference: bool,
}

/// A tensor of `bytes`, `size` bytes an element (in words, aligned for any element).
fn fake(bytes: &[u8], size: usize, dtype: i32) -> Arc<Fake> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (i, &b) in bytes.iter().enumerate() {
        words[i / 8] |= (b as u64) << (8 * (i % 8));
    }
    Arc::new(Fake {
        data: Mutex::new(words),
        sizes: vec![(bytes.len() / size) as i64],
        strides: vec![1],
        dtype,
        device: CPU,
        version: AtomicU64::new(0),
        inference: false,
    })
}

/// A new reference to `t`, as torch hands one to a kernel.
fn handle(t: &Arc<Fake>) -> StableIValue {
    Box::into_raw(Box::new(t.clone())).expose_provenance() as StableIValue
}

/// # Safety
/// `h` is a live handle of the stand-in.
unsafe fn tensor<'a>(h: TensorHandle) -> &'a Arc<Fake> {
    // SAFETY: the caller's.
    unsafe { &*h.cast::<Arc<Fake>>() }
}

unsafe extern "C" fn new_handle(h: TensorHandle, out: *mut TensorHandle) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = Box::into_raw(Box::new(t.clone())).cast() };
    0
}
unsafe extern "C" fn delete_tensor(h: TensorHandle) -> Status {
    // SAFETY: an owned handle, deleted once.
    drop(unsafe { Box::from_raw(h.cast::<Arc<Fake>>()) });
    0
}
unsafe extern "C" fn data_ptr(h: TensorHandle, out: *mut *mut c_void) -> Status {
    // SAFETY: a live handle of the stand-in.
    let t = unsafe { tensor(h) };
    // SAFETY: a place for the result.
    unsafe { *out = t.data.lock().unwrap().as_mut_ptr().cast() };
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
    let t = Arc::new(Fake {
        data: Mutex::new(vec![0; n]),
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
struct Raised(String);

/// What was registered: (library, what, name or schema, kernel).
type Record = (usize, &'static str, String, Option<BoxedKernel>);
static REGISTERED: Mutex<Vec<Record>> = Mutex::new(Vec::new());
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

fn torch() -> &'static Torch {
    Torch::install(Torch {
        init_fragment,
        init_impl,
        def,
        implement,
        delete_library,
        new_handle,
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
fn kernel(name: &str) -> BoxedKernel {
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
fn call(kernel: BoxedKernel, stack: &mut [StableIValue], args: u64, returns: u64) -> Result<(), String> {
    // SAFETY: the stack as torch would pass it for the kernel's schema (each test's).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        kernel(stack.as_mut_ptr(), args, returns)
    }))
    .map_err(|p| match p.downcast::<Raised>() {
        Ok(raised) => raised.0,
        Err(other) => format!("not raised: {}", crate::panic::message(other)),
    })
}

/// `scale(Tensor(a!) x, float by, bool twice) -> ()`.
struct Scale;
impl Op for Scale {
    const NAME: &'static str = "scale";
    const PARAMS: &'static [&'static str] = &["x", "by", "twice"];
    type Params = (TensorMut, f64, bool);
    type Returns = ();
    fn call((mut x, by, twice): Self::Params) -> Result<(), OpError> {
        if by < 0.0 {
            return Err(OpError::new("a negative factor"));
        }
        if by.is_nan() {
            panic!("a NaN factor");
        }
        let factor = if twice { by * by } else { by } as f32;
        let view = x.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
        for i in 0..view.extent(0) {
            view.store([i], view.load([i]) * factor);
        }
        Ok(())
    }
}

/// `sum(Tensor x, Tensor y) -> Tensor`: a new tensor.
struct Sum;
impl Op for Sum {
    const NAME: &'static str = "sum";
    const PARAMS: &'static [&'static str] = &["x", "y"];
    type Params = (Tensor, Tensor);
    type Returns = TensorMut;
    fn call((mut x, mut y): Self::Params) -> Result<TensorMut, OpError> {
        let x = x.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
        let y = y.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
        if x.extent(0) != y.extent(0) {
            return Err(OpError::new("x and y differ in length"));
        }
        let dtype = DLDataType::new(DLDataTypeCode::FLOAT, 32, 1);
        let mut out = torch().empty(&[x.extent(0) as i64], dtype, crate::dlpack::DLDevice::CPU)?;
        let o = out.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
        for i in 0..x.extent(0) {
            o.store([i], x.load([i]) + y.load([i]));
        }
        Ok(out)
    }
}

fn floats(values: &[f32]) -> Arc<Fake> {
    let bytes = values.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>();
    fake(&bytes, 4, FLOAT)
}

/// The tensor's bytes.
fn bytes(t: &Arc<Fake>) -> Vec<u8> {
    let n = t.sizes.iter().product::<i64>() as usize * if t.dtype == FLOAT { 4 } else { 1 };
    let words = t.data.lock().unwrap();
    (0..n).map(|i| (words[i / 8] >> (8 * (i % 8))) as u8).collect()
}

fn values(t: &Arc<Fake>) -> Vec<f32> {
    bytes(t)
        .chunks(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn schemas_are_made_from_the_types() {
    assert_eq!(
        schema::<Scale>().unwrap(),
        "scale(Tensor(a!) x, float by, bool twice) -> ()"
    );
    assert_eq!(schema::<Sum>().unwrap(), "sum(Tensor x, Tensor y) -> Tensor");
    struct Two;
    impl Op for Two {
        const NAME: &'static str = "two";
        const PARAMS: &'static [&'static str] = &["a", "b", "n"];
        type Params = (TensorMut, TensorMut, i64);
        type Returns = (TensorMut, TensorMut);
        fn call(_: Self::Params) -> Result<Self::Returns, OpError> {
            Err(OpError::new("unused"))
        }
    }
    assert_eq!(
        schema::<Two>().unwrap(),
        "two(Tensor(a!) a, Tensor(b!) b, int n) -> (Tensor, Tensor)"
    );
    struct Bad<const K: usize>;
    impl<const K: usize> Op for Bad<K> {
        const NAME: &'static str = ["bad", "1bad", "bad", "bad"][K];
        const PARAMS: &'static [&'static str] = [&["x"] as &[&str], &["x"], &["x", "y"], &["x y"]][K];
        type Params = (Tensor,);
        type Returns = ();
        fn call(_: Self::Params) -> Result<(), OpError> {
            Ok(())
        }
    }
    assert!(schema::<Bad<0>>().is_ok());
    for e in [
        schema::<Bad<1>>().unwrap_err(),
        schema::<Bad<2>>().unwrap_err(),
        schema::<Bad<3>>().unwrap_err(),
    ] {
        assert!(matches!(e, super::TorchError::Schema { .. }), "{e}");
    }
}

/// Registers `O` once for the CPU: the stand-in's kernel of it.
fn registered<O: Op>() -> BoxedKernel {
    static KEEP: Mutex<Vec<super::Registration>> = Mutex::new(Vec::new());
    let torch = torch();
    let mut keep = KEEP.lock().unwrap();
    if !keep.iter().any(|r| r.name() == format!("test::{}", O::NAME)) {
        keep.push(torch.register::<O>("test", &[DispatchKey::Cpu]).unwrap());
    }
    kernel(O::NAME)
}

#[test]
fn a_registration_defines_and_implements_and_is_forgotten_when_dropped() {
    let torch = torch();
    struct Once;
    impl Op for Once {
        const NAME: &'static str = "once";
        const PARAMS: &'static [&'static str] = &[];
        type Params = ();
        type Returns = ();
        fn call(_: ()) -> Result<(), OpError> {
            Ok(())
        }
    }
    let r = torch
        .register::<Once>("ns", &[DispatchKey::Cpu, DispatchKey::Cuda])
        .unwrap();
    assert_eq!(r.name(), "ns::once");
    let mine = |r: &Record| r.2 == "once() -> ()" || r.2 == "once" || r.2.starts_with("ns/");
    let seen = REGISTERED
        .lock()
        .unwrap()
        .iter()
        .filter(|r| mine(r))
        .map(|r| (r.1, r.2.clone()))
        .collect::<Vec<_>>();
    assert_eq!(
        seen,
        [
            ("def", "once() -> ()".to_string()),
            ("impl", "ns/CPU".to_string()),
            ("kernel", "once".to_string()),
            ("impl", "ns/CUDA".to_string()),
            ("kernel", "once".to_string()),
        ]
    );
    // Defined twice: torch refuses, and so does the registration.
    let again = torch.register::<Once>("ns", &[DispatchKey::Cpu]).unwrap_err();
    assert!(
        matches!(
            again,
            super::TorchError::Refused {
                what: "the definition of",
                ..
            }
        ),
        "{again}"
    );
    let bad = torch.register::<Once>("a::b", &[]).unwrap_err();
    assert!(matches!(bad, super::TorchError::Schema { .. }), "{bad}");
    drop(r);
    assert!(!REGISTERED.lock().unwrap().iter().any(mine));
}

#[test]
fn a_call_writes_in_place_moves_the_version_and_deletes_every_reference() {
    let kernel = registered::<Scale>();
    let x = floats(&[1.0, 2.0, -3.0]);
    let mut stack = [handle(&x), 2.5f64.to_bits(), 1];
    call(kernel, &mut stack, 3, 0).unwrap();
    assert_eq!(values(&x), [6.25, 12.5, -18.75]);
    assert_eq!(x.version.load(Ordering::Relaxed), 1);
    assert_eq!(
        Arc::strong_count(&x),
        1,
        "the kernel deletes its reference and the view's"
    );
}

#[test]
fn an_error_or_a_panic_is_raised_with_the_name_and_nothing_leaks() {
    let kernel = registered::<Scale>();
    let x = floats(&[1.0]);
    let mut stack = [handle(&x), (-1.0f64).to_bits(), 0];
    assert_eq!(call(kernel, &mut stack, 3, 0).unwrap_err(), "scale: a negative factor");
    let mut stack = [handle(&x), f64::NAN.to_bits(), 0];
    assert_eq!(
        call(kernel, &mut stack, 3, 0).unwrap_err(),
        "scale panicked: a NaN factor"
    );
    // A bool whose byte is neither 0 nor 1.
    let mut stack = [handle(&x), 1.0f64.to_bits(), 2];
    assert_eq!(
        call(kernel, &mut stack, 3, 0).unwrap_err(),
        "scale: a bool argument of byte 2"
    );
    // A NULL tensor.
    let mut stack = [0, 1.0f64.to_bits(), 0];
    assert!(call(kernel, &mut stack, 3, 0).unwrap_err().contains("undefined"));
    assert_eq!(values(&x), [1.0]);
    assert_eq!(Arc::strong_count(&x), 1);
}

#[test]
fn a_stack_of_another_schema_is_refused_and_left_alone() {
    let kernel = registered::<Scale>();
    let x = floats(&[1.0]);
    let mut stack = [handle(&x), 0, 0, 0];
    let e = call(kernel, &mut stack, 4, 0).unwrap_err();
    assert_eq!(
        e,
        "scale: called with 4 arguments and 0 returns, where its schema has 3 and 0"
    );
    assert_eq!(Arc::strong_count(&x), 2, "not its to delete");
    // SAFETY: the handle made above, deleted once.
    unsafe { delete_tensor(core::ptr::with_exposed_provenance_mut(stack[0] as usize)) };
}

#[test]
fn an_inference_tensor_is_refused_before_anything_is_written() {
    let kernel = registered::<Scale>();
    let x = Arc::new(Fake {
        inference: true,
        ..Arc::into_inner(floats(&[4.0])).unwrap()
    });
    let mut stack = [handle(&x), 2.0f64.to_bits(), 0];
    // The stand-in's bump panics where torch's throws; it unwinds through the kernel.
    let e = call(kernel, &mut stack, 3, 0).unwrap_err();
    assert!(e.contains("inference tensor"), "{e}");
    assert_eq!(values(&x), [4.0]);
    assert_eq!(
        Arc::strong_count(&x),
        1,
        "the argument was deleted as the exception unwound"
    );
}

#[test]
fn returns_are_new_tensors_handed_to_torch() {
    let kernel = registered::<Sum>();
    let (x, y) = (floats(&[1.0, 2.0]), floats(&[10.0, 20.0]));
    let mut stack = [handle(&x), handle(&y)];
    call(kernel, &mut stack, 2, 1).unwrap();
    // SAFETY: the returned handle, owned here now.
    let out = unsafe { Box::from_raw(core::ptr::with_exposed_provenance_mut::<Arc<Fake>>(stack[0] as usize)) };
    assert_eq!(values(&out), [11.0, 22.0]);
    assert_eq!(Arc::strong_count(&out), 1);
    assert_eq!((Arc::strong_count(&x), Arc::strong_count(&y)), (1, 1));
    // The same tensor twice, read: fine.
    let mut stack = [handle(&x), handle(&x)];
    call(kernel, &mut stack, 2, 1).unwrap();
    // SAFETY: as above.
    let out = unsafe { Box::from_raw(core::ptr::with_exposed_provenance_mut::<Arc<Fake>>(stack[0] as usize)) };
    assert_eq!(values(&out), [2.0, 4.0]);
    let mut stack = [handle(&x), handle(&floats(&[1.0]))];
    assert_eq!(
        call(kernel, &mut stack, 2, 1).unwrap_err(),
        "sum: x and y differ in length"
    );
    assert_eq!(Arc::strong_count(&x), 1);
}

/// `flip(Tensor(a!) b) -> ()` on a bool tensor, through its bytes.
struct Flip;
impl Op for Flip {
    const NAME: &'static str = "flip";
    const PARAMS: &'static [&'static str] = &["b"];
    type Params = (TensorMut,);
    type Returns = ();
    fn call((mut b,): Self::Params) -> Result<(), OpError> {
        if let Err(e) = b.view_mut::<HostMdspanAliasedMut<'_, bool, Dims<1>>>() {
            assert!(e.message().contains("bool_bytes"), "{e}");
        } else {
            panic!("a bool view of torch's bytes");
        }
        let bytes = b.bool_bytes_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>>>()?;
        for i in 0..bytes.extent(0) {
            bytes.store([i], u8::from(bytes.load([i]) == 0));
        }
        Ok(())
    }
}

#[test]
fn bool_tensors_are_read_and_written_as_bytes() {
    let kernel = registered::<Flip>();
    let b = fake(&[0, 1, 2, 255], 1, BOOL);
    let mut stack = [handle(&b)];
    call(kernel, &mut stack, 1, 0).unwrap();
    assert_eq!(bytes(&b), [1, 0, 0, 0]);
    // The bytes of a tensor that is not bool: refused.
    let x = floats(&[1.0]);
    let mut stack = [handle(&x)];
    let e = call(kernel, &mut stack, 1, 0).unwrap_err();
    assert!(e.contains("bool"), "{e}");
    assert_eq!(Arc::strong_count(&x), 1);
}
