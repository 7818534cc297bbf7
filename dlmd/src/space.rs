//! Memory spaces as types: where a view's elements live, and so what may touch them.
//!
//! This module owns the table of which DLPack devices back which space: exports write a
//! space's own device, and imports accept every device of its row
//! ([`MemorySpace::from_device`]).
//!
//! | space | exported as | imported from | host element access | converts to |
//! |---|---|---|---|---|
//! | [`Host`] | `kDLCPU` | `kDLCPU`, `kDLCUDAHost`, `kDLROCMHost`, `kDLCUDAManaged` | yes | — |
//! | [`Device`] (carries its ordinal) | `kDLCUDA` | `kDLCUDA`, `kDLCUDAManaged` (ordinal ≥ 0) | no: indexing does not compile | — |
//! | [`Managed`] (carries its ordinal) | `kDLCUDAManaged` | `kDLCUDAManaged` (ordinal ≥ 0) | yes | [`Host`], [`Device`] |
//! | [`Opaque<K>`](Opaque) (carries its device id) | `K`'s device type | `K`'s device type (id ≥ 0) | no: indexing does not compile | — |
//! | [`BlockShared`] (a kernel's tiles) | never | never | no: it exists only in a running kernel | — |
//!
//! Pinned (`kDLCUDAHost`, `kDLROCMHost`) and managed memory are host memory too, and managed
//! memory is device memory too, so views of those spaces accept them.
//!
//! Every other DLPack device is an [`Opaque`] space, one per [`DeviceKind`]: [`OneApi`],
//! [`Rocm`], [`RocmHost`], [`Metal`], [`Vulkan`], [`OpenCl`], [`WebGpu`], [`Hexagon`],
//! [`Maia`], [`Trn`], [`Tpu`], [`TpuHost`], [`Ascend`], [`Vpi`] and [`ExtDev`]. Views of them
//! carry the data through DLPack both ways, checked as device views are, and the host never
//! reads or writes their elements: dlmd does not know how (or whether) the host can reach that
//! memory, so it leaves it to the device's own runtime.
//!
//! As in CCCL, managed memory can be viewed from the host or from a device, but host and device
//! views never convert into each other, and nothing converts into managed memory. In a kernel,
//! managed memory does not become host memory either: there, host views are a thread's own
//! memory, while a managed view is shared by every thread of the launch.

use crate::access::{Access, RefAccess};
use crate::dlpack::{DLDevice, DLDeviceType};
use core::fmt::Debug;
use core::hash::Hash;
use core::marker::PhantomData;

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
    /// Whether a kernel reaches the memory as the GPU's global memory (device and managed
    /// memory), so that its reads may take the global paths (`ld.global.nc`).
    #[doc(hidden)]
    const GPU_GLOBAL: bool = false;
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

/// A memory space whose elements the code being compiled reaches through references (`&T`,
/// `&mut T`) with access `A`: what indexing, [`get`](crate::Mdspan::get) and
/// [`iter`](crate::Mdspan::iter) need.
///
/// | space | on the host | in a kernel (`nvptx64`) |
/// |---|---|---|
/// | [`Host`] | [`Shared`] and [`Unique`] | [`Shared`] and [`Unique`] (the thread's own memory: `dlmd!` over a local array) |
/// | [`Managed`] | [`Shared`] and [`Unique`] | [`Shared`] |
/// | [`Device`] | — | [`Shared`] |
///
/// Every thread of a kernel receives the same views, so a mutable device view is never indexed
/// there: its elements are handed out one thread each by [`Thread`](crate::kernel::Thread).
///
/// [`Shared`]: crate::view::Shared
/// [`Unique`]: crate::view::Unique
#[cfg_attr(
    not(any(target_arch = "nvptx64", dlmd_kernel_check)),
    diagnostic::on_unimplemented(
        message = "elements of a `{Self}` view with `{A}` access cannot be reached through references on the host",
        label = "the CPU cannot address this memory",
        note = "copy the data to host memory first (CUDA device memory: `DeviceArray::to_vec`, \
                `Scope::copy`); in a kernel, read-only device views index"
    )
)]
#[cfg_attr(
    any(target_arch = "nvptx64", dlmd_kernel_check),
    diagnostic::on_unimplemented(
        message = "elements of a `{Self}` view with `{A}` access cannot be reached through references in a kernel",
        label = "every thread of the kernel holds this view",
        note = "write a mutable view (`DeviceMdspanMut`) with `thread.for_each_mut(&mut view, |index, x| ...)`, \
                which hands each element to one thread, and read that element there; read-only views \
                (`DeviceMdspan`) index"
    )
)]
pub trait Reachable<A: Access>: MemorySpace {}

