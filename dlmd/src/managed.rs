//! Owned exchange: tensors handed over with their ownership, as `DLManagedTensorVersioned` (or the
//! legacy `DLManagedTensor`).
//!
//! - Import: [`ManagedTensor`] owns a producer's managed tensor and calls its deleter exactly once
//!   when dropped. Views of it are safe: the producer's promise was made once, in
//!   [`ManagedTensor::from_raw_versioned`] / [`ManagedTensor::from_raw_legacy`]. DLPack shares
//!   the memory: the producer and other consumers (another import of the same array among them)
//!   may read and write it while the tensor lives, so the views are
//!   [aliased](crate::view::Aliased): elements are copied in and out by value, and `&T` / `&mut T`
//!   views come only from [`assume_unaliased`](crate::Mdspan::assume_unaliased) /
//!   [`assume_unique`](crate::Mdspan::assume_unique), whose contract states exclusivity.
//! - Export: [`export_versioned`] and [`export_legacy`] turn an owned buffer (`Vec<T>`,
//!   `Box<[T]>`, `Arc<[T]>`, or dlmd's [`Array`]) into a managed tensor whose deleter frees it
//!   exactly once, from any thread. Versioned tensors carry `READ_ONLY` for shared buffers
//!   (`Arc<[T]>`) and `IS_SUBBYTE_TYPE_PADDED` for FP6/FP4 elements.
//!
//! ```
//! use dlmd::managed::{export_versioned, ManagedTensor};
//! use dlmd::{Dims, LayoutRight};
//!
//! let raw = export_versioned(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], Dims::new([2, 3])).unwrap();
//! // SAFETY: `raw` was just produced by dlmd and is handed over here.
//! let tensor = unsafe { ManagedTensor::from_raw_versioned(raw) }.unwrap();
//! let md = tensor.as_host_mdspan::<f32, 2, LayoutRight>().unwrap();
//! assert_eq!(md.load([1, 2]), 6.0);
//! // Dropping `tensor` calls the deleter, which frees the `Vec`.
//! ```

use crate::Dims;
use crate::dlpack::{
    DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor, IS_COPIED, IS_SUBBYTE_TYPE_PADDED,
    READ_ONLY,
};
use crate::dtype::{DlElement, ElementStorage};
use crate::extents::{Extents, IndexArray};
use crate::import::ImportError;
use crate::layout::{CompactLayout, Layout, LayoutError, LayoutRight, Mapping, to_i64};
use crate::space::{Host, MemorySpace};
use crate::view::{
    Aliased, AliasedMut, HostMdspan, HostMdspanAliased, HostMdspanAliasedMut, HostMdspanMut, Mdspan, ViewError,
};
use core::ffi::c_void;
use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::Arc;
use std::vec::Vec;

/// Why a managed tensor was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManagedError {
    /// The pointer is NULL.
    #[error("the managed tensor pointer is NULL")]
    Null,
    /// The major version is not 1; the tensor was released through its deleter, untouched
    /// otherwise.
    #[error("DLPack major version {major} is not supported (dlmd reads major version 1)")]
    Version {
        /// The tensor's major version.
        major: u32,
    },
}

/// A managed tensor struct, versioned or legacy, as far as releasing it goes.
pub(crate) trait Release {
    /// Calls the tensor's deleter, if it has one.
    ///
    /// # Safety
    ///
    /// `this` is a valid managed tensor owned by the caller, whose deleter (when not NULL) may
    /// be called from this thread; the tensor is released and not used again.
    unsafe fn release(this: *mut Self);
}

impl Release for DLManagedTensorVersioned {
    unsafe fn release(this: *mut Self) {
        // SAFETY: `this` is valid and owned (caller); its deleter is called once.
        unsafe {
            if let Some(deleter) = (*this).deleter {
                deleter(this);
            }
        }
    }
}

