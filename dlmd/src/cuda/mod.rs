//! CUDA through cudarc: device views over cudarc allocations, and views passed to kernels.
//!
//! The crate builds without a CUDA toolkit: cudarc loads the driver and NVRTC at run time.
//! Where there is no driver, [`context`] returns [`CudaError::NoDriver`] instead of the panic
//! cudarc would raise.
//!
//! A device view goes to a kernel by value as a [`ViewParam`], whose `#[repr(C)]` layout is
//! the `dlmd::view<T, R>` of the header [`HEADER`] (`include/dlmd/view.cuh`), usable from
//! NVRTC, nvcc and host C++: one argument layout for C++ kernels and Rust kernels
//! (`#[dlmd::kernel]`) alike. Indexing there matches the Rust view exactly.

use crate::dlpack::{DLDeviceType, DLTensor};
use crate::dtype::{DlElement, PlainStorage};
use crate::extents::{Dims, Extents};
use crate::import::check_bools;
use crate::kernel::ViewParam;
use crate::layout::{CompactLayout, Layout, Mapping};
use crate::space::{Device, Managed};
use crate::view::{Access, DeviceMdspan, DeviceMdspanMut, HostMdspan, ManagedMdspan, Mdspan, ViewError};
use cudarc::driver::{
    CudaContext, CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, PinnedHostSlice, UnifiedSlice,
    ValidAsZeroBits, sys,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::sync::Arc;

mod arg;
mod array;
mod capture;
mod error;
mod event;
mod grid;
mod imported;
mod imported_mut;
mod launch;
mod library;
mod mirrored;
mod order;
mod param_align;
mod peer;
mod release;
mod scope;
mod stream;
mod target;
mod tensor_map;

pub use arg::{ArgInfo, KernelArg, SameAccess, SameElement, SameExtents, SameLayout, SameSpace};
pub use array::{DeviceArray, Gpu};
/// The grid and block of a launch, and the shared memory it asks for (cudarc's, re-exported so
/// that launching needs no other crate).
pub use cudarc::driver::LaunchConfig;
pub use error::{CompileError, CudaError, LaunchError, ModuleError, PlacementError, StreamError};
pub use grid::grid_for;
pub use imported::{Arg, ImportParam, Imported};
pub use imported_mut::ImportedMut;
pub use launch::{Kernels, Launch, signature_digests};
#[cfg(feature = "nccl")]
pub(crate) use library::usable as library_usable;
pub use mirrored::{Current, MirroredArray};
#[cfg(feature = "candle-cuda")]
pub(crate) use order::after_queued;
#[cfg(feature = "nccl")]
pub(crate) use order::{order_after, order_after_queued};
pub use peer::device_location;
pub use release::{release_completed, wait_released};
pub use scope::{DeviceMemory, Scope, scope};
#[cfg(feature = "nccl")]
pub(crate) use scope::{group_ended, group_started};
pub use stream::{check_stream, sync_consumer_stream, wait_for_stream};
pub use tensor_map::{TensorMapError, TiledMap};

/// The kernel-side header, `dlmd/include/dlmd/view.cuh`, for NVRTC programs that cannot read
/// files: pass it as a header source, or write it next to the kernel.
pub const HEADER: &str = include_str!("../../include/dlmd/view.cuh");

/// The directory holding `dlmd/view.cuh`, for nvcc's or NVRTC's include path.
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// Whether NVRTC can be used here: it loads, or the program links it.
pub fn nvrtc_available() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| library::usable(&["nvrtc"], b"nvrtcVersion\0"))
}

/// Compiles a CUDA C++ program to PTX with NVRTC, with `dlmd/view.cuh` prepended (so kernels
/// take `dlmd::view<T, R>` without an include path). Errors, never panics, without NVRTC.
pub fn compile_ptx(source: &str, options: CompileOptions) -> Result<Ptx, CudaError> {
    if !nvrtc_available() {
        return Err(CudaError::Compile(CompileError::Unavailable));
    }
    let program = format!("{HEADER}\n{source}");
    match std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx_with_opts(program, options)) {
        Ok(Ok(ptx)) => Ok(ptx),
        Ok(Err(e)) => Err(CudaError::Compile(CompileError::Refused(format!("{e:?}")))),
        Err(_) => Err(CudaError::Compile(CompileError::Unavailable)),
    }
}

