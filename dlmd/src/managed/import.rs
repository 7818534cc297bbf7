//! Owned import: [`ManagedTensor`] owns a producer's managed tensor and releases it once.

use crate::dlpack::{DLPackVersion, DLTensor, IS_COPIED, IS_SUBBYTE_TYPE_PADDED, ManagedTensorAbi, READ_ONLY};
use crate::dtype::{DlElement, ElementStorage};
use crate::extents::Extents;
use crate::import::ImportError;
use crate::layout::Layout;
use crate::space::MemorySpace;
use crate::view::{Access, Aliased, AliasedMut, Mdspan};
use core::ffi::c_void;
use core::fmt;
use core::ptr::NonNull;

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

/// A tensor owned from another producer, released through its deleter exactly once on drop.
///
/// Either managed-tensor struct ([`ManagedTensorAbi`]) is held the same way: what is read once
/// (the tensor, version and flags) is kept, and the struct's kind only decides how it is
/// released.
pub struct ManagedTensor {
    ptr: NonNull<c_void>,
    tensor: NonNull<DLTensor>,
    version: Option<DLPackVersion>,
    flags: u64,
    /// Why writes are refused though the flags allow them ([`ManagedTensor::refuse_writes`]).
    writes_refused: Option<&'static str>,
    /// The producer's answer to the same, asked when a mutable view is
    /// ([`ManagedTensor::defer_write_check`]).
    write_check: Option<WriteCheck>,
    versioned: bool,
    release: unsafe fn(NonNull<c_void>),
}

/// A question to the producer, asked only when a mutable view is: whether the tensor may be
/// written ([`ManagedTensor::defer_write_check`]).
struct WriteCheck {
    context: NonNull<c_void>,
    check: unsafe fn(NonNull<c_void>) -> Option<&'static str>,
    release: unsafe fn(NonNull<c_void>),
}

// SAFETY: `from_raw` requires the deleter to be callable from any thread and the data not to be
// tied to the creating thread, and `defer_write_check` the same of its functions; the wrapper
// only reads the struct through `&self`.
unsafe impl Send for ManagedTensor {}
// SAFETY: shared access only reads the struct, asks the write check (callable from several
// threads at once: `defer_write_check`) and hands out read-only views.
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

/// Releases a managed tensor of kind `M` held as an untyped pointer.
///
/// # Safety
///
/// As for [`ManagedTensorAbi::release`], for a pointer to an `M`.
unsafe fn release<M: ManagedTensorAbi>(ptr: NonNull<c_void>) {
    // SAFETY: forwarded from the caller.
    unsafe { M::release(ptr.cast::<M>().as_ptr()) }
}

impl ManagedTensor {
    /// Takes ownership of a managed tensor, versioned or legacy.
    ///
    /// A versioned tensor whose major version is not 1 is released at once through its deleter
    /// (the only field whose place every version keeps) and refused; nothing else of it is read.
    ///
    /// # Safety
    ///
    /// - `ptr` is NULL or points to a managed tensor handed over to the caller, who owns it from
    ///   now on (for a versioned one, at least its `version`, `manager_ctx` and `deleter`);
    /// - for major version 1 (or a legacy tensor), `dl_tensor`'s `shape` and `strides` (unless
    ///   NULL) hold `ndim` values, and the data it describes stays valid until the deleter runs;
    ///   others may read and write the data meanwhile, but not at the same time as the loads
    ///   and stores of this tensor's views (on another thread without synchronisation), and
    ///   nobody writes it while `READ_ONLY` is set;
    /// - the deleter, when not NULL, may be called once, from any thread.
    pub unsafe fn from_raw<M: ManagedTensorAbi>(ptr: *mut M) -> Result<Self, ManagedError> {
        let ptr = NonNull::new(ptr).ok_or(ManagedError::Null)?;
        // SAFETY: the caller promises `ptr` points to a managed tensor whose version (if it has
        // one) is readable.
        if let Some(major) = unsafe { M::major(ptr.as_ptr()) }
            && major != 1
        {
            // SAFETY: the deleter's place is fixed by the ABI for every major version; the
            // caller hands over ownership, so calling it once is ours to do.
            unsafe { M::release(ptr.as_ptr()) };
            return Err(ManagedError::Version { major });
        }
        // SAFETY: a struct of major version 1 (or legacy) is readable whole (caller).
        let managed = unsafe { ptr.as_ref() };
        Ok(Self {
            tensor: NonNull::from(managed.dl_tensor()),
            version: managed.version(),
            flags: managed.flags(),
            writes_refused: None,
            write_check: None,
            versioned: M::VERSIONED,
            ptr: ptr.cast(),
            release: release::<M>,
        })
    }

