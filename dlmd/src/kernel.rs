//! Kernels in Rust over dlmd's views: what a kernel receives, and how its threads share a
//! mutable view.
//!
//! A crate of kernels is compiled from one source twice: for `nvptx64-nvidia-cuda` (nightly,
//! `-Zbuild-std=core`), where `#[dlmd::kernel]` makes each function a PTX entry point, and for
//! the host, where the same attribute makes it a typed launcher (`dlmd::cuda`). Each parameter
//! crosses as its [`KernelParam::Param`], a `#[repr(C)]` value of fixed-width fields, so it has
//! one layout on both targets; the kernel rebuilds from it a value of exactly the type the host
//! passed: element type, rank, static extents, layout, memory space and access.
//!
//! Inside a kernel (code compiled for `nvptx64`):
//!
//! - read-only device and managed views ([`DeviceMdspan`](crate::DeviceMdspan),
//!   [`ManagedMdspan`](crate::ManagedMdspan)) are indexed as on the host: `a[[i, j]]`, `get`,
//!   `iter`;
//! - a mutable view ([`DeviceMdspanMut`](crate::DeviceMdspanMut)) reaches every thread of the
//!   launch, so it is never indexed: [`Thread::for_each_mut`] hands each of its elements to
//!   exactly one thread, whatever the launch's geometry, and [`Thread::element_mut`] is the
//!   `unsafe` way to any other pattern;
//! - `dlmd!` views over a thread's local arrays are host views, indexed as on the host.
//!
//! On the host, device views stay out of reach: indexing them does not compile, and a
//! [`Thread`] cannot be made.

use crate::dlpack::DLDeviceType;
use crate::dtype::DlElement;
use crate::extents::Extents;
#[cfg(target_arch = "nvptx64")]
use crate::extents::IndexArray;
use crate::layout::{Layout, Mapping};
use crate::space::{Device, Managed, MemorySpace};
use crate::view::{Mdspan, RefAccess, Unique};

mod sealed {
    pub trait Sealed {}
}

/// Memory a kernel reaches: CUDA device and managed memory.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` view cannot be a kernel parameter",
    label = "the GPU cannot reach this memory",
    note = "kernels take device or managed views and `DlElement` scalars; copy host data to the device first"
)]
pub trait KernelSpace: MemorySpace + sealed::Sealed {
    /// The space of device `id`.
    #[doc(hidden)]
    fn with_id(id: i32) -> Self;
}

impl sealed::Sealed for Device {}
impl sealed::Sealed for Managed {}
impl KernelSpace for Device {
    #[inline(always)]
    fn with_id(id: i32) -> Self {
        Device::new(id)
    }
}
impl KernelSpace for Managed {
    #[inline(always)]
    fn with_id(id: i32) -> Self {
        Managed::new(id)
    }
}

/// A value a kernel takes as a parameter: a device or managed view ([`Shared`] or [`Unique`]),
/// or a [`DlElement`] scalar.
///
/// [`Shared`]: crate::view::Shared
///
/// # Safety
///
/// `Param` is `#[repr(C)]` over fixed-width integers, floats and raw pointers (or is a
/// [`DlElement`], whose layout its derive checks), so it has the same layout on the host and
/// on `nvptx64`; [`from_param`](Self::from_param) of what [`to_param`](Self::to_param) made
/// returns an equal value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a kernel parameter",
    label = "not a device view or an element",
    note = "kernel parameters are device or managed views (`DeviceMdspan`, `DeviceMdspanMut`, ...) and `DlElement` \
            scalars; host memory is not reachable from the GPU"
)]
pub unsafe trait KernelParam: Sized {
    /// The form the value crosses in: what the PTX entry point declares.
    type Param: Copy + 'static;

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

    /// The CUDA device ordinal the value's memory belongs to, which the launch's stream must
    /// be on; `None` for values that are on no device (elements) or reachable from every device
    /// (managed memory).
    fn device_ordinal(&self) -> Option<i32> {
        None
    }
}

// SAFETY: a `DlElement` crosses as itself: its derive and the scalar impls give it a layout of
// fixed-width lanes, the same on both targets; the value comes back unchanged.
unsafe impl<T: DlElement> KernelParam for T {
    type Param = T;

    #[inline(always)]
    fn to_param(&self) -> T {
        *self
    }

    #[inline(always)]
    unsafe fn from_param(param: T) -> T {
        param
    }
}