/// Whether the CUDA driver library can be used here: it loads, or the program links it.
pub fn driver_available() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| library::usable(&["cuda", "nvcuda"], b"cuDriverGetVersion\0"))
}

/// The primary context of device `ordinal`, or an error (never a panic) where there is no
/// driver or device.
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>, CudaError> {
    if !driver_available() {
        return Err(CudaError::NoDriver);
    }
    // cudarc panics when a symbol is missing from an old driver: keep that inside.
    match std::panic::catch_unwind(|| CudaContext::new(ordinal)) {
        Ok(result) => Ok(result?),
        Err(_) => Err(CudaError::NoDriver),
    }
}

fn device_of<T>(slice: &CudaSlice<T>) -> Result<Device, CudaError> {
    let ordinal = slice.ordinal();
    i32::try_from(ordinal)
        .map(Device::new)
        .map_err(|_| CudaError::Ordinal(ordinal))
}

/// `mapping`, checked to fit `slice`, and the slice's device.
fn fit<T, E: Extents, L: Layout>(
    slice: &CudaSlice<T>,
    mapping: L::Mapping<E>,
) -> Result<(L::Mapping<E>, Device), CudaError> {
    let needed = mapping.required_span_size();
    if needed > slice.len() {
        return Err(ViewError::SliceTooShort {
            needed,
            len: slice.len(),
        }
        .into());
    }
    Ok((mapping, device_of(slice)?))
}

/// A read-only device view of a cudarc allocation with `extents` in a compact layout.
///
/// Launches, copies and collectives that take the view, on any stream, run after the work
/// queued on the allocation before the view was made: on another stream than the allocation's,
/// they wait on the device for an event recorded on the allocation's stream (nothing waits on
/// the host). While the view lives, the allocation is borrowed, so nothing else writes it.
pub fn device_view<T, E, L>(slice: &CudaSlice<T>, extents: E) -> Result<DeviceMdspan<'_, T, E, L>, CudaError>
where
    T: DlElement + DeviceRepr,
    E: Extents,
    L: CompactLayout,
{
    device_view_mapped(slice, L::mapping(extents).map_err(ViewError::from)?)
}

/// A read-only device view of a cudarc allocation through `mapping`, of any layout: a strided
/// one sees the allocation as another tensor (the heads of a `b × s × h × d` tensor as
/// `b × h × s × d`, with [`StrideMapping`](crate::layout::StrideMapping)). Fails when the
/// allocation is shorter than the mapping's span. Ordered as [`device_view`] is.
pub fn device_view_mapped<T, E, L>(
    slice: &CudaSlice<T>,
    mapping: L::Mapping<E>,
) -> Result<DeviceMdspan<'_, T, E, L>, CudaError>
where
    T: DlElement + DeviceRepr,
    E: Extents,
    L: Layout,
{
    let (mapping, space) = fit::<T, E, L>(slice, mapping)?;
    let (ptr, _read) = slice.device_ptr(slice.stream());
    order::after_queued(slice.stream(), ptr, slice.num_bytes());
    // SAFETY: `ptr` is the start of an allocation of `slice.len() >= needed` elements of `T` on
    // `space`'s device, alive and not freed while `slice` is borrowed; the view is read-only.
    Ok(unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, mapping, space) })
}

/// A read-write device view of a cudarc allocation with `extents` in a compact layout.
///
/// Ordered as [`device_view`] is: work over the view runs after what was queued on the
/// allocation (reads and writes) before the view was made.
pub fn device_view_mut<T, E, L>(slice: &mut CudaSlice<T>, extents: E) -> Result<DeviceMdspanMut<'_, T, E, L>, CudaError>
where
    T: DlElement + DeviceRepr,
    E: Extents,
    L: CompactLayout,
{
    device_view_mapped_mut(slice, L::mapping(extents).map_err(ViewError::from)?)
}

