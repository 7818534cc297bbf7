//! Framework tensors as kernel arguments: an [`Imported`] tensor (from `__dlpack__`, DLPack's C
//! exchange table, a [`ManagedTensor`] or candle) goes to a `#[dlmd::kernel]` launcher from safe
//! code, on the stream its producer named, and the launch returns without waiting.

use super::arg::{ArgInfo, KernelArg};
use super::{CudaError, Kernels, Launch, scope::primary};
use crate::dlpack::{DLDataType, DLDataTypeCode, DLDeviceType, DLTensor};
use crate::dtype::{DlElement, PlainStorage};
use crate::exchange::WorkStream;
use crate::extents::Extents;
use crate::import::ImportError;
use crate::kernel::{Footprint, KernelAccess, KernelParam, ViewParam};
use crate::layout::{Layout, Mapping};
use crate::managed::ManagedTensor;
use crate::space::Device;
use crate::view::{Aliased, AliasedMut, Mdspan};
use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, sys};
use std::sync::Arc;
use std::thread::ThreadId;

/// DLPack's stream value, and the driver's handle, of the per-thread default stream.
const PER_THREAD: usize = 2;

/// A tensor from another framework, held for kernels queued on the stream its producer named.
///
/// Made by [`python::import_for_kernel`](crate::python::import_for_kernel) for any Python
/// producer, which asks the producer which stream the data is ready on, or by `unsafe`
/// [`new`](Self::new), whose caller vouches for the stream: the stream is what orders every
/// launch over the tensor, so nothing that names it is safe to call on a guess.
/// Its arguments ([`arg`](Self::arg)) go to `#[dlmd::kernel]` launchers, and
/// [`launch`](Self::launch) queues them on the producer's stream.
///
/// # Why this is sound
///
/// An imported tensor's memory is shared: its producer and every other consumer reach it too.
/// The kernel is nevertheless given the access its signature declares ([`Shared`](crate::Shared),
/// [`Unique`](crate::Unique), [`Atomic`](crate::Atomic)), because each thing those accesses rely
/// on is checked at the launch, where a failure is a named [`CudaError`]:
///
/// - **Other work on the memory** is ordered by the producer's stream. DLPack's contract is that
///   the data is ready on the stream the consumer asked for (or the producer's current work
///   stream, which its C exchange table names), and the producer's own later work on that
///   stream runs after what is queued there now. A launch runs on that stream and no other:
///   every imported argument must name the launch's stream ([`LaunchError::Stream`](super::LaunchError::Stream)), and
///   where that is the per-thread default stream, which is another stream on every thread, be
///   launched on the thread that imported it ([`LaunchError::PerThreadStream`](super::LaunchError::PerThreadStream)). Launches
///   over imports of the same memory on other streams (one tensor imported twice, for two
///   streams) are ordered by the launch: it waits on the device for the earlier ones over
///   overlapping bytes (also copies and collectives in scopes, and the latest run of a CUDA
///   graph that captured such a launch), unless both only read. Work the producer's user queues on other
///   streams without ordering it is outside what any consumer can see; it is as much a race
///   for the producer's own operations.
/// - **Other arguments of the same launch** are checked against each other: no argument the
///   kernel writes shares a byte of its span with another argument
///   ([`LaunchError::Arguments`](super::LaunchError::Arguments): the same tensor passed twice, two views of one tensor).
/// - **The argument itself**: a written argument's layout maps no two indices to one element
///   (stride 0, as expanded tensors have, is refused by the import: [`ImportError`]); the
///   producer allows writes (`READ_ONLY`, or a torch tensor that requires grad, is refused);
///   torch tensors whose negative or conjugate bit is set are refused on import, as their
///   memory does not hold the values they stand for.
/// - **The memory is where the tensor says**: the driver must know the span's first byte as
///   memory of the labelled device (or managed memory), and the whole span must lie inside
///   that allocation ([`PlacementError::WrongDevice`](super::PlacementError::WrongDevice), [`PlacementError::NotDeviceMemory`](super::PlacementError::NotDeviceMemory),
///   [`PlacementError::OutsideAllocation`](super::PlacementError::OutsideAllocation)). A kernel never reaches past what the producer
///   allocated, whatever the tensor's strides claim.
/// - **The memory outlives the kernel**: the launch keeps the imported tensor (and the kernel's
///   module) until an event recorded after the kernel completes, when a thread of dlmd's lets
///   go of it, without a host wait on the launching thread (see
///   [`wait_released`](super::wait_released)). A launch captured into a CUDA graph keeps them as
///   long as the graph and its instances live. A [lent](Self::lent) import is kept by its
///   owner instead, for all work on its stream (XLA's buffers, for the work of a call; a
///   torch operator's arguments, as torch keeps them for its own kernels), also in a graph
///   capture, whose replays reach it as long as its owner keeps it (as XLA's command buffers
///   and torch's graphs keep their static inputs); a launch over it outside a scope is not
///   filed for later launches on other streams to wait for.
///
/// Views over memory that Rust owns keep the [`scope`](super::scope)'s guarantee instead: they
/// go only to launches made in a scope ([`Scope::launch`](super::Scope::launch)), unless they
/// borrow for `'static`.
#[derive(Debug)]
pub struct Imported {
    tensor: Holding,
    stream: WorkStream,
    /// Where `stream` is the per-thread default stream (2), another stream on every thread: the
    /// thread whose stream the producer named, the only one launches over it are made on.
    thread: Option<ThreadId>,
}

