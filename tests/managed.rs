//! Owned exchange: managed tensors exported from owned buffers and imported back, deleters
//! called exactly once, flags honoured.

use dlmd::Array;
use dlmd::dlpack::{
    DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor, IS_COPIED, IS_SUBBYTE_TYPE_PADDED,
    READ_ONLY,
};
use dlmd::export::ExportError;
use dlmd::managed::{ManagedError, ManagedTensor, TensorOwner, export, export_with};
use dlmd::{Const, Dims, DlElement, Dyn, F4E2M1FN, ImportError, LayoutRight, LayoutStride};
use dlmd::{HostMdspanAliased, HostMdspanAliasedMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A `Vec` that counts its drops.
struct Counted {
    data: Vec<i32>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: the `Vec`'s buffer does not move with `Counted` and nothing else writes it.
unsafe impl TensorOwner for Counted {
    type Elem = i32;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut i32 {
        self.data.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.data.len()
    }
}

fn counted(n: i32) -> (Counted, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    (
        Counted {
            data: (0..n).collect(),
            drops: drops.clone(),
        },
        drops,
    )
}

#[test]
fn versioned_round_trip_frees_once() {
    let (owner, drops) = counted(6);
    let raw = export::<DLManagedTensorVersioned>(owner, Dims::new([2, 3])).unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.version(), Some(DLPackVersion::CURRENT));
    assert_eq!(tensor.flags(), 0);
    let md = tensor
        .view::<HostMdspanAliased<'_, i32, Dims<2>, LayoutRight>>()
        .unwrap();
    assert_eq!(md.load([1, 2]), 5);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(tensor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn legacy_round_trip_frees_once() {
    let (owner, drops) = counted(4);
    let raw = export::<DLManagedTensor>(owner, (Const::<4>,)).unwrap();
    // SAFETY: produced by dlmd above.
    let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.version(), None);
    tensor
        .view_mut::<HostMdspanAliasedMut<'_, i32, Dims<1>, LayoutStride>>()
        .unwrap()
        .store([0], 40);
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, i32, Dims<1>, LayoutRight>>()
            .unwrap()
            .load([0]),
        40
    );
    drop(tensor);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn the_deleter_runs_on_another_thread() {
    let (owner, drops) = counted(3);
    let raw = export::<DLManagedTensorVersioned>(owner, Dims::new([3])).unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn into_raw_gives_ownership_back() {
    let (owner, drops) = counted(2);
    let raw = export::<DLManagedTensorVersioned>(owner, Dims::new([2])).unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    // A legacy pointer is not what it holds: the tensor comes back.
    let tensor = tensor.into_raw::<DLManagedTensor>().unwrap_err();
    let back = tensor.into_raw::<DLManagedTensorVersioned>().unwrap();
    assert_eq!(back, raw);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // SAFETY: `back` is the tensor given back; taking it again releases it once.
    drop(unsafe { ManagedTensor::from_raw(back) }.unwrap());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

static FOREIGN_DELETES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_delete(_: *mut DLManagedTensorVersioned) {
    FOREIGN_DELETES.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn unknown_major_versions_are_released_and_refused() {
    let mut managed = DLManagedTensorVersioned {
        version: DLPackVersion { major: 2, minor: 0 },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(count_delete),
        flags: 0,
        dl_tensor: DLTensor {
            data: std::ptr::null_mut(),
            device: dlmd::dlpack::DLDevice::CPU,
            ndim: 0,
            dtype: f32::DTYPE,
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
    };
    let before = FOREIGN_DELETES.load(Ordering::SeqCst);
    // SAFETY: `managed` is a valid versioned header whose deleter only counts.
    let err = unsafe { ManagedTensor::from_raw(&mut managed) }.unwrap_err();
    assert_eq!(err, ManagedError::Version { major: 2 });
    assert_eq!(FOREIGN_DELETES.load(Ordering::SeqCst), before + 1);
}

#[test]
fn null_pointers_and_null_deleters() {
    let versioned: *mut DLManagedTensorVersioned = std::ptr::null_mut();
    let legacy: *mut DLManagedTensor = std::ptr::null_mut();
    // SAFETY: NULL is refused before anything is read.
    let a = unsafe { ManagedTensor::from_raw(versioned) };
    // SAFETY: as above.
    let b = unsafe { ManagedTensor::from_raw(legacy) };
    assert_eq!(a.unwrap_err(), ManagedError::Null);
    assert_eq!(b.unwrap_err(), ManagedError::Null);
    let mut data = [1.5f32, 2.5];
    let mut shape = [2i64];
    let mut strides = [1i64];
    let mut managed = DLManagedTensor {
        dl_tensor: DLTensor {
            data: data.as_mut_ptr().cast(),
            device: dlmd::dlpack::DLDevice::CPU,
            ndim: 1,
            dtype: f32::DTYPE,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
    };
    // SAFETY: `managed` describes `data`, both alive beyond the wrapper; there is no deleter.
    let tensor = unsafe { ManagedTensor::from_raw(&mut managed) }.unwrap();
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, f32, Dims<1>, LayoutRight>>()
            .unwrap()
            .load([1]),
        2.5
    );
}

#[test]
fn shared_buffers_are_read_only() {
    let shared: Arc<[u8]> = Arc::from(vec![1u8, 2, 3]);
    let raw = export::<DLManagedTensorVersioned>(shared.clone(), Dims::new([3])).unwrap();
    // SAFETY: produced by dlmd above.
    let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert!(tensor.is_read_only());
    assert_eq!(tensor.flags() & READ_ONLY, READ_ONLY);
    assert_eq!(
        tensor
            .view_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>, LayoutRight>>()
            .unwrap_err(),
        ImportError::ReadOnly
    );
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, u8, Dims<1>, LayoutRight>>()
            .unwrap()
            .load([2]),
        3
    );
    assert_eq!(Arc::strong_count(&shared), 2);
    drop(tensor);
    assert_eq!(Arc::strong_count(&shared), 1);
}

#[test]
fn sub_byte_elements_are_flagged_padded() {
    let data: Box<[F4E2M1FN]> = [0.5f32, 1.0, 6.0].map(F4E2M1FN::from_f32).into();
    let raw = export::<DLManagedTensorVersioned>(data, Dims::new([3])).unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.flags() & IS_SUBBYTE_TYPE_PADDED, IS_SUBBYTE_TYPE_PADDED);
    let md = tensor
        .view::<HostMdspanAliased<'_, F4E2M1FN, Dims<1>, LayoutRight>>()
        .unwrap();
    assert_eq!(md.load([2]).to_f32(), 6.0);
    assert_eq!(
        export::<DLManagedTensor>(vec![F4E2M1FN::from_f32(1.0)], Dims::new([1])).unwrap_err(),
        ExportError::SubbyteInLegacy
    );
}

#[test]
fn packed_sub_byte_tensors_are_refused() {
    let raw = export::<DLManagedTensorVersioned>(vec![0u8; 4], Dims::new([4])).unwrap();
    // A producer describing the bytes as FP4 without the padded flag means packed FP4.
    // SAFETY: `raw` is a live tensor from dlmd; only its dtype is changed, to a same-size type.
    unsafe { (*raw).dl_tensor.dtype = F4E2M1FN::DTYPE };
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert!(matches!(
        tensor.view::<HostMdspanAliased<'_, F4E2M1FN, Dims<1>, LayoutRight>>(),
        Err(ImportError::PackedSubbyte { .. })
    ));
}

#[test]
fn copied_flag_and_static_extents() {
    // SAFETY: a `Vec`'s memory, exported as host memory.
    let raw = unsafe {
        export_with::<DLManagedTensorVersioned, _, _>(vec![7u16; 6], (Const::<2>, Dyn(3)), IS_COPIED, DLDevice::CPU)
    }
    .unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert!(tensor.is_copied());
    let md = tensor
        .view::<HostMdspanAliased<'_, u16, (Const<2>, Const<3>), LayoutRight>>()
        .unwrap();
    assert_eq!(md.load([1, 2]), 7);
    assert!(
        tensor
            .view::<HostMdspanAliased<'_, u16, (Const<3>, Dyn), LayoutRight>>()
            .is_err()
    );
}

#[test]
fn short_buffers_are_refused() {
    assert_eq!(
        export::<DLManagedTensorVersioned>(vec![0u8; 5], Dims::new([2, 3])).unwrap_err(),
        ExportError::TooShort { needed: 6, len: 5 }
    );
}

#[test]
fn arrays_export_with_their_shape() {
    let mut a = Array::<f64, (Const<2>, Dyn)>::zeros((Const, Dyn(2))).unwrap();
    a.view_mut()[[1, 1]] = 3.0;
    let raw = a.into_dlpack::<DLManagedTensorVersioned>().unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let t = tensor.dl_tensor();
    assert_eq!(t.ndim, 2);
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, f64, Dims<2>, LayoutRight>>()
            .unwrap()
            .load([1, 1]),
        3.0
    );
    let empty = Array::<f64, Dims<2>>::zeros(Dims::new([0, 4]))
        .unwrap()
        .into_dlpack::<DLManagedTensor>()
        .unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(empty) }.unwrap();
    assert!(tensor.dl_tensor().data.is_null());
    assert!(
        tensor
            .view::<HostMdspanAliased<'_, f64, Dims<2>, LayoutRight>>()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn rank_zero_exports() {
    let raw = export::<DLManagedTensorVersioned>(vec![9i8], ()).unwrap();
    // SAFETY: produced by dlmd above.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert!(tensor.dl_tensor().shape.is_null());
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, i8, Dims<0>, LayoutRight>>()
            .unwrap()
            .load([]),
        9
    );
}

#[test]
fn a_panic_while_a_view_is_borrowed_still_releases_once() {
    let (owner, drops) = counted(4);
    let raw = export::<DLManagedTensorVersioned>(owner, Dims::new([4])).unwrap();
    let caught = std::panic::catch_unwind(move || {
        // SAFETY: produced by dlmd above.
        let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
        let md = tensor
            .view_mut::<HostMdspanAliasedMut<'_, i32, Dims<1>, LayoutRight>>()
            .unwrap();
        md.update(|[i], x| {
            assert!(i < 2, "a closure that panics half-way");
            x + 1
        });
    });
    assert!(caught.is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

static UNINIT_DELETES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_uninit_delete(_: *mut DLManagedTensorVersioned) {
    UNINIT_DELETES.fetch_add(1, Ordering::SeqCst);
}

/// The spec for a major version the consumer does not know: call the deleter, touch nothing
/// else. Only `version`, `manager_ctx` and `deleter` are initialised here; reading `flags` or
/// `dl_tensor` would be a read of uninitialised memory, which Miri reports.
#[test]
fn a_foreign_major_version_is_released_without_reading_the_tensor() {
    let mut slot = std::mem::MaybeUninit::<DLManagedTensorVersioned>::uninit();
    let ptr = slot.as_mut_ptr();
    // The field at `offset` of the struct at `ptr`, reached without forming a reference to the
    // uninitialised struct.
    fn field<F>(ptr: *mut DLManagedTensorVersioned, offset: usize) -> *mut F {
        ptr.cast::<u8>().wrapping_add(offset).cast()
    }
    type Deleter = Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>;
    let version = DLPackVersion { major: 7, minor: 1 };
    // SAFETY: a field of an allocation of the struct's size and alignment.
    unsafe { field::<DLPackVersion>(ptr, std::mem::offset_of!(DLManagedTensorVersioned, version)).write(version) };
    let null: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        field::<*mut std::ffi::c_void>(ptr, std::mem::offset_of!(DLManagedTensorVersioned, manager_ctx)).write(null)
    };
    let deleter: Deleter = Some(count_uninit_delete);
    // SAFETY: as above.
    unsafe { field::<Deleter>(ptr, std::mem::offset_of!(DLManagedTensorVersioned, deleter)).write(deleter) };
    // SAFETY: the header fields every major version keeps are initialised.
    let err = unsafe { ManagedTensor::from_raw(ptr) }.unwrap_err();
    assert_eq!(err, ManagedError::Version { major: 7 });
    assert_eq!(UNINIT_DELETES.load(Ordering::SeqCst), 1);
}

#[test]
fn refused_exports_drop_their_owner_once() {
    let (owner, drops) = counted(5);
    assert_eq!(
        export::<DLManagedTensorVersioned>(owner, Dims::new([2, 3])).unwrap_err(),
        ExportError::TooShort { needed: 6, len: 5 }
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let (owner, drops) = counted(5);
    assert!(export::<DLManagedTensor>(owner, Dims::new([usize::MAX, 2])).is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn packed_fp4_pairs_travel_in_plain_tensors_and_are_told_from_padded_ones() {
    use dlmd::F4E2M1FNx2;
    use dlmd::dlpack::{DLManagedTensor, DLManagedTensorVersioned, IS_SUBBYTE_TYPE_PADDED};
    let bytes: Vec<F4E2M1FNx2> = (0..6)
        .map(|i| F4E2M1FNx2::from_f32_pair(i as f32, -(i as f32)))
        .collect();
    // Packed pairs need no flag: a legacy tensor carries them, shape counting bytes.
    let raw = export::<DLManagedTensor>(bytes.clone(), Dims::new([2, 3])).unwrap();
    // SAFETY: dlmd just made the tensor and hands it over.
    let legacy = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let view = legacy
        .view::<HostMdspanAliased<'_, F4E2M1FNx2, Dims<2>, LayoutRight>>()
        .unwrap();
    assert_eq!(view.load([1, 2]).to_f32_pair(), (4.0, -4.0));
    assert_eq!(legacy.dl_tensor().dtype.to_string(), "float4_e2m1fnx2");
    // Two padded values per element: the same code, bits and lanes, flagged padded, two bytes.
    let padded: Vec<[F4E2M1FN; 2]> = vec![[F4E2M1FN::from_f32(1.0), F4E2M1FN::from_f32(2.0)]; 4];
    let raw = export::<DLManagedTensorVersioned>(padded, Dims::new([4])).unwrap();
    // SAFETY: as above.
    let flagged = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_ne!(flagged.flags() & IS_SUBBYTE_TYPE_PADDED, 0);
    assert!(matches!(
        flagged.view::<HostMdspanAliased<'_, F4E2M1FNx2, Dims<1>, LayoutRight>>(),
        Err(ImportError::PaddedSubbyte { .. })
    ));
    assert_eq!(
        flagged
            .view::<HostMdspanAliased<'_, [F4E2M1FN; 2], Dims<1>, LayoutRight>>()
            .unwrap()
            .load([3])[1]
            .to_f32(),
        2.0
    );
}

#[test]
fn a_callers_padded_flag_is_dropped_where_the_elements_are_packed() {
    use dlmd::F4E2M1FNx2;
    // Eight packed FP4 bytes (sixteen values) flagged padded by the caller: a consumer that
    // honoured the flag would read eight values. The element type decides, and it is packed.
    let bytes = vec![F4E2M1FNx2::from_f32_pair(1.0, -1.0); 8];
    // SAFETY: a `Vec`'s memory, exported as host memory.
    let raw = unsafe {
        export_with::<DLManagedTensorVersioned, _, _>(
            bytes,
            Dims::new([8]),
            IS_SUBBYTE_TYPE_PADDED | IS_COPIED,
            DLDevice::CPU,
        )
    }
    .unwrap();
    // SAFETY: dlmd just made the tensor and hands it over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(
        tensor.flags() & IS_SUBBYTE_TYPE_PADDED,
        0,
        "the caller's padded flag is dropped"
    );
    assert_eq!(
        tensor.flags() & IS_COPIED,
        IS_COPIED,
        "the caller's other flags are kept"
    );
    let view = tensor
        .view::<HostMdspanAliased<'_, F4E2M1FNx2, Dims<1>, LayoutRight>>()
        .unwrap();
    assert_eq!(view.extent(0), 8);
    assert_eq!(view.load([7]).to_f32_pair(), (1.0, -1.0));
}

/// What a deferred write check was asked and released: a context the test shares (through an
/// `Arc`, whose moves leave pointers to it valid).
struct Asked {
    checks: AtomicUsize,
    releases: AtomicUsize,
    refuse: bool,
}

unsafe fn ask(context: core::ptr::NonNull<core::ffi::c_void>) -> Option<&'static str> {
    // SAFETY: the context is an `Asked` the test keeps alive until after the release.
    let asked = unsafe { context.cast::<Asked>().as_ref() };
    asked.checks.fetch_add(1, Ordering::Relaxed);
    asked.refuse.then_some("the producer tracks it")
}

unsafe fn release_asked(context: core::ptr::NonNull<core::ffi::c_void>) {
    // SAFETY: as in `ask`.
    unsafe { context.cast::<Asked>().as_ref() }
        .releases
        .fetch_add(1, Ordering::Relaxed);
}

fn deferred(refuse: bool) -> (ManagedTensor, Arc<Asked>) {
    let asked = Arc::new(Asked {
        checks: AtomicUsize::new(0),
        releases: AtomicUsize::new(0),
        refuse,
    });
    let raw = export::<DLManagedTensorVersioned>(vec![1i32; 6], Dims::new([2, 3])).unwrap();
    // SAFETY: a fresh export, handed over.
    let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let context = core::ptr::NonNull::new(Arc::as_ptr(&asked).cast_mut()).unwrap().cast();
    // SAFETY: `ask` and `release_asked` only count, atomically, in an `Asked` the caller keeps
    // alive past the tensor.
    unsafe { tensor.defer_write_check(context, ask, release_asked) };
    (tensor, asked)
}

#[test]
fn deferred_write_checks_are_asked_for_mutable_views_only() {
    let (mut tensor, asked) = deferred(true);
    assert_eq!(
        tensor
            .view::<HostMdspanAliased<'_, i32, Dims<2>, LayoutRight>>()
            .unwrap()
            .load([1, 2]),
        1
    );
    assert_eq!(asked.checks.load(Ordering::Relaxed), 0, "a read asked the producer");
    assert_eq!(
        tensor
            .view_mut::<HostMdspanAliasedMut<'_, i32, Dims<2>, LayoutRight>>()
            .unwrap_err(),
        ImportError::WritesRefused("the producer tracks it")
    );
    assert!(tensor.is_read_only());
    assert_eq!(asked.checks.load(Ordering::Relaxed), 2);
    drop(tensor);
    assert_eq!(asked.releases.load(Ordering::Relaxed), 1);

    let (mut tensor, asked) = deferred(false);
    tensor
        .view_mut::<HostMdspanAliasedMut<'_, i32, Dims<2>, LayoutRight>>()
        .unwrap()
        .store([0, 0], 7);
    // A second check replaces the first, which is released at once; giving the pointer back
    // releases the second.
    let again = Arc::new(Asked {
        checks: AtomicUsize::new(0),
        releases: AtomicUsize::new(0),
        refuse: false,
    });
    let context = core::ptr::NonNull::new(Arc::as_ptr(&again).cast_mut()).unwrap().cast();
    // SAFETY: as in `deferred`.
    unsafe { tensor.defer_write_check(context, ask, release_asked) };
    assert_eq!(asked.releases.load(Ordering::Relaxed), 1);
    let raw = tensor.into_raw::<DLManagedTensorVersioned>().unwrap();
    assert_eq!(again.releases.load(Ordering::Relaxed), 1);
    // SAFETY: given back by `into_raw`, still owned.
    let back = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(
        back.view::<HostMdspanAliased<'_, i32, Dims<2>, LayoutRight>>()
            .unwrap()
            .load([0, 0]),
        7
    );
}

#[test]
fn the_shape_is_the_producers_and_none_where_it_cannot_be_read() {
    let raw = export::<DLManagedTensorVersioned>(vec![0u16; 6], Dims::new([2, 3])).unwrap();
    // SAFETY: a fresh export, handed over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.shape(), Some(&[2i64, 3][..]));
    let raw = export::<DLManagedTensorVersioned>(vec![7u8], Dims::new([])).unwrap();
    // SAFETY: as above.
    let scalar = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(scalar.shape(), Some(&[][..]));

    // A producer's NULL shape, and a negative rank: no extents to read, and no view either.
    let mut data = [1u8, 2];
    for ndim in [2, -1] {
        let mut managed = DLManagedTensor {
            dl_tensor: DLTensor {
                data: data.as_mut_ptr().cast(),
                device: DLDevice::CPU,
                ndim,
                dtype: u8::DTYPE,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: None,
        };
        // SAFETY: `managed` outlives the wrapper and has no deleter; the NULL arrays are never
        // read (`shape` is checked for NULL, every view refuses it).
        let tensor = unsafe { ManagedTensor::from_raw(&mut managed) }.unwrap();
        assert_eq!(tensor.shape(), None, "ndim {ndim}");
        assert!(tensor.view::<HostMdspanAliased<'_, u8, Dims<2>>>().is_err());
    }
}