/// A read-write device view of a cudarc allocation through `mapping`, of any layout. Fails
/// when the allocation is shorter than the mapping's span, or when the mapping reaches an
/// element through two indices. Ordered as [`device_view`] is.
pub fn device_view_mapped_mut<T, E, L>(
    slice: &mut CudaSlice<T>,
    mapping: L::Mapping<E>,
) -> Result<DeviceMdspanMut<'_, T, E, L>, CudaError>
where
    T: DlElement + DeviceRepr,
    E: Extents,
    L: Layout,
{
    if !L::ALWAYS_UNIQUE && !mapping.is_unique() {
        return Err(ViewError::from(crate::layout::LayoutError::Overlapping).into());
    }
    let (mapping, space) = fit::<T, E, L>(slice, mapping)?;
    let stream = slice.stream().clone();
    let bytes = slice.num_bytes();
    let (ptr, _write) = slice.device_ptr_mut(&stream);
    order::after_queued(&stream, ptr, bytes);
    // SAFETY: as in `device_view_mapped`; the allocation is borrowed exclusively for the view,
    // and the mapping is unique (checked, or by its layout).
    Ok(unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, mapping, space) })
}

/// A host view of pinned (page-locked) host memory from cudarc, in a compact layout: the memory
/// asynchronous copies read and write at full speed.
pub fn pinned_view<T, E, L>(slice: &PinnedHostSlice<T>, extents: E) -> Result<HostMdspan<'_, T, E, L>, CudaError>
where
    T: DlElement + ValidAsZeroBits,
    E: Extents,
    L: CompactLayout,
{
    // `as_slice` waits for the copies in flight into the buffer.
    Ok(HostMdspan::from_slice(slice.as_slice()?, extents)?)
}

/// A managed view of cudarc's unified (managed) memory, in a compact layout. It can become a
/// host view or a device view with [`Mdspan::into_space`].
pub fn managed_view<T, E, L>(slice: &UnifiedSlice<T>, extents: E) -> Result<ManagedMdspan<'_, T, E, L>, CudaError>
where
    T: DlElement + ValidAsZeroBits,
    E: Extents,
    L: CompactLayout,
{
    // `as_slice` waits for the kernels in flight that use the memory.
    let host = HostMdspan::<T, E, L>::from_slice(slice.as_slice()?, extents)?;
    let ordinal = slice.stream().context().ordinal();
    let space = Managed::new(i32::try_from(ordinal).map_err(|_| CudaError::Ordinal(ordinal))?);
    // SAFETY: the memory is managed (allocated by `cuMemAllocManaged`), so the same pointer is
    // valid in the managed space; the borrow of `slice` bounds the view.
    Ok(unsafe { Mdspan::from_raw_parts(host.data_handle(), *host.mapping(), space) })
}

/// Where the driver says a device pointer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// The device ordinal of the allocation.
    pub ordinal: i32,
    /// Whether it is managed memory.
    pub managed: bool,
}

/// Asks the driver about `ptr` (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`, `_IS_MANAGED`).
pub fn pointer_info(ptr: *const core::ffi::c_void) -> Result<PointerInfo, CudaError> {
    if !driver_available() {
        return Err(CudaError::NoDriver);
    }
    let mut ordinal: i32 = -1;
    let mut managed: u32 = 0;
    // SAFETY: each call writes one value of the attribute's documented type (`int` for the
    // ordinal, `unsigned int` for the managed flag) through a valid pointer; `ptr` is only
    // looked up, never dereferenced.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr as sys::CUdeviceptr,
        )
    }
    .result()?;
    // SAFETY: as above.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut managed as *mut u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            ptr as sys::CUdeviceptr,
        )
    }
    .result()?;
    Ok(PointerInfo {
        ordinal,
        managed: managed != 0,
    })
}

