//! DLPack for Python through pyo3: a producer helper for `__dlpack__` and a consumer,
//! [`from_dlpack`], following the Python array API standard.
//!
//! Producer: a `#[pyclass]` implements [`DlpackExporter`] and gets its `__dlpack__` from
//! [`add_dlpack_method`] (or forwards the arguments of its own `#[pymethods]` `__dlpack__` to
//! [`DlpackRequest::parse`]), and hands its data to [`export_cpu`], which picks the capsule kind (`"dltensor"` for consumers
//! that ask for no version or version 0, `"dltensor_versioned"` 1.3 for version 1), copies only
//! for `copy=True` (setting `IS_COPIED`), refuses a copy it would need with `copy=False`, and
//! refuses devices and streams CPU data cannot honour with `BufferError`.
//!
//! The capsule's destructor calls the tensor's deleter only while no consumer took the tensor
//! (renamed the capsule `used_…`), keeps any exception in flight, and frees unconsumed exports
//! while the interpreter shuts down too.
//!
//! Consumer: [`from_dlpack`] asks `__dlpack_device__`, calls
//! `__dlpack__(max_version=(1, 3))` (again without arguments on `TypeError`, for producers that
//! predate it), checks the capsule's name and version, renames it `used_…` and returns the
//! owning [`ManagedTensor`](crate::managed::ManagedTensor), whose views check everything else.
//!
//! The module is a package: `request` (the arguments of `__dlpack__`), `method` (the fast
//! `__dlpack__` of [`DlpackExporter`]), `producer` ([`export_cpu`], [`export_cuda`]), `capsule`
//! (wrapping and taking capsules of either managed-tensor kind), `keep_alive` ([`PyKeepAlive`])
//! and `consumer` ([`from_dlpack`]). CUDA stream ordering is [`crate::cuda`]'s.

mod capsule;
mod consumer;
mod keep_alive;
mod method;
mod producer;
mod request;

pub use capsule::{capsule, take_capsule};
pub use consumer::{cpu_device, from_dlpack, from_dlpack_on_stream};
pub use keep_alive::PyKeepAlive;
pub use method::{DlpackExporter, add_dlpack_method};
pub use producer::export_cpu;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use producer::export_cuda;
pub use request::DlpackRequest;