/// A memory space whose views with access `A` the code being compiled may borrow again: read-only
/// borrows ([`as_view`](crate::Mdspan::as_view), [`submdspan`](crate::Mdspan::submdspan)),
/// mutable reborrows ([`as_view_mut`](crate::Mdspan::as_view_mut),
/// [`submdspan_mut`](crate::Mdspan::submdspan_mut)) and the switch to atomic access
/// ([`into_atomic`](crate::Mdspan::into_atomic)).
///
/// | space | on the host | in a kernel (`nvptx64`) |
/// |---|---|---|
/// | [`Host`] | every access | every access (the thread's own memory) |
/// | [`Device`], [`Managed`], [`Opaque`] | every access | every access but [`Unique`] |
///
/// [`Unique`]: crate::view::Unique
///
/// Every thread of a kernel holds the same mutable views. A read-only borrow of one would let
/// a thread read elements that other threads write, and a mutable slice of it would be split
/// among the threads again, differently, so that two threads write one element. In a kernel a
/// mutable device or managed view is therefore split once, by
/// [`Thread::for_each_mut`](crate::kernel::Thread::for_each_mut), each element to one thread,
/// and a thread reads its own elements there.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` view with `{A}` access cannot be borrowed again in a kernel",
    label = "every thread of the kernel holds this mutable view",
    note = "in a kernel, a mutable view is split among the threads once, by `Thread::for_each_mut` (each element \
            to one thread, which reads and writes it there); any other pattern takes the `unsafe` \
            `Thread::element_mut`"
)]
pub trait Reborrow<A: Access>: MemorySpace {}

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

/// CUDA managed (unified) memory, reachable from the host and from every device, labelled with
/// the ordinal of the device it was allocated for (DLPack's `kDLCUDAManaged` `device_id`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Managed {
    ordinal: i32,
}

impl Managed {
    /// Managed memory of CUDA device number `ordinal`.
    pub const fn new(ordinal: i32) -> Self {
        Self { ordinal }
    }

    /// The device ordinal the memory is labelled with.
    pub const fn ordinal(self) -> i32 {
        self.ordinal
    }
}

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
            DLDeviceType::CPU | DLDeviceType::CUDA_HOST | DLDeviceType::ROCM_HOST | DLDeviceType::CUDA_MANAGED => {
                Ok(Host)
            }
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
    const GPU_GLOBAL: bool = true;
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
    const GPU_GLOBAL: bool = true;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA_MANAGED,
            device_id: self.ordinal,
        }
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        match device.device_type {
            DLDeviceType::CUDA_MANAGED if device.device_id >= 0 => Ok(Managed::new(device.device_id)),
            DLDeviceType::CUDA_MANAGED => Err(SpaceError::DeviceOrdinal {
                ordinal: device.device_id,
            }),
            found => Err(SpaceError::DeviceType {
                expected: Self::NAME,
                found,
            }),
        }
    }
}

/// Block-shared memory (CUDA's `__shared__`, PTX's `.shared`): one instance per thread block of
/// a running kernel, shared by the block's threads and gone when the block ends.
///
/// Views of it are the tiles of a cooperative kernel ([`kernel::block`](crate::kernel::block)):
/// made only by the kernel's [`Block`](crate::kernel::block::Block), never a kernel parameter,
/// never exported, and never reached from the host. A tile's access is its phase: written
/// through the block's partition (each element by one thread), then, after a barrier, read by
/// every thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockShared;

impl sealed::Sealed for BlockShared {}

impl MemorySpace for BlockShared {
    // Memory of the CUDA device running the kernel; no DLPack device describes it, and
    // `device()` names none (ordinal -1).
    const DEVICE_TYPE: DLDeviceType = DLDeviceType::CUDA;
    const NAME: &'static str = "block-shared";
    const HOST_READABLE: bool = false;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice::cuda(-1)
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        Err(SpaceError::DeviceType {
            expected: Self::NAME,
            found: device.device_type,
        })
    }
}