impl Release for DLManagedTensor {
    unsafe fn release(this: *mut Self) {
        // SAFETY: as for the versioned struct.
        unsafe {
            if let Some(deleter) = (*this).deleter {
                deleter(this);
            }
        }
    }
}

/// The producer's struct, versioned or legacy.
enum Raw {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

/// A tensor owned from another producer, released through its deleter exactly once on drop.
pub struct ManagedTensor {
    raw: Raw,
}

// SAFETY: `from_raw_*` require the deleter to be callable from any thread and the data not to be
// tied to the creating thread; the wrapper only reads the struct through `&self`.
unsafe impl Send for ManagedTensor {}
// SAFETY: shared access only reads the struct and hands out read-only views.
unsafe impl Sync for ManagedTensor {}

impl fmt::Debug for ManagedTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedTensor")
            .field("version", &self.version())
            .field("flags", &self.flags())
            .field("dl_tensor", self.dl_tensor())
            .finish()
    }
}

impl ManagedTensor {
    /// Takes ownership of a versioned managed tensor.
    ///
    /// A tensor whose major version is not 1 is released at once through its deleter (the only
    /// field whose place every version keeps) and refused; nothing else of it is read.
    ///
    /// # Safety
    ///
    /// - `ptr` is NULL or points to a `DLManagedTensorVersioned` (at least its `version`,
    ///   `manager_ctx` and `deleter`) handed over to the caller, who owns it from now on;
    /// - for major version 1, `dl_tensor`'s `shape` and `strides` (unless NULL) hold `ndim`
    ///   values, and the data it describes stays valid and is not written by anyone else
    ///   until the deleter runs (except where `READ_ONLY` is clear and this wrapper writes);
    /// - the deleter, when not NULL, may be called once, from any thread.
    pub unsafe fn from_raw_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<Self, ManagedError> {
        let ptr = NonNull::new(ptr).ok_or(ManagedError::Null)?;
        // SAFETY: the caller promises `ptr` points to a managed tensor whose version header
        // is readable.
        let major = unsafe { (*ptr.as_ptr()).version.major };
        if major != 1 {
            // SAFETY: the deleter's position is fixed by the ABI for every major version; the
            // caller hands over ownership, so calling it once is ours to do.
            unsafe { DLManagedTensorVersioned::release(ptr.as_ptr()) };
            return Err(ManagedError::Version { major });
        }
        Ok(Self {
            raw: Raw::Versioned(ptr),
        })
    }

    /// Takes ownership of a legacy (pre-1.0) managed tensor.
    ///
    /// # Safety
    ///
    /// As for [`from_raw_versioned`](Self::from_raw_versioned), for a `DLManagedTensor`.
    pub unsafe fn from_raw_legacy(ptr: *mut DLManagedTensor) -> Result<Self, ManagedError> {
        let ptr = NonNull::new(ptr).ok_or(ManagedError::Null)?;
        Ok(Self { raw: Raw::Legacy(ptr) })
    }

    /// The tensor.
    pub fn dl_tensor(&self) -> &DLTensor {
        // SAFETY: the pointer is owned and valid until drop (`from_raw_*`).
        unsafe {
            match &self.raw {
                Raw::Versioned(p) => &(*p.as_ptr()).dl_tensor,
                Raw::Legacy(p) => &(*p.as_ptr()).dl_tensor,
            }
        }
    }

    /// The producer's DLPack version, `None` for a legacy tensor.
    pub fn version(&self) -> Option<DLPackVersion> {
        match &self.raw {
            // SAFETY: as in `dl_tensor`.
            Raw::Versioned(p) => Some(unsafe { (*p.as_ptr()).version }),
            Raw::Legacy(_) => None,
        }
    }

    /// The flags (0 for a legacy tensor).
    pub fn flags(&self) -> u64 {
        match &self.raw {
            // SAFETY: as in `dl_tensor`.
            Raw::Versioned(p) => unsafe { (*p.as_ptr()).flags },
            Raw::Legacy(_) => 0,
        }
    }

