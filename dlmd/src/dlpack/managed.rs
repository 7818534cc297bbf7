//! One trait over DLPack's two managed-tensor structs, so that every path that makes, reads,
//! wraps or releases one is written once.

use super::{
    DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor, IS_COPIED, IS_SUBBYTE_TYPE_PADDED, READ_ONLY,
};
use core::ffi::{CStr, c_void};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::DLManagedTensorVersioned {}
    impl Sealed for super::DLManagedTensor {}
}

/// A managed tensor struct: [`DLManagedTensorVersioned`] (DLPack 1.0 and later) or the legacy
/// [`DLManagedTensor`]. Sealed: these two are the ABI.
///
/// ```
/// use dlmd::dlpack::{DLManagedTensor, DLManagedTensorVersioned, ManagedTensorAbi};
///
/// assert_eq!(DLManagedTensorVersioned::CAPSULE, c"dltensor_versioned");
/// assert_eq!(DLManagedTensor::USED_CAPSULE, c"used_dltensor");
/// assert!(DLManagedTensorVersioned::VERSIONED && !DLManagedTensor::VERSIONED);
/// ```
pub trait ManagedTensorAbi: Sized + 'static + sealed::Sealed {
    /// Whether the struct carries a version and flags.
    const VERSIONED: bool;
    /// The flags the struct can carry: all for the versioned struct, none for the legacy one.
    const FLAGS: u64;
    /// The name of a Python capsule holding one (`"dltensor_versioned"`, `"dltensor"`).
    const CAPSULE: &'static CStr;
    /// The name a consumer gives the capsule when it takes the tensor (`"used_…"`).
    const USED_CAPSULE: &'static CStr;

    /// A struct describing `dl_tensor`, produced against this crate's DLPack version, with
    /// `flags` (those the struct can carry), `manager_ctx` and `deleter`.
    fn new(
        dl_tensor: DLTensor,
        flags: u64,
        manager_ctx: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut Self)>,
    ) -> Self;
    /// The tensor.
    fn dl_tensor(&self) -> &DLTensor;
    /// The tensor, to fill in.
    fn dl_tensor_mut(&mut self) -> &mut DLTensor;
    /// The producer's DLPack version; `None` for the legacy struct.
    fn version(&self) -> Option<DLPackVersion>;
    /// The flags; 0 for the legacy struct.
    fn flags(&self) -> u64;
    /// The producer's context.
    fn manager_ctx(&self) -> *mut c_void;

    /// The major version of the struct at `this`, read before any other field as DLPack asks
    /// (its place is fixed for every major version); `None` for the legacy struct.
    ///
    /// # Safety
    ///
    /// `this` points to a readable struct of this kind (for the versioned struct, at least its
    /// `version`).
    unsafe fn major(this: *const Self) -> Option<u32>;

    /// Calls the struct's deleter, if it has one.
    ///
    /// # Safety
    ///
    /// `this` is a valid managed tensor owned by the caller, whose deleter (when not `None`)
    /// may be called from this thread; the tensor is released and not used again. For the
    /// versioned struct only `version`, `manager_ctx` and `deleter` are read, whose places every
    /// major version keeps.
    unsafe fn release(this: *mut Self);
}

/// The methods over the fields both structs have, under the same names.
macro_rules! shared_fields {
    () => {
        #[inline]
        fn dl_tensor(&self) -> &DLTensor {
            &self.dl_tensor
        }
        #[inline]
        fn dl_tensor_mut(&mut self) -> &mut DLTensor {
            &mut self.dl_tensor
        }
        #[inline]
        fn manager_ctx(&self) -> *mut c_void {
            self.manager_ctx
        }
        unsafe fn release(this: *mut Self) {
            // SAFETY: the caller promises `this` valid and owned; the deleter is called once,
            // on the struct it belongs to.
            if let Some(deleter) = unsafe { (*this).deleter } {
                // SAFETY: as above.
                unsafe { deleter(this) };
            }
        }
    };
}

impl ManagedTensorAbi for DLManagedTensorVersioned {
    const VERSIONED: bool = true;
    const FLAGS: u64 = READ_ONLY | IS_COPIED | IS_SUBBYTE_TYPE_PADDED;
    const CAPSULE: &'static CStr = c"dltensor_versioned";
    const USED_CAPSULE: &'static CStr = c"used_dltensor_versioned";

    #[inline]
    fn new(
        dl_tensor: DLTensor,
        flags: u64,
        manager_ctx: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut Self)>,
    ) -> Self {
        Self {
            version: DLPackVersion::CURRENT,
            manager_ctx,
            deleter,
            flags,
            dl_tensor,
        }
    }
    shared_fields!();
    #[inline]
    fn version(&self) -> Option<DLPackVersion> {
        Some(self.version)
    }
    #[inline]
    fn flags(&self) -> u64 {
        self.flags
    }
    #[inline]
    unsafe fn major(this: *const Self) -> Option<u32> {
        // SAFETY: the caller promises the version readable.
        Some(unsafe { (*this).version.major })
    }
}

impl ManagedTensorAbi for DLManagedTensor {
    const VERSIONED: bool = false;
    const FLAGS: u64 = 0;
    const CAPSULE: &'static CStr = c"dltensor";
    const USED_CAPSULE: &'static CStr = c"used_dltensor";

    #[inline]
    fn new(
        dl_tensor: DLTensor,
        _flags: u64,
        manager_ctx: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut Self)>,
    ) -> Self {
        Self {
            dl_tensor,
            manager_ctx,
            deleter,
        }
    }
    shared_fields!();
    #[inline]
    fn version(&self) -> Option<DLPackVersion> {
        None
    }
    #[inline]
    fn flags(&self) -> u64 {
        0
    }
    #[inline]
    unsafe fn major(_: *const Self) -> Option<u32> {
        None
    }
}
