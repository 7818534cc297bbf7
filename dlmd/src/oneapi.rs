//! oneAPI (SYCL) unified shared memory, as dpctl defines it for DLPack (feature `oneapi`).
//!
//! A `kDLOneAPI` tensor's `device_id` is the position of the allocation's parent root device in
//! `sycl::device::get_devices()`, and its data is a USM allocation bound to the default context of
//! that device's platform. An importer asks the runtime whether that context knows the pointer,
//! of which kind it is and on which device it lives: host and shared USM can then be viewed on the
//! host, device USM stays [opaque](crate::space::Opaque).
//!
//! The runtime is dpctl's C interface library, `libDPCTLSyclInterface.so`, loaded when first
//! needed: the one a Python process already loaded with `import dpctl` (or `dpnp`), or the file
//! named by the environment variable `DLMD_DPCTL_LIBRARY`. Without it every query is
//! [`OneApiError::NoRuntime`].

use crate::dlpack::{DLDevice, DLDeviceType, DLTensor};
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::Dims;
use crate::import::{ImportError, check_bools};
use crate::layout::Layout;
use crate::space::{Host, OneApi, Opaque};
use crate::view::{Access, Mdspan, Shared};
use core::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// The kind of a USM allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UsmKind {
    /// Device memory: only kernels reach it.
    Device,
    /// Shared memory: the host and the device reach it (migrated on demand).
    Shared,
    /// Host memory the device reaches.
    Host,
}

impl UsmKind {
    /// Whether the host may read and write it.
    pub const fn host_accessible(self) -> bool {
        !matches!(self, UsmKind::Device)
    }
}

/// What went wrong with a oneAPI tensor.
#[derive(Debug, thiserror::Error)]
pub enum OneApiError {
    /// dpctl's C interface library could not be loaded.
    #[error(
        "no oneAPI runtime: libDPCTLSyclInterface.so could not be loaded ({0}); import dpctl (or dpnp) first, or set DLMD_DPCTL_LIBRARY to its path"
    )]
    NoRuntime(String),
    /// The tensor is not on a oneAPI device.
    #[error("device type {0} is not oneAPI (kDLOneAPI)")]
    NotOneApi(DLDeviceType),
    /// The device id names no SYCL device.
    #[error("oneAPI device {id} does not exist (this process sees {count} SYCL devices)")]
    NoDevice {
        /// The `device_id`.
        id: i32,
        /// How many root devices there are.
        count: usize,
    },
    /// The default context of the device's platform does not know the pointer.
    #[error(
        "the data is not a USM allocation of the default context of oneAPI device {id}'s platform, which DLPack exchanges require"
    )]
    UnknownPointer {
        /// The `device_id`.
        id: i32,
    },
    /// No SYCL platform's default context knows the pointer.
    #[error("the pointer is not a USM allocation of any SYCL platform's default context")]
    NotUsm,
    /// The allocation lives on another device than the tensor says.
    #[error("the tensor says oneAPI device {labelled} but its allocation belongs to device {actual}")]
    WrongDevice {
        /// The `device_id` the tensor carries.
        labelled: i32,
        /// The position of the allocation's root device.
        actual: i32,
    },
    /// The tensor does not fit the view asked for.
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// The entries of `libDPCTLSyclInterface.so` dlmd calls.
struct Dpctl {
    get_devices: unsafe extern "C" fn(c_int) -> *mut c_void,
    vector_size: unsafe extern "C" fn(*mut c_void) -> usize,
    vector_get_at: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
    vector_delete: unsafe extern "C" fn(*mut c_void),
    device_get_platform: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    device_get_parent: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    device_delete: unsafe extern "C" fn(*mut c_void),
    platform_default_context: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    platform_delete: unsafe extern "C" fn(*mut c_void),
    context_delete: unsafe extern "C" fn(*mut c_void),
    pointer_type: unsafe extern "C" fn(*const c_void, *mut c_void) -> c_int,
    pointer_device: unsafe extern "C" fn(*const c_void, *mut c_void) -> *mut c_void,
    position_in_devices: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    /// Keeps the entries above loaded.
    _library: libloading::Library,
}

/// `DPCTL_ALL_BACKENDS | DPCTL_ALL`: every root device, in `sycl::device::get_devices()` order.
const ALL_DEVICES: c_int = (((1 << 5) - 1) << 16) | ((1 << 6) - 1);