/// How an [`Imported`] keeps its tensor.
#[derive(Debug)]
enum Holding {
    /// Shared with the launches over it, which keep it until their kernels are done.
    Held(Arc<ManagedTensor>),
    /// Kept by the memory's owner for all work queued on the stream ([`Imported::lent`]): no
    /// launch holds it, so it needs no shared allocation.
    Lent(ManagedTensor),
}

impl Holding {
    fn tensor(&self) -> &ManagedTensor {
        match self {
            Self::Held(tensor) => tensor,
            Self::Lent(tensor) => tensor,
        }
    }
}

impl Imported {
    /// Holds `tensor`, whose data is ready on `stream`, for kernels queued there.
    ///
    /// Safe code gets an `Imported` from [`python::import_for_kernel`](crate::python::import_for_kernel),
    /// which asks the producer for its stream (its C exchange table's current work stream, or
    /// `__dlpack__(stream=…)`, by which the producer orders its work before that stream). Here
    /// the caller says which stream the data is ready on, and every launch over the tensor
    /// relies on it: a wrong stream orders nothing, and the kernel races with the producer.
    ///
    /// # Safety
    ///
    /// - `stream` names a stream of the primary context of the tensor's device (or `0`, `1` or
    ///   `2`, the default streams), which lives as long as launches may be queued on it;
    /// - every write and read of the tensor's memory that its producer has queued or made so
    ///   far is complete, or ordered before work queued on `stream` from now on;
    /// - the producer's own later work on the memory is ordered after work queued on `stream`
    ///   (it runs on `stream`, or waits for it), for as long as this `Imported` or a launch
    ///   over it lives.
    ///
    /// The per-thread default stream (`2`) is this thread's: launches over the tensor are
    /// refused on other threads ([`LaunchError::PerThreadStream`](super::LaunchError::PerThreadStream)).
    pub unsafe fn new(tensor: ManagedTensor, stream: WorkStream) -> Self {
        Self::holding(Holding::Held(Arc::new(tensor)), stream)
    }

    fn holding(tensor: Holding, stream: WorkStream) -> Self {
        let thread = (stream.0 == PER_THREAD).then(|| std::thread::current().id());
        Self { tensor, stream, thread }
    }

