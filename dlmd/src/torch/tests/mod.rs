//! The registration and the boxed kernel against a stand-in torch ([`standin`]).

mod standin;

use super::{BoxedKernel, DispatchKey, Op, OpError, Tensor, TensorMut, schema};
use crate::dlpack::{DLDataType, DLDataTypeCode};
use crate::{Dims, HostMdspanAliased, HostMdspanAliasedMut};
use standin::*;
use std::boxed::Box;
use std::string::ToString;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::vec::Vec;
use std::{format, vec};

/// `scale(Tensor(a!) x, float by, bool twice) -> ()`.
struct Scale;
impl Op for Scale {
    const NAME: &'static str = "scale";
    const PARAMS: &'static [&'static str] = &["x", "by", "twice"];
    type Params<'a> = (TensorMut<'a>, f64, bool);
    type Returns = ();
    fn call((mut x, by, twice): Self::Params<'_>) -> Result<(), OpError> {
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
    type Params<'a> = (Tensor<'a>, Tensor<'a>);
    type Returns = TensorMut<'static>;
    fn call((mut x, mut y): Self::Params<'_>) -> Result<TensorMut<'static>, OpError> {
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
    let storage = t.storage.lock().unwrap().clone();
    let words = storage.lock().unwrap();
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
        type Params<'a> = (TensorMut<'a>, TensorMut<'a>, i64);
        type Returns = (TensorMut<'static>, TensorMut<'static>);
        fn call(_: Self::Params<'_>) -> Result<Self::Returns, OpError> {
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
        type Params<'a> = (Tensor<'a>,);
        type Returns = ();
        fn call(_: Self::Params<'_>) -> Result<(), OpError> {
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
fn a_registration_defines_and_implements_and_stays_until_removed() {
    let torch = torch();
    struct Once;
    impl Op for Once {
        const NAME: &'static str = "once";
        const PARAMS: &'static [&'static str] = &[];
        type Params<'a> = ();
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
    let count = || REGISTERED.lock().unwrap().iter().filter(|r| mine(r)).count();
    let kept = torch.register::<Once>("ns", &[]).unwrap_err();
    assert!(matches!(kept, super::TorchError::Refused { .. }), "{kept}");
    assert_eq!(count(), 5, "a refused registration leaves nothing of its own");
    // SAFETY: no call of `ns::once` is running or to come.
    unsafe { r.remove() };
    assert_eq!(count(), 0);
}

#[test]
fn names_torch_reads_as_keywords_are_refused() {
    struct Keyword<const K: usize>;
    impl<const K: usize> Op for Keyword<K> {
        const NAME: &'static str = ["None", "ok", "def", "is_ok"][K];
        const PARAMS: &'static [&'static str] = [&["x"] as &[&str], &["if"], &["x"], &["and_or"]][K];
        type Params<'a> = (Tensor<'a>,);
        type Returns = ();
        fn call(_: Self::Params<'_>) -> Result<(), OpError> {
            Ok(())
        }
    }
    for e in [
        schema::<Keyword<0>>().unwrap_err(),
        schema::<Keyword<1>>().unwrap_err(),
        schema::<Keyword<2>>().unwrap_err(),
    ] {
        assert!(e.to_string().contains("keyword"), "{e}");
    }
    assert_eq!(schema::<Keyword<3>>().unwrap(), "is_ok(Tensor and_or) -> ()");
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
        "scale: twice: a bool argument of byte 2"
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
    type Params<'a> = (TensorMut<'a>,);
    type Returns = ();
    fn call((mut b,): Self::Params<'_>) -> Result<(), OpError> {
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

/// `copy(Tensor x, Tensor(a!) y) -> ()`: `y = x`, element by element.
struct Copy;
impl Op for Copy {
    const NAME: &'static str = "copy";
    const PARAMS: &'static [&'static str] = &["x", "y"];
    type Params<'a> = (Tensor<'a>, TensorMut<'a>);
    type Returns = ();
    fn call((mut x, mut y): Self::Params<'_>) -> Result<(), OpError> {
        let x = x.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
        let y = y.view_mut::<HostMdspanAliasedMut<'_, f32, Dims<1>>>()?;
        y.update(|[i], _| x.load([i]));
        Ok(())
    }
}

#[test]
fn a_read_tensor_that_shares_memory_with_a_written_one_is_refused() {
    let kernel = registered::<Copy>();
    let (x, y) = (floats(&[1.0, 2.0]), floats(&[0.0, 0.0]));
    let mut stack = [handle(&x), handle(&y)];
    call(kernel, &mut stack, 2, 0).unwrap();
    assert_eq!(values(&y), [1.0, 2.0]);
    assert_eq!(y.version.load(Ordering::Relaxed), 1);
    // The same tensor read and written: refused before the version moves.
    let mut stack = [handle(&x), handle(&x)];
    assert_eq!(
        call(kernel, &mut stack, 2, 0).unwrap_err(),
        "copy: x shares memory with y, which the operator writes: pass a copy of x"
    );
    assert_eq!(x.version.load(Ordering::Relaxed), 0);
    // A view of its second element, read, and the tensor written.
    let second = Arc::new(Fake {
        storage: Mutex::new(x.storage.lock().unwrap().clone()),
        sizes: vec![1],
        strides: vec![1],
        dtype: FLOAT,
        device: CPU,
        version: Default::default(),
        inference: false,
    });
    // (The stand-in gives both the storage's start as their data, so the spans overlap.)
    let mut stack = [handle(&second), handle(&x)];
    let shared = call(kernel, &mut stack, 2, 0);
    assert!(shared.unwrap_err().contains("shares memory"));
    assert_eq!((Arc::strong_count(&x), Arc::strong_count(&y)), (1, 1));
}

/// What `Keep` saw: the value of `x[0]` read before and after the tensor's storage was replaced.
static SEEN: Mutex<Vec<f32>> = Mutex::new(Vec::new());
/// The tensor `Keep` replaces the storage of, as `x.set_(…)` would from another thread.
static REPLACED: Mutex<Option<Arc<Fake>>> = Mutex::new(None);

/// `keep(Tensor x) -> ()`: reads `x[0]` through a view, replaces the tensor's storage (torch
/// frees the old one where nothing else holds it), and reads the view again.
struct Keep;
impl Op for Keep {
    const NAME: &'static str = "keep";
    const PARAMS: &'static [&'static str] = &["x"];
    type Params<'a> = (Tensor<'a>,);
    type Returns = ();
    fn call((mut x,): Self::Params<'_>) -> Result<(), OpError> {
        let view = x.view::<HostMdspanAliased<'_, f32, Dims<1>>>()?;
        let before = view.load([0]);
        let tensor = REPLACED.lock().unwrap().clone().unwrap();
        *tensor.storage.lock().unwrap() = Arc::new(Mutex::new(vec![0; 1]));
        SEEN.lock().unwrap().extend([before, view.load([0])]);
        Ok(())
    }
}