impl Dpctl {
    fn load() -> Result<Self, String> {
        let name = std::env::var_os("DLMD_DPCTL_LIBRARY").unwrap_or_else(|| "libDPCTLSyclInterface.so".into());
        // SAFETY: loading dpctl's library runs its initialisers, which set up the SYCL runtime
        // and have no preconditions of ours.
        let library = unsafe { libloading::Library::new(&name) }.map_err(|e| e.to_string())?;
        macro_rules! entry {
            ($name:literal) => {{
                // SAFETY: the symbol is dpctl's C function of that name, whose signature (from
                // dpctl's `syclinterface` headers) the field's type spells: every handle is an
                // opaque pointer, enums are `int`.
                let symbol = unsafe { library.get(concat!($name, "\0").as_bytes()) }.map_err(|e| e.to_string())?;
                *symbol
            }};
        }
        Ok(Self {
            get_devices: entry!("DPCTLDeviceMgr_GetDevices"),
            vector_size: entry!("DPCTLDeviceVector_Size"),
            vector_get_at: entry!("DPCTLDeviceVector_GetAt"),
            vector_delete: entry!("DPCTLDeviceVector_Delete"),
            device_get_platform: entry!("DPCTLDevice_GetPlatform"),
            device_get_parent: entry!("DPCTLDevice_GetParentDevice"),
            device_delete: entry!("DPCTLDevice_Delete"),
            platform_default_context: entry!("DPCTLPlatform_GetDefaultContext"),
            platform_delete: entry!("DPCTLPlatform_Delete"),
            context_delete: entry!("DPCTLContext_Delete"),
            pointer_type: entry!("DPCTLUSM_GetPointerType"),
            pointer_device: entry!("DPCTLUSM_GetPointerDevice"),
            position_in_devices: entry!("DPCTLDeviceMgr_GetPositionInDevices"),
            _library: library,
        })
    }
}

/// The runtime, loaded once.
fn dpctl() -> Result<&'static Dpctl, OneApiError> {
    static DPCTL: OnceLock<Result<Dpctl, String>> = OnceLock::new();
    DPCTL
        .get_or_init(Dpctl::load)
        .as_ref()
        .map_err(|e| OneApiError::NoRuntime(e.clone()))
}

/// Whether the oneAPI runtime can be loaded in this process.
pub fn runtime_available() -> bool {
    dpctl().is_ok()
}

/// An owned dpctl handle, released by its `Delete` entry.
struct Handle(*mut c_void, unsafe extern "C" fn(*mut c_void));

impl Drop for Handle {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a handle dpctl gave us (`__dpctl_give`), released once, by its own kind's
            // `Delete`.
            unsafe { (self.1)(self.0) }
        }
    }
}

/// The position of `device`'s root device among all devices, or -1.
///
/// # Safety
///
/// `device` is a live device handle.
unsafe fn root_position(dpctl: &Dpctl, device: *mut c_void) -> c_int {
    // The parent last asked for, owned; `current` is it, or the caller's device.
    let mut owned: Option<Handle> = None;
    let mut current = device;
    // Sub-devices report their parent; root devices NULL. A chain deeper than this is a loop.
    for _ in 0..16 {
        // SAFETY: `current` is a live device handle (the caller's, or the one `owned` holds).
        let parent = unsafe { (dpctl.device_get_parent)(current) };
        if parent.is_null() {
            break;
        }
        owned = Some(Handle(parent, dpctl.device_delete));
        current = parent;
    }
    // SAFETY: `current` is live (as above: `owned` still holds it).
    let position = unsafe { (dpctl.position_in_devices)(current, ALL_DEVICES) };
    drop(owned);
    position
}

/// Every root device, in `sycl::device::get_devices()` order: the vector and its size.
fn all_devices(dpctl: &Dpctl) -> (Handle, usize) {
    // SAFETY: the entries are dpctl's (see `Dpctl::load`); every handle they give is owned by a
    // `Handle` and released once, and every handle passed is live for the call.
    let devices = Handle(unsafe { (dpctl.get_devices)(ALL_DEVICES) }, dpctl.vector_delete);
    let count = match devices.0.is_null() {
        true => 0,
        // SAFETY: as above.
        false => unsafe { (dpctl.vector_size)(devices.0) },
    };
    (devices, count)
}

