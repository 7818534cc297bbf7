//! CCCL's documented DLPack examples and every error case of its `dlpack_to_mdspan` exception
//! tests, with dlmd's answers, plus the cases where dlmd deliberately differs.

use dlmd::dlpack::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLPackVersion, DLTensor};
use dlmd::layout::LayoutError;
use dlmd::space::SpaceError;
use dlmd::{
    Const, DlElement, HostMdspan, ImportError, LayoutLeft, LayoutRight, LayoutStride, LayoutStrideRelaxed, dlmd,
    to_dlpack_tensor,
};
use dlmd::{DeviceMdspan, Dims, HostMdspanMut, ManagedMdspan};
use std::ptr;

use dlmd_tests::tensor;

/// Binds `t` to a tensor over `data` with `shape` and `strides` (an `Option` of an array), keeping
/// the arrays alive for the rest of the enclosing block.
macro_rules! tensor {
    (let $($t:ident)+ = $data:expr, $shape:expr, None) => {
        let data = $data;
        let mut shape = $shape;
        let $($t)+ = tensor(data, &mut shape, None);
    };
    (let $($t:ident)+ = $data:expr, $shape:expr, Some($strides:expr)) => {
        let data = $data;
        let mut shape = $shape;
        let mut strides = $strides;
        let $($t)+ = tensor(data, &mut shape, Some(&mut strides));
    };
}

/// Seed 000: a 2×3 `int` host view exported as a `DLTensor`.
#[test]
fn seed_000_export_2x3_int() {
    let data = [0, 1, 2, 3, 4, 5];
    let md: HostMdspan<'_, i32, (Const<2>, Const<3>)> = dlmd!(&data, [2, 3]);
    let dl = to_dlpack_tensor(&md);
    let t = dl.get();
    assert_eq!(t.ndim, 2);
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.strides(), Some(&[3, 1][..]));
    assert_eq!(t.dtype, DLDataType::new(DLDataTypeCode::INT, 32, 1));
    assert_eq!(
        t.device,
        DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0
        }
    );
    assert_eq!(t.byte_offset, 0);
    assert_eq!(t.data.cast_const(), data.as_ptr().cast());
}

/// Seed 001: the same tensor imported back and indexed.
#[test]
fn seed_001_import_2x3_int() {
    let mut data = [0, 1, 2, 3, 4, 5];
    let (shape, strides) = ([2, 3], [3, 1]);
    tensor!(let t = &mut data, shape, Some(strides));
    // SAFETY: `t` describes `data`, alive and unwritten for the view's use.
    let md = unsafe { HostMdspan::<i32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap();
    assert_eq!((md.extent(0), md.extent(1)), (2, 3));
    assert_eq!((md.stride(0), md.stride(1)), (3, 1));
    for i in 0..2 {
        for j in 0..3 {
            assert_eq!(md[[i, j]], (i * 3 + j) as i32);
        }
    }
    // SAFETY: as above.
    let right = unsafe { HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(right[[1, 2]], 5);
}

#[test]
fn rank_0() {
    let mut data = [42.0f32];
    tensor!(let t = &mut data, [], None);
    // SAFETY: `t` describes `data`.
    let md = unsafe { HostMdspan::<f32, Dims<0>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(md.size(), 1);
    assert_eq!(md[[]], 42.0);
    assert_eq!(md.as_ptr(), data.as_ptr());
}

#[test]
fn wrong_rank() {
    let mut data = [0i32; 6];
    tensor!(let t = &mut data, [2, 3], Some([3, 1]));
    // SAFETY: `t` describes `data`.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::Rank { expected: 1, found: 2 });
}

#[test]
fn wrong_dtype() {
    let mut data = [0i32; 4];
    tensor!(let t = &mut data, [4], Some([1]));
    // SAFETY: `t` describes `data`.
    let err = unsafe { HostMdspan::<f32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::DataType {
            expected: f32::DTYPE,
            found: i32::DTYPE
        }
    );
}

#[test]
fn wrong_lanes_and_bits() {
    let mut data = [0f32; 4];
    tensor!(let mut t = &mut data, [4], Some([1]));
    // SAFETY (every call below): `t` describes `data`.
    assert!(matches!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<[f32; 2], Dims<1>, LayoutStride>::from_dlpack(&t) },
        Err(ImportError::DataType { .. })
    ));
    t.dtype.bits = 64;
    assert!(matches!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<f32, Dims<1>, LayoutStride>::from_dlpack(&t) },
        Err(ImportError::DataType { .. })
    ));
}

