//! The DLPack structs have exactly the C layout of `dlpack.h` 1.3 on 64-bit targets.
#![cfg(target_pointer_width = "64")]

use core::mem::{align_of, offset_of, size_of};
use dlmd::dlpack::*;

#[test]
fn versions() {
    assert_eq!((DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION), (1, 3));
    assert_eq!((size_of::<DLPackVersion>(), align_of::<DLPackVersion>()), (8, 4));
    assert_eq!(offset_of!(DLPackVersion, major), 0);
    assert_eq!(offset_of!(DLPackVersion, minor), 4);
}

#[test]
fn enums_are_c_integers() {
    assert_eq!((size_of::<DLDeviceType>(), align_of::<DLDeviceType>()), (4, 4));
    assert_eq!((size_of::<DLDataTypeCode>(), align_of::<DLDataTypeCode>()), (1, 1));
}

#[test]
fn device_type_values() {
    let all = [
        (DLDeviceType::CPU, 1),
        (DLDeviceType::CUDA, 2),
        (DLDeviceType::CUDA_HOST, 3),
        (DLDeviceType::OPEN_CL, 4),
        (DLDeviceType::VULKAN, 7),
        (DLDeviceType::METAL, 8),
        (DLDeviceType::VPI, 9),
        (DLDeviceType::ROCM, 10),
        (DLDeviceType::ROCM_HOST, 11),
        (DLDeviceType::EXT_DEV, 12),
        (DLDeviceType::CUDA_MANAGED, 13),
        (DLDeviceType::ONE_API, 14),
        (DLDeviceType::WEB_GPU, 15),
        (DLDeviceType::HEXAGON, 16),
        (DLDeviceType::MAIA, 17),
        (DLDeviceType::TRN, 18),
        (DLDeviceType::TPU, 19),
        (DLDeviceType::TPU_HOST, 20),
        (DLDeviceType::ASCEND, 21),
    ];
    for (device, value) in all {
        assert_eq!(device.0, value);
        assert!(device.is_known());
    }
    for unknown in [0, 5, 6, 22, -1, i32::MAX] {
        assert!(!DLDeviceType(unknown).is_known(), "{unknown}");
    }
}

#[test]
fn data_type_code_values() {
    let all = [
        (DLDataTypeCode::INT, 0),
        (DLDataTypeCode::UINT, 1),
        (DLDataTypeCode::FLOAT, 2),
        (DLDataTypeCode::OPAQUE_HANDLE, 3),
        (DLDataTypeCode::BFLOAT, 4),
        (DLDataTypeCode::COMPLEX, 5),
        (DLDataTypeCode::BOOL, 6),
        (DLDataTypeCode::FLOAT8_E3M4, 7),
        (DLDataTypeCode::FLOAT8_E4M3, 8),
        (DLDataTypeCode::FLOAT8_E4M3B11FNUZ, 9),
        (DLDataTypeCode::FLOAT8_E4M3FN, 10),
        (DLDataTypeCode::FLOAT8_E4M3FNUZ, 11),
        (DLDataTypeCode::FLOAT8_E5M2, 12),
        (DLDataTypeCode::FLOAT8_E5M2FNUZ, 13),
        (DLDataTypeCode::FLOAT8_E8M0FNU, 14),
        (DLDataTypeCode::FLOAT6_E2M3FN, 15),
        (DLDataTypeCode::FLOAT6_E3M2FN, 16),
        (DLDataTypeCode::FLOAT4_E2M1FN, 17),
        (DLDataTypeCode::BCOMPLEX, 18),
    ];
    for (index, (code, value)) in all.into_iter().enumerate() {
        assert_eq!(code.0, value);
        assert_eq!(usize::from(code.0), index, "codes are dense from 0 to 18");
    }
    assert!(!DLDataTypeCode(19).is_known());
}

#[test]
fn flags() {
    assert_eq!((READ_ONLY, IS_COPIED, IS_SUBBYTE_TYPE_PADDED), (1, 2, 4));
}

#[test]
fn device_layout() {
    assert_eq!((size_of::<DLDevice>(), align_of::<DLDevice>()), (8, 4));
    assert_eq!(offset_of!(DLDevice, device_type), 0);
    assert_eq!(offset_of!(DLDevice, device_id), 4);
}

#[test]
fn data_type_layout() {
    assert_eq!((size_of::<DLDataType>(), align_of::<DLDataType>()), (4, 2));
    assert_eq!(offset_of!(DLDataType, code), 0);
    assert_eq!(offset_of!(DLDataType, bits), 1);
    assert_eq!(offset_of!(DLDataType, lanes), 2);
}

#[test]
fn tensor_layout() {
    assert_eq!((size_of::<DLTensor>(), align_of::<DLTensor>()), (48, 8));
    assert_eq!(offset_of!(DLTensor, data), 0);
    assert_eq!(offset_of!(DLTensor, device), 8);
    assert_eq!(offset_of!(DLTensor, ndim), 16);
    assert_eq!(offset_of!(DLTensor, dtype), 20);
    assert_eq!(offset_of!(DLTensor, shape), 24);
    assert_eq!(offset_of!(DLTensor, strides), 32);
    assert_eq!(offset_of!(DLTensor, byte_offset), 40);
}

#[test]
fn managed_tensor_layout() {
    assert_eq!((size_of::<DLManagedTensor>(), align_of::<DLManagedTensor>()), (64, 8));
    assert_eq!(offset_of!(DLManagedTensor, dl_tensor), 0);
    assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
    assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
}

#[test]
fn managed_tensor_versioned_layout() {
    assert_eq!(
        (
            size_of::<DLManagedTensorVersioned>(),
            align_of::<DLManagedTensorVersioned>()
        ),
        (80, 8)
    );
    assert_eq!(offset_of!(DLManagedTensorVersioned, version), 0);
    assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
    assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
    assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
    assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
}

#[test]
fn deleter_is_a_nullable_c_function_pointer() {
    assert_eq!(size_of::<Option<unsafe extern "C" fn(*mut DLManagedTensor)>>(), 8);
}

#[test]
fn exchange_api_layout() {
    assert_eq!(
        (
            size_of::<DLPackExchangeAPIHeader>(),
            align_of::<DLPackExchangeAPIHeader>()
        ),
        (16, 8)
    );
    assert_eq!(offset_of!(DLPackExchangeAPIHeader, version), 0);
    assert_eq!(offset_of!(DLPackExchangeAPIHeader, prev_api), 8);
    assert_eq!(
        (size_of::<DLPackExchangeAPI>(), align_of::<DLPackExchangeAPI>()),
        (56, 8)
    );
    assert_eq!(offset_of!(DLPackExchangeAPI, header), 0);
    assert_eq!(offset_of!(DLPackExchangeAPI, managed_tensor_allocator), 16);
    assert_eq!(offset_of!(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync), 24);
    assert_eq!(offset_of!(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync), 32);
    assert_eq!(offset_of!(DLPackExchangeAPI, dltensor_from_py_object_no_sync), 40);
    assert_eq!(offset_of!(DLPackExchangeAPI, current_work_stream), 48);
    // Every entry is a nullable C function pointer: one pointer wide, NULL as `None`.
    assert_eq!(size_of::<DLPackManagedTensorAllocator>(), 8);
    assert_eq!(size_of::<DLPackCurrentWorkStream>(), 8);
    assert_eq!(DLPackExchangeAPI::CAPSULE.to_bytes(), b"dlpack_exchange_api");
}
