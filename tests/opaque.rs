//! Views of memory on devices dlmd keeps opaque (oneAPI, ROCm, Metal…): exported and imported
//! with the device's type and id, checked as device views are, never read on the host.

use dlmd::dlpack::{DLDevice, DLDeviceType, DLManagedTensorVersioned, DLTensor};
use dlmd::extents::Extents as _;
use dlmd::layout::LayoutError;
use dlmd::managed::{ManagedTensor, export_with};
use dlmd::space::{
    Ascend, DeviceKind, ExtDev, Hexagon, Maia, MemorySpace, Metal, OneApi, OpenCl, Rocm, RocmHost, SpaceError, Tpu,
    TpuHost, Trn, Vpi, Vulkan, WebGpu,
};
use dlmd::{Aliased, Dims, ImportError, LayoutRight, LayoutStride, Mdspan, Opaque, OpaqueMdspan, to_dlpack_tensor};
use dlmd::{HostMdspan, HostMdspanAliased, OpaqueMdspanMut};
use dlmd_tests::tensor;

/// A 2×3 view of `data` in the opaque space of kind `K`, device `id` (the memory is host memory
/// here, standing in for device memory: nothing reads it through the view).
fn opaque_view<K: DeviceKind>(data: &mut [f32; 6], id: i32) -> OpaqueMdspan<'_, f32, Dims<2>, K> {
    let mapping = <LayoutRight as dlmd::layout::Layout>::Mapping::new(Dims::new([2, 3])).unwrap();
    // SAFETY: `data` holds the 6 elements the mapping reaches and outlives the view.
    unsafe { Mdspan::from_raw_parts(data.as_mut_ptr(), mapping, Opaque::new(id)) }
}

fn round_trip<K: DeviceKind>() {
    let mut data = [0.0f32; 6];
    let ptr = data.as_ptr();
    let view = opaque_view::<K>(&mut data, 3);
    assert_eq!(
        view.space().device(),
        DLDevice {
            device_type: K::DEVICE_TYPE,
            device_id: 3
        }
    );
    let exported = to_dlpack_tensor(&view);
    let t = &*exported.get();
    assert_eq!(
        (t.device.device_type, t.device.device_id),
        (K::DEVICE_TYPE, 3),
        "{}",
        K::NAME
    );
    // SAFETY: the tensor describes `data`, alive and unchanged for this scope.
    let back = unsafe { OpaqueMdspan::<f32, Dims<2>, K, LayoutRight>::from_dlpack(t) }.unwrap();
    assert_eq!((back.as_ptr(), back.space().id()), (ptr, 3));
    assert_eq!(back.extents().to_array(), [2, 3]);
    // SAFETY: as above.
    let refused = unsafe { HostMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(t) };
    if K::DEVICE_TYPE == DLDeviceType::ROCM_HOST {
        // Pinned ROCm host memory is host memory too, as numpy reads it.
        assert!(refused.is_ok());
    } else {
        assert_eq!(
            refused.unwrap_err(),
            ImportError::Space(SpaceError::DeviceType {
                expected: "host",
                found: K::DEVICE_TYPE
            })
        );
    }
}

#[test]
fn every_opaque_kind_round_trips_with_its_device_type_and_id() {
    round_trip::<OneApi>();
    round_trip::<Rocm>();
    round_trip::<RocmHost>();
    round_trip::<Metal>();
    round_trip::<Vulkan>();
    round_trip::<OpenCl>();
    round_trip::<WebGpu>();
    round_trip::<Hexagon>();
    round_trip::<Maia>();
    round_trip::<Trn>();
    round_trip::<Tpu>();
    round_trip::<TpuHost>();
    round_trip::<Ascend>();
    round_trip::<Vpi>();
    round_trip::<ExtDev>();
}

#[test]
fn device_type_values_of_the_kinds() {
    let all = [
        (OneApi::DEVICE_TYPE, 14),
        (Rocm::DEVICE_TYPE, 10),
        (RocmHost::DEVICE_TYPE, 11),
        (Metal::DEVICE_TYPE, 8),
        (Vulkan::DEVICE_TYPE, 7),
        (OpenCl::DEVICE_TYPE, 4),
        (WebGpu::DEVICE_TYPE, 15),
        (Hexagon::DEVICE_TYPE, 16),
        (Maia::DEVICE_TYPE, 17),
        (Trn::DEVICE_TYPE, 18),
        (Tpu::DEVICE_TYPE, 19),
        (TpuHost::DEVICE_TYPE, 20),
        (Ascend::DEVICE_TYPE, 21),
        (Vpi::DEVICE_TYPE, 9),
        (ExtDev::DEVICE_TYPE, 12),
    ];
    for (device_type, value) in all {
        assert_eq!(device_type.0, value);
    }
}