    /// Lends `tensor`, whose data is ready on `stream`, to kernels queued there, where the
    /// memory's owner keeps it for all work queued on that stream: as XLA keeps a call's
    /// buffers for the work a handler queues on the call's stream
    /// ([`xla::Call::cuda_arg`](crate::xla::Call::cuda_arg)). A launch over it is ordered after
    /// earlier launches over imports of the same memory on other streams, as any launch is, but
    /// keeps nothing and, outside a scope, files nothing: later work on the memory is the
    /// owner's to order, after `stream`. A launch whose every argument is lent, of kernels [loaded for the
    /// process](Kernels::leak), records no event and leaves no work to dlmd's releasing thread:
    /// it costs what the driver's launch costs.
    ///
    /// # Safety
    ///
    /// As for [`new`](Self::new), and also: until every launch queued on `stream` while this
    /// `Imported` lives is complete, the memory the tensor describes stays allocated, and its
    /// owner queues or allows no work on it that is not ordered after those launches.
    pub unsafe fn lent(tensor: ManagedTensor, stream: WorkStream) -> Self {
        Self::holding(Holding::Lent(tensor), stream)
    }

    /// The imported tensor.
    pub fn tensor(&self) -> &ManagedTensor {
        self.tensor.tensor()
    }

    /// The imported tensor to change, for work on the host (a CPU tensor): its read-write views,
    /// never the tensor itself ([`ImportedMut`](super::ImportedMut)). `None` while a launch holds
    /// it, until its kernel is done and the hold released, and for a [lent](Self::lent) import,
    /// whose owner keeps it for work on its stream.
    pub fn tensor_mut(&mut self) -> Option<super::ImportedMut<'_>> {
        match &mut self.tensor {
            Holding::Held(tensor) => Arc::get_mut(tensor).map(super::ImportedMut::new),
            Holding::Lent(_) => None,
        }
    }

    /// The stream the producer made the data ready on, which launches over it must use.
    pub fn work_stream(&self) -> WorkStream {
        self.stream
    }

    /// The number of elements, the product of the extents (0 for a tensor without a shape, which
    /// [`arg`](Self::arg) refuses): what a grid covers.
    pub fn len(&self) -> usize {
        self.tensor().shape().map_or(0, |shape| {
            shape
                .iter()
                .try_fold(1usize, |n, &e| n.checked_mul(usize::try_from(e).ok()?))
                .unwrap_or(0)
        })
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA device the tensor is on (`kDLCUDA` or `kDLCUDAManaged`).
    pub fn ordinal(&self) -> Result<usize, CudaError> {
        let device = self.tensor().dl_tensor().device;
        match device.device_type {
            DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED => {
                usize::try_from(device.device_id).map_err(|_| CudaError::NoSuchDevice {
                    ordinal: device.device_id,
                })
            }
            _ => Err(ImportError::from(crate::space::SpaceError::DeviceType {
                expected: "Device",
                found: device.device_type,
            })
            .into()),
        }
    }

    /// The primary context of the tensor's device: load the kernels for it there.
    pub fn context(&self) -> Result<Arc<CudaContext>, CudaError> {
        primary(self.ordinal()? as i32)
    }

    /// The producer's stream, checked to be a stream of the device's primary context.
    pub(crate) fn stream(&self) -> Result<Arc<CudaStream>, CudaError> {
        let ctx = self.context()?;
        let handle = match self.stream.0 {
            // The legacy default stream, as `CudaContext::default_stream` names it.
            0 | 1 => core::ptr::null_mut(),
            // `CU_STREAM_PER_THREAD`, a handle every context accepts, never destroyed.
            2 => core::ptr::without_provenance_mut(2),
            // A stream of this context (checked), which its producer keeps alive while work on
            // the tensor may be queued on it (DLPack's contract for the stream the data is made
            // ready on).
            value => super::stream::check_launch_stream(value, &ctx)?,
        };
        Ok(borrowed_stream(&ctx, handle))
    }

    /// A launch of one of `kernels` on the producer's stream: it is queued there and returns at
    /// once, keeping the imported arguments (and the module) until the kernel is done, but for
    /// [lent](Self::lent) ones, which their owner keeps. Other
    /// arguments must be imports on the same stream, elements, or views that borrow for
    /// `'static`; for views over memory Rust owns, launch in a [`scope`](super::scope).
    pub fn launch<'a>(
        &'a self,
        kernels: &'a Kernels,
        config: LaunchConfig,
    ) -> Result<Launch<'a, 'static, 'static>, CudaError> {
        Ok(kernels.launch_on(&self.stream()?, config))
    }

    /// The tensor as the kernel argument `P` (a device view type of a `#[dlmd::kernel]`'s
    /// signature, any access, or a tensor map), checked as the [type's docs](Imported) say:
    /// element type, rank, static extents and layout as for any import; for `Unique` and
    /// `Atomic` views, that the producer allows writes and that no two indices share an
    /// element; for a [`TensorMap`](crate::kernel::tensor_map::TensorMap), the copy engine's
    /// rules ([`TiledMap`](super::TiledMap)'s, each a [`TensorMapError`](super::TensorMapError);
    /// a zero or negative stride, which no map expresses, is refused by the import before);
    /// that the span lies in one allocation of the labelled device.
    ///
    /// `bool` elements are refused ([`ImportError::UncheckedBool`]): a kernel would read their
    /// bytes as `bool`, and no check can see from here that each is 0 or 1. Pass their bytes
    /// with [`arg_bool_bytes`](Self::arg_bool_bytes).
    pub fn arg<P: ImportParam>(&self) -> Result<Arg<'_, P>, CudaError> {
        self.checked(P::import(self.tensor())?)
    }

    /// A tensor of `bool` elements (DLPack `{BOOL, 8, lanes}`) as the kernel argument `P`, a
    /// device view of `u8` (or of `[u8; lanes]`): its bytes, each a valid `u8` whatever the
    /// producer wrote, checked otherwise as [`arg`](Self::arg) checks. A kernel that writes
    /// them writes 0 or 1 for the producer to read back as `bool` (the byte's value is the
    /// kernel's to choose; Rust's rules hold either way).
    ///
    /// ```no_run
    /// # fn f(x: &dlmd::cuda::Imported) -> Result<(), dlmd::cuda::CudaError> {
    /// use dlmd::{DeviceMdspanMut, Dims};
    /// // A `torch.bool` tensor of one dimension, to a kernel that takes `u8` elements.
    /// let bytes = x.arg_bool_bytes::<DeviceMdspanMut<'_, u8, Dims<1>>>()?;
    /// # drop(bytes); Ok(()) }
    /// # let _ = f;
    /// ```
    pub fn arg_bool_bytes<P: ImportParam>(&self) -> Result<Arg<'_, P>, CudaError> {
        self.checked(P::import_bool_bytes(self.tensor())?)
    }

    /// An argument of `param`, once its footprint is found inside one allocation of `device`.
    fn checked<P: KernelParam>(
        &self,
        (param, footprint, device): (P::Param, Footprint, i32),
    ) -> Result<Arg<'_, P>, CudaError> {
        check_allocation(footprint, device)?;
        Ok(Arg {
            param,
            footprint,
            device,
            held: self,
        })
    }
}

