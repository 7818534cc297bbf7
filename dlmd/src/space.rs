//! Memory spaces as types: where a view's elements live, and so what may touch them.
//!
//! This module owns the table of which DLPack devices back which space: exports write a
//! space's own device, and imports accept every device of its row
//! ([`MemorySpace::from_device`]).
//!
//! | space | exported as | imported from | host element access | converts to |
//! |---|---|---|---|---|
//! | [`Host`] | `kDLCPU` | `kDLCPU`, `kDLCUDAHost`, `kDLCUDAManaged` | yes | — |
//! | [`Device`] (carries its ordinal) | `kDLCUDA` | `kDLCUDA`, `kDLCUDAManaged` (ordinal ≥ 0) | no: indexing does not compile | — |
//! | [`Managed`] | `kDLCUDAManaged` | `kDLCUDAManaged` | yes | [`Host`], [`Device`] |
//!
//! Pinned (`kDLCUDAHost`) and managed memory are host memory too, and managed memory is device
//! memory too, so views of those spaces accept them.
//!
//! As in CCCL, managed memory can be viewed from the host or from a device, but host and device
//! views never convert into each other, and nothing converts into managed memory.

use crate::dlpack::{DLDevice, DLDeviceType};
use core::fmt::Debug;
use core::hash::Hash;

mod sealed {
    pub trait Sealed {}
}

/// Why memory on a DLPack device cannot be viewed in a memory space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpaceError {
    /// The device type is not one of the space's (see the [module table](self)).
    #[error("device type {found} cannot back a {expected} view")]
    DeviceType {
        /// The space's name.
        expected: &'static str,
        /// The device type found.
        found: DLDeviceType,
    },
    /// A device ordinal is negative.
    #[error("device ordinal {ordinal} is negative")]
    DeviceOrdinal {
        /// The `device_id` found.
        ordinal: i32,
    },
}

/// A memory space.
pub trait MemorySpace: Copy + Debug + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The DLPack device type of memory in this space, as exported.
    const DEVICE_TYPE: DLDeviceType;
    /// The space's name, for messages.
    const NAME: &'static str;
    /// Whether the host may read the memory (so that an importer can check `bool` bytes).
    const HOST_READABLE: bool;
    /// The DLPack device of memory in this space.
    fn device(&self) -> DLDevice;
    /// The space of memory on `device`, where its row of the [module table](self) allows it.
    ///
    /// ```
    /// use dlmd::dlpack::{DLDevice, DLDeviceType};
    /// use dlmd::space::{Device, Host, MemorySpace};
    ///
    /// let pinned = DLDevice { device_type: DLDeviceType::CUDA_HOST, device_id: 0 };
    /// assert_eq!(Host::from_device(pinned), Ok(Host));
    /// assert!(Device::from_device(pinned).is_err());
    /// assert_eq!(Device::from_device(DLDevice::cuda(1)), Ok(Device::new(1)));
    /// ```
    fn from_device(device: DLDevice) -> Result<Self, SpaceError>;
}

/// A memory space whose elements the host CPU may read and write through references.
#[diagnostic::on_unimplemented(
    message = "elements of a `{Self}` view cannot be accessed from the host",
    label = "device memory is not addressable by the CPU",
    note = "index device views inside a kernel; to read them on the host, copy them to host memory first"
)]
pub trait HostAccessible: MemorySpace {}

/// Host (CPU) memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Host;

/// Memory of one CUDA device, identified by its ordinal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
}

impl Device {
    /// CUDA device number `ordinal`.
    pub const fn new(ordinal: i32) -> Self {
        Self { ordinal }
    }

    /// The device ordinal.
    pub const fn ordinal(self) -> i32 {
        self.ordinal
    }
}

/// CUDA managed (unified) memory, reachable from the host and from devices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Managed;

impl sealed::Sealed for Host {}
impl sealed::Sealed for Device {}
impl sealed::Sealed for Managed {}

impl MemorySpace for Host {
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CPU;
    const NAME: &'static str = "host";
    const HOST_READABLE: bool = true;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice::CPU
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        match device.device_type {
            DLDeviceType::CPU | DLDeviceType::CUDA_HOST | DLDeviceType::CUDA_MANAGED => Ok(Host),
            found => Err(SpaceError::DeviceType {
                expected: Self::NAME,
                found,
            }),
        }
    }
}

impl MemorySpace for Device {
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CUDA;
    const NAME: &'static str = "CUDA device";
    const HOST_READABLE: bool = false;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice::cuda(self.ordinal)
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        match device.device_type {
            DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED if device.device_id >= 0 => {
                Ok(Device::new(device.device_id))
            }
            DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED => Err(SpaceError::DeviceOrdinal {
                ordinal: device.device_id,
            }),
            found => Err(SpaceError::DeviceType {
                expected: Self::NAME,
                found,
            }),
        }
    }
}

impl MemorySpace for Managed {
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CUDA_MANAGED;
    const NAME: &'static str = "CUDA managed";
    const HOST_READABLE: bool = true;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA_MANAGED,
            device_id: 0,
        }
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        match device.device_type {
            DLDeviceType::CUDA_MANAGED => Ok(Managed),
            found => Err(SpaceError::DeviceType {
                expected: Self::NAME,
                found,
            }),
        }
    }
}

impl HostAccessible for Host {}
impl HostAccessible for Managed {}

/// Spaces a view of `From` may be converted to, keeping its data.
#[diagnostic::on_unimplemented(
    message = "a `{From}` view cannot become a `{Self}` view",
    label = "no conversion from `{From}` memory to `{Self}` memory",
    note = "only managed memory converts: managed -> host and managed -> device; \
            host and device memory need a copy, and nothing becomes managed"
)]
pub trait SpaceFrom<From: MemorySpace>: MemorySpace {}

impl<S: MemorySpace> SpaceFrom<S> for S {}
impl SpaceFrom<Managed> for Host {}
impl SpaceFrom<Managed> for Device {}