    /// Whether the producer forbids writes.
    pub fn is_read_only(&self) -> bool {
        self.flags() & READ_ONLY != 0
    }

    /// Whether the producer copied the data for this exchange.
    pub fn is_copied(&self) -> bool {
        self.flags() & IS_COPIED != 0
    }

    /// Views the tensor in any space this view type accepts, checking everything the importers
    /// check and that sub-byte elements are declared padded.
    fn view<T, E, L, S, A>(&self) -> Result<Mdspan<'_, T, E, L, S, A>, ImportError>
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: MemorySpace,
        A: crate::view::Access,
    {
        if <T::Storage as ElementStorage>::IS_SUBBYTE_PADDED && self.flags() & IS_SUBBYTE_TYPE_PADDED == 0 {
            return Err(ImportError::PackedSubbyte {
                dtype: self.dl_tensor().dtype,
            });
        }
        // SAFETY: `from_raw_*` promised the tensor's arrays and data valid until drop, which
        // the returned borrow of `self` cannot outlive; padded storage was checked above.
        unsafe { Mdspan::import(self.dl_tensor(), self.version()) }
    }

    /// A read-only host view with rank `R` and layout `L`, by value: others may write the
    /// memory meanwhile (see [`Aliased`]).
    pub fn as_host_mdspan<T: DlElement, const R: usize, L: Layout>(
        &self,
    ) -> Result<HostMdspanAliased<'_, T, Dims<R>, L>, ImportError> {
        self.view()
    }

    /// A read-only host view with static or mixed extents `E`, by value.
    pub fn as_host_mdspan_extents<T: DlElement, E: Extents, L: Layout>(
        &self,
    ) -> Result<HostMdspanAliased<'_, T, E, L>, ImportError> {
        self.view()
    }

    /// A read-write host view, by value (see [`AliasedMut`]); refused when the producer set
    /// `READ_ONLY`, and for overlapping strides.
    pub fn as_host_mdspan_mut<T: DlElement, const R: usize, L: Layout>(
        &mut self,
    ) -> Result<HostMdspanAliasedMut<'_, T, Dims<R>, L>, ImportError> {
        if self.is_read_only() {
            return Err(ImportError::ReadOnly);
        }
        self.view()
    }

    /// Any read-only view: host, device or managed memory.
    pub fn as_mdspan<T: DlElement, E: Extents, L: Layout, S: MemorySpace>(
        &self,
    ) -> Result<Mdspan<'_, T, E, L, S, Aliased>, ImportError> {
        self.view()
    }

    /// Any read-write view; refused when the producer set `READ_ONLY`, and for overlapping
    /// strides.
    pub fn as_mdspan_mut<T: DlElement, E: Extents, L: Layout, S: MemorySpace>(
        &mut self,
    ) -> Result<Mdspan<'_, T, E, L, S, AliasedMut>, ImportError> {
        if self.is_read_only() {
            return Err(ImportError::ReadOnly);
        }
        self.view()
    }

    /// Gives the pointer back without calling the deleter.
    pub fn into_raw(self) -> RawManaged {
        let raw = match self.raw {
            Raw::Versioned(p) => RawManaged::Versioned(p.as_ptr()),
            Raw::Legacy(p) => RawManaged::Legacy(p.as_ptr()),
        };
        core::mem::forget(self);
        raw
    }
}

/// A managed tensor pointer given back by [`ManagedTensor::into_raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawManaged {
    /// A versioned tensor.
    Versioned(*mut DLManagedTensorVersioned),
    /// A legacy tensor.
    Legacy(*mut DLManagedTensor),
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        // SAFETY: the wrapper owns the tensor and drops once; the deleter may be called once,
        // from any thread (`from_raw_*`).
        unsafe {
            match self.raw {
                Raw::Versioned(p) => DLManagedTensorVersioned::release(p.as_ptr()),
                Raw::Legacy(p) => DLManagedTensor::release(p.as_ptr()),
            }
        }
    }
}