/// A wrapper of `handle`, a live stream of `ctx` (or a default handle), that neither owns nor
/// destroys it: the one this thread made last where that wraps the same handle of the same
/// context (two such wrappers are the same value), a new one otherwise. A launch costs no
/// allocation for it.
fn borrowed_stream(ctx: &Arc<CudaContext>, handle: cudarc::driver::sys::CUstream) -> Arc<CudaStream> {
    std::thread_local! {
        static LAST: core::cell::RefCell<Option<Arc<CudaStream>>> = const { core::cell::RefCell::new(None) };
    }
    // SAFETY: the caller's `handle` is a default handle or a live stream of `ctx`; the wrapper
    // is never destroyed by its drop (it is borrowed), and is used only while the stream lives
    // (one launch; a kept wrapper is handed out again only for the same handle, checked again).
    let wrap = || unsafe { ctx.wrap_borrowed_stream(handle) };
    LAST.try_with(|last| {
        let mut last = last.try_borrow_mut().ok()?;
        if let Some(stream) = last.as_ref()
            && stream.cu_stream() == handle
            && Arc::ptr_eq(stream.context(), ctx)
        {
            return Some(stream.clone());
        }
        let stream = wrap();
        *last = Some(stream.clone());
        Some(stream)
    })
    .ok()
    .flatten()
    .unwrap_or_else(wrap)
}

