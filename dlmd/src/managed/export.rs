//! Owned export: an owned buffer handed over as a managed tensor whose deleter frees it.

use super::TensorOwner;
use super::recycle;
use crate::dlpack::{DLDevice, DLTensor, IS_SUBBYTE_TYPE_PADDED, ManagedTensorAbi, READ_ONLY};
use crate::dtype::{DlElement, ElementStorage};
use crate::export::ExportError;
use crate::extents::{Extents, IndexArray};
use crate::layout::{CompactLayout, LayoutRight, Mapping, to_i64};
use core::alloc::Layout;
use core::ffi::c_void;
use core::ptr::NonNull;

/// The heap block behind an exported tensor, one allocation: the managed struct first, so that
/// its address is the block's, then the shape and strides it points into, then the owner.
#[repr(C)]
struct Exported<M, I: IndexArray, O> {
    managed: M,
    shape: I::I64,
    strides: I::I64,
    owner: O,
}

/// The deleter of every tensor [`export_with`] makes: drops the owner and gives the block back.
///
/// # Safety
///
/// Called once (the DLPack contract), on a tensor made by [`export_with`] with these `M`, `I`,
/// `O`, or with NULL.
unsafe extern "C" fn delete<M: ManagedTensorAbi, I: IndexArray, O: TensorOwner>(managed: *mut M) {
    let Some(block) = NonNull::new(managed.cast::<Exported<M, I, O>>()) else {
        return;
    };
    // SAFETY: dlmd made `managed` as the first field (`#[repr(C)]`) of an `Exported<M, I, O>`
    // written into a block from `recycle::allocate`, and the DLPack contract calls the deleter
    // once: the value is dropped once, here.
    unsafe { block.drop_in_place() };
    // SAFETY: the block came from `recycle::allocate` with this layout (`export_with`), what it
    // held was dropped above, and it is given back once.
    unsafe { recycle::release(block.cast(), Layout::new::<Exported<M, I, O>>()) };
}

/// Exports `owner` with row-major `extents` as a managed tensor of kind `M` on the CPU: a
/// [`DLManagedTensorVersioned`](crate::dlpack::DLManagedTensorVersioned) (DLPack 1.3) or a
/// legacy [`DLManagedTensor`](crate::dlpack::DLManagedTensor) for consumers that know no
/// other. Its deleter frees the owner exactly once, from any thread.
///
/// A versioned tensor is flagged `READ_ONLY` for shared owners such as `Arc<[T]>` and
/// `IS_SUBBYTE_TYPE_PADDED` for FP6/FP4 elements. A legacy tensor cannot say either, and its
/// consumers may write, so such owners are refused there ([`ExportError::ReadOnlyInLegacy`], as
/// numpy refuses read-only arrays; [`ExportError::SubbyteInLegacy`]).
///
/// ```
/// use dlmd::dlpack::{DLManagedTensor, DLManagedTensorVersioned, READ_ONLY};
/// use dlmd::export::ExportError;
/// use dlmd::managed::{ManagedTensor, export};
/// use dlmd::Dims;
/// use std::sync::Arc;
///
/// let shared: Arc<[f32]> = Arc::from(vec![1.0, 2.0]);
/// let raw = export::<DLManagedTensorVersioned>(shared.clone(), Dims::new([2])).unwrap();
/// // SAFETY: `raw` was just produced by dlmd and is handed over.
/// let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
/// assert_eq!(tensor.flags() & READ_ONLY, READ_ONLY);
/// assert_eq!(
///     export::<DLManagedTensor>(shared, Dims::new([2])).unwrap_err(),
///     ExportError::ReadOnlyInLegacy
/// );
/// ```
pub fn export<M: ManagedTensorAbi>(owner: impl TensorOwner, extents: impl Extents) -> Result<*mut M, ExportError> {
    // SAFETY: a `TensorOwner`'s memory is host memory unless it is exported as another
    // device's (its contract), and this exports it as host memory.
    unsafe { export_with(owner, extents, 0, DLDevice::CPU) }
}

/// As [`export`], adding `flags` (such as [`IS_COPIED`](crate::dlpack::IS_COPIED) for a copy
/// made for this exchange, which a legacy tensor drops) for an owner of memory on `device` (its
/// [`data_ptr`](TensorOwner::data_ptr) is then a pointer on that device, such as a CUDA device
/// pointer).
///
/// `IS_SUBBYTE_TYPE_PADDED` says how the elements are stored, which the element type alone
/// knows: it is set for padded sub-byte storage and cleared from `flags` otherwise, since a
/// consumer that honours it reads packed FP4 bytes as twice as many elements.
///
/// # Safety
///
/// `owner`'s memory is memory of `device`, where consumers will read (and unless `READ_ONLY`
/// write) it: host memory for `DLDevice::CPU` (what [`export`] passes), a device pointer of
/// that CUDA device for `DLDevice::cuda(n)`, and so on. A `Vec` labelled as CUDA memory would
/// send a consumer's kernels to a host address.
#[inline(always)]
pub unsafe fn export_with<M: ManagedTensorAbi, O: TensorOwner, E: Extents>(
    owner: O,
    extents: E,
    flags: u64,
    device: DLDevice,
) -> Result<*mut M, ExportError> {
    let mut flags = flags & !IS_SUBBYTE_TYPE_PADDED;
    if O::READ_ONLY {
        flags |= READ_ONLY;
    }
    if <<O::Elem as DlElement>::Storage as ElementStorage>::IS_SUBBYTE_PADDED {
        flags |= IS_SUBBYTE_TYPE_PADDED;
    }
    // What the struct cannot carry: a copy may drop `IS_COPIED`, but not the other two.
    let lost = flags & !M::FLAGS;
    if lost & IS_SUBBYTE_TYPE_PADDED != 0 {
        return Err(ExportError::SubbyteInLegacy);
    }
    if lost & READ_ONLY != 0 {
        return Err(ExportError::ReadOnlyInLegacy);
    }
    let mapping = LayoutRight::mapping(extents)?;
    let (needed, len) = (mapping.required_span_size(), owner.len());
    if len < needed {
        return Err(ExportError::TooShort { needed, len });
    }
    let (shape, strides) = to_i64(&mapping);
    let tensor = DLTensor {
        data: core::ptr::null_mut(),
        device,
        ndim: E::RANK as i32,
        dtype: O::Elem::DTYPE,
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
    let value = Exported::<M, E::Index, O> {
        managed: M::new(
            tensor,
            flags & M::FLAGS,
            core::ptr::null_mut(),
            Some(delete::<M, E::Index, O>),
        ),
        shape,
        strides,
        owner,
    };
    let raw = recycle::allocate(Layout::new::<Exported<M, E::Index, O>>())
        .cast::<Exported<M, E::Index, O>>()
        .as_ptr();
    // SAFETY: the block has the size and alignment of the value (`allocate`) and is this
    // function's alone.
    unsafe { raw.write(value) };
    // SAFETY: `raw` holds the value just written, which nothing else references yet; the
    // pointers stored point into it, and stay valid until the deleter frees it.
    let block = unsafe { &mut *raw };
    let data = if needed == 0 {
        core::ptr::null_mut()
    } else {
        block.owner.data_ptr().cast::<c_void>()
    };
    let (shape, strides) = if E::RANK == 0 {
        (core::ptr::null_mut(), core::ptr::null_mut())
    } else {
        (block.shape.as_mut().as_mut_ptr(), block.strides.as_mut().as_mut_ptr())
    };
    let t = block.managed.dl_tensor_mut();
    t.data = data;
    t.shape = shape;
    t.strides = strides;
    Ok(raw.cast())
}