/// A view as a kernel parameter: the start of its span, the offset of index `[0, …]`, the
/// extents and strides (in elements) and the device ordinal, all fixed-width.
#[repr(C)]
#[derive(Debug)]
pub struct ViewParam<T, const R: usize> {
    /// The start of the span.
    pub data: *mut T,
    /// The offset of index `[0, …]` from `data`, in elements.
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
    A: RefAccess,
{
    type Param = ViewParam<T, R>;

    fn to_param(&self) -> ViewParam<T, R> {
        let mapping = self.mapping();
        // Casts cannot wrap: a mapping's extents, strides and offset fit in `isize`.
        ViewParam {
            data: self.data_handle(),
            offset: mapping.offset() as i64,
            extents: self.extents().to_array().map(|e| e as i64),
            strides: mapping.strides().map(|s| s as i64),
            span: mapping.required_span_size() as i64,
            device: self.space().device().device_id,
        }
    }

    fn device_ordinal(&self) -> Option<i32> {
        let device = self.space().device();
        (device.device_type == DLDeviceType::CUDA).then_some(device.device_id)
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
        // SAFETY: `param` describes a live view of this type (caller), whose memory stays valid
        // and accessed as `A` allows while the result lives.
        unsafe { Self::from_raw_parts(param.data, mapping, S::with_id(param.device)) }
    }
}

/// The thread of a kernel that runs the code: its place in the launch, and the elements of a
/// mutable view it owns.
///
/// Made by `Thread::current()` in code compiled for `nvptx64`; on the host there is none (the
/// type has no value there), so its methods type-check everywhere and run only in kernels.
#[derive(Clone, Copy, Debug)]
pub struct Thread(Inner);

#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Debug)]
struct Inner;

#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
enum Inner {}

/// One axis of the launch: this thread's global id along it, and the number of threads.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Axis {
    id: usize,
    count: usize,
}

#[cfg(target_arch = "nvptx64")]
impl Axis {
    /// `f(i)` for `i = id, id + count, …` below `end`: every `i` below `end` is visited by
    /// exactly one thread of the axis.
    #[inline(always)]
    fn stride(self, end: usize, mut f: impl FnMut(usize)) {
        let mut i = self.id;
        while i < end {
            f(i);
            i += self.count;
        }
    }
}

/// What [`Axis::chunks`] hands a thread: four neighbouring indices from the first, or one.
#[cfg(target_arch = "nvptx64")]
enum Chunk {
    Four(usize),
    One(usize),
}

#[cfg(target_arch = "nvptx64")]
impl Axis {
    /// Every index below `end`, to exactly one thread of the axis: thread `id` takes the four
    /// from `4 id`, then those `4 count` further, …; where fewer than four remain, one at a
    /// time in the same way.
    #[inline(always)]
    fn chunks(self, end: usize, mut f: impl FnMut(Chunk)) {
        let full = end / 4 * 4;
        let mut i = 4 * self.id;
        while i < full {
            f(Chunk::Four(i));
            i += 4 * self.count;
        }
        let mut i = full + self.id;
        while i < end {
            f(Chunk::One(i));
            i += self.count;
        }
    }
}

/// `f` on four elements: all four read, `f` on the values, all four written, so that a thread
/// keeps four loads in flight (the compiler moves no load above a store it cannot tell apart).
/// `f` sees what it would through the elements; a read it does not make (a plain write) the
/// compiler drops.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn four<I, T: Copy>(f: &mut impl FnMut(I, &mut T), indices: [I; 4], a: &mut T, b: &mut T, c: &mut T, d: &mut T) {
    let [ia, ib, ic, id] = indices;
    let (mut va, mut vb, mut vc, mut vd) = (*a, *b, *c, *d);
    f(ia, &mut va);
    f(ib, &mut vb);
    f(ic, &mut vc);
    f(id, &mut vd);
    (*a, *b, *c, *d) = (va, vb, vc, vd);
}

/// Four elements aligned to their size, read and written as one vector.
#[cfg(target_arch = "nvptx64")]
macro_rules! aligned {
    ($($name:ident $align:literal),*) => {$(
        #[repr(C, align($align))]
        #[derive(Clone, Copy)]
        struct $name<T>([T; 4]);
    )*};
}
#[cfg(target_arch = "nvptx64")]
aligned!(Align4 4, Align8 8, Align16 16);

