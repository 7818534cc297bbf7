//! What a kernel receives: [`KernelParam`], the form each parameter crosses in, and
//! [`ViewParam`], a view's form (the same for Rust and C++ kernels).

use super::signature;
use super::{Footprint, KernelAccess, KernelSpace};
use crate::dlpack::DLDeviceType;
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::layout::{Layout, Mapping};
use crate::space::MemorySpace;
use crate::view::{Access, Mdspan};

/// A value a kernel takes as a parameter: a device or managed view ([`Shared`] or [`Unique`]),
/// or a [`DlElement`] scalar.
///
/// [`Shared`]: crate::view::Shared
/// [`Unique`]: crate::view::Unique
///
/// # Safety
///
/// `Param` is `#[repr(C)]` over fixed-width integers, floats and raw pointers (or is a
/// [`DlElement`], whose layout its derive checks), so it has the same layout on the host and
/// on `nvptx64`; [`from_param`](Self::from_param) of what [`to_param`](Self::to_param) made
/// returns an equal value. A type read in place ([`IN_PLACE`](Self::IN_PLACE)) is rebuilt in a
/// kernel by [`from_param_in_place`](Self::from_param_in_place) alone, which returns the value
/// `to_param` made on the host; its `from_param` in a kernel may stop the kernel instead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a kernel parameter",
    label = "not a device view or an element",
    note = "kernel parameters are device or managed views (`DeviceMdspan`, `DeviceMdspanMut`, ...) and `DlElement` \
            scalars; host memory is not reachable from the GPU",
    note = "a kernel's context (`Thread`, `Block`) is its first parameter, and it takes one"
)]
pub unsafe trait KernelParam: Sized {
    /// The form the value crosses in: what the PTX entry point declares.
    type Param: Copy + 'static;

    /// The type as the compiler resolved it, mixed into the kernel's
    /// [signature digest](signature): by default the size and alignment of
    /// [`Param`](Self::Param); for views and elements also the element's DLPack data type and,
    /// for views, the rank, static extents, layout, memory space and access.
    const FINGERPRINT: u64 = signature::param_layout::<Self>();

    /// The value's parameter form, on the host.
    fn to_param(&self) -> Self::Param;

    /// The value back from its parameter form, in the kernel, as it was: nothing is checked
    /// again on the device, where every thread would pay for it.
    ///
    /// # Safety
    ///
    /// `param` comes from [`to_param`](Self::to_param) of a value whose memory (for a view)
    /// stays valid, and accessed only as its access allows, while the returned value lives:
    /// the launcher's [`cuda::scope`](https://docs.rs/dlmd/latest/dlmd/cuda/fn.scope.html) keeps
    /// the views of a launch borrowed until the kernel is done.
    unsafe fn from_param(param: Self::Param) -> Self;

    /// Whether the kernel reads the parameter where the launch put it, by address, in the
    /// kernel's parameter space (CUDA C++'s `__grid_constant__`), rather than as a value: a
    /// TMA tensor map, which the copy engine reads by address, is one. Such a parameter is
    /// declared 64-byte aligned in the PTX (`dlmd-build` writes the alignment, and a launch
    /// refuses a module where it is missing), and the kernel rebuilds it with
    /// [`from_param_in_place`](Self::from_param_in_place).
    #[doc(hidden)]
    const IN_PLACE: bool = false;

    /// [`from_param`](Self::from_param) for a parameter read in place: `at` is the generic
    /// address of the kernel parameter that holds `param`.
    ///
    /// # Safety
    ///
    /// As [`from_param`](Self::from_param); `at` is the address `cvta.param` gives of the
    /// entry point's parameter that `param` was read from, which the kernel never writes, and
    /// which is 64-byte aligned where [`IN_PLACE`](Self::IN_PLACE) holds.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn from_param_in_place(param: Self::Param, at: *const Self::Param) -> Self {
        let _ = at;
        // SAFETY: the caller's contract is `from_param`'s.
        unsafe { Self::from_param(param) }
    }

    /// The CUDA device ordinal the value's memory belongs to, which the launch's stream must
    /// be on; `None` for values that are on no device (elements) or reachable from every device
    /// (managed memory).
    fn device_ordinal(&self) -> Option<i32> {
        None
    }

    /// The device memory the value reaches (its span's first byte and length) and how the
    /// kernel uses it: the launch checks that no written argument shares memory with another
    /// ([`disjoint`](super::disjoint)), and orders the kernel after work queued on it. `None` for elements.
    fn footprint(&self) -> Option<Footprint> {
        None
    }
}

// SAFETY: a `DlElement` crosses as itself: its derive and the scalar impls give it a layout of
// fixed-width lanes, the same on both targets; the value comes back unchanged.
unsafe impl<T: DlElement> KernelParam for T {
    type Param = T;
    const FINGERPRINT: u64 = dtype_fingerprint::<T>(signature::param_layout::<T>());

    #[inline(always)]
    fn to_param(&self) -> T {
        *self
    }

    #[inline(always)]
    unsafe fn from_param(param: T) -> T {
        param
    }
}

/// `hash` with `T`'s DLPack data type and size mixed in.
pub(super) const fn dtype_fingerprint<T: DlElement>(hash: u64) -> u64 {
    let dtype = T::DTYPE;
    let hash = signature::mix(hash, dtype.code as u64);
    let hash = signature::mix(hash, dtype.bits as u64);
    let hash = signature::mix(hash, dtype.lanes as u64);
    signature::mix(hash, size_of::<T>() as u64)
}

