//! Memory spaces as types: where a view's elements live, and so what may touch them.
//!
//! | space | DLPack device | host element access | converts to |
//! |---|---|---|---|
//! | [`Host`] | `kDLCPU` | yes | — |
//! | [`Device`] (carries its ordinal) | `kDLCUDA` | no: indexing does not compile | — |
//! | [`Managed`] | `kDLCUDAManaged` | yes | [`Host`], [`Device`] |
//!
//! As in CCCL, managed memory can be viewed from the host or from a device, but host and device
//! views never convert into each other, and nothing converts into managed memory.

use crate::dlpack::{DLDevice, DLDeviceType};
use core::fmt::Debug;
use core::hash::Hash;

mod sealed {
    pub trait Sealed {}
}

/// A memory space.
pub trait MemorySpace: Copy + Debug + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The DLPack device type of memory in this space.
    const DEVICE_TYPE: DLDeviceType;
    /// The DLPack device of memory in this space.
    fn device(&self) -> DLDevice;
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
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice::CPU
    }
}

impl MemorySpace for Device {
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CUDA;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice::cuda(self.ordinal)
    }
}

impl MemorySpace for Managed {
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CUDA_MANAGED;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA_MANAGED,
            device_id: 0,
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
