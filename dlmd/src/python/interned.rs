//! What the Python side keeps for the interpreter's lifetime: the interned names and
//! arguments every import passes ([`ConsumerArgs`]), and objects recognised by address with a
//! value worked out from each once ([`Remembered`]: `max_version` tuples, keyword names, type
//! objects' exchange tables and math bits).

use crate::dlpack::DLPackExchangeAPI;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyTuple};
use std::sync::OnceLock;

/// The names and arguments the consumer passes on every import, made once per interpreter.
pub(super) struct ConsumerArgs {
    pub(super) dlpack: Py<PyString>,
    pub(super) dlpack_device: Py<PyString>,
    pub(super) exchange_api: Py<PyString>,
    pub(super) exchange_api_1_2: Py<PyString>,
    pub(super) requires_grad: Py<PyString>,
    pub(super) max_version_name: Py<PyString>,
    /// `(1, 3)`.
    pub(super) max_version: Py<PyTuple>,
    /// `("max_version",)`.
    pub(super) max_version_kw: Py<PyTuple>,
    /// `("max_version", "stream")`.
    pub(super) max_version_stream_kw: Py<PyTuple>,
}

impl ConsumerArgs {
    pub(super) fn get(py: Python<'_>) -> PyResult<&Self> {
        static ARGS: PyOnceLock<ConsumerArgs> = PyOnceLock::new();
        ARGS.get_or_try_init(py, || {
            Ok(Self {
                dlpack: PyString::intern(py, "__dlpack__").unbind(),
                dlpack_device: PyString::intern(py, "__dlpack_device__").unbind(),
                exchange_api: PyString::intern(py, DLPackExchangeAPI::ATTRIBUTE).unbind(),
                exchange_api_1_2: PyString::intern(py, DLPackExchangeAPI::ATTRIBUTE_1_2).unbind(),
                requires_grad: PyString::intern(py, "requires_grad").unbind(),
                max_version_name: PyString::intern(py, "max_version").unbind(),
                max_version: PyTuple::new(py, [1u32, 3u32])?.unbind(),
                max_version_kw: PyTuple::new(py, [PyString::intern(py, "max_version")])?.unbind(),
                max_version_stream_kw: PyTuple::new(
                    py,
                    [PyString::intern(py, "max_version"), PyString::intern(py, "stream")],
                )?
                .unbind(),
            })
        })
    }
}

/// Objects seen before, recognised by address, each with a value worked out from it once.
///
/// Every object remembered keeps a reference for good, so its address is never another
/// object's. Only objects whose value, as far as it is worked out here, cannot change are
/// remembered: immutable ones (strings, tuples of `int`s, tuples of strings), and type objects,
/// whose exchange table attribute a producer publishes once for the process (the consumer's
/// table cache) and whose methods are defined once (torch's math bits): the same address means
/// the same value. First come, first kept: at most `N`.
pub(super) struct Remembered<T, const N: usize>([OnceLock<(usize, T)>; N]);

impl<T: Copy, const N: usize> Remembered<T, N> {
    pub(super) const fn new() -> Self {
        Self([const { OnceLock::new() }; N])
    }

    /// The value remembered for the object at `obj`.
    pub(super) fn find(&self, obj: *mut ffi::PyObject) -> Option<T> {
        for entry in &self.0 {
            match entry.get() {
                Some(&(address, value)) if address == obj as usize => return Some(value),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// Remembers `value` for `obj`, an immutable object, if there is room.
    pub(super) fn remember(&self, obj: &Bound<'_, PyAny>, value: T) {
        for entry in &self.0 {
            if entry.get().is_none() && entry.set((obj.as_ptr() as usize, value)).is_ok() {
                // The reference that keeps the address this object's, never released.
                core::mem::forget(obj.clone());
                return;
            }
        }
    }
}
