//! The consumer side of DLPack's C exchange table ([`DLPackExchangeAPI`]), without Python:
//! finding a table dlmd can use through its `prev_api` chain, and calling its entries.
//!
//! A Python type publishes the table's address (`__dlpack_c_exchange_api__`); everything after
//! that address is C. [`resolve`] walks the chain from it to a table of major version 1 and
//! checks its required entries; [`export`], [`lend`] and [`work_stream`] call them and check
//! what comes back. `dlmd::python`'s consumers find the address and the object, and turn an
//! [`EntryError::Status`] into the exception the producer set.
//!
//! ```
//! use dlmd::dlpack::{DLPackExchangeAPIHeader, DLPackVersion};
//! use dlmd::exchange::{Resolved, resolve};
//!
//! // A table of DLPack 2.0 with no older table behind it: not one dlmd reads.
//! let header = Box::leak(Box::new(DLPackExchangeAPIHeader {
//!     version: DLPackVersion { major: 2, minor: 0 },
//!     prev_api: core::ptr::null_mut(),
//! }));
//! // SAFETY: a header that lives for good, with no chain behind it.
//! let found = unsafe { resolve(header) }.unwrap();
//! assert!(matches!(found, Resolved::Unknown(DLPackVersion { major: 2, .. })));
//! ```

use crate::dlpack::{
    DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLPackVersion,
    DLTensor,
};
use crate::managed::{ManagedError, ManagedTensor};
use core::ffi::{c_int, c_void};

/// The most tables a `prev_api` chain is followed through (a longer chain is a loop).
pub const MAX_CHAIN: usize = 16;

/// What a table address leads to.
#[derive(Clone, Copy, Debug)]
pub enum Resolved {
    /// A table of major version 1 with every entry DLPack requires.
    Usable(&'static DLPackExchangeAPI),
    /// No table of major version 1 in the chain: the newest table's version.
    Unknown(DLPackVersion),
}

/// Why a table address was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// No table can be at the address: NULL, the first page, misaligned, or beyond user space.
    #[error("points to {0:#x}, where no exchange table can be")]
    Address(usize),
    /// The table of major version 1 lacks an entry DLPack requires.
    #[error("has no {0}, which DLPack requires")]
    MissingEntry(&'static str),
    /// The chain is longer than [`MAX_CHAIN`]: a loop.
    #[error("links more than {MAX_CHAIN} tables deep, a loop")]
    Loop,
}

/// Why a table entry's answer was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The entry returned a status other than 0 (a Python producer has set an exception).
    #[error("{entry} returned {status}")]
    Status {
        /// The entry.
        entry: &'static str,
        /// What it returned.
        status: c_int,
    },
    /// The owning entry returned 0 and no tensor.
    #[error("managed_tensor_from_py_object_no_sync returned 0 and no tensor")]
    NoTensor,
    /// The owning entry returned a tensor of another major version (released at once).
    #[error(transparent)]
    Managed(#[from] ManagedError),
}

/// The stream a producer's data is ready on, on which the consumer queues the work that uses
/// it: the producer's current work stream (from its C exchange table), or the default stream.
/// Meaningless for CPU data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkStream(pub(crate) usize);

impl WorkStream {
    /// The default stream: NULL, CUDA's legacy default stream.
    pub const DEFAULT: Self = Self(0);

    /// The stream a DLPack stream value names (for CUDA: `0` or `1` the legacy default stream,
    /// `2` the per-thread one, otherwise a `CUstream` handle), such as a stream a producer's
    /// data is ready on.
    ///
    /// # Safety
    ///
    /// A `WorkStream` is a claim about a producer's data: that it is ready on the stream. The
    /// caller makes that claim for the tensor it pairs this value with (see
    /// [`Imported::new`](crate::cuda::Imported::new)'s contract, which this is part of):
    /// `value` names that stream, and it lives while work may be queued on it.
    pub const unsafe fn from_raw(value: usize) -> Self {
        Self(value)
    }

    /// The stream's handle (for CUDA a `CUstream`; NULL for the default stream).
    pub fn handle(self) -> *mut c_void {
        self.0 as *mut c_void
    }

    /// Whether this is the default stream (CUDA's legacy default stream).
    pub fn is_default(self) -> bool {
        self.0 == 0 || self.0 == 1
    }