/// The default context of the platform of device `index` (below the size) of `devices`.
fn default_context(dpctl: &Dpctl, devices: &Handle, index: usize) -> Handle {
    // SAFETY: as in `all_devices`; `index` is below the vector's size (caller).
    let device = Handle(unsafe { (dpctl.vector_get_at)(devices.0, index) }, dpctl.device_delete);
    if device.0.is_null() {
        return Handle(core::ptr::null_mut(), dpctl.context_delete);
    }
    // SAFETY: as above.
    let platform = Handle(unsafe { (dpctl.device_get_platform)(device.0) }, dpctl.platform_delete);
    if platform.0.is_null() {
        return Handle(core::ptr::null_mut(), dpctl.context_delete);
    }
    // SAFETY: as above.
    Handle(
        unsafe { (dpctl.platform_default_context)(platform.0) },
        dpctl.context_delete,
    )
}

/// The USM kind of `ptr` in `context` and the position of its root device; `None` where the
/// context does not know it. The runtime looks the address up, never dereferencing it.
fn lookup(dpctl: &Dpctl, ptr: *const c_void, context: &Handle) -> Option<(UsmKind, c_int)> {
    if context.0.is_null() {
        return None;
    }
    // SAFETY: as in `all_devices`.
    let kind = match unsafe { (dpctl.pointer_type)(ptr, context.0) } {
        1 => UsmKind::Device,
        2 => UsmKind::Shared,
        3 => UsmKind::Host,
        _ => return None,
    };
    // SAFETY: as above.
    let owner = Handle(unsafe { (dpctl.pointer_device)(ptr, context.0) }, dpctl.device_delete);
    if owner.0.is_null() {
        return None;
    }
    // SAFETY: `owner.0` is a live device handle.
    Some((kind, unsafe { root_position(dpctl, owner.0) }))
}

/// What dlmd asks of a oneAPI runtime: the root devices, and where a USM allocation lives.
///
/// dpctl's runtime (loaded at run time) is the one the free functions of this
/// module ask; the `…_with` forms take another (an application's own, or a test double).
///
/// # Safety
///
/// [`lookup`](Self::lookup) answers truthfully: a kind other than [`UsmKind::Device`] only for an
/// allocation the host may read and write (the whole allocation holding `address`, for as long
/// as the allocation lives), since [`place_with`] then views it on the host.
pub unsafe trait UsmRuntime {
    /// How many root devices there are (`sycl::device::get_devices()`).
    fn device_count(&self) -> usize;

    /// The USM kind of the allocation holding `address` and the position of its root device
    /// (-1 where none), as the default context of the platform of root device `index` (below
    /// [`device_count`](Self::device_count)) knows it; `None` where that context does not.
    /// Nothing may read memory at `address`.
    fn lookup(&self, address: usize, index: usize) -> Option<(UsmKind, i32)>;
}

/// dpctl's runtime, with its root devices listed once for a query.
struct Session {
    dpctl: &'static Dpctl,
    devices: Handle,
    count: usize,
}

impl Session {
    fn new() -> Result<Self, OneApiError> {
        let dpctl = dpctl()?;
        let (devices, count) = all_devices(dpctl);
        Ok(Self { dpctl, devices, count })
    }
}

// SAFETY: dpctl's answers come from the SYCL runtime's own records of its allocations, where
// host and shared USM are host-accessible by SYCL's definition.
unsafe impl UsmRuntime for Session {
    fn device_count(&self) -> usize {
        self.count
    }

    fn lookup(&self, address: usize, index: usize) -> Option<(UsmKind, i32)> {
        if index >= self.count {
            return None;
        }
        let context = default_context(self.dpctl, &self.devices, index);
        lookup(self.dpctl, address as *const c_void, &context)
    }
}

/// The USM kind of the allocation at `address`, which a tensor labels as on oneAPI device
/// `device_id`: checked to be known to the default context of that device's platform and to
/// belong to that device, as dpctl's importers check. The runtime looks the address up; nothing
/// reads memory there.
pub fn usm_kind(address: usize, device_id: i32) -> Result<UsmKind, OneApiError> {
    usm_kind_with(&Session::new()?, address, device_id)
}

/// [`usm_kind`], asking `runtime`.
pub fn usm_kind_with(runtime: &impl UsmRuntime, address: usize, device_id: i32) -> Result<UsmKind, OneApiError> {
    let count = runtime.device_count();
    let index = usize::try_from(device_id)
        .ok()
        .filter(|&i| i < count)
        .ok_or(OneApiError::NoDevice { id: device_id, count })?;
    let (kind, actual) = runtime
        .lookup(address, index)
        .ok_or(OneApiError::UnknownPointer { id: device_id })?;
    if actual != device_id {
        return Err(OneApiError::WrongDevice {
            labelled: device_id,
            actual,
        });
    }
    Ok(kind)
}