    /// The tensor.
    pub fn dl_tensor(&self) -> &DLTensor {
        // SAFETY: the struct (and so its tensor) is owned and valid until drop (`from_raw`).
        unsafe { self.tensor.as_ref() }
    }

    /// The extents as the producer wrote them, unchecked (views check them); `None` where
    /// `shape` is NULL or `ndim` negative, which every view refuses.
    pub fn shape(&self) -> Option<&[i64]> {
        let t = self.dl_tensor();
        let ndim = usize::try_from(t.ndim).ok()?;
        if ndim == 0 {
            return Some(&[]);
        }
        if t.shape.is_null() {
            return None;
        }
        // SAFETY: a non-NULL `shape` holds `ndim` values, valid until drop (`from_raw`), which
        // the borrow of `self` cannot outlive.
        Some(unsafe { core::slice::from_raw_parts(t.shape, ndim) })
    }

    /// The producer's DLPack version, `None` for a legacy tensor.
    pub fn version(&self) -> Option<DLPackVersion> {
        self.version
    }

    /// The flags (0 for a legacy tensor).
    pub fn flags(&self) -> u64 {
        self.flags
    }

    /// Whether the producer forbids writes: the tensor's `READ_ONLY` flag,
    /// [`refuse_writes`](Self::refuse_writes), or the [write check](Self::defer_write_check)'s
    /// answer (asked now).
    pub fn is_read_only(&self) -> bool {
        self.check_writable().is_err()
    }

    /// Refuses mutable views of this tensor from now on, saying `why`: for consumers that learn
    /// from the producer, outside the tensor, that its data must not be written. (A torch tensor
    /// that requires grad exported through torch's C exchange table carries no `READ_ONLY`, yet
    /// torch's `__dlpack__` refuses to export it: writing it in place would go behind autograd's
    /// back.) Read-only views are still given.
    ///
    /// ```
    /// use dlmd::dlpack::DLManagedTensorVersioned;
    /// use dlmd::managed::{export, ManagedTensor};
    /// use dlmd::{Dims, HostMdspanAliased, HostMdspanAliasedMut, ImportError, LayoutRight};
    ///
    /// let raw = export::<DLManagedTensorVersioned>(vec![1u8; 4], Dims::new([4])).unwrap();
    /// // SAFETY: a fresh export, handed over.
    /// let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    /// tensor.refuse_writes("the producer's autograd tracks it");
    /// assert!(tensor.is_read_only());
    /// assert!(tensor.view::<HostMdspanAliased<'_, u8, Dims<1>, LayoutRight>>().is_ok());
    /// let e = tensor.view_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>, LayoutRight>>().unwrap_err();
    /// assert_eq!(e, ImportError::WritesRefused("the producer's autograd tracks it"));
    /// ```
    pub fn refuse_writes(&mut self, why: &'static str) {
        self.writes_refused = Some(why);
    }