/// A kind of DLPack device whose memory dlmd keeps opaque: the type parameter of [`Opaque`].
pub trait DeviceKind: Copy + Debug + Default + Eq + Hash + Send + Sync + 'static + sealed::Sealed {
    /// The device type.
    const DEVICE_TYPE: DLDeviceType;
    /// The device's name, for messages.
    const NAME: &'static str;
}

macro_rules! device_kinds {
    ($($(#[$meta:meta])* $kind:ident => $device_type:ident, $name:literal;)*) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $kind;

            impl sealed::Sealed for $kind {}

            impl DeviceKind for $kind {
                const DEVICE_TYPE: DLDeviceType = DLDeviceType::$device_type;
                const NAME: &'static str = $name;
            }
        )*
    };
}

device_kinds! {
    /// oneAPI (SYCL) unified shared memory (`kDLOneAPI`).
    OneApi => ONE_API, "oneAPI";
    /// AMD ROCm device memory (`kDLROCM`).
    Rocm => ROCM, "ROCm";
    /// Pinned ROCm host memory (`kDLROCMHost`), kept opaque; [`Host`] views import it too.
    RocmHost => ROCM_HOST, "ROCm host";
    /// Apple Metal buffers (`kDLMetal`).
    Metal => METAL, "Metal";
    /// Vulkan buffers (`kDLVulkan`).
    Vulkan => VULKAN, "Vulkan";
    /// OpenCL buffers (`kDLOpenCL`).
    OpenCl => OPEN_CL, "OpenCL";
    /// WebGPU buffers (`kDLWebGPU`).
    WebGpu => WEB_GPU, "WebGPU";
    /// Qualcomm Hexagon DSP memory (`kDLHexagon`).
    Hexagon => HEXAGON, "Hexagon";
    /// Microsoft MAIA memory (`kDLMAIA`).
    Maia => MAIA, "MAIA";
    /// AWS Trainium memory (`kDLTrn`).
    Trn => TRN, "Trainium";
    /// Google TPU memory (`kDLTPU`).
    Tpu => TPU, "TPU";
    /// Host memory pinned for a TPU (`kDLTPUHost`).
    TpuHost => TPU_HOST, "TPU host";
    /// Huawei Ascend NPU memory (`kDLAscend`).
    Ascend => ASCEND, "Ascend";
    /// Verilator simulator memory (`kDLVPI`).
    Vpi => VPI, "VPI";
    /// Memory of an extension device (`kDLExtDev`).
    ExtDev => EXT_DEV, "extension device";
}

/// Memory of device number `id` of kind `K` (a oneAPI, ROCm, Metal… device), which dlmd never
/// reads or writes from the host: views of it index nothing on the host (that does not
/// compile), they carry their data through DLPack, checked as device views are.
///
/// ```
/// use dlmd::dlpack::{DLDevice, DLDeviceType};
/// use dlmd::space::{MemorySpace, OneApi, Opaque, Rocm};
///
/// let sycl = DLDevice { device_type: DLDeviceType::ONE_API, device_id: 1 };
/// assert_eq!(Opaque::<OneApi>::from_device(sycl), Ok(Opaque::new(1)));
/// assert!(Opaque::<Rocm>::from_device(sycl).is_err());
/// assert_eq!(Opaque::<OneApi>::new(1).device(), sycl);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Opaque<K> {
    id: i32,
    kind: PhantomData<K>,
}

impl<K: DeviceKind> Opaque<K> {
    /// Device number `id` of kind `K`.
    pub const fn new(id: i32) -> Self {
        Self { id, kind: PhantomData }
    }

    /// The device id.
    pub const fn id(self) -> i32 {
        self.id
    }
}

impl<K: DeviceKind> sealed::Sealed for Opaque<K> {}

impl<K: DeviceKind> MemorySpace for Opaque<K> {
    const DEVICE_TYPE: DLDeviceType = K::DEVICE_TYPE;
    const NAME: &'static str = K::NAME;
    const HOST_READABLE: bool = false;
    #[inline]
    fn device(&self) -> DLDevice {
        DLDevice {
            device_type: K::DEVICE_TYPE,
            device_id: self.id,
        }
    }
    #[inline]
    fn from_device(device: DLDevice) -> Result<Self, SpaceError> {
        if device.device_type != K::DEVICE_TYPE {
            return Err(SpaceError::DeviceType {
                expected: Self::NAME,
                found: device.device_type,
            });
        }
        if device.device_id < 0 {
            return Err(SpaceError::DeviceOrdinal {
                ordinal: device.device_id,
            });
        }
        Ok(Self::new(device.device_id))
    }
}