/// An imported tensor checked as the kernel argument `P`, for one launch: pass it where the
/// launcher takes `P`. Made by [`Imported::arg`].
#[derive(Debug)]
pub struct Arg<'i, P: KernelParam> {
    param: P::Param,
    footprint: Footprint,
    device: i32,
    held: &'i Imported,
}

pub(super) mod sealed {
    pub trait Sealed {}
}

/// A kernel parameter type an [`Imported`] tensor can be passed as: a device view
/// `Mdspan<'_, T, E, L, Device, A>` with a kernel's access ([`KernelAccess`]) and an element
/// type the data type describes exactly, or a TMA [`TensorMap`](crate::kernel::tensor_map::TensorMap)
/// of the tensor (read only; its map is encoded at [`arg`](Imported::arg), on the host).
#[diagnostic::on_unimplemented(
    message = "an imported tensor cannot be passed as `{Self}`",
    label = "not a device view or tensor map a kernel takes",
    note = "imported tensors are passed as device views (`DeviceMdspan`, `DeviceMdspanMut`, `DeviceMdspanAtomic`) \
            of plain elements, or as tensor maps (`TensorMap`)"
)]
pub trait ImportParam: KernelParam + sealed::Sealed {
    /// The tensor's parameter form as `Self`, its footprint and its device, every property an
    /// import checks checked, and for written views that the producer allows writes.
    #[doc(hidden)]
    fn import(tensor: &ManagedTensor) -> Result<(Self::Param, Footprint, i32), CudaError>;

    /// As [`import`](Self::import), for a tensor of `bool` elements and a view of `u8` (of the
    /// same lanes): its bytes.
    #[doc(hidden)]
    fn import_bool_bytes(tensor: &ManagedTensor) -> Result<(Self::Param, Footprint, i32), CudaError>;
}

impl<T, E, L, A> sealed::Sealed for Mdspan<'_, T, E, L, Device, A>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    A: KernelAccess,
{
}

impl<T, E, L, A, const R: usize> ImportParam for Mdspan<'_, T, E, L, Device, A>
where
    T: DlElement,
    T::Storage: PlainStorage,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    A: KernelAccess,
{
    fn import(tensor: &ManagedTensor) -> Result<(ViewParam<T, R>, Footprint, i32), CudaError> {
        // A kernel reads `bool` elements as `bool`, for which any byte but 0 or 1 is undefined
        // behaviour, and device memory cannot be checked from here: no `bool` reaches a kernel
        // from outside (the rest of the import's checks would pass it). Its bytes can, as `u8`
        // (`import_bool_bytes`).
        if T::DTYPE.code == DLDataTypeCode::BOOL.0 {
            return Err(ImportError::UncheckedBool { dtype: T::DTYPE }.into());
        }
        if A::MUTABLE {
            // An aliased view's checks: writes allowed, a unique mapping.
            tensor.check_writable()?;
            Ok(parts(tensor.view_as::<T, E, L, Device, AliasedMut>()?, A::used::<T>()))
        } else {
            Ok(parts(tensor.view_as::<T, E, L, Device, Aliased>()?, A::used::<T>()))
        }
    }

    fn import_bool_bytes(tensor: &ManagedTensor) -> Result<(ViewParam<T, R>, Footprint, i32), CudaError> {
        let found = tensor.dl_tensor().dtype;
        let bools = DLDataType::new(DLDataTypeCode::BOOL, 8, T::DTYPE.lanes);
        if T::DTYPE != DLDataType::new(DLDataTypeCode::UINT, 8, T::DTYPE.lanes) || found != bools {
            return Err(ImportError::DataType { expected: bools, found }.into());
        }
        // The same tensor, its bytes read as `u8` (of the same size and lanes), which every byte
        // is: nothing else of it changes.
        let bytes = DLTensor {
            dtype: T::DTYPE,
            ..*tensor.dl_tensor()
        };
        let version = tensor.version();
        if A::MUTABLE {
            tensor.check_writable()?;
            // SAFETY: `bytes` is the managed tensor's own `DLTensor` (its arrays and data valid
            // until the tensor is dropped, which `from_raw` promised and the borrow of `tensor`
            // outlives) with a data type of the same size, and the view lives only inside this
            // call; `u8` storage is whole bytes, so no padding flag applies.
            let view = unsafe { Mdspan::<T, E, L, Device, AliasedMut>::import(&bytes, version) }?;
            Ok(parts(view, A::used::<T>()))
        } else {
            // SAFETY: as above.
            let view = unsafe { Mdspan::<T, E, L, Device, Aliased>::import(&bytes, version) }?;
            Ok(parts(view, A::used::<T>()))
        }
    }
}