/// The DLPack device of the USM allocation at `address`, as dpctl's exporters compute it:
/// oneAPI, with the position of its root device; `None` where no default platform context knows
/// the address. Nothing reads memory there.
pub fn device_of(address: usize) -> Result<Option<DLDevice>, OneApiError> {
    Ok(device_of_with(&Session::new()?, address))
}

/// [`device_of`], asking `runtime`.
pub fn device_of_with(runtime: &impl UsmRuntime, address: usize) -> Option<DLDevice> {
    (0..runtime.device_count()).find_map(|index| match runtime.lookup(address, index) {
        Some((_, id)) if id >= 0 => Some(DLDevice {
            device_type: DLDeviceType::ONE_API,
            device_id: id,
        }),
        _ => None,
    })
}

/// The oneAPI space of the USM allocation at `address`, to export a view of it with the device
/// id dpctl's importers expect ([`device_of`]).
pub fn space_of(address: usize) -> Result<Opaque<OneApi>, OneApiError> {
    match device_of(address)? {
        Some(device) => Ok(Opaque::new(device.device_id)),
        None => Err(OneApiError::NotUsm),
    }
}

/// The runtime an empty view is placed with: never asked, as an empty view reaches no memory.
struct NoRuntime;

// SAFETY: knows no allocation, so it never calls anything host-accessible.
unsafe impl UsmRuntime for NoRuntime {
    fn device_count(&self) -> usize {
        0
    }

    fn lookup(&self, _: usize, _: usize) -> Option<(UsmKind, i32)> {
        None
    }
}

/// A oneAPI tensor viewed where its allocation can be reached.
#[derive(Debug)]
pub enum Placed<'a, T, const R: usize, L: Layout, A: Access> {
    /// Host or shared USM (its kind; `None` for a view with no elements, which reaches no
    /// memory at all): a host view.
    Host(Mdspan<'a, T, Dims<R>, L, Host, A>, Option<UsmKind>),
    /// Device USM: opaque to the host.
    Device(Mdspan<'a, T, Dims<R>, L, Opaque<OneApi>, A>),
}

/// Views a oneAPI tensor (`kDLOneAPI`, or a view of one) on the host where its USM kind allows.
///
/// The view is checked as every import is, then the runtime is asked about its allocation
/// ([`usm_kind`]); host and shared USM become a host view (its `bool` bytes checked), device
/// USM stays opaque.
pub fn place<'a, T, const R: usize, L, A>(
    view: Mdspan<'a, T, Dims<R>, L, Opaque<OneApi>, A>,
) -> Result<Placed<'a, T, R, L, A>, OneApiError>
where
    T: DlElement,
    L: Layout,
    A: Access,
{
    if view.is_empty() {
        return place_with(&NoRuntime, view);
    }
    place_with(&Session::new()?, view)
}

/// [`place`], asking `runtime`.
pub fn place_with<'a, T, const R: usize, L, A>(
    runtime: &impl UsmRuntime,
    view: Mdspan<'a, T, Dims<R>, L, Opaque<OneApi>, A>,
) -> Result<Placed<'a, T, R, L, A>, OneApiError>
where
    T: DlElement,
    L: Layout,
    A: Access,
{
    if view.is_empty() {
        // SAFETY: a view with no elements reaches no memory: any space holds it.
        let host = unsafe { Mdspan::from_raw_parts(view.data_handle(), *view.mapping(), Host) };
        return Ok(Placed::Host(host, None));
    }
    let kind = usm_kind_with(runtime, view.as_ptr() as usize, view.space().id())?;
    if !kind.host_accessible() {
        return Ok(Placed::Device(view));
    }
    // SAFETY: the runtime reports host-accessible USM (truthfully: `UsmRuntime`'s contract), and
    // the span holds the view's elements (the importer's checks).
    unsafe { check_bools::<T, Dims<R>, L>(view.as_ptr(), view.mapping()) }?;
    // SAFETY: the same elements, the same access, now in host memory (the runtime's word);
    // bools checked above.
    let host = unsafe { Mdspan::from_raw_parts(view.data_handle(), *view.mapping(), Host) };
    Ok(Placed::Host(host, Some(kind)))
}