#[test]
fn a_view_keeps_the_storage_it_reads_when_the_tensor_moves_to_another() {
    let kernel = registered::<Keep>();
    let x = floats(&[7.0, 8.0]);
    *REPLACED.lock().unwrap() = Some(x.clone());
    let mut stack = [handle(&x)];
    call(kernel, &mut stack, 1, 0).unwrap();
    // The old storage, still allocated (Miri checks the read), not the new one.
    assert_eq!(*SEEN.lock().unwrap(), [7.0, 7.0]);
    REPLACED.lock().unwrap().take();
    assert_eq!(Arc::strong_count(&x), 1);
}

/// `fail(Tensor x, int how) -> ()`: fails as `how` says.
struct Fail;
impl Op for Fail {
    const NAME: &'static str = "fail";
    const PARAMS: &'static [&'static str] = &["x", "how"];
    type Params<'a> = (Tensor<'a>, i64);
    type Returns = ();
    fn call((_, how): Self::Params<'_>) -> Result<(), OpError> {
        struct Unwritable;
        impl core::fmt::Display for Unwritable {
            fn fmt(&self, _: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                Err(core::fmt::Error)
            }
        }
        match how {
            0 => Err(OpError::new("before\0after")),
            _ => std::panic::panic_any(format!("{}", DisplayOr(&Unwritable))),
        }
    }
}

