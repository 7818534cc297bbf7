// Every consumer of DLPack's C exchange table hands the table's `current_work_stream` to the
// CUDA driver, which dereferences it: the type that publishes the table promises a valid
// stream, so the trait is `unsafe` to implement. A safe impl that could return any address is
// refused.
use dlmd::dlpack::DLDevice;
use dlmd::managed::ManagedTensor;
use dlmd::python::pyo3::prelude::*;
use dlmd::python::{DlpackExchange, DlpackExport, DlpackExporter, DlpackRequest, TensorPrototype};
use std::ffi::c_void;

#[pyclass(crate = "dlmd::python::pyo3")]
struct Array;

impl DlpackExporter for Array {
    fn dlpack(_: &Bound<'_, Self>, _: &DlpackRequest) -> PyResult<DlpackExport> {
        unimplemented!()
    }
}

impl DlpackExchange for Array {
    fn current_work_stream(_: Python<'_>, _: DLDevice) -> PyResult<*mut c_void> {
        Ok(0x1000 as *mut c_void)
    }
    fn allocate<'py>(py: Python<'py>, _: &TensorPrototype<'_>) -> PyResult<Bound<'py, Self>> {
        Bound::new(py, Array)
    }
    fn from_tensor<'py>(py: Python<'py>, _: ManagedTensor) -> PyResult<Bound<'py, Self>> {
        Bound::new(py, Array)
    }
}

fn main() {}