/// A `kDLCUDA` (or `kDLCUDAManaged`) tensor viewed where its pointer really is.
#[derive(Debug)]
pub enum Placed<'a, T, const R: usize, L: Layout> {
    /// Device memory of the labelled device.
    Device(DeviceMdspan<'a, T, Dims<R>, L>),
    /// Managed memory, even where the producer labelled it `kDLCUDA` (as PyTorch must: it
    /// refuses `kDLCUDAManaged`).
    Managed(ManagedMdspan<'a, T, Dims<R>, L>),
}

/// Imports a CUDA tensor where its pointer really is (its placement, as [`oneapi::place`] is
/// for oneAPI tensors): checks with the driver that the pointer belongs to the labelled device,
/// and views managed memory as managed whatever the label.
///
/// [`oneapi::place`]: https://docs.rs/dlmd/latest/dlmd/oneapi/fn.place.html
///
/// # Safety
///
/// As for [`Mdspan::from_dlpack`].
pub unsafe fn place<'a, T, const R: usize, L>(tensor: &'a DLTensor) -> Result<Placed<'a, T, R, L>, CudaError>
where
    T: DlElement,
    T::Storage: PlainStorage,
    L: Layout,
{
    // SAFETY: forwarded from the caller; every field is checked by the importer.
    let device = unsafe { DeviceMdspan::<'a, T, Dims<R>, L>::from_dlpack(tensor) }?;
    if device.is_empty() {
        return Ok(Placed::Device(device));
    }
    let info = pointer_info(device.as_ptr().cast())?;
    if info.managed {
        // Managed memory is host-readable: its `bool` bytes are checked as a host import's are.
        // SAFETY: the driver reports managed memory, readable from the host, and the caller
        // promises the span holds the tensor's elements.
        unsafe { check_bools::<T, Dims<R>, L>(device.as_ptr(), device.mapping()) }?;
        let space = Managed::new(device.space().ordinal());
        // SAFETY: the driver reports managed memory, valid in the managed space; bools checked.
        let managed = unsafe { Mdspan::from_raw_parts(device.data_handle(), *device.mapping(), space) };
        return Ok(Placed::Managed(managed));
    }
    if tensor.device.device_type == DLDeviceType::CUDA && info.ordinal != tensor.device.device_id {
        return Err(CudaError::Placement(PlacementError::WrongDevice {
            labelled: tensor.device.device_id,
            actual: info.ordinal,
        }));
    }
    Ok(Placed::Device(device))
}

// SAFETY: the FP8 types are `#[repr(transparent)]` over one `u8`, and every byte is a value of
// each (their encodings use all eight bits): plain bytes to copy to and from a device, all-zero
// being `+0.0` (`2^-127` for `F8E8M0FNU`, a value too).
unsafe impl DeviceRepr for crate::dtype::F8E4M3FN {}
// SAFETY: as above.
unsafe impl DeviceRepr for crate::dtype::F8E5M2 {}
// SAFETY: as above.
unsafe impl DeviceRepr for crate::dtype::F8E8M0FNU {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for crate::dtype::F8E4M3FN {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for crate::dtype::F8E5M2 {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for crate::dtype::F8E8M0FNU {}

// SAFETY: `#[repr(C)]` of a pointer, `i64`s and an `i32` (its layout asserted in
// `crate::kernel`, and in `view.cuh`), a kernel parameter by value; it holds no reference.
unsafe impl<T, const R: usize> DeviceRepr for ViewParam<T, R> {}

impl<'a, T, E, L, A, const R: usize> Mdspan<'a, T, E, L, Device, A>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    A: Access,
{
    /// The primary context of the view's device, made once per device: load kernels for this
    /// view into it, and launch them on one of its streams.
    pub fn context(&self) -> Result<Arc<CudaContext>, CudaError> {
        scope::primary(self.space().ordinal())
    }

    /// The view as a C++ kernel's `dlmd::view<T, R>` argument (`.arg(&view.kernel_view())`),
    /// the [`ViewParam`] a `#[dlmd::kernel]` launcher passes too. Pass it only to kernels on
    /// this view's device, and keep the view (and its allocation) borrowed until they finish.
    pub fn kernel_view(&self) -> ViewParam<T, R> {
        ViewParam::of(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "reads a file, which Miri's isolation forbids")]
    fn the_header_is_shipped() {
        assert!(HEADER.contains("struct view"));
        assert!(std::path::Path::new(INCLUDE_DIR).join("dlmd/view.cuh").exists());
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads the CUDA driver, a foreign library Miri cannot run")]
    fn no_driver_is_an_error_not_a_panic() {
        if driver_available() {
            return;
        }
        assert!(matches!(context(0), Err(CudaError::NoDriver)));
    }
}
