//! DLPack for Python through pyo3: a producer helper for `__dlpack__`, DLPack 1.3's C exchange
//! table both ways, and a consumer, [`from_dlpack`], following the Python array API standard.
//!
//! Producer: a `#[pyclass]` implements [`DlpackExporter`] and gets its `__dlpack__` from
//! [`add_dlpack_method`] (or forwards the arguments of its own `#[pymethods]` `__dlpack__` to
//! [`DlpackRequest::parse`]), and hands its data to [`export_cpu`], which picks the managed
//! tensor's kind (legacy for consumers that ask for no version or version 0, versioned 1.3 for
//! version 1), copies only for `copy=True` (setting `IS_COPIED`), refuses a copy it would need
//! with `copy=False`, and refuses devices CPU data cannot reach with `BufferError` (and a
//! stream, which CPU data has none of, with `ValueError`, as numpy does).
//!
//! The capsule's destructor calls the tensor's deleter only while no consumer took the tensor
//! (renamed the capsule `used_…`), keeps any exception in flight, and frees unconsumed exports
//! while the interpreter shuts down too.
//!
//! The C exchange table: a [`DlpackExchange`] type publishes its table as the type attribute
//! `__dlpack_c_exchange_api__` with [`publish_exchange_api`] (or, lending its data without an
//! export too, [`publish_exchange_api_borrowing`]); C consumers such as tvm-ffi then take its
//! objects through direct calls. The entries never unwind into C and check every pointer.
//!
//! Consumer: [`from_dlpack`] and its variants use the table of `type(obj)` where it publishes
//! one (looked up once per type; [`set_exchange_api_enabled`] turns that off), and otherwise
//! ask `__dlpack_device__`, call `__dlpack__(max_version=(1, 3))` (again without arguments on
//! `TypeError`, for producers that predate it), check the capsule's name and version, rename it
//! `used_…` and return the owning [`ManagedTensor`](crate::managed::ManagedTensor), whose views
//! check everything else. [`with_dlpack_borrowed`] lends the tensor without an allocation, and
//! [`from_dlpack_work_stream`] pairs it with the producer's current work stream. Errors are the
//! array API's: `AttributeError` for an object without `__dlpack__` or `__dlpack_device__`,
//! `BufferError` for data that cannot be imported as asked (an
//! [`ImportError`](crate::import::ImportError) converts to one, or to `ValueError` for a
//! malformed tensor).
//!
//! The module is a package: `request` (the arguments of `__dlpack__`), `method` (the fast
//! `__dlpack__` of [`DlpackExporter`]), `producer` ([`export_cpu`], [`export_cuda`]), `capsule`
//! (wrapping and taking capsules of either managed-tensor kind), `exchange` (the C exchange
//! table's producer side), `keep_alive` ([`PyKeepAlive`]), `consumer` ([`from_dlpack`]) and `math_bits` (torch's lazily
//! negated and conjugated views, refused by every import). CUDA
//! stream ordering is [`crate::cuda`]'s.

mod capsule;
mod consumer;
mod exchange;
mod interned;
mod keep_alive;
mod math_bits;
mod method;
mod producer;
mod request;
mod table;
#[cfg(feature = "xla")]
mod xla;

pub use capsule::{capsule, take_capsule};
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use consumer::import_for_kernel;
pub use consumer::{
    FromDlpack, LentTensor, WorkStream, cpu_device, from_dlpack, from_dlpack_on_stream, from_dlpack_with,
    from_dlpack_work_stream, with_dlpack_borrowed,
};
pub use exchange::{
    DlpackBorrowedExport, DlpackExchange, TensorPrototype, publish_exchange_api, publish_exchange_api_borrowing,
};
pub use keep_alive::PyKeepAlive;
pub use method::{DlpackExporter, add_dlpack_method};
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use producer::export_cuda;
pub use producer::{DlpackExport, export_cpu};
/// The pyo3 these bindings are built on, for code that must name the same version.
pub use pyo3;
pub use request::DlpackRequest;
pub use table::{exchange_api_enabled, exchange_table_of, set_exchange_api_enabled};
#[cfg(feature = "xla")]
#[cfg_attr(docsrs, doc(cfg(feature = "xla")))]
pub use xla::xla_capsule;

/// An import refused, as the Python array API raises it: `BufferError` for data that is valid
/// but cannot be viewed as asked (its device, data type, rank, extents, layout, or a read-only
/// tensor viewed for writing), `ValueError` for a malformed tensor.
impl From<crate::import::ImportError> for pyo3::PyErr {
    fn from(e: crate::import::ImportError) -> Self {
        use crate::import::ImportError as E;
        match e {
            E::Space(_)
            | E::Rank { .. }
            | E::DataType { .. }
            | E::StaticExtent(_)
            | E::Layout(_)
            | E::ReadOnly
            | E::WritesRefused(_)
            | E::PackedSubbyte { .. }
            | E::PaddedSubbyte { .. } => pyo3::exceptions::PyBufferError::new_err(e.to_string()),
            _ => pyo3::exceptions::PyValueError::new_err(e.to_string()),
        }
    }
}

/// An index outside a view, as Python raises it: `IndexError`, with the dimension, the index and
/// the extent ([`Mdspan::checked_load`](crate::Mdspan::checked_load),
/// [`Mdspan::checked_store`](crate::Mdspan::checked_store)).
impl From<crate::view::OutOfBounds> for pyo3::PyErr {
    fn from(e: crate::view::OutOfBounds) -> Self {
        pyo3::exceptions::PyIndexError::new_err(e.to_string())
    }
}

/// CUDA work refused or failed, as Python sees it: the import's own error for a tensor that does
/// not fit the view asked for, `BufferError` for everything else (a launch refused, a stream
/// that is none, the driver failing), with the message.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
impl From<crate::cuda::CudaError> for pyo3::PyErr {
    fn from(e: crate::cuda::CudaError) -> Self {
        match e {
            crate::cuda::CudaError::Import(e) => e.into(),
            e => pyo3::exceptions::PyBufferError::new_err(e.to_string()),
        }
    }
}