/// A `Display` that may fail, written into a `String` as `panic!` writes its message (a failed
/// write leaves what was written).
struct DisplayOr<'a, T>(&'a T);
impl<T: core::fmt::Display> core::fmt::Display for DisplayOr<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut s = std::string::String::new();
        let _ = core::fmt::write(&mut s, format_args!("{}", self.0));
        f.write_str(&s)
    }
}

#[test]
fn a_message_with_a_nul_or_none_is_still_raised_whole() {
    let kernel = registered::<Fail>();
    let x = floats(&[1.0]);
    let mut stack = [handle(&x), 0];
    assert_eq!(call(kernel, &mut stack, 2, 0).unwrap_err(), "fail: before?after");
    let mut stack = [handle(&x), 1];
    assert_eq!(
        call(kernel, &mut stack, 2, 0).unwrap_err(),
        "fail panicked: a panic with an empty message"
    );
    assert_eq!(Arc::strong_count(&x), 1);
}

#[test]
fn a_new_host_tensor_reads_as_zero() {
    let torch = torch();
    let dtype = DLDataType::new(DLDataTypeCode::FLOAT, 32, 1);
    let mut t = torch.empty(&[3, 2], dtype, crate::dlpack::DLDevice::CPU).unwrap();
    let view = t.view::<HostMdspanAliased<'_, f32, Dims<2>>>().unwrap();
    assert!((0..3).all(|i| (0..2).all(|j| view.load([i, j]) == 0.0)));
    assert!(torch.empty(&[2, -1], dtype, crate::dlpack::DLDevice::CPU).is_err());
    let e = torch.empty(&[2], dtype, crate::dlpack::DLDevice::cuda(-1)).unwrap_err();
    assert_eq!(e.message(), "no CUDA device -1");
}

#[test]
fn a_tensor_whose_extents_and_strides_overflow_is_refused_by_name() {
    let kernel = registered::<Copy>();
    let huge = Arc::new(Fake {
        sizes: vec![i64::MAX; 3],
        strides: vec![i64::MAX; 3],
        ..Arc::into_inner(floats(&[1.0])).unwrap()
    });
    let y = floats(&[0.0]);
    let mut stack = [handle(&huge), handle(&y)];
    let e = call(kernel, &mut stack, 2, 0).unwrap_err();
    assert!(e.starts_with("copy: x: a tensor of extents"), "{e}");
    assert!(e.ends_with("reaches outside the address space"), "{e}");
    assert_eq!(y.version.load(Ordering::Relaxed), 0);
    assert_eq!((Arc::strong_count(&huge), Arc::strong_count(&y)), (1, 1));
}

#[test]
fn errors_name_the_tensor_they_are_about() {
    let kernel = registered::<Copy>();
    let x = fake(&[1, 0], 1, BOOL);
    let y = floats(&[0.0, 0.0]);
    let mut stack = [handle(&x), handle(&y)];
    let e = call(kernel, &mut stack, 2, 0).unwrap_err();
    assert!(
        e.starts_with("copy: x: a bool tensor is read and written as its bytes"),
        "{e}"
    );
    let on_cuda = Arc::new(Fake {
        device: CUDA,
        ..Arc::into_inner(floats(&[0.0])).unwrap()
    });
    let mut stack = [handle(&floats(&[1.0])), handle(&on_cuda)];
    let e = call(kernel, &mut stack, 2, 0).unwrap_err();
    assert!(e.starts_with("copy: y: "), "{e}");
    assert!(e.contains("CUDA"), "{e}");
}

#[test]
fn a_written_tensor_is_zeroed_by_torch() {
    struct Zero;
    impl Op for Zero {
        const NAME: &'static str = "zero";
        const PARAMS: &'static [&'static str] = &["x"];
        type Params<'a> = (TensorMut<'a>,);
        type Returns = ();
        fn call((mut x,): Self::Params<'_>) -> Result<(), OpError> {
            x.zero()
        }
    }
    let kernel = registered::<Zero>();
    let x = floats(&[1.0, -2.0, 3.5]);
    let mut stack = [handle(&x)];
    call(kernel, &mut stack, 1, 0).unwrap();
    assert_eq!(values(&x), [0.0, 0.0, 0.0]);
    assert_eq!(x.version.load(Ordering::Relaxed), 1);
}
