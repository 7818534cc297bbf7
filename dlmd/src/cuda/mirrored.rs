//! [`MirroredArray`]: the seed's MemArray in Rust (the seed: the AMSO MemArray, a C++/CUDA
//! array with a host and a device copy, which `examples/python-memarray` also rebuilds), an n-d
//! array with a pinned host copy and a device copy, moved between them asynchronously.

use super::CudaError;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::{CompactLayout, LayoutRight, Mapping};
use crate::space::Device;
use crate::view::{DeviceMdspan, DeviceMdspanMut, HostMdspan, HostMdspanMut, Mdspan};
use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, PinnedHostSlice, ValidAsZeroBits, result,
    sys,
};
use std::sync::Arc;

/// Which copy holds the current values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Current {
    /// Only the host copy is current (written on the host since the last transfer).
    Host,
    /// Only the device copy is current (written on the device since the last transfer).
    Device,
    /// Both copies hold the same values.
    Both,
}

/// Bytes per chunk when a pageable buffer is staged through pinned memory.
const STAGE_BYTES: usize = 16 << 20;

/// Threads that copy one chunk between pageable and pinned memory: one core's memcpy is slower
/// than the copy engine, so several share each chunk.
const COPY_THREADS: usize = 4;

/// `dst.copy_from_slice(src)` split over [`COPY_THREADS`] threads.
fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    let part = dst.len().div_ceil(COPY_THREADS).max(1);
    std::thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(part).zip(src.chunks(part)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}

/// An n-d array with a pinned host copy and a device copy.
///
/// [`to_device`](Self::to_device) and [`to_host`](Self::to_host) are asynchronous on the array's
/// stream and return at once when the destination is already current; host access waits for a
/// transfer in flight. `&mut` borrows stand in for the seed's lock ids: while a view of one copy
/// is borrowed mutably, nothing can move the data under it.
pub struct MirroredArray<T: DlElement + DeviceRepr, E: Extents, L: CompactLayout = LayoutRight> {
    mapping: L::Mapping<E>,
    host: PinnedHostSlice<T>,
    device: CudaSlice<T>,
    stream: Arc<CudaStream>,
    current: Current,
    /// Completion of the last transfer into host memory, waited for before host access.
    pending: Option<CudaEvent>,
}