    /// Whether this names the CUDA stream whose driver handle is `handle` (NULL for the legacy
    /// default stream, `0x2` for the per-thread one).
    pub fn is(self, handle: usize) -> bool {
        match self.0 {
            0 | 1 => handle == 0,
            value => value == handle,
        }
    }
}

/// Follows the table at `table` through `prev_api` to one of major version 1 and checks that
/// its required entries (`managed_tensor_from_py_object_no_sync`, `current_work_stream`) are
/// there. Addresses where no table can be are refused before anything is read.
///
/// # Safety
///
/// Unless refused by its address, `table` points to a table header that lives as long as the
/// process (DLPack's contract for the published attribute), each `prev_api` is NULL or another
/// such header, and a header of major version 1 begins a whole [`DLPackExchangeAPI`].
pub unsafe fn resolve(table: *const DLPackExchangeAPIHeader) -> Result<Resolved, TableError> {
    let address = table.addr();
    if address < 4096 || !address.is_multiple_of(align_of::<DLPackExchangeAPI>()) || address >= 1 << 48 {
        return Err(TableError::Address(address));
    }
    let mut header = table;
    for _ in 0..MAX_CHAIN {
        // SAFETY: the published address or a `prev_api` link, each a live header (caller).
        let found = unsafe { *header };
        if found.version.major == 1 {
            // SAFETY: a header of major version 1 begins a whole table (caller), alive for good.
            let api = unsafe { &*header.cast::<DLPackExchangeAPI>() };
            if api.managed_tensor_from_py_object_no_sync.is_none() {
                return Err(TableError::MissingEntry("managed_tensor_from_py_object_no_sync"));
            }
            if api.current_work_stream.is_none() {
                return Err(TableError::MissingEntry("current_work_stream"));
            }
            return Ok(Resolved::Usable(api));
        }
        if found.prev_api.is_null() {
            // SAFETY: the published header, read above already.
            let newest = unsafe { *table };
            return Ok(Resolved::Unknown(newest.version));
        }
        header = found.prev_api;
    }
    Err(TableError::Loop)
}

/// The owning export of `object` through `api`'s `managed_tensor_from_py_object_no_sync`.
///
/// # Safety
///
/// `api` came from [`resolve`]; `object` is what its entries take (for a Python producer, a
/// live object of the type that published it, with the GIL held); on success the entry hands
/// over a managed tensor meeting [`ManagedTensor::from_raw`]'s contract.
pub unsafe fn export(api: &DLPackExchangeAPI, object: *mut c_void) -> Result<ManagedTensor, EntryError> {
    const ENTRY: &str = "managed_tensor_from_py_object_no_sync";
    let Some(entry) = api.managed_tensor_from_py_object_no_sync else {
        return Err(EntryError::Status {
            entry: ENTRY,
            status: -1,
        });
    };
    let mut out: *mut DLManagedTensorVersioned = core::ptr::null_mut();
    // SAFETY: the entry takes `object` (caller) and a writable pointer.
    let status = unsafe { entry(object, &mut out) };
    if status != 0 {
        return Err(EntryError::Status { entry: ENTRY, status });
    }
    // SAFETY: on success the producer hands over a managed tensor, or NULL (refused).
    match unsafe { ManagedTensor::from_raw(out) } {
        Ok(tensor) => Ok(tensor),
        Err(ManagedError::Null) => Err(EntryError::NoTensor),
        Err(e) => Err(e.into()),
    }
}

/// The non-owning view of `object` through `api`'s `dltensor_from_py_object_no_sync`; `None`
/// where the table has no such entry.
///
/// # Safety
///
/// As for [`export`]; the tensor filled in is the producer's, valid as long as the producer
/// promises (for a Python producer, until control returns to Python).
pub unsafe fn lend(api: &DLPackExchangeAPI, object: *mut c_void) -> Option<Result<DLTensor, EntryError>> {
    let entry = api.dltensor_from_py_object_no_sync?;
    let mut tensor = DLTensor {
        data: core::ptr::null_mut(),
        device: DLDevice::CPU,
        ndim: 0,
        dtype: crate::dlpack::DLDataType::new(crate::dlpack::DLDataTypeCode::UINT, 8, 1),
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: the entry takes `object` (caller) and a writable `DLTensor`.
    let status = unsafe { entry(object, &mut tensor) };
    Some(match status {
        0 => Ok(tensor),
        status => Err(EntryError::Status {
            entry: "dltensor_from_py_object_no_sync",
            status,
        }),
    })
}

/// The producer's current work stream for data on `device`; the default stream for the CPU,
/// whose data is ordered by nothing.
///
/// # Safety
///
/// `api` came from [`resolve`]; for a Python producer, the GIL is held.
pub unsafe fn work_stream(api: &DLPackExchangeAPI, device: DLDevice) -> Result<WorkStream, EntryError> {
    const ENTRY: &str = "current_work_stream";
    if device.device_type == DLDeviceType::CPU {
        return Ok(WorkStream::DEFAULT);
    }
    let Some(query) = api.current_work_stream else {
        return Err(EntryError::Status {
            entry: ENTRY,
            status: -1,
        });
    };
    let mut stream: *mut c_void = core::ptr::null_mut();
    // SAFETY: the entry takes a device and a writable pointer.
    let status = unsafe { query(device.device_type, device.device_id, &mut stream) };
    match status {
        0 => Ok(WorkStream(stream as usize)),
        status => Err(EntryError::Status { entry: ENTRY, status }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlpack::DLPackExchangeAPIHeader;

    unsafe extern "C" fn export_nothing(_: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int {
        // SAFETY: `export` passes a writable pointer.
        unsafe { *out = core::ptr::null_mut() };
        0
    }

    unsafe extern "C" fn stream_seven(_: DLDeviceType, _: i32, out: *mut *mut c_void) -> c_int {
        // SAFETY: `work_stream` passes a writable pointer.
        unsafe { *out = core::ptr::without_provenance_mut(7) };
        0
    }

    /// A leaked table, as a raw pointer (which every link and address derives from).
    fn table(major: u32, prev: *mut DLPackExchangeAPIHeader) -> *mut DLPackExchangeAPI {
        Box::into_raw(Box::new(DLPackExchangeAPI {
            header: DLPackExchangeAPIHeader {
                version: DLPackVersion { major, minor: 3 },
                prev_api: prev,
            },
            managed_tensor_allocator: None,
            managed_tensor_from_py_object_no_sync: Some(export_nothing),
            managed_tensor_to_py_object_no_sync: None,
            dltensor_from_py_object_no_sync: None,
            current_work_stream: Some(stream_seven),
        }))
    }

    /// Frees tables made by [`table`].
    fn free(tables: &[*mut DLPackExchangeAPI]) {
        for &t in tables {
            // SAFETY: made by `Box::into_raw` in `table`, freed once, no longer used.
            drop(unsafe { Box::from_raw(t) });
        }
    }

    #[test]
    fn a_work_stream_names_the_stream_a_launch_must_use() {
        // The legacy default stream, as DLPack writes it (1) and as tables give it (NULL).
        for legacy in [WorkStream::DEFAULT, WorkStream(1)] {
            assert!(legacy.is(0) && legacy.is_default());
            assert!(!legacy.is(2) && !legacy.is(0x7f00_0000_1000));
        }
        // The per-thread default stream and handles name themselves only.
        assert!(WorkStream(2).is(2) && !WorkStream(2).is(0));
        let handle = WorkStream(0x7f00_0000_1000);
        assert!(handle.is(0x7f00_0000_1000) && !handle.is(0x7f00_0000_2000) && !handle.is(0));
        assert!(!handle.is_default());
    }

    #[test]
    fn the_chain_leads_to_major_version_1() {
        let old = table(1, core::ptr::null_mut());
        let new = table(3, old.cast());
        // SAFETY: leaked tables, linked as the chain says.
        let found = unsafe { resolve(new.cast()) }.unwrap();
        let Resolved::Usable(api) = found else {
            panic!("{found:?}")
        };
        assert_eq!(api as *const DLPackExchangeAPI, old.cast_const());
        // SAFETY: `api` came from `resolve`; its entries ignore the object.
        let exported = unsafe { export(api, core::ptr::null_mut()) };
        assert_eq!(exported.unwrap_err(), EntryError::NoTensor);
        let cuda = DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: 0,
        };
        // SAFETY: as above.
        let stream = unsafe { work_stream(api, cuda) };
        assert_eq!(stream.unwrap().handle() as usize, 7);
        // SAFETY: as above.
        assert!(unsafe { lend(api, core::ptr::null_mut()) }.is_none());
        free(&[old, new]);
    }

    #[test]
    fn loops_missing_entries_and_bad_addresses_are_refused() {
        let a = table(2, core::ptr::null_mut());
        let b = table(2, a.cast());
        // SAFETY: `a` is a leaked table, written through its own pointer.
        unsafe { (*a).header.prev_api = b.cast() };
        // SAFETY: leaked tables linked into a loop, which `resolve` must stop walking.
        let found = unsafe { resolve(b.cast()) };
        assert_eq!(found.unwrap_err(), TableError::Loop);
        let c = table(1, core::ptr::null_mut());
        // SAFETY: as for `a`.
        unsafe { (*c).current_work_stream = None };
        // SAFETY: a leaked table.
        let e = unsafe { resolve(c.cast()) }.unwrap_err();
        assert_eq!(e, TableError::MissingEntry("current_work_stream"));
        for address in [0, 8, 4097, 1 << 48] {
            // SAFETY: refused by value before anything is read.
            let found = unsafe { resolve(core::ptr::without_provenance(address)) };
            assert_eq!(found.unwrap_err(), TableError::Address(address));
        }
        free(&[a, b, c]);
    }
}
