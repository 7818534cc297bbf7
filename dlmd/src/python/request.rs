//! The arguments of `__dlpack__`, parsed and checked once for every producer.

use super::interned::Remembered;
use crate::dlpack::{DLDevice, DLDeviceType};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};

/// The arguments of `__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`,
/// checked. The default is a bare `__dlpack__()`: a legacy tensor of the data where it is,
/// with no stream and copied only if needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlpackRequest {
    /// The stream, as the consumer passed it (`None` when not given).
    pub stream: Option<isize>,
    /// Whether the consumer reads versioned capsules (`max_version` with major ≥ 1).
    pub versioned: bool,
    /// The device the consumer wants the data on, if it said.
    pub dl_device: Option<DLDevice>,
    /// `Some(true)`: copy; `Some(false)`: never copy; `None`: copy only if needed.
    pub copy: Option<bool>,
    /// Set for the entries of the C exchange table ([`DlpackRequest::exchange`]): no stream
    /// ordering at all, because that consumer queues its work on the producer's current work
    /// stream. `__dlpack__` never sets it.
    pub no_sync: bool,
}

impl DlpackRequest {
    /// Reads the keyword arguments of `__dlpack__`.
    pub fn parse(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Self> {
        let stream = match stream {
            // `bool` is an `int` to Python, but `stream=True` names no stream.
            Some(s) if s.is_instance_of::<PyBool>() => {
                return Err(PyTypeError::new_err("stream must be None or an integer, not a bool"));
            }
            Some(s) if !s.is_none() => Some(
                s.extract::<isize>()
                    .map_err(|_| PyTypeError::new_err("stream must be None or an integer"))?,
            ),
            _ => None,
        };
        let versioned = match max_version {
            Some(v) if !v.is_none() => match MAX_VERSIONS.find(v.as_ptr()) {
                Some(versioned) => versioned,
                None => max_version_versioned(v)?,
            },
            _ => false,
        };
        let dl_device =
            match dl_device {
                Some(d) if !d.is_none() => Some(device_pair(d).ok_or_else(|| {
                    PyTypeError::new_err("dl_device must be None or a tuple (device_type, device_id)")
                })?),
                _ => None,
            };
        Ok(Self {
            stream,
            versioned,
            dl_device,
            copy,
            no_sync: false,
        })
    }

    /// What the C exchange table asks of an exporter: a versioned tensor of the data where it
    /// is, never a copy, and no stream ordering.
    pub const fn exchange() -> Self {
        Self {
            stream: None,
            versioned: true,
            dl_device: None,
            copy: Some(false),
            no_sync: true,
        }
    }

    /// Checks the request against data on the CPU: only `stream=None` (`ValueError` otherwise,
    /// as numpy raises), and no other device (`BufferError`: a copy to another device is not
    /// something CPU code can make).
    #[inline]
    pub fn check_cpu(&self) -> PyResult<()> {
        if let Some(stream) = self.stream {
            return Err(PyValueError::new_err(format!(
                "stream must be None for CPU data, got {stream}"
            )));
        }
        if let Some(device) = self.dl_device {
            // The CPU is device 0; any other ordinal names no device.
            if device.device_type != DLDeviceType::CPU || device.device_id != 0 {
                let how = if self.copy == Some(false) {
                    "without a copy (copy=False)"
                } else {
                    "by this producer"
                };
                return Err(PyBufferError::new_err(format!(
                    "the data is on the CPU and cannot be exported to device ({}, {}) {how}",
                    device.device_type.0, device.device_id
                )));
            }
        }
        Ok(())
    }
}

/// Whether a `max_version` asks for versioned tensors (major version 1 or more).
pub(super) fn max_version_versioned(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    match int_pair(v) {
        Some((major, minor)) if u32::try_from(major).is_ok() && u32::try_from(minor).is_ok() => {
            let versioned = major >= 1;
            let item_is_int = |i| {
                // SAFETY: `v` is a live tuple of two items (`int_pair` read them); the item is
                // borrowed while `v` lives.
                let item = unsafe { ffi::PyTuple_GetItem(v.as_ptr(), i) };
                // SAFETY: `item` is a live object; the check reads only its type pointer.
                unsafe { ffi::PyLong_CheckExact(item) != 0 }
            };
            // SAFETY: `v` is a live object; the check reads only its type pointer.
            let constant = unsafe { ffi::PyTuple_CheckExact(v.as_ptr()) } != 0 && (0..2).all(item_is_int);
            if constant {
                MAX_VERSIONS.remember(v, versioned);
            }
            Ok(versioned)
        }
        _ => Err(PyTypeError::new_err(
            "max_version must be None or a tuple (major, minor)",
        )),
    }
}

/// A device given as a tuple `(device_type, device_id)` of two `i32`s.
pub(super) fn device_pair(value: &Bound<'_, PyAny>) -> Option<DLDevice> {
    let (device_type, device_id) = int_pair(value)?;
    Some(DLDevice {
        device_type: DLDeviceType(i32::try_from(device_type).ok()?),
        device_id: i32::try_from(device_id).ok()?,
    })
}

/// The two integers of a tuple `(a, b)`, read through the C API (this runs on every exchange);
/// `None` for anything else.
fn int_pair(value: &Bound<'_, PyAny>) -> Option<(i64, i64)> {
    let ptr = value.as_ptr();
    // SAFETY: `ptr` is a live object; the exact check reads only its type pointer.
    if unsafe { ffi::PyTuple_CheckExact(ptr) } == 0 {
        value.cast::<PyTuple>().ok()?;
    }
    // SAFETY: `ptr` is a live tuple; its size and its items, borrowed while it lives, are read
    // with the GIL held. `PyLong_AsLongLong` takes any integer (through `__index__`) and sets
    // an exception for the rest, cleared here.
    if unsafe { ffi::PyTuple_Size(ptr) } != 2 {
        return None;
    }
    let mut pair = [0i64; 2];
    for (i, part) in pair.iter_mut().enumerate() {
        // SAFETY: as above.
        let item = unsafe { ffi::PyTuple_GetItem(ptr, i as ffi::Py_ssize_t) };
        if item.is_null() {
            // SAFETY: as above.
            unsafe { ffi::PyErr_Clear() };
            return None;
        }
        // SAFETY: as above; `item` is a live object.
        *part = unsafe { ffi::PyLong_AsLongLong(item) };
        // SAFETY: as above.
        if *part == -1 && !unsafe { ffi::PyErr_Occurred() }.is_null() {
            // SAFETY: as above.
            unsafe { ffi::PyErr_Clear() };
            return None;
        }
    }
    Some((pair[0], pair[1]))
}

/// `max_version` tuples seen before, with whether they ask for versioned tensors: consumers
/// pass the same constant tuple on every call.
static MAX_VERSIONS: Remembered<bool, 8> = Remembered::new();