/// An owned buffer that can back an exported tensor.
///
/// # Safety
///
/// `data_ptr` returns a pointer valid for `len()` initialised elements for as long as the owner
/// lives (moving the owner must not move the elements), writable unless `READ_ONLY`, and no
/// one else writes them.
pub unsafe trait TensorOwner: Send + 'static {
    /// The element type.
    type Elem: DlElement;
    /// Whether consumers must not write (a buffer others may share).
    const READ_ONLY: bool;
    /// The first element.
    fn data_ptr(&mut self) -> *mut Self::Elem;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// SAFETY: a `Vec`'s heap buffer does not move with the `Vec` and is owned by it.
unsafe impl<T: DlElement> TensorOwner for Vec<T> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.as_mut_ptr()
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

// SAFETY: as for `Vec`.
unsafe impl<T: DlElement> TensorOwner for Box<[T]> {
    type Elem = T;
    const READ_ONLY: bool = false;
    fn data_ptr(&mut self) -> *mut T {
        self.as_mut_ptr()
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

// SAFETY: the `Arc`'s allocation does not move and lives while this clone does; other clones
// may read it, so the tensor is exported read-only and no one writes through it.
unsafe impl<T: DlElement> TensorOwner for Arc<[T]> {
    type Elem = T;
    const READ_ONLY: bool = true;
    fn data_ptr(&mut self) -> *mut T {
        self.as_ptr().cast_mut()
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

/// An owned n-dimensional host array: a `Vec` with extents and a compact layout.
///
/// ```
/// use dlmd::managed::Array;
/// use dlmd::{Const, Dyn};
///
/// let mut a = Array::<f64, (Const<2>, Dyn)>::zeros((Const, Dyn(3))).unwrap();
/// a.view_mut()[[1, 2]] = 4.0;
/// assert_eq!(a.view()[[1, 2]], 4.0);
/// assert_eq!(a.as_slice()[5], 4.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Array<T, E: Extents, L: CompactLayout = LayoutRight> {
    data: Vec<T>,
    mapping: L::Mapping<E>,
}

impl<T: DlElement, E: Extents, L: CompactLayout> Array<T, E, L> {
    /// An array of `extents` filled with `T::default()`.
    pub fn zeros(extents: E) -> Result<Self, ViewError>
    where
        T: Default,
    {
        let mapping = L::mapping(extents)?;
        Ok(Self {
            data: vec![T::default(); mapping.required_span_size()],
            mapping,
        })
    }

    /// An array over `data` with `extents`; the lengths must agree.
    pub fn from_vec(data: Vec<T>, extents: E) -> Result<Self, ViewError> {
        let mapping = L::mapping(extents)?;
        let needed = mapping.required_span_size();
        if data.len() != needed {
            return Err(ViewError::SliceTooShort {
                needed,
                len: data.len(),
            });
        }
        Ok(Self { data, mapping })
    }

    /// The extents.
    pub fn extents(&self) -> &E {
        self.mapping.extents()
    }

    /// The elements in layout order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements in layout order, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// A read-only view.
    pub fn view(&self) -> HostMdspan<'_, T, E, L> {
        // SAFETY: the vector holds exactly the mapping's span, borrowed for the view.
        unsafe { Mdspan::from_raw_parts(self.data.as_ptr().cast_mut(), self.mapping, Host) }
    }

    /// A read-write view.
    pub fn view_mut(&mut self) -> HostMdspanMut<'_, T, E, L> {
        // SAFETY: as in `view`; compact mappings are unique and the vector is borrowed mutably.
        unsafe { Mdspan::from_raw_parts(self.data.as_mut_ptr(), self.mapping, Host) }
    }

    /// The vector, giving up the shape.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
}

/// The heap block behind an exported tensor, one allocation: the managed struct first, so that
/// its address is the block's, then the shape and strides it points into, then the owner.
#[repr(C)]
struct Exported<M, I: IndexArray, O> {
    managed: M,
    shape: I::I64,
    strides: I::I64,
    owner: O,
}

/// Why an owned buffer cannot be exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The buffer is shorter than the span of the extents.
    #[error("the extents need {needed} elements but the buffer holds {len}")]
    TooShort {
        /// Elements the extents span.
        needed: usize,
        /// Elements in the buffer.
        len: usize,
    },
    /// The extents are invalid.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// Sub-byte padded elements cannot travel in a legacy tensor, which has no flag for it.
    #[error("FP6/FP4 elements stored one per byte need a versioned tensor with IS_SUBBYTE_TYPE_PADDED")]
    SubbyteInLegacy,
    /// Read-only data (a shared owner such as `Arc<[T]>`) cannot travel in a legacy tensor,
    /// which has no flag for it: its consumers may write.
    #[error("read-only data needs a versioned tensor with READ_ONLY; a legacy tensor's consumers may write")]
    ReadOnlyInLegacy,
}