/// A view as a kernel parameter, to Rust kernels and C++ ones alike: the address of element
/// `[0, …]`, how far before it the span starts, the extents and strides (in elements), the
/// span's length and the device ordinal, all fixed-width.
///
/// It is `dlmd::view<T, R>` of the C++ header [`view.cuh`](https://docs.rs/dlmd/latest/dlmd/cuda/constant.HEADER.html)
/// field for field (`T* data; long long offset, extents[R], strides[R], span; int device;`),
/// so one view passes the same way to a `#[dlmd::kernel]` and to a CUDA C++ kernel, where
/// element `(i0, …)` is `data[i0 * strides[0] + …]` (negative strides reach back towards
/// `data - offset`). The layout is asserted at compile time on the host and on `nvptx64`,
/// and by `static_assert`s in the header on the C++ side.
#[repr(C)]
#[derive(Debug)]
pub struct ViewParam<T, const R: usize> {
    /// Element `[0, …]`.
    pub data: *mut T,
    /// How many elements before `data` the span starts (where negative strides reach).
    pub offset: i64,
    /// The extents.
    pub extents: [i64; R],
    /// The strides, in elements.
    pub strides: [i64; R],
    /// The elements the span holds.
    pub span: i64,
    /// The device ordinal.
    pub device: i32,
}

// The layout a kernel and its launcher agree on, checked wherever the crate is compiled (the
// host and nvptx64 alike): a pointer and `i64`s at 8-byte steps, the device ordinal last.
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<*mut f32>() == 8 && align_of::<ViewParam<f32, 3>>() == 8);
    assert!(offset_of!(ViewParam<f32, 3>, offset) == 8);
    assert!(offset_of!(ViewParam<f32, 3>, extents) == 16);
    assert!(offset_of!(ViewParam<f32, 3>, strides) == 40);
    assert!(offset_of!(ViewParam<f32, 3>, span) == 64);
    assert!(offset_of!(ViewParam<f32, 3>, device) == 72);
    assert!(size_of::<ViewParam<f32, 3>>() == 80);
    assert!(size_of::<ViewParam<f64, 0>>() == 32 && offset_of!(ViewParam<f64, 0>, device) == 24);
};

impl<T: DlElement, const R: usize> ViewParam<T, R> {
    /// The parameter form of any view of rank `R`, whatever its space and access: what a
    /// launch passes (and what C++ kernels take as `dlmd::view<T, R>`).
    #[inline]
    pub fn of<E, L, S, A>(view: &Mdspan<'_, T, E, L, S, A>) -> Self
    where
        E: Extents<Index = [usize; R]>,
        L: Layout,
        S: MemorySpace,
        A: Access,
    {
        let mapping = view.mapping();
        // Casts cannot wrap: a mapping's extents, strides and offset fit in `isize`.
        ViewParam {
            // Inside the span, or one past an empty one: no wrap.
            data: view.data_handle().wrapping_add(mapping.offset()),
            offset: mapping.offset() as i64,
            extents: view.extents().to_array().map(|e| e as i64),
            strides: mapping.strides().map(|s| s as i64),
            span: mapping.required_span_size() as i64,
            device: view.space().device().device_id,
        }
    }
}

impl<T, const R: usize> Clone for ViewParam<T, R> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize> Copy for ViewParam<T, R> {}

// SAFETY: `ViewParam` is `#[repr(C)]` of a pointer, `i64`s and an `i32`; `from_param` rebuilds
// the extents, mapping and space from exactly the parts `to_param` took.
unsafe impl<T, E, L, S, A, const R: usize> KernelParam for Mdspan<'_, T, E, L, S, A>
where
    T: DlElement,
    E: Extents<Index = [usize; R]>,
    L: Layout,
    S: KernelSpace,
    A: KernelAccess,
{
    type Param = ViewParam<T, R>;
    const FINGERPRINT: u64 = {
        let hash = dtype_fingerprint::<T>(signature::param_layout::<Self>());
        let hash = signature::mix(hash, E::FINGERPRINT);
        let hash = signature::mix_str(hash, L::NAME);
        let hash = signature::mix(hash, S::DEVICE_TYPE.0 as u64);
        signature::mix_str(hash, A::NAME)
    };

    fn to_param(&self) -> ViewParam<T, R> {
        ViewParam::of(self)
    }

    fn device_ordinal(&self) -> Option<i32> {
        let device = self.space().device();
        (device.device_type == DLDeviceType::CUDA).then_some(device.device_id)
    }

    fn footprint(&self) -> Option<Footprint> {
        // A mapping's span of elements is memory that exists: its bytes fit `usize`.
        Some(Footprint {
            start: self.data_handle() as usize,
            bytes: self.mapping().required_span_size() * size_of::<T>(),
            used: A::used::<T>(),
        })
    }

    #[inline(always)]
    unsafe fn from_param(param: ViewParam<T, R>) -> Self {
        // Casts cannot wrap: the parts are a mapping's (caller), whose numbers fit in `isize`.
        let extents = E::from_array_unchecked(param.extents.map(|e| e as usize));
        let strides = param.strides.map(|s| s as isize);
        // SAFETY: `to_param` took these parts from a mapping of this type (caller).
        let mapping = unsafe {
            <L::Mapping<E> as Mapping>::from_parts_unchecked(
                extents,
                &strides,
                param.offset as usize,
                param.span as usize,
            )
        };
        // The span starts `offset` elements before element `[0, …]`; layouts without an offset
        // have it 0, and pay no arithmetic for it on the device.
        let start = match L::HAS_OFFSET {
            true => param.data.wrapping_sub(param.offset as usize),
            false => param.data,
        };
        // SAFETY: `param` describes a live view of this type (caller), whose memory stays valid
        // and accessed as `A` allows while the result lives; `start` is its span's start.
        unsafe { Self::from_raw_parts(start, mapping, S::with_id(param.device)) }
    }
}