impl<T, E, L> MirroredArray<T, E, L>
where
    T: DlElement + DeviceRepr + ValidAsZeroBits,
    E: Extents,
    L: CompactLayout,
{
    /// A zero-filled array on `stream`'s device, with both copies current.
    pub fn zeros(stream: &Arc<CudaStream>, extents: E) -> Result<Self, CudaError> {
        let mapping = L::mapping(extents).map_err(crate::view::ViewError::from)?;
        let len = mapping.required_span_size();
        // SAFETY: the pinned buffer is zeroed at once below, before any read.
        let mut host = unsafe { stream.context().alloc_pinned::<T>(len) }?;
        host.as_mut_slice()?.fill_with(|| {
            // SAFETY: `T: ValidAsZeroBits`, so all-zero bytes are a valid `T`.
            unsafe { core::mem::zeroed() }
        });
        let device = stream.alloc_zeros::<T>(len)?;
        Ok(Self {
            mapping,
            host,
            device,
            stream: stream.clone(),
            current: Current::Both,
            pending: None,
        })
    }

    /// The extents.
    pub fn extents(&self) -> &E {
        self.mapping.extents()
    }

    /// Which copy is current.
    pub fn current(&self) -> Current {
        self.current
    }

    /// The stream transfers and device work are ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn wait_pending(&mut self) -> Result<(), CudaError> {
        if let Some(event) = self.pending.take() {
            event.synchronize()?;
        }
        Ok(())
    }

    /// Makes the device copy current: an asynchronous host-to-device copy, or nothing when the
    /// device copy is current already.
    pub fn to_device(&mut self) -> Result<(), CudaError> {
        if self.current != Current::Host {
            return Ok(());
        }
        self.stream.memcpy_htod(&self.host, &mut self.device)?;
        self.current = Current::Both;
        Ok(())
    }

    /// Makes the host copy current: an asynchronous device-to-host copy (host access waits for
    /// it), or nothing when the host copy is current already.
    pub fn to_host(&mut self) -> Result<(), CudaError> {
        if self.current != Current::Device {
            return Ok(());
        }
        self.stream.memcpy_dtoh(&self.device, &mut self.host)?;
        self.pending = Some(self.stream.record_event(None)?);
        self.current = Current::Both;
        Ok(())
    }

    fn stale(&self, want: &'static str) -> CudaError {
        CudaError::Stale {
            want,
            current: self.current,
        }
    }

    /// A read-only view of the host copy; an error while only the device copy is current.
    pub fn host(&mut self) -> Result<HostMdspan<'_, T, E, L>, CudaError> {
        if self.current == Current::Device {
            return Err(self.stale("host"));
        }
        self.wait_pending()?;
        let mapping = self.mapping;
        Ok(HostMdspan::from_slice_mapping(self.host.as_slice()?, mapping)?)
    }

    /// A read-write view of the host copy, which becomes the only current one.
    pub fn host_mut(&mut self) -> Result<HostMdspanMut<'_, T, E, L>, CudaError> {
        if self.current == Current::Device {
            return Err(self.stale("host"));
        }
        self.wait_pending()?;
        self.current = Current::Host;
        let mapping = self.mapping;
        Ok(HostMdspanMut::from_slice_mapping_mut(
            self.host.as_mut_slice()?,
            mapping,
        )?)
    }

    /// The element at `index` of the host copy, checked.
    pub fn get(&mut self, index: E::Index) -> Result<Option<T>, CudaError> {
        Ok(self.host()?.get(index).copied())
    }

    /// A read-only view of the device copy; an error while only the host copy is current.
    pub fn device(&self) -> Result<DeviceMdspan<'_, T, E, L>, CudaError> {
        if self.current == Current::Host {
            return Err(self.stale("device"));
        }
        let (ptr, _read) = self.device.device_ptr(&self.stream);
        // Work over the view runs after the transfers queued on the array's stream.
        super::order::after_queued(&self.stream, ptr, self.device.num_bytes());
        let space = Device::new(self.stream.context().ordinal() as i32);
        // SAFETY: the allocation holds the mapping's span, borrowed for the view.
        Ok(unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, self.mapping, space) })
    }

    /// A read-write view of the device copy, which becomes the only current one.
    pub fn device_mut(&mut self) -> Result<DeviceMdspanMut<'_, T, E, L>, CudaError> {
        if self.current == Current::Host {
            return Err(self.stale("device"));
        }
        self.current = Current::Device;
        let stream = self.stream.clone();
        let bytes = self.device.num_bytes();
        let (ptr, _write) = self.device.device_ptr_mut(&stream);
        super::order::after_queued(&stream, ptr, bytes);
        let space = Device::new(stream.context().ordinal() as i32);
        // SAFETY: as in `device`; borrowed exclusively.
        Ok(unsafe { Mdspan::from_raw_parts(ptr as usize as *mut T, self.mapping, space) })
    }

    /// The host copy's pointer, unchecked.
    ///
    /// # Safety
    ///
    /// Reads are valid only while the host copy is current and no transfer into it is in
    /// flight; writes must be followed by [`mark_host_written`](Self::mark_host_written).
    pub unsafe fn host_ptr(&mut self) -> *mut T {
        // The pointer of a pinned allocation does not depend on the event wait `as_mut_slice`
        // performs; failing that wait leaves the caller's contract to cover it.
        self.host
            .as_mut_slice()
            .map_or(core::ptr::null_mut(), |s| s.as_mut_ptr())
    }

    /// Records that the host copy was written through [`host_ptr`](Self::host_ptr): it becomes
    /// the only current copy, which the accessors then read and upload.
    ///
    /// # Safety
    ///
    /// No transfer into the host copy is in flight (a [`to_host`](Self::to_host) not yet
    /// waited for by an accessor), and the values the host copy holds are the ones the array
    /// is to have from now on: the accessors and uploads take them as they are.
    pub unsafe fn mark_host_written(&mut self) {
        self.current = Current::Host;
    }

    /// Checks a pageable buffer's length and makes the two pinned staging chunks.
    fn staging(&self, len: usize) -> Result<(usize, [PinnedHostSlice<T>; 2]), CudaError> {
        let needed = self.device.len();
        if len != needed {
            return Err(crate::view::ViewError::SliceTooShort { needed, len }.into());
        }
        let chunk = (STAGE_BYTES / size_of::<T>()).max(1);
        let ctx = self.stream.context();
        // SAFETY: each staging chunk is written (by the CPU or by a copy) before it is read.
        let first = unsafe { ctx.alloc_pinned::<T>(chunk)? };
        // SAFETY: as above.
        let second = unsafe { ctx.alloc_pinned::<T>(chunk)? };
        let stages = [first, second];
        Ok((chunk, stages))
    }

    /// Fills the device copy from a pageable host buffer, staged through pinned chunks so the
    /// CPU copies one chunk while the DMA engine moves the previous one. The device copy becomes
    /// the only current one.
    pub fn upload_pageable(&mut self, src: &[T]) -> Result<(), CudaError> {
        let (chunk, mut stages) = self.staging(src.len())?;
        let mut done: [Option<CudaEvent>; 2] = [None, None];
        let (base, _write) = self.device.device_ptr_mut(&self.stream);
        for (i, part) in src.chunks(chunk).enumerate() {
            let k = i % 2;
            if let Some(event) = done[k].take() {
                event.synchronize()?;
            }
            let stage = &mut stages[k].as_mut_slice()?[..part.len()];
            parallel_copy(stage, part);
            let dst = base + (i * chunk * size_of::<T>()) as sys::CUdeviceptr;
            // SAFETY: `dst` is inside the device allocation (`i * chunk + part.len() <= len`),
            // `stage` is pinned and not touched again until `done[k]` has completed.
            unsafe { result::memcpy_htod_async(dst, stage, self.stream.cu_stream()) }?;
            done[k] = Some(self.stream.record_event(None)?);
        }
        for event in done.into_iter().flatten() {
            event.synchronize()?;
        }
        self.current = Current::Device;
        Ok(())
    }

    /// Copies the device copy into a pageable host buffer, staged through pinned chunks; an
    /// error while only the host copy is current.
    pub fn download_pageable(&mut self, dst: &mut [T]) -> Result<(), CudaError> {
        if self.current == Current::Host {
            return Err(self.stale("device"));
        }
        let (chunk, mut stages) = self.staging(dst.len())?;
        let len = dst.len();
        let (base, _read) = self.device.device_ptr(&self.stream);
        let parts: Vec<(usize, usize)> = (0..len).step_by(chunk).map(|s| (s, (len - s).min(chunk))).collect();
        let mut issued: [Option<(CudaEvent, usize)>; 2] = [None, None];
        let issue = |i: usize, stages: &mut [PinnedHostSlice<T>; 2]| -> Result<(CudaEvent, usize), CudaError> {
            let (start, n) = parts[i];
            let stage = &mut stages[i % 2].as_mut_slice()?[..n];
            let src = base + (start * size_of::<T>()) as sys::CUdeviceptr;
            // SAFETY: `src..src + n` is inside the device allocation; `stage` is pinned and
            // read only after the event recorded below completes.
            unsafe { result::memcpy_dtoh_async(stage, src, self.stream.cu_stream()) }?;
            Ok((self.stream.record_event(None)?, i))
        };
        if !parts.is_empty() {
            issued[0] = Some(issue(0, &mut stages)?);
        }
        for i in 0..parts.len() {
            if i + 1 < parts.len() {
                issued[(i + 1) % 2] = Some(issue(i + 1, &mut stages)?);
            }
            if let Some((event, j)) = issued[i % 2].take() {
                event.synchronize()?;
                let (start, n) = parts[j];
                parallel_copy(&mut dst[start..start + n], &stages[j % 2].as_slice()?[..n]);
            }
        }
        Ok(())
    }
}

impl<T: DlElement + DeviceRepr, E: Extents, L: CompactLayout> core::fmt::Debug for MirroredArray<T, E, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MirroredArray")
            .field("extents", self.mapping.extents())
            .field("current", &self.current)
            .finish()
    }
}
