//! Regressions for tensors that are malformed, adversarial or merely unusual: each test failed
//! (hung, accepted a bad tensor, refused a good one, or let safe code alias) before its fix.

use dlmd::dlpack::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use dlmd::export::ExportError;
use dlmd::managed::{ManagedTensor, export};
use dlmd::view::Aliased;
use dlmd::{
    Dims, DlElement, Extents, HostMdspan, ImportError, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed,
    Mdspan, dlmd, to_dlpack_tensor,
};
use dlmd::{HostMdspanAliased, HostMdspanAliasedMut, HostMdspanMut};
use dlmd_tests::tensor;
use std::sync::Arc;

/// A `bool` tensor over `bytes` (which may hold any byte values), for the byte check.
fn bools(bytes: &mut [u8], shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    DLTensor {
        dtype: bool::DTYPE,
        ..tensor(bytes, shape, Some(strides))
    }
}

/// A broadcast `bool` tensor of 2^61 indices over one byte: the byte check looks at the one
/// element the indices reach instead of walking every index (which never finished).
#[test]
fn broadcast_bools_are_checked_by_element_not_by_index() {
    let mut one = [1u8];
    let mut shape = [1i64 << 61];
    let mut strides = [0i64];
    let t = bools(&mut one, &mut shape, &mut strides);
    // SAFETY: every index of `t` reaches `one`, alive and unwritten while the view lives.
    let md = unsafe { HostMdspan::<bool, Dims<1>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap();
    assert!(md[[(1 << 61) - 1]]);

    let mut two = [2u8];
    let mut shape = [1i64 << 30, 1 << 30];
    let mut strides = [0i64, 0];
    let t = bools(&mut two, &mut shape, &mut strides);
    // SAFETY: as above.
    let err = unsafe { HostMdspan::<bool, Dims<2>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::InvalidBool { offset: 0, value: 2 });
}

/// Overlapping strides that are not multiples of each other (2 and 3 bytes over 4996 bytes, a
/// million indices): only the bytes the indices reach are checked, and every one of them is.
#[test]
fn overlapping_bool_strides_check_exactly_the_reached_bytes() {
    let mut bytes = vec![1u8; 2 * 999 + 3 * 999 + 1];
    // Byte 1 is the one byte no `2i + 3j` reaches: a non-bool there is not the tensor's.
    bytes[1] = 7;
    let mut shape = [1000i64, 1000];
    let mut strides = [2i64, 3];
    let t = bools(&mut bytes, &mut shape, &mut strides);
    // SAFETY: the span is `bytes`, alive and unwritten while the view lives.
    let md = unsafe { HostMdspan::<bool, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap();
    assert!(md[[999, 999]]);

    let last = bytes.len() - 1;
    bytes[last] = 9;
    let t = bools(&mut bytes, &mut shape, &mut strides);
    // SAFETY: as above.
    let err = unsafe { HostMdspan::<bool, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::InvalidBool { offset: last, value: 9 });
}

/// A sliding window (strides 1 and 1) of a long bool buffer checks the buffer once.
#[test]
fn sliding_window_bools() {
    let mut bytes = vec![0u8; 4096];
    bytes[4095] = 3;
    let mut shape = [4096 - 63i64, 64];
    let mut strides = [1i64, 1];
    let t = bools(&mut bytes, &mut shape, &mut strides);
    // SAFETY: the span is `bytes`, alive and unwritten while the view lives.
    let err = unsafe { HostMdspan::<bool, Dims<2>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::InvalidBool { offset: 4095, value: 3 });
}

/// Data at 24, byte_offset 8, strides [-4] over three `f32`: element 0 at 32, the lowest at 0.
/// Accepted before, with the NULL start then replaced by a dangling pointer.
#[test]
fn a_span_starting_at_address_zero_is_refused() {
    let mut shape = [3i64];
    let mut strides = [-4i64];
    let t = DLTensor {
        data: std::ptr::without_provenance_mut(24),
        device: DLDevice::CPU,
        ndim: 1,
        dtype: f32::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 8,
    };
    // SAFETY: the importer refuses the tensor before it could read an element.
    let err = unsafe { HostMdspan::<f32, Dims<1>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::SpanAtNull { address: 32, back: 32 });
    assert!(err.to_string().contains("address 0"), "{err}");
}

/// `np.zeros((2, 0, 5))` comes with strides (0, 0, 0): strides of a tensor without elements
/// describe nothing, and every layout takes them.
#[test]
fn empty_tensors_take_any_strides() {
    for strides in [[0i64, 0, 0], [0, 5, 1], [-7, 3, 0], [1, 2, 2]] {
        let mut shape = [2i64, 0, 5];
        let mut strides = strides;
        let mut none: [f64; 0] = [];
        let t = tensor(&mut none, &mut shape, Some(&mut strides));
        let empty = [
            // SAFETY: the tensor has no elements; nothing is read.
            unsafe { HostMdspan::<f64, Dims<3>, LayoutRight>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
            // SAFETY: as above.
            unsafe { HostMdspan::<f64, Dims<3>, LayoutLeft>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
            // SAFETY: as above.
            unsafe { HostMdspan::<f64, Dims<3>, LayoutStride>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
            // SAFETY: as above.
            unsafe { HostMdspan::<f64, Dims<3>, LayoutStrideRelaxed>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
            // SAFETY: as above.
            unsafe { HostMdspanMut::<f64, Dims<3>, LayoutStride>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
            // SAFETY: as above.
            unsafe { HostMdspanMut::<f64, Dims<3>, LayoutStrideRelaxed>::from_dlpack(&t) }
                .unwrap()
                .is_empty(),
        ];
        assert_eq!(empty, [true; 6]);
    }
}

/// dlmd's own empty view [2, 0, 5] (strides [0, 5, 1]) re-imports as `layout_stride` and can be
/// sliced into one.
#[test]
fn dlmd_empty_views_reimport_and_slice() {
    let none: [i32; 0] = [];
    let md = HostMdspan::<i32, Dims<3>>::from_slice(&none, Dims::new([2, 0, 5])).unwrap();
    let dl = to_dlpack_tensor(&md);
    let t = dl.get();
    assert_eq!(t.strides(), Some(&[0, 5, 1][..]));
    // SAFETY: no elements.
    let back = unsafe { HostMdspan::<i32, Dims<3>, LayoutStride>::from_dlpack(&t) }.unwrap();
    assert_eq!(back.extents().to_array(), [2, 0, 5]);
    let sliced = md.submdspan((.., .., 1..3)).unwrap();
    assert_eq!(sliced.extents().to_array(), [2, 0, 2]);
    let strided = back.submdspan((0..1, .., ..)).unwrap();
    assert!(strided.is_empty());
}

/// A legacy tensor cannot say read-only, and its consumers may write: exporting a shared `Arc`
/// through one let a re-import write into the `Arc`.
#[test]
fn legacy_exports_refuse_read_only_owners() {
    let shared: Arc<[f32]> = Arc::from(vec![1.0f32, 2.0]);
    assert_eq!(
        export::<DLManagedTensor>(shared.clone(), Dims::new([2])).unwrap_err(),
        ExportError::ReadOnlyInLegacy
    );
    // The refused owner was dropped, not leaked.
    assert_eq!(Arc::strong_count(&shared), 1);
    assert!(ExportError::ReadOnlyInLegacy.to_string().contains("READ_ONLY"));
}

/// A producer's managed tensor over `data`, without a deleter: what two `__dlpack__` calls on
/// one numpy array give a consumer.
fn borrowed(data: *mut f64, shape: &mut [i64; 1], strides: &mut [i64; 1]) -> DLManagedTensorVersioned {
    DLManagedTensorVersioned {
        version: DLPackVersion::CURRENT,
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
        flags: 0,
        dl_tensor: DLTensor {
            data: data.cast(),
            device: DLDevice::CPU,
            ndim: 1,
            dtype: f64::DTYPE,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        },
    }
}

/// Two imports of one buffer, both viewed for writing, with the producer writing in between:
/// the views copy values in and out, so no two `&mut f64` (or a `&f64` under a write) ever
/// exist. Run under Miri, which reports any such aliasing.
#[test]
fn two_imports_of_one_buffer_never_alias() {
    let mut data = vec![1.0f64, 2.0, 3.0];
    let base = data.as_mut_ptr();
    let (mut s1, mut s2, mut st1, mut st2) = ([3i64], [3i64], [1i64], [1i64]);
    // Both describe `data` through the one pointer `base`, as a producer's exports do.
    let mut m1 = borrowed(base, &mut s1, &mut st1);
    let mut m2 = borrowed(base, &mut s2, &mut st2);
    // SAFETY: each struct describes `data`, alive beyond both wrappers, and has no deleter;
    // others (the other wrapper, the "producer" below) may write, as DLPack allows.
    let mut a = unsafe { ManagedTensor::from_raw(&mut m1) }.unwrap();
    // SAFETY: as above.
    let mut b = unsafe { ManagedTensor::from_raw(&mut m2) }.unwrap();
    let va = a
        .view_mut::<HostMdspanAliasedMut<'_, f64, Dims<1>, LayoutRight>>()
        .unwrap();
    let vb = b
        .view_mut::<HostMdspanAliasedMut<'_, f64, Dims<1>, LayoutRight>>()
        .unwrap();
    va.store([0], 10.0);
    vb.store([0], vb.load([0]) + 1.0);
    assert_eq!(va.load([0]), 11.0);
    // The producer writes while both views live.
    // SAFETY: in bounds of `data`; no reference into it is live.
    unsafe { base.wrapping_add(2).write(99.0) };
    assert_eq!(vb.load([2]), 99.0);
    let read: Mdspan<'_, f64, Dims<1>, LayoutRight, dlmd::Host, Aliased> = vb.as_view();
    va.update(|[i], x| x + i as f64);
    assert_eq!(read.values().collect::<Vec<_>>(), [11.0, 3.0, 101.0]);
    let sub = va.submdspan((1..3,)).unwrap();
    assert_eq!(sub.load([1]), 101.0);
}

/// `assume_unaliased` is the one way to `&T` from an import, behind `unsafe`.
#[test]
fn references_from_imports_take_an_unsafe_promise() {
    let raw = export::<DLManagedTensorVersioned>(vec![1u16, 2, 3, 4], Dims::new([2, 2])).unwrap();
    // SAFETY: a fresh dlmd export, handed over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let aliased = tensor
        .view::<HostMdspanAliased<'_, u16, Dims<2>, LayoutRight>>()
        .unwrap();
    // SAFETY: the export above is this tensor's only holder; nothing writes it while `md` lives.
    let md = unsafe { aliased.assume_unaliased() };
    let first: &u16 = &md[[0, 0]];
    assert_eq!((*first, md[[1, 1]]), (1, 4));
    let dl = to_dlpack_tensor(&aliased);
    assert_eq!(
        dl.get().dtype,
        DLDataType::new(dlmd::dlpack::DLDataTypeCode::UINT, 16, 1)
    );
}

/// `dlmd!` views and aliased views read the same values.
#[test]
fn reference_views_lend_aliased_ones() {
    let data = [1i8, 2, 3, 4, 5, 6];
    let md = dlmd!(&data, [2, 3]);
    let aliased = md.as_aliased();
    assert_eq!(aliased.load([1, 2]), 6);
    assert_eq!(aliased.try_load([2, 0]), None);
    assert_eq!(aliased.values().sum::<i8>(), md.iter().sum::<i8>());
}

/// The C importers have aliased twins: two views of one `DLTensor`, both writing by value.
#[test]
fn aliased_c_imports_share_one_tensor() {
    let mut data = [1u32, 2, 3, 4];
    let mut shape = [2i64, 2];
    let mut strides = [2i64, 1];
    let t = tensor(&mut data, &mut shape, Some(&mut strides));
    // SAFETY: `t` describes `data`, alive and reached only through these aliased views while
    // they live, from this thread.
    let a = unsafe { dlmd::HostMdspanAliasedMut::<u32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
    // SAFETY: as above.
    let b = unsafe { dlmd::HostMdspanAliased::<u32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap();
    a.store([1, 0], 30);
    assert_eq!(b.load([1, 0]), 30);
    assert_eq!(b.values().collect::<Vec<_>>(), [1, 2, 30, 4]);
}