#[test]
fn null_data() {
    tensor!(let mut t = &mut [0i32; 4], [4], Some([1]));
    t.data = ptr::null_mut();
    // SAFETY: `shape` and `strides` are valid; `data` is never read.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::NullData { elements: 4 });
}

/// CCCL refuses NULL data even with no elements (NVIDIA/cccl#11605); producers emit it for
/// empty tensors, and dlmd accepts it.
#[test]
fn null_data_with_zero_elements_is_accepted() {
    let (shape, strides) = ([0i64, 3], [3i64, 1]);
    tensor!(let mut t = &mut [0i32; 0], shape, Some(strides));
    t.data = ptr::null_mut();
    // SAFETY: `shape` and `strides` are valid; there are no elements.
    let md = unsafe { HostMdspan::<i32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert!(md.is_empty());
    assert_eq!(md.iter().count(), 0);
}

#[test]
fn null_shape() {
    tensor!(let mut t = &mut [0i32; 4], [4], None);
    t.shape = ptr::null_mut();
    // SAFETY: nothing behind NULL is read.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::NullShape { ndim: 1 });
}

#[test]
fn negative_shape() {
    tensor!(let t = &mut [0i32; 4], [-3], Some([1]));
    // SAFETY: `t` describes its arrays.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::NegativeExtent { dim: 0, extent: -3 });
}

#[test]
fn wrong_device_type_host() {
    tensor!(let mut t = &mut [0i32; 4], [4], Some([1]));
    t.device = DLDevice::cuda(0);
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Space(SpaceError::DeviceType {
            expected: "host",
            found: DLDeviceType::CUDA
        })
    );
}

#[test]
fn wrong_device_type_device() {
    tensor!(let t = &mut [0i32; 4], [4], Some([1]));
    // SAFETY: refused before any data access.
    let err = unsafe { DeviceMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Space(SpaceError::DeviceType {
            expected: "CUDA device",
            found: DLDeviceType::CPU
        })
    );
}

#[test]
fn wrong_device_type_managed() {
    tensor!(let t = &mut [0i32; 4], [4], Some([1]));
    // SAFETY: refused before any data access.
    let err = unsafe { ManagedMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Space(SpaceError::DeviceType {
            expected: "CUDA managed",
            found: DLDeviceType::CPU
        })
    );
}

#[test]
fn negative_device_ordinal() {
    tensor!(let mut t = &mut [0i32; 4], [4], Some([1]));
    t.device = DLDevice::cuda(-1);
    // SAFETY: refused before any data access.
    let err = unsafe { DeviceMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::Space(SpaceError::DeviceOrdinal { ordinal: -1 }));
}

#[test]
fn device_views_keep_the_ordinal() {
    tensor!(let mut t = &mut [0i32; 4], [4], Some([1]));
    t.device = DLDevice::cuda(3);
    // SAFETY: a device view never dereferences on the host; the pointer only travels.
    let md = unsafe { DeviceMdspan::<i32, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(md.space().ordinal(), 3);
    assert_eq!(to_dlpack_tensor(&md).get().device, DLDevice::cuda(3));
}

#[test]
fn stride_mismatch_layout_right() {
    tensor!(let t = &mut [0f32; 6], [2, 3], Some([1, 2]));
    // SAFETY: `t` describes its arrays.
    let err = unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Layout(LayoutError::StrideMismatch {
            dim: 1,
            stride: 2,
            expected: 1,
            layout: "layout_right"
        })
    );
    assert_eq!(
        err.to_string(),
        "stride 2 of dimension 1 does not match layout_right, which needs 1"
    );
}

#[test]
fn stride_mismatch_layout_left() {
    tensor!(let t = &mut [0f32; 6], [2, 3], Some([3, 1]));
    // SAFETY: `t` describes its arrays.
    let err = unsafe { HostMdspan::<f32, Dims<2>, LayoutLeft>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Layout(LayoutError::StrideMismatch {
            dim: 0,
            stride: 3,
            expected: 1,
            layout: "layout_left"
        })
    );
}

/// Strides of dimensions of extent 1 carry no information; numpy and PyTorch emit any value.
#[test]
fn strides_of_unit_dimensions_are_ignored() {
    let mut data = [0f32, 1., 2.];
    tensor!(let t = &mut data, [1, 3], Some([77, 1]));
    // SAFETY (both): `t` describes `data`.
    assert_eq!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap()[[0, 2]],
        2.
    );
    assert_eq!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<f32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap()[[0, 1]],
        1.
    );
}