impl HostAccessible for Host {}
// In a kernel, managed memory is shared by every thread: reached as device memory is.
#[cfg(not(target_arch = "nvptx64"))]
impl HostAccessible for Managed {}

// On the host every view borrows again and host (and managed) memory is reached through
// references; the rules in a kernel are `kernel_rules`'.
#[cfg(not(target_arch = "nvptx64"))]
impl<S: MemorySpace, A: Access> Reborrow<A> for S {}
impl<A: RefAccess> Reachable<A> for Host {}
#[cfg(not(target_arch = "nvptx64"))]
impl<A: RefAccess> Reachable<A> for Managed {}

/// What a kernel may borrow again and reach through references (the tables of [`Reborrow`]
/// and [`Reachable`]).
#[cfg(target_arch = "nvptx64")]
mod kernel_rules {
    use super::{BlockShared, Device, DeviceKind, Host, Managed, Opaque, Reachable, Reborrow};
    use crate::access::{Access, Aliased, AliasedMut, Atomic, Shared};

    impl<A: Access> Reborrow<A> for Host {}
    // Every access but `Unique`, whose views every thread holds.
    macro_rules! shared_reborrows {
        ($($space:ty),*) => {$(
            impl Reborrow<Shared> for $space {}
            impl Reborrow<Aliased> for $space {}
            impl Reborrow<AliasedMut> for $space {}
            impl Reborrow<Atomic> for $space {}
        )*};
    }
    shared_reborrows!(Device, Managed);
    // A readable tile is read by every thread of its block: borrowed and sliced freely. A tile
    // being written is reached only through the block's partition.
    impl Reborrow<Shared> for BlockShared {}
    impl<K: DeviceKind> Reborrow<Shared> for Opaque<K> {}
    impl<K: DeviceKind> Reborrow<Aliased> for Opaque<K> {}
    impl<K: DeviceKind> Reborrow<AliasedMut> for Opaque<K> {}
    impl<K: DeviceKind> Reborrow<Atomic> for Opaque<K> {}

    impl Reachable<Shared> for Managed {}
    impl Reachable<Shared> for Device {}
    impl Reachable<Shared> for BlockShared {}
}

/// A host build that type-checks kernel bodies (`--cfg dlmd_kernel_check`, see
/// [`kernel::check`](crate::kernel::check)) takes the rules of both sides where they differ: the
/// host's (every view borrows again, managed memory is reached as host memory) and the kernel's
/// (read-only device, managed and tile views are reached through references). It accepts every
/// body that one side accepts; the `nvptx64` build still applies the kernel's rules alone.
#[cfg(all(not(target_arch = "nvptx64"), dlmd_kernel_check))]
mod checked_rules {
    use super::{BlockShared, Device, Reachable};
    use crate::access::Shared;

    impl Reachable<Shared> for Device {}
    impl Reachable<Shared> for BlockShared {}
}

/// What a host build that type-checks kernel bodies (`--cfg dlmd_kernel_check`,
/// [`kernel::check`](crate::kernel::check)) does where code reaches what only a GPU has (device
/// memory, `kernel::math`): such a build is for checking, and what it made refuses to run.
#[cfg(all(not(target_arch = "nvptx64"), any(dlmd_kernel_check, doc)))]
#[cold]
#[track_caller]
pub(crate) fn device_only(what: &str) -> ! {
    panic!("{what} runs in kernels only; this host build (`--cfg dlmd_kernel_check`) type-checks kernel bodies")
}

/// Spaces a view of `From` may be converted to, keeping its data.
#[diagnostic::on_unimplemented(
    message = "a `{From}` view cannot become a `{Self}` view",
    label = "no conversion from `{From}` memory to `{Self}` memory",
    note = "only managed memory converts: managed -> host (on the host only) and managed -> device; \
            host and device memory need a copy, and nothing becomes managed"
)]
pub trait SpaceFrom<From: MemorySpace>: MemorySpace {}

impl<S: MemorySpace> SpaceFrom<S> for S {}
// Not in a kernel: there, host views are a thread's own memory, indexed and written freely,
// while managed memory is shared by every thread of the launch.
#[cfg(not(target_arch = "nvptx64"))]
impl SpaceFrom<Managed> for Host {}
impl SpaceFrom<Managed> for Device {}