/// `[i64; RANK]` of extents `E`.
type I64s<E> = <<E as Extents>::Index as IndexArray>::I64;

/// Shape and row-major strides of `extents`, checked against `len`.
fn shape_of<E: Extents>(extents: &E, len: usize) -> Result<(I64s<E>, I64s<E>), ExportError> {
    let mapping = LayoutRight::mapping(*extents)?;
    let needed = mapping.required_span_size();
    if len < needed {
        return Err(ExportError::TooShort { needed, len });
    }
    Ok(to_i64(&mapping))
}

/// Leaks `block` and points its tensor at its own shape and strides and at the owner's data.
fn finish<M, I: IndexArray, O: TensorOwner>(
    block: Box<Exported<M, I, O>>,
    tensor: impl Fn(&mut M) -> &mut DLTensor,
) -> *mut M {
    let raw = Box::into_raw(block);
    // SAFETY: `raw` is a valid, leaked box that nothing else references yet; the pointers
    // stored point into it, and stay valid until the deleter frees it.
    unsafe {
        let block = &mut *raw;
        let rank = I::RANK;
        let empty = block.shape.as_ref().contains(&0);
        let data = if empty {
            core::ptr::null_mut()
        } else {
            block.owner.data_ptr().cast::<c_void>()
        };
        let (shape, strides) = if rank == 0 {
            (core::ptr::null_mut(), core::ptr::null_mut())
        } else {
            (block.shape.as_mut().as_mut_ptr(), block.strides.as_mut().as_mut_ptr())
        };
        let t = tensor(&mut block.managed);
        t.data = data;
        t.shape = shape;
        t.strides = strides;
    }
    raw.cast()
}

/// A tensor of `T` on `device` whose pointers [`finish`] fills in.
fn blank<T: DlElement>(rank: usize, device: DLDevice) -> DLTensor {
    DLTensor {
        data: core::ptr::null_mut(),
        device,
        ndim: rank as i32,
        dtype: T::DTYPE,
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    }
}

unsafe extern "C" fn delete_versioned<I: IndexArray, O: TensorOwner>(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: dlmd made `managed` as the first field of a leaked `Box<Exported<_, I, O>>`
    // (`#[repr(C)]`), and the DLPack contract calls the deleter once.
    drop(unsafe { Box::from_raw(managed.cast::<Exported<DLManagedTensorVersioned, I, O>>()) });
}

unsafe extern "C" fn delete_legacy<I: IndexArray, O: TensorOwner>(managed: *mut DLManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: as in `delete_versioned`.
    drop(unsafe { Box::from_raw(managed.cast::<Exported<DLManagedTensor, I, O>>()) });
}

/// Exports `owner` with row-major `extents` as a versioned (1.3) managed tensor. Its deleter
/// frees the owner exactly once, from any thread. Flags: `READ_ONLY` for shared owners such as
/// `Arc<[T]>`, `IS_SUBBYTE_TYPE_PADDED` for FP6/FP4 elements.
pub fn export_versioned<O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
) -> Result<*mut DLManagedTensorVersioned, ExportError> {
    export_versioned_with_flags(owner, extents, 0)
}

