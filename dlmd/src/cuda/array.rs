//! A first program's CUDA without cudarc: [`Gpu`] (a device and the stream dlmd queues its work
//! on) and [`DeviceArray`] (typed device memory with its extents, to the device and back).

use super::grid::grid_of;
use super::scope::primary;
use super::{CudaError, Kernels, LaunchConfig, device_view, device_view_mut};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::{CompactLayout, LayoutRight, Mapping};
use crate::view::{DeviceMdspan, DeviceMdspanMut, ViewError};
use core::marker::PhantomData;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use std::sync::Arc;

/// A CUDA device and the stream its work goes on: arrays copied to it and back, kernels
/// loaded on it, launches queued on [`stream`](Self::stream).
///
/// Every operation of a `Gpu` and of its [`DeviceArray`]s is queued on that one stream, in the
/// order the program makes them: a launch runs after the copies made before it, and
/// [`DeviceArray::to_vec`] waits for the launches before it. A launch on another stream
/// waits on the device for the work queued on its views' arrays first (see
/// [`device_view`](super::device_view)).
///
/// ```no_run
/// use dlmd::cuda::Gpu;
/// use dlmd::Dims;
///
/// # fn main() -> Result<(), dlmd::cuda::CudaError> {
/// let gpu = Gpu::new(0)?;
/// let x = gpu.to_device(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], Dims::new([2, 3]))?;
/// assert_eq!(x.to_vec()?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Gpu {
    stream: Arc<CudaStream>,
}

impl Gpu {
    /// Device `ordinal` (0 is the first), through its primary context (the one the CUDA
    /// runtime, and so PyTorch, CuPy and JAX, use), with a new stream of its own. An error,
    /// never a panic, where there is no driver or no such device.
    pub fn new(ordinal: usize) -> Result<Self, CudaError> {
        let ordinal = i32::try_from(ordinal).map_err(|_| CudaError::Ordinal(ordinal))?;
        let ctx = primary(ordinal)?;
        Ok(Self {
            stream: ctx.new_stream()?,
        })
    }

    /// The `Gpu` of an existing stream, for a program that already has one.
    pub fn on(stream: Arc<CudaStream>) -> Self {
        Self { stream }
    }

    /// The stream every operation of this `Gpu` is queued on; pass it to
    /// [`Scope::launch`](super::Scope::launch).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device's context.
    pub fn context(&self) -> &Arc<CudaContext> {
        self.stream.context()
    }

    /// Loads a kernel crate's PTX (its `PTX` constant, made by `dlmd::kernels_ptx!()`) on
    /// this device: [`Kernels::load`].
    pub fn load(&self, ptx: &str) -> Result<Kernels, CudaError> {
        Kernels::load(self.context(), ptx)
    }

    /// A row-major array on the device holding a copy of `host`, which has exactly the
    /// number of elements of `extents` ([`CudaError::HostLength`] otherwise).
    pub fn to_device<T, E>(&self, host: &[T], extents: E) -> Result<DeviceArray<T, E>, CudaError>
    where
        T: DlElement + DeviceRepr,
        E: Extents,
    {
        self.to_device_in::<T, E, LayoutRight>(host, extents)
    }

    /// [`to_device`](Self::to_device) in a compact layout of the caller's choice
    /// (`LayoutLeft`: column-major).
    pub fn to_device_in<T, E, L>(&self, host: &[T], extents: E) -> Result<DeviceArray<T, E, L>, CudaError>
    where
        T: DlElement + DeviceRepr,
        E: Extents,
        L: CompactLayout,
    {
        let needed = span::<E, L>(&extents)?;
        if host.len() != needed {
            return Err(CudaError::HostLength {
                needed,
                len: host.len(),
                extents: extents.to_array().as_ref().to_vec(),
            });
        }
        let slice = self.stream.clone_htod(host)?;
        Ok(DeviceArray::new(slice, extents))
    }

    /// A row-major array of `extents` on the device, every element zero.
    pub fn zeros<T, E>(&self, extents: E) -> Result<DeviceArray<T, E>, CudaError>
    where
        T: DlElement + DeviceRepr + ValidAsZeroBits,
        E: Extents,
    {
        let len = span::<E, LayoutRight>(&extents)?;
        Ok(DeviceArray::new(self.stream.alloc_zeros(len)?, extents))
    }
}

/// The number of elements of `extents` in layout `L` (their span: compact layouts have no gaps).
fn span<E: Extents, L: CompactLayout>(extents: &E) -> Result<usize, CudaError> {
    Ok(L::mapping(*extents).map_err(ViewError::from)?.required_span_size())
}

/// Typed device memory of a known shape, owned: made by [`Gpu::to_device`] or [`Gpu::zeros`],
/// viewed by [`view`](Self::view) and [`view_mut`](Self::view_mut) (what kernels take), copied
/// back by [`to_vec`](Self::to_vec). Its work is queued on the stream of the `Gpu` that made it.
#[derive(Debug)]
pub struct DeviceArray<T: DlElement, E: Extents, L: CompactLayout = LayoutRight> {
    slice: CudaSlice<T>,
    extents: E,
    layout: PhantomData<L>,
}

impl<T, E, L> DeviceArray<T, E, L>
where
    T: DlElement + DeviceRepr,
    E: Extents,
    L: CompactLayout,
{
    fn new(slice: CudaSlice<T>, extents: E) -> Self {
        Self {
            slice,
            extents,
            layout: PhantomData,
        }
    }

    /// The array's extents.
    pub fn extents(&self) -> &E {
        &self.extents
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    /// A read-only view, for a kernel parameter `DeviceMdspan<'_, T, E, L>`.
    pub fn view(&self) -> DeviceMdspan<'_, T, E, L> {
        device_view(&self.slice, self.extents).expect("the allocation was sized for its extents")
    }

    /// A mutable view, for a kernel parameter `DeviceMdspanMut<'_, T, E, L>`.
    pub fn view_mut(&mut self) -> DeviceMdspanMut<'_, T, E, L> {
        device_view_mut(&mut self.slice, self.extents).expect("the allocation was sized for its extents")
    }

    /// The launch configuration of a kernel that writes this array through
    /// [`Thread::for_each_mut`](crate::kernel::Thread::for_each_mut): [`grid_for`](super::grid_for)
    /// of its view.
    pub fn grid(&self) -> LaunchConfig {
        grid_of::<E, L>(&self.extents)
    }

    /// A copy of the elements on the host, in the array's layout, once the work queued on its
    /// stream before this call is done (this waits for it).
    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        Ok(self.slice.stream().clone_dtoh(&self.slice)?)
    }

    /// The cudarc allocation, for code that works with cudarc directly.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// The cudarc allocation, taken out of the array.
    pub fn into_slice(self) -> CudaSlice<T> {
        self.slice
    }
}