#[test]
fn zero_stride_layout_stride() {
    tensor!(let t = &mut [0i32; 6], [2, 3], Some([0, 1]));
    // SAFETY: `t` describes its arrays.
    let err = unsafe { HostMdspan::<i32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::Layout(LayoutError::NonPositiveStride { dim: 0, stride: 0 })
    );
}

#[test]
fn null_strides_of_dlpack_1_2_are_refused() {
    let mut data = [0f32; 6];
    let shape = [2, 3];
    tensor!(let t = &mut data, shape, None);
    let v12 = DLPackVersion { major: 1, minor: 2 };
    // SAFETY: `t` describes `data`.
    let err = unsafe { HostMdspan::<f32, dlmd::Dims<2>>::from_dlpack_with_version(&t, Some(v12)) }.unwrap_err();
    assert_eq!(err, ImportError::NullStrides { version: v12 });
    // SAFETY: as above.
    let err = unsafe { HostMdspan::<f32, dlmd::Dims<2>>::from_dlpack_with_version(&t, Some(DLPackVersion::CURRENT)) };
    assert!(matches!(err, Err(ImportError::NullStrides { .. })));
}

#[test]
fn null_strides_of_older_or_unknown_versions_are_row_major() {
    let mut data = [0f32, 1., 2., 3., 4., 5.];
    let shape = [2, 3];
    tensor!(let t = &mut data, shape, None);
    // SAFETY (all): `t` describes `data`.
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let md = unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(md[[1, 0]], 3.);
    let v11 = Some(DLPackVersion { major: 1, minor: 1 });
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let md = unsafe { HostMdspan::<f32, dlmd::Dims<2>, LayoutStride>::from_dlpack_with_version(&t, v11) }.unwrap();
    assert_eq!(md.stride(0), 3);
    assert!(matches!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<f32, Dims<2>, LayoutLeft>::from_dlpack(&t) },
        Err(ImportError::Layout(LayoutError::StrideMismatch { .. }))
    ));
}

#[test]
fn misaligned_data() {
    #[repr(align(16))]
    struct Buffer([u8; 20]);
    let mut buffer = Buffer([0; 20]);
    let (mut shape, mut strides) = ([3i64], [1i64]);
    let t = DLTensor {
        data: buffer.0.as_mut_ptr().wrapping_add(1).cast(),
        device: DLDevice::CPU,
        ndim: 1,
        dtype: i32::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert!(matches!(err, ImportError::Misaligned { alignment: 4, .. }), "{err:?}");
}

#[test]
fn byte_offset_not_a_multiple_of_the_element_size() {
    tensor!(let mut t = &mut [0i32; 4], [3], Some([1]));
    t.byte_offset = 2;
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::ByteOffset {
            byte_offset: 2,
            element_size: 4
        }
    );
}