    /// Asks `check` whether the tensor may be written each time a mutable view is asked for
    /// (or [`is_read_only`](Self::is_read_only)), and not before: for consumers whose producer
    /// answers outside the tensor, at a cost read-only imports need not pay. `check` returns why
    /// writes are refused, or `None`; `release` is called once, when the tensor is dropped (or
    /// when another check replaces this one).
    ///
    /// ```
    /// use core::ptr::NonNull;
    /// use dlmd::dlpack::DLManagedTensorVersioned;
    /// use dlmd::managed::{export, ManagedTensor};
    /// use dlmd::{Dims, HostMdspanAliasedMut, ImportError, LayoutRight};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    ///
    /// static TRACKED: AtomicBool = AtomicBool::new(false);
    /// unsafe fn ask(_: NonNull<core::ffi::c_void>) -> Option<&'static str> {
    ///     TRACKED.load(Ordering::Relaxed).then_some("the producer's autograd tracks it")
    /// }
    /// unsafe fn release(_: NonNull<core::ffi::c_void>) {}
    ///
    /// let raw = export::<DLManagedTensorVersioned>(vec![1u8; 4], Dims::new([4])).unwrap();
    /// // SAFETY: a fresh export, handed over.
    /// let mut tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    /// // SAFETY: `ask` and `release` take any context, from any thread.
    /// unsafe { tensor.defer_write_check(NonNull::dangling(), ask, release) };
    /// assert!(tensor.view_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>, LayoutRight>>().is_ok());
    /// TRACKED.store(true, Ordering::Relaxed);
    /// let e = tensor.view_mut::<HostMdspanAliasedMut<'_, u8, Dims<1>, LayoutRight>>().unwrap_err();
    /// assert_eq!(e, ImportError::WritesRefused("the producer's autograd tracks it"));
    /// ```
    ///
    /// # Safety
    ///
    /// `check(context)` may be called from any thread, from several at once, until
    /// `release(context)` is called, which may be from any thread, once.
    pub unsafe fn defer_write_check(
        &mut self,
        context: NonNull<c_void>,
        check: unsafe fn(NonNull<c_void>) -> Option<&'static str>,
        release: unsafe fn(NonNull<c_void>),
    ) {
        if let Some(old) = self.write_check.replace(WriteCheck {
            context,
            check,
            release,
        }) {
            // SAFETY: the replaced check's context, released once (its setter's contract).
            unsafe { (old.release)(old.context) }
        }
    }

    /// Refuses a mutable view where the producer forbids writes.
    pub(crate) fn check_writable(&self) -> Result<(), ImportError> {
        if let Some(why) = self.writes_refused {
            return Err(ImportError::WritesRefused(why));
        }
        if let Some(c) = &self.write_check
            // SAFETY: the context is not released before drop; `check` may be called from any
            // thread (`defer_write_check`).
            && let Some(why) = unsafe { (c.check)(c.context) }
        {
            return Err(ImportError::WritesRefused(why));
        }
        if self.flags() & READ_ONLY != 0 {
            return Err(ImportError::ReadOnly);
        }
        Ok(())
    }

    /// Whether the producer copied the data for this exchange.
    pub fn is_copied(&self) -> bool {
        self.flags() & IS_COPIED != 0
    }

    /// Views the tensor in any space this view type accepts, checking everything the importers
    /// check and that sub-byte elements are declared padded, or packed, as the element type
    /// stores them.
    pub(crate) fn view_as<T, E, L, S, A>(&self) -> Result<Mdspan<'_, T, E, L, S, A>, ImportError>
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: MemorySpace,
        A: crate::view::Access,
    {
        let padded = self.flags() & IS_SUBBYTE_TYPE_PADDED != 0;
        if <T::Storage as ElementStorage>::IS_SUBBYTE_PADDED && !padded {
            return Err(ImportError::PackedSubbyte {
                dtype: self.dl_tensor().dtype,
            });
        }
        if padded && !<T::Storage as ElementStorage>::IS_SUBBYTE_PADDED && T::DTYPE.bits < 8 {
            return Err(ImportError::PaddedSubbyte {
                dtype: self.dl_tensor().dtype,
            });
        }
        // SAFETY: `from_raw` promised the tensor's arrays and data valid until drop, which
        // the returned borrow of `self` cannot outlive; padded storage was checked above.
        unsafe { Mdspan::import(self.dl_tensor(), self.version()) }
    }