/// As [`export_versioned`], adding `flags` (such as [`IS_COPIED`] for a copy made for this
/// exchange, or [`READ_ONLY`]).
pub fn export_versioned_with_flags<O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
    flags: u64,
) -> Result<*mut DLManagedTensorVersioned, ExportError> {
    export_versioned_on(owner, extents, flags, DLDevice::CPU)
}

/// As [`export_versioned_with_flags`], for an owner of memory on `device` (its
/// [`data_ptr`](TensorOwner::data_ptr) is then a pointer on that device, such as a CUDA device
/// pointer).
pub fn export_versioned_on<O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
    flags: u64,
    device: DLDevice,
) -> Result<*mut DLManagedTensorVersioned, ExportError> {
    let (shape, strides) = shape_of(&extents, owner.len())?;
    let mut flags = flags;
    if O::READ_ONLY {
        flags |= READ_ONLY;
    }
    if <<O::Elem as DlElement>::Storage as ElementStorage>::IS_SUBBYTE_PADDED {
        flags |= IS_SUBBYTE_TYPE_PADDED;
    }
    let block = Box::new(Exported::<_, E::Index, O> {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(delete_versioned::<E::Index, O>),
            flags,
            dl_tensor: blank::<O::Elem>(E::RANK, device),
        },
        shape,
        strides,
        owner,
    });
    Ok(finish(block, |m| &mut m.dl_tensor))
}

/// Exports `owner` with row-major `extents` as a legacy managed tensor, for consumers that do
/// not know versioned ones. A legacy tensor cannot say read-only, and its consumers may write:
/// shared owners such as `Arc<[T]>` are refused ([`ExportError::ReadOnlyInLegacy`], as numpy
/// refuses read-only arrays there), and so are sub-byte padded elements.
pub fn export_legacy<O: TensorOwner, E: Extents>(owner: O, extents: E) -> Result<*mut DLManagedTensor, ExportError> {
    export_legacy_on(owner, extents, DLDevice::CPU)
}

/// As [`export_legacy`], for an owner of memory on `device`.
pub fn export_legacy_on<O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
    device: DLDevice,
) -> Result<*mut DLManagedTensor, ExportError> {
    if <<O::Elem as DlElement>::Storage as ElementStorage>::IS_SUBBYTE_PADDED {
        return Err(ExportError::SubbyteInLegacy);
    }
    if O::READ_ONLY {
        return Err(ExportError::ReadOnlyInLegacy);
    }
    let (shape, strides) = shape_of(&extents, owner.len())?;
    let block = Box::new(Exported::<_, E::Index, O> {
        managed: DLManagedTensor {
            dl_tensor: blank::<O::Elem>(E::RANK, device),
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(delete_legacy::<E::Index, O>),
        },
        shape,
        strides,
        owner,
    });
    Ok(finish(block, |m| &mut m.dl_tensor))
}

impl<T: DlElement, E: Extents> Array<T, E, LayoutRight> {
    /// Exports the array as a versioned managed tensor (see [`export_versioned`]).
    pub fn into_dlpack_versioned(self) -> Result<*mut DLManagedTensorVersioned, ExportError> {
        let extents = *self.extents();
        export_versioned(self.data, extents)
    }

    /// Exports the array as a legacy managed tensor (see [`export_legacy`]).
    pub fn into_dlpack_legacy(self) -> Result<*mut DLManagedTensor, ExportError> {
        let extents = *self.extents();
        export_legacy(self.data, extents)
    }
}

impl<T: DlElement, E: Extents, L: CompactLayout> Array<T, E, L> {
    /// The strides, in elements.
    pub fn strides(&self) -> <E::Index as IndexArray>::Isize {
        self.mapping.strides()
    }
}
