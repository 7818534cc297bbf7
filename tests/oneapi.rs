//! The oneAPI importer without a oneAPI runtime: clear errors, never a crash. (With dpnp and a
//! SYCL device, `examples/python-memarray/tests/test_oneapi.py` runs the real thing.)

use dlmd::LayoutRight;
use dlmd::dlpack::{DLDevice, DLDeviceType};
use dlmd::oneapi::{OneApiError, import_oneapi, usm_kind};
use dlmd_tests::tensor;

#[test]
fn without_the_runtime_every_query_says_so() {
    // A library that cannot be there: the error names it and says what to do.
    // SAFETY: the variable is set before anything in this test process reads it, and no other
    // thread reads the environment meanwhile.
    unsafe { std::env::set_var("DLMD_DPCTL_LIBRARY", "/nonexistent/libDPCTLSyclInterface.so") };
    assert!(!dlmd::oneapi::runtime_available());
    let error = usm_kind(0x10_0000, 0).unwrap_err();
    assert!(matches!(error, OneApiError::NoRuntime(_)), "{error}");
    assert!(error.to_string().contains("import dpctl"), "{error}");
    assert!(matches!(
        dlmd::oneapi::space_of(0x10_0000),
        Err(OneApiError::NoRuntime(_))
    ));

    let mut data = [1.0f32; 4];
    let mut shape = [4i64];
    let mut strides = [1i64];
    let mut t = tensor(&mut data, &mut shape, Some(&mut strides));
    // SAFETY: the tensor describes `data`, alive and unchanged here.
    let cpu = unsafe { import_oneapi::<f32, 1, LayoutRight>(&t) }.unwrap_err();
    assert!(matches!(cpu, OneApiError::NotOneApi(DLDeviceType::CPU)), "{cpu}");
    t.device = DLDevice {
        device_type: DLDeviceType::ONE_API,
        device_id: 0,
    };
    // SAFETY: as above.
    let labelled = unsafe { import_oneapi::<f32, 1, LayoutRight>(&t) }.unwrap_err();
    assert!(matches!(labelled, OneApiError::NoRuntime(_)), "{labelled}");
}