    /// The tensor as the read-only view `V`: any `Mdspan<'_, T, E, L, S, Aliased>`, whose type
    /// says what is checked (element type, rank and static extents, layout, memory space; see
    /// [`import`](crate::import)). Others may write the memory meanwhile, so the view is
    /// [aliased](Aliased): elements by value, no references.
    ///
    /// ```
    /// use dlmd::dlpack::DLManagedTensorVersioned;
    /// use dlmd::managed::{export, ManagedTensor};
    /// use dlmd::{Dims, Host, HostMdspanAliased, LayoutStride, Mdspan, view::Aliased};
    ///
    /// let raw = export::<DLManagedTensorVersioned>(vec![1u8, 2, 3, 4, 5, 6], Dims::new([2, 3])).unwrap();
    /// // SAFETY: a fresh export, handed over.
    /// let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    /// let rows: HostMdspanAliased<'_, u8, Dims<2>> = tensor.view().unwrap();
    /// assert_eq!(rows.load([1, 2]), 6);
    /// let strided = tensor.view::<Mdspan<'_, u8, Dims<2>, LayoutStride, Host, Aliased>>().unwrap();
    /// assert_eq!(strided.load([0, 1]), 2);
    /// assert!(tensor.view::<HostMdspanAliased<'_, u16, Dims<2>>>().is_err());
    /// ```
    pub fn view<'a, V: TensorView<'a, Access = Aliased>>(&'a self) -> Result<V, ImportError> {
        V::of(self)
    }

    /// The tensor as the read-write view `V`: any `Mdspan<'_, T, E, L, S, AliasedMut>`, checked
    /// as [`view`](Self::view) checks, and refused where the producer set `READ_ONLY` (or writes
    /// were [refused](Self::refuse_writes)) and where two indices would reach one element.
    pub fn view_mut<'a, V: TensorView<'a, Access = AliasedMut>>(&'a mut self) -> Result<V, ImportError> {
        self.check_writable()?;
        V::of(self)
    }

    /// The versioned tensor this owns, if it is one (still owned by `self`).
    #[cfg(feature = "candle")]
    pub(crate) fn versioned_ptr(&self) -> Option<NonNull<crate::dlpack::DLManagedTensorVersioned>> {
        self.versioned.then(|| self.ptr.cast())
    }

    /// Gives the pointer back without calling the deleter, if the tensor is of kind `M`
    /// (otherwise gives the tensor back).
    pub fn into_raw<M: ManagedTensorAbi>(mut self) -> Result<*mut M, Self> {
        if self.versioned != M::VERSIONED {
            return Err(self);
        }
        if let Some(c) = self.write_check.take() {
            // SAFETY: released once, from any thread (`defer_write_check`); the pointer given
            // back carries no check.
            unsafe { (c.release)(c.context) }
        }
        let ptr = self.ptr.cast::<M>().as_ptr();
        core::mem::forget(self);
        Ok(ptr)
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        if let Some(c) = self.write_check.take() {
            // SAFETY: released once, from any thread (`defer_write_check`).
            unsafe { (c.release)(c.context) }
        }
        // SAFETY: the wrapper owns the tensor and drops once; `release` was made for its kind,
        // and the deleter may be called once, from any thread (`from_raw`).
        unsafe { (self.release)(self.ptr) }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A view a [`ManagedTensor`] is imported as: `Mdspan<'a, T, E, L, S, A>` of any element type,
/// extents, layout and memory space; [`ManagedTensor::view`] takes the [`Aliased`] ones,
/// [`ManagedTensor::view_mut`] the [`AliasedMut`] ones.
#[diagnostic::on_unimplemented(
    message = "a managed tensor cannot be viewed as `{Self}`",
    note = "view it as an `Mdspan<'_, T, E, L, S, Aliased>` (`view`) or `AliasedMut` (`view_mut`)"
)]
pub trait TensorView<'a>: Sized + sealed::Sealed {
    /// The view's access.
    type Access: Access;

    /// `tensor` as this view, every import check made.
    #[doc(hidden)]
    fn of(tensor: &'a ManagedTensor) -> Result<Self, ImportError>;
}

impl<T, E: Extents, L: Layout, S: MemorySpace, A: Access> sealed::Sealed for Mdspan<'_, T, E, L, S, A> {}

impl<'a, T, E, L, S, A> TensorView<'a> for Mdspan<'a, T, E, L, S, A>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: MemorySpace,
    A: Access,
{
    type Access = A;

    #[inline]
    fn of(tensor: &'a ManagedTensor) -> Result<Self, ImportError> {
        tensor.view_as()
    }
}