/// A device view's parameter form, its footprint (used as `used`) and its device.
fn parts<T: DlElement, E: Extents<Index = [usize; R]>, L: Layout, B: crate::view::Access, const R: usize>(
    view: Mdspan<'_, T, E, L, Device, B>,
    used: crate::kernel::Use,
) -> (ViewParam<T, R>, Footprint, i32) {
    (ViewParam::of(&view), footprint(&view, used), view.space().ordinal())
}

/// The bytes an imported device view spans, used as `used`.
pub(super) fn footprint<T: DlElement, E: Extents, L: Layout, B: crate::view::Access>(
    view: &Mdspan<'_, T, E, L, Device, B>,
    used: crate::kernel::Use,
) -> Footprint {
    Footprint {
        start: view.data_handle() as usize,
        // A mapping's span is memory that exists: its bytes fit `usize`.
        bytes: view.mapping().required_span_size() * size_of::<T>(),
        used,
    }
}

impl<P: KernelParam> super::arg::sealed::Sealed<P> for Arg<'_, P> {}

impl<'i, P: KernelParam, N> KernelArg<P, N> for Arg<'i, P> {
    #[inline]
    fn to_param(&self) -> P::Param {
        self.param
    }

    #[inline]
    fn info(&self) -> ArgInfo<'_> {
        ArgInfo {
            device: Some(self.device),
            footprint: Some(self.footprint),
            held: Some(super::arg::Producer {
                tensor: match &self.held.tensor {
                    Holding::Held(tensor) => Some(tensor),
                    Holding::Lent(_) => None,
                },
                stream: self.held.stream,
                thread: self.held.thread,
            }),
        }
    }
}