/// [`four`] over four contiguous elements from `first`, moved as one vector load and store
/// where their size allows it (4, 8 or 16 bytes).
///
/// # Safety
///
/// `first` and the three elements after it are elements of a unique view given to this thread,
/// and `first` is aligned to four elements' size.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn four_contiguous<I, T: Copy>(f: &mut impl FnMut(I, &mut T), indices: [I; 4], first: *mut T) {
    macro_rules! vector {
        ($v:ident) => {{
            let p = first.cast::<$v<T>>();
            // SAFETY: four elements from `first`, aligned to their size (caller).
            let $v([mut a, mut b, mut c, mut d]) = unsafe { p.read() };
            let [ia, ib, ic, id] = indices;
            f(ia, &mut a);
            f(ib, &mut b);
            f(ic, &mut c);
            f(id, &mut d);
            // SAFETY: as for the read.
            unsafe { p.write($v([a, b, c, d])) };
        }};
    }
    match 4 * size_of::<T>() {
        4 => vector!(Align4),
        8 => vector!(Align8),
        16 => vector!(Align16),
        _ => {
            let [a, b, c, d] = [0, 1, 2, 3].map(|k| first.wrapping_add(k));
            // SAFETY: four different elements of the view, this thread's (caller).
            unsafe { four(f, indices, &mut *a, &mut *b, &mut *c, &mut *d) };
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod geometry {
    use super::Axis;
    use core::arch::nvptx;

    macro_rules! axis {
        ($name:ident, $tid:ident, $ntid:ident, $ctaid:ident, $nctaid:ident) => {
            /// This thread's global id along the axis, and the threads along it.
            #[inline(always)]
            pub(super) fn $name() -> Axis {
                // SAFETY: each intrinsic reads a special register of the running thread; none
                // has a precondition.
                let (t, n, c, g) = unsafe { (nvptx::$tid(), nvptx::$ntid(), nvptx::$ctaid(), nvptx::$nctaid()) };
                Axis {
                    id: c as usize * n as usize + t as usize,
                    count: g as usize * n as usize,
                }
            }
        };
    }
    axis!(x, _thread_idx_x, _block_dim_x, _block_idx_x, _grid_dim_x);
    axis!(y, _thread_idx_y, _block_dim_y, _block_idx_y, _grid_dim_y);
    axis!(z, _thread_idx_z, _block_dim_z, _block_idx_z, _grid_dim_z);

    /// The three axes as one: this thread's linear id (x fastest) and the launch's threads.
    #[inline(always)]
    pub(super) fn linear() -> Axis {
        let (x, y, z) = (x(), y(), z());
        Axis {
            id: (z.id * y.count + y.id) * x.count + x.id,
            count: x.count * y.count * z.count,
        }
    }
}

impl Thread {
    /// The running thread.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn current() -> Thread {
        Thread(Inner)
    }

    /// This thread's index among all threads of the launch (`x` fastest, then `y`, then `z`,
    /// blocks as threads are).
    #[inline(always)]
    pub fn index(&self) -> usize {
        #[cfg(target_arch = "nvptx64")]
        return geometry::linear().id;
        #[cfg(not(target_arch = "nvptx64"))]
        match self.0 {}
    }

    /// The number of threads of the launch.
    #[inline(always)]
    pub fn count(&self) -> usize {
        #[cfg(target_arch = "nvptx64")]
        return geometry::linear().count;
        #[cfg(not(target_arch = "nvptx64"))]
        match self.0 {}
    }

    /// Calls `f` with each index of `view` this thread owns and its element: across the threads
    /// of the launch, every element goes to exactly one thread, whatever the grid and block
    /// sizes. The view is unique (no two indices reach one element), so no two threads write one
    /// element.
    ///
    /// The partition follows the launch's geometry: the fastest-varying dimension in memory
    /// (the last, or the first for [`LayoutLeft`](crate::LayoutLeft)) goes to the `x` threads,
    /// so a warp touches neighbouring elements; for rank 2 and more the next one goes to `y`
    /// and the remaining dimensions, flattened, to `z`. A rank-1 view goes to all threads in
    /// linear order, a rank-0 view to thread 0. Each thread strides through its axis (a
    /// grid-stride loop), so a smaller grid still covers the view.
    #[inline(always)]
    pub fn for_each_mut<T, E, L, S>(&self, view: &mut Mdspan<'_, T, E, L, S, Unique>, f: impl FnMut(E::Index, &mut T))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        partition(view, f);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, f);
            match self.0 {}
        }
    }

    /// The element at `index` of a mutable view, for any pattern [`for_each_mut`](Self::for_each_mut)
    /// does not express; `None` outside the extents.
    ///
    /// # Safety
    ///
    /// While the returned reference lives, no other thread of the launch reads or writes that
    /// element (through any view): the kernel hands each index to one thread.
    #[inline(always)]
    pub unsafe fn element_mut<'v, T, E, L, S>(
        &self,
        view: &'v mut Mdspan<'_, T, E, L, S, Unique>,
        index: E::Index,
    ) -> Option<&'v mut T>
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        {
            let mapping = view.mapping();
            if !mapping.contains(&index) {
                return None;
            }
            let offset = mapping.offset_of(&index);
            // SAFETY: `index` is inside the extents, so the element is in the view's span, in
            // memory this kernel reaches; the caller promises no other thread touches it while
            // the reference lives, and `view` is borrowed mutably for as long.
            Some(unsafe { &mut *view.data_handle().wrapping_add(offset) })
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, index);
            match self.0 {}
        }
    }
}