#[test]
fn imports_check_the_kind_and_the_id() {
    let mut data = [1.0f32; 6];
    let mut shape = [2i64, 3];
    let mut strides = [3i64, 1];
    let mut t = tensor(&mut data, &mut shape, Some(&mut strides));
    t.device = DLDevice {
        device_type: DLDeviceType::ONE_API,
        device_id: 0,
    };
    // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
    assert!(unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutRight>::from_dlpack(&t) }.is_ok());
    assert_eq!(
        // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
        unsafe { OpaqueMdspan::<f32, Dims<2>, Rocm, LayoutRight>::from_dlpack(&t) }.unwrap_err(),
        ImportError::Space(SpaceError::DeviceType {
            expected: "ROCm",
            found: DLDeviceType::ONE_API
        })
    );
    // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
    assert!(unsafe { dlmd::DeviceMdspan::<f32, Dims<2>, LayoutRight>::from_dlpack(&t) }.is_err());
    t.device.device_id = -1;
    assert_eq!(
        // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
        unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutRight>::from_dlpack(&t) }.unwrap_err(),
        ImportError::Space(SpaceError::DeviceOrdinal { ordinal: -1 })
    );
    // The layout checks of every import: the rank, the layout, and overlap for writing.
    t.device.device_id = 2;
    assert!(matches!(
        // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
        unsafe { OpaqueMdspan::<f32, Dims<3>, OneApi, LayoutRight>::from_dlpack(&t) },
        Err(ImportError::Rank { .. })
    ));
    strides = [1, 2];
    let t = DLTensor {
        strides: strides.as_mut_ptr(),
        ..t
    };
    assert!(matches!(
        // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
        unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutRight>::from_dlpack(&t) },
        Err(ImportError::Layout(LayoutError::StrideMismatch { .. }))
    ));
    // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
    let strided = unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutStride>::from_dlpack(&t) }.unwrap();
    assert_eq!((strided.stride(0), strided.stride(1), strided.space().id()), (1, 2, 2));
    strides = [1, 1];
    let t = DLTensor {
        strides: strides.as_mut_ptr(),
        ..t
    };
    // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
    assert!(unsafe { OpaqueMdspan::<f32, Dims<2>, OneApi, LayoutStride>::from_dlpack(&t) }.is_ok());
    assert!(matches!(
        // SAFETY: the tensor describes arrays of this test, alive and unchanged while viewed.
        unsafe { OpaqueMdspanMut::<f32, Dims<2>, OneApi, LayoutStride>::from_dlpack(&t) },
        Err(ImportError::Layout(LayoutError::Overlapping))
    ));
}

#[test]
fn owned_exports_of_opaque_memory_carry_the_device() {
    // An owner of "device" memory (host memory standing in), exported on oneAPI device 1.
    let owner = vec![0u16; 12];
    let device = Opaque::<OneApi>::new(1).device();
    // SAFETY: the test's consumer only reads the tensor's fields, never the memory (a stand-in
    // for oneAPI device memory).
    let raw = unsafe { export_with::<DLManagedTensorVersioned, _, _>(owner, Dims::new([3, 4]), 0, device) }.unwrap();
    // SAFETY: dlmd just made the tensor and hands it over.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.dl_tensor().device, device);
    let view = tensor
        .view::<Mdspan<'_, u16, Dims<2>, LayoutRight, Opaque<OneApi>, Aliased>>()
        .unwrap();
    assert_eq!((view.space(), view.extents().to_array()), (Opaque::new(1), [3, 4]));
    assert!(
        tensor
            .view::<HostMdspanAliased<'_, u16, Dims<2>, LayoutRight>>()
            .is_err()
    );
    // Imports of shared memory are aliased views, as for every space.
    let _: Mdspan<'_, u16, Dims<2>, LayoutRight, Opaque<OneApi>, Aliased> = view;
}