#[test]
fn byte_offset_moves_element_zero() {
    let mut data = [10i32, 11, 12, 13];
    tensor!(let mut t = &mut data, [3], Some([1]));
    t.byte_offset = 4;
    // SAFETY: elements 1..4 of `data`.
    let md = unsafe { HostMdspan::<i32, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(md[[0]], 11);
    assert_eq!(md[[2]], 13);
}

#[test]
fn overlapping_strides_refused_for_mutable_views_only() {
    let mut data = [0i32; 4];
    tensor!(let t = &mut data, [3, 2], Some([1, 1]));
    // SAFETY (both): `t` describes `data`.
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    assert!(unsafe { HostMdspan::<i32, Dims<2>, LayoutStride>::from_dlpack(&t) }.is_ok());
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let err = unsafe { HostMdspanMut::<i32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::Layout(LayoutError::Overlapping));
}

#[test]
fn negative_strides_need_the_relaxed_layout() {
    let mut data = [0i32, 1, 2, 3, 4, 5];
    tensor!(let mut t = &mut data, [2, 3], Some([-3, 1]));
    t.byte_offset = 12;
    // SAFETY (all): `t` describes `data` from element 3, rows going backwards.
    assert_eq!(
        // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
        unsafe { HostMdspan::<i32, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap_err(),
        ImportError::Layout(LayoutError::NonPositiveStride { dim: 0, stride: -3 })
    );
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let md = unsafe { HostMdspan::<i32, Dims<2>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap();
    assert_eq!(md[[0, 0]], 3);
    assert_eq!(md[[1, 2]], 2);
    // Exported again, the offset to element 0 is kept.
    let dl = to_dlpack_tensor(&md);
    let back = dl.get();
    assert_eq!(back.data.cast_const(), data.as_ptr().cast());
    assert_eq!(back.byte_offset, 12);
}

/// Negative strides reaching below address 0 are refused without forming the pointer.
#[test]
fn negative_strides_whose_offset_does_not_cover_them() {
    let (mut shape, mut strides) = ([4i64], [-1i64]);
    let t = DLTensor {
        data: 8 as *mut _,
        device: DLDevice::CPU,
        ndim: 1,
        dtype: i32::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutStrideRelaxed>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::AddressOverflow);
}

#[test]
fn element_count_overflowing_isize() {
    tensor!(let mut t = &mut [0u8; 4], [1 << 40, 1 << 40], Some([1 << 40, 1]));
    t.dtype = u8::DTYPE;
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<u8, Dims<2>, LayoutStride>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::Layout(LayoutError::SpanOverflow));
}

#[test]
fn byte_span_overflowing_isize() {
    tensor!(let t = &mut [0u64; 4], [1 << 61], Some([1]));
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<u64, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::Layout(LayoutError::SpanOverflow));
}

#[test]
fn static_extents_are_checked_on_import() {
    let mut data = [0i32; 6];
    tensor!(let t = &mut data, [2, 3], Some([3, 1]));
    // SAFETY (both): `t` describes `data`.
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let md = unsafe { HostMdspan::<i32, (Const<2>, Const<3>)>::from_dlpack(&t) }.unwrap();
    assert_eq!(md.extents(), &(Const, Const));
    // SAFETY: `t` describes live arrays of this test; refused tensors are never read.
    let err = unsafe { HostMdspan::<i32, (Const<3>, Const<2>)>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(
        err,
        ImportError::StaticExtent(dlmd::extents::ExtentsError::StaticMismatch {
            dim: 0,
            expected: 3,
            found: 2
        })
    );
}

#[test]
fn bool_bytes_must_be_zero_or_one() {
    let mut data = [1u8, 0, 2, 1];
    let (mut shape, mut strides) = ([4i64], [1i64]);
    let t = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: DLDevice::CPU,
        ndim: 1,
        dtype: bool::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: `t` describes `data`; its bytes are checked before any is read as `bool`.
    let err = unsafe { HostMdspan::<bool, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err, ImportError::InvalidBool { offset: 2, value: 2 });
    // SAFETY: `t.data` points at `data`'s 4 bytes; writing through it keeps `t` valid.
    unsafe { t.data.cast::<u8>().wrapping_add(2).write(1) };
    // SAFETY: as above.
    let md = unsafe { HostMdspan::<bool, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap();
    assert_eq!(md.iter().filter(|&&b| b).count(), 3);
}

#[test]
fn unknown_device_types_are_reported_by_number() {
    tensor!(let mut t = &mut [0i32; 4], [4], Some([1]));
    t.device.device_type = DLDeviceType(77);
    // SAFETY: refused before any data access.
    let err = unsafe { HostMdspan::<i32, Dims<1>, LayoutRight>::from_dlpack(&t) }.unwrap_err();
    assert_eq!(err.to_string(), "device type DLDeviceType(77) cannot back a host view");
}

#[test]
fn every_error_reads_as_a_sentence() {
    let errors = [
        ImportError::Rank { expected: 1, found: -2 },
        ImportError::NullData { elements: 4 },
        ImportError::NullShape { ndim: 3 },
        ImportError::NegativeExtent { dim: 1, extent: -1 },
        ImportError::ByteOffset {
            byte_offset: 2,
            element_size: 4,
        },
        ImportError::Misaligned {
            address: 0x1001,
            alignment: 4,
        },
        ImportError::NullStrides {
            version: DLPackVersion::CURRENT,
        },
        ImportError::AddressOverflow,
        ImportError::InvalidBool { offset: 0, value: 9 },
        ImportError::DataType {
            expected: f32::DTYPE,
            found: i32::DTYPE,
        },
    ];
    for e in errors {
        let text = e.to_string();
        assert!(text.len() > 20 && !text.contains("{"), "{text}");
    }
    assert_eq!(
        ImportError::DataType {
            expected: f32::DTYPE,
            found: i32::DTYPE
        }
        .to_string(),
        "data type int32 (code 0, bits 32, lanes 1) does not match the element type's float32"
    );
}