/// [`Thread::for_each_mut`]'s partition.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn partition<T, E, L, S>(view: &mut Mdspan<'_, T, E, L, S, Unique>, mut f: impl FnMut(E::Index, &mut T))
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
{
    let extents = view.extents().to_array();
    let mapping = *view.mapping();
    let data = view.data_handle();
    // SAFETY (of each use): every index the partition makes is inside the extents (each axis
    // below its extent), so its element is in the span of a unique view; the partition gives
    // it to this thread alone, and the reference ends with the call of `f`.
    let element = |index: &E::Index| data.wrapping_add(mapping.offset_of(index));
    let e = extents.as_ref();
    let rank = e.len();
    if rank == 0 {
        if geometry::linear().id == 0 {
            let index = E::Index::zeros();
            // SAFETY: see `element`.
            f(index, unsafe { &mut *element(&index) });
        }
        return;
    }
    if rank == 1 {
        geometry::linear().stride(e[0], |i| {
            let mut index = E::Index::zeros();
            index.as_mut()[0] = i;
            // SAFETY: see `element`.
            f(index, unsafe { &mut *element(&index) });
        });
        return;
    }
    // The fastest dimension on x, the next on y, the rest (outermost last) flattened on z.
    let (fast, next) = if L::FIRST_FASTEST { (0, 1) } else { (rank - 1, rank - 2) };
    let rest = |d: usize| if L::FIRST_FASTEST { d + 2 } else { rank - 3 - d };
    let rest_count: usize = (0..rank - 2).map(|d| e[rest(d)]).product();
    let (x, y) = (geometry::x(), geometry::y());
    let stride = mapping.stride(fast);
    geometry::z().stride(rest_count, |mut outer| {
        let mut index = E::Index::zeros();
        if rank == 3 {
            index.as_mut()[rest(0)] = outer;
        } else {
            for d in 0..rank - 2 {
                let extent = e[rest(d)];
                index.as_mut()[rest(d)] = outer % extent;
                outer /= extent;
            }
        }
        y.stride(e[next], |j| {
            index.as_mut()[next] = j;
            x.chunks(e[fast], |chunk| match chunk {
                Chunk::One(i) => {
                    index.as_mut()[fast] = i;
                    // SAFETY: see `element`.
                    f(index, unsafe { &mut *element(&index) });
                }
                Chunk::Four(i) => {
                    index.as_mut()[fast] = i;
                    let first = element(&index);
                    let indices = [0, 1, 2, 3].map(|k| {
                        let mut index = index;
                        index.as_mut()[fast] = i + k;
                        index
                    });
                    if stride == 1 && first as usize % (4 * size_of::<T>()) == 0 {
                        // SAFETY: see `element`; with stride 1 the four elements are the four
                        // after `first`, which is aligned to their size.
                        unsafe { four_contiguous(&mut f, indices, first) };
                        return;
                    }
                    // Four neighbours along the fastest dimension, one stride apart.
                    let [a, b, c, d] = [0, 1, 2, 3].map(|k| first.wrapping_offset(k * stride));
                    // SAFETY: see `element`; four different indices of a unique view reach four
                    // different elements.
                    unsafe { four(&mut f, indices, &mut *a, &mut *b, &mut *c, &mut *d) };
                }
            });
        });
    });
}