/// Checks with the driver that the `footprint`'s bytes are device memory of device `ordinal`
/// (or managed memory) and lie inside one allocation.
fn check_allocation(footprint: Footprint, ordinal: i32) -> Result<(), CudaError> {
    if footprint.bytes == 0 {
        return Ok(());
    }
    let mut device: i32 = -1;
    let mut managed: u32 = 0;
    let mut range_start: sys::CUdeviceptr = 0;
    let mut range_bytes: usize = 0;
    let mut attributes = [
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut values: [*mut core::ffi::c_void; 4] = [
        (&raw mut device).cast(),
        (&raw mut managed).cast(),
        (&raw mut range_start).cast(),
        (&raw mut range_bytes).cast(),
    ];
    // SAFETY: each value pointer is valid for one value of its attribute's documented type
    // (`int`, `unsigned int`, `CUdeviceptr`, `size_t`); the address is only looked up.
    let status = unsafe {
        sys::cuPointerGetAttributes(
            attributes.len() as u32,
            attributes.as_mut_ptr(),
            values.as_mut_ptr(),
            footprint.start as sys::CUdeviceptr,
        )
    };
    match status {
        sys::CUresult::CUDA_SUCCESS => {}
        sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
            return Err(CudaError::Placement(super::PlacementError::NotDeviceMemory {
                address: footprint.start,
            }));
        }
        e => e.result()?,
    }
    // Memory the driver does not know reads back as no range.
    if range_bytes == 0 {
        return Err(CudaError::Placement(super::PlacementError::NotDeviceMemory {
            address: footprint.start,
        }));
    }
    if managed == 0 && device != ordinal {
        return Err(CudaError::Placement(super::PlacementError::WrongDevice {
            labelled: ordinal,
            actual: device,
        }));
    }
    let (start, end) = (range_start as usize, (range_start as usize).saturating_add(range_bytes));
    if footprint.start < start || footprint.start.saturating_add(footprint.bytes) > end {
        return Err(CudaError::Placement(super::PlacementError::OutsideAllocation {
            start: footprint.start,
            bytes: footprint.bytes,
            allocation: start,
            allocation_bytes: range_bytes,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlpack::{DLDevice, DLManagedTensorVersioned};
    use crate::kernel::Use;
    use crate::managed::export;
    use crate::{DeviceMdspan, DeviceMdspanMut, Dims};

    /// A managed tensor of `values` labelled as memory of CUDA device 0, as a producer hands one
    /// over: the import's checks read its fields, never its memory.
    fn on_device<T: DlElement>(values: Vec<T>) -> ManagedTensor {
        let n = values.len();
        let raw = export::<DLManagedTensorVersioned>(values, Dims::new([n])).unwrap();
        // SAFETY: a fresh export, not handed over yet: its fields are ours to set.
        unsafe {
            (*raw).dl_tensor.device = DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            };
        }
        // SAFETY: a valid managed tensor, handed over once.
        unsafe { ManagedTensor::from_raw(raw) }.unwrap()
    }

    #[test]
    fn device_bools_reach_a_kernel_only_as_bytes() {
        let tensor = on_device(vec![true, false, true]);
        let refused = [
            <DeviceMdspan<'_, bool, Dims<1>> as ImportParam>::import(&tensor).unwrap_err(),
            <DeviceMdspanMut<'_, bool, Dims<1>> as ImportParam>::import(&tensor).unwrap_err(),
            <DeviceMdspan<'_, [bool; 2], Dims<1>> as ImportParam>::import(&tensor).unwrap_err(),
        ];
        for e in refused {
            assert!(matches!(e, CudaError::Import(ImportError::UncheckedBool { .. })), "{e}");
            assert!(e.to_string().contains("torch.uint8"), "{e}");
        }
        let (_, footprint, device) =
            <DeviceMdspanMut<'_, u8, Dims<1>> as ImportParam>::import_bool_bytes(&tensor).unwrap();
        assert_eq!(footprint.start, tensor.dl_tensor().data as usize);
        assert_eq!((footprint.bytes, footprint.used, device), (3, Use::Write, 0));
        let (_, footprint, _) = <DeviceMdspan<'_, u8, Dims<1>> as ImportParam>::import_bool_bytes(&tensor).unwrap();
        assert_eq!((footprint.bytes, footprint.used), (3, Use::Read));
        // Bytes of bools only: not another element type, and not bytes that are not bools.
        let bools = DLDataType::new(DLDataTypeCode::BOOL, 8, 1);
        let e = <DeviceMdspan<'_, i8, Dims<1>> as ImportParam>::import_bool_bytes(&tensor).unwrap_err();
        assert!(
            matches!(e, CudaError::Import(ImportError::DataType { expected, .. }) if expected == bools),
            "{e}"
        );
        let bytes = on_device(vec![2u8, 255]);
        let e = <DeviceMdspan<'_, u8, Dims<1>> as ImportParam>::import_bool_bytes(&bytes).unwrap_err();
        assert!(
            matches!(e, CudaError::Import(ImportError::DataType { found, .. }) if found == u8::DTYPE),
            "{e}"
        );
        // Other element types are imported as before.
        assert!(<DeviceMdspan<'_, u8, Dims<1>> as ImportParam>::import(&bytes).is_ok());
    }
}