/// Imports a `kDLOneAPI` tensor read-only, viewed on the host where its USM kind allows
/// ([`place`]).
///
/// # Safety
///
/// As for [`Mdspan::from_dlpack`].
pub unsafe fn import_oneapi<'a, T, const R: usize, L>(
    tensor: &'a DLTensor,
) -> Result<Placed<'a, T, R, L, Shared>, OneApiError>
where
    T: DlElement,
    T::Storage: PlainStorage,
    L: Layout,
{
    if tensor.device.device_type != DLDeviceType::ONE_API {
        return Err(OneApiError::NotOneApi(tensor.device.device_type));
    }
    // SAFETY: forwarded from the caller; every field is checked by the importer.
    let view = unsafe { Mdspan::<'a, T, Dims<R>, L, Opaque<OneApi>, Shared>::from_dlpack(tensor) }?;
    place(view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{LayoutRight, RightMapping};
    use core::cell::Cell;

    /// Answers every lookup with one kind and position, and counts the lookups.
    struct Answer(Option<(UsmKind, i32)>, Cell<usize>);

    // SAFETY: the tests' memory is a host `Vec`, which the host may read and write whatever kind
    // is claimed.
    unsafe impl UsmRuntime for Answer {
        fn device_count(&self) -> usize {
            2
        }
        fn lookup(&self, _: usize, _: usize) -> Option<(UsmKind, i32)> {
            self.1.set(self.1.get() + 1);
            self.0
        }
    }

    fn view(data: &[bool], id: i32) -> Mdspan<'_, bool, Dims<1>, LayoutRight, Opaque<OneApi>, Shared> {
        let mapping = RightMapping::new(Dims::new([data.len()])).unwrap();
        // SAFETY: `data` holds the elements, read-only for the view's life; bytes 0 or 1.
        unsafe { Mdspan::from_raw_parts(data.as_ptr().cast_mut(), mapping, Opaque::new(id)) }
    }

    #[test]
    fn placed_as_the_runtime_answers() {
        let data = [true, false, true];
        let host = Answer(Some((UsmKind::Host, 1)), Cell::new(0));
        match place_with(&host, view(&data, 1)).unwrap() {
            Placed::Host(v, kind) => {
                assert_eq!(kind, Some(UsmKind::Host));
                assert_eq!(v.values().collect::<Vec<_>>(), data);
            }
            Placed::Device(_) => panic!("host USM placed on the device"),
        }
        let device = Answer(Some((UsmKind::Device, 1)), Cell::new(0));
        assert!(matches!(place_with(&device, view(&data, 1)), Ok(Placed::Device(_))));
        assert!(matches!(
            place_with(&host, view(&data, 0)),
            Err(OneApiError::WrongDevice { labelled: 0, actual: 1 })
        ));
        assert!(matches!(
            place_with(&host, view(&data, 2)),
            Err(OneApiError::NoDevice { id: 2, count: 2 })
        ));
        let unknown = Answer(None, Cell::new(0));
        assert!(matches!(
            place_with(&unknown, view(&data, 1)),
            Err(OneApiError::UnknownPointer { id: 1 })
        ));
        assert_eq!(device_of_with(&unknown, 0), None);
        assert_eq!(device_of_with(&host, 0).map(|d| d.device_id), Some(1));
        // An empty view reaches no memory: the runtime is not asked.
        let asked = Answer(Some((UsmKind::Device, 0)), Cell::new(0));
        assert!(matches!(place_with(&asked, view(&[], 0)), Ok(Placed::Host(_, None))));
        assert_eq!(asked.1.get(), 0);
    }

    #[test]
    fn host_bools_are_checked() {
        let mut bytes = [1u8, 2, 0];
        let mut shape = [3i64];
        let tensor = DLTensor {
            data: bytes.as_mut_ptr().cast(),
            device: DLDevice {
                device_type: DLDeviceType::ONE_API,
                device_id: 0,
            },
            ndim: 1,
            dtype: <bool as DlElement>::DTYPE,
            shape: shape.as_mut_ptr(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: the tensor describes `bytes` and `shape`, alive and unwritten meanwhile; an
        // opaque import reads no element.
        let v = unsafe { Mdspan::<bool, Dims<1>, LayoutRight, Opaque<OneApi>, Shared>::from_dlpack(&tensor) }.unwrap();
        let host = Answer(Some((UsmKind::Shared, 0)), Cell::new(0));
        assert!(matches!(place_with(&host, v), Err(OneApiError::Import(_))));
    }
}
