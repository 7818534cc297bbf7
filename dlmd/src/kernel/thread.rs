//! The running thread of a kernel ([`Thread`]) and the partition that hands each element of a
//! mutable view to one thread.

use super::KernelSpace;
use crate::dtype::DlElement;
use crate::extents::Extents;
#[cfg(target_arch = "nvptx64")]
use crate::extents::IndexArray;
use crate::layout::Layout;
#[cfg(target_arch = "nvptx64")]
use crate::layout::Mapping;
use crate::view::{Access, Mdspan, Shared, Unique};

/// The thread of a kernel that runs the code: its place in the launch, and the elements of a
/// mutable view it owns.
///
/// Made by `Thread::current()` in code compiled for `nvptx64`; on the host there is none (the
/// type has no value there), so its methods type-check everywhere and run only in kernels.
#[derive(Clone, Copy, Debug)]
pub struct Thread(pub(super) Inner);

#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Debug)]
pub(super) struct Inner;

#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub(super) enum Inner {}

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
    /// time in the same way. With `PAIRS`, two fours a step, so that a reading thread has two
    /// loads in flight before it uses either.
    #[inline(always)]
    fn chunks<const PAIRS: bool>(self, end: usize, mut f: impl FnMut(Chunk)) {
        let full = end / 4 * 4;
        let mut i = 4 * self.id;
        while PAIRS && i + 4 * self.count < full {
            f(Chunk::Four(i));
            f(Chunk::Four(i + 4 * self.count));
            i += 8 * self.count;
        }
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
///
/// # Safety
///
/// The four pointers are four different elements of a unique view, given to this thread.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn four<I, T: Copy>(f: &mut impl FnMut(I, &mut T), indices: [I; 4], elements: [*mut T; 4]) {
    let [ia, ib, ic, id] = indices;
    let [pa, pb, pc, pd] = elements;
    // SAFETY: an element of the view, this thread's alone (caller); as are the three other
    // reads and the four writes below.
    let mut va = unsafe { pa.read() };
    // SAFETY: as above.
    let mut vb = unsafe { pb.read() };
    // SAFETY: as above.
    let mut vc = unsafe { pc.read() };
    // SAFETY: as above.
    let mut vd = unsafe { pd.read() };
    f(ia, &mut va);
    f(ib, &mut vb);
    f(ic, &mut vc);
    f(id, &mut vd);
    // SAFETY: as above.
    unsafe { pa.write(va) };
    // SAFETY: as above.
    unsafe { pb.write(vb) };
    // SAFETY: as above.
    unsafe { pc.write(vc) };
    // SAFETY: as above.
    unsafe { pd.write(vd) };
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
        // SAFETY: four different elements of the view, this thread's (caller).
        _ => unsafe { four(f, indices, [0, 1, 2, 3].map(|k| first.wrapping_add(k))) },
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
    /// linear order, a rank-0 view to thread 0. Along the fastest dimension each thread takes
    /// four neighbours at a time (one vector access where they are contiguous and aligned). Each thread strides through its axis (a
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

    /// Calls `f` with each index of the read-only `view` this thread owns and its element, in
    /// the partition of [`for_each_mut`](Self::for_each_mut) (every element to exactly one
    /// thread of the launch): the way to reduce a view, four neighbours read at once (one vector
    /// access where they are contiguous and aligned).
    #[inline(always)]
    pub fn for_each<T, E, L, S>(&self, view: &Mdspan<'_, T, E, L, S, Shared>, f: impl FnMut(E::Index, &T))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
    {
        #[cfg(target_arch = "nvptx64")]
        read_partition(view, f);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (view, f);
            match self.0 {}
        }
    }

    /// Calls `f` with each index of `view` this thread owns, in the partition of
    /// [`for_each_mut`](Self::for_each_mut): across the launch, every index goes to exactly one
    /// thread. The view may have any access; only its extents and layout are used, so a kernel
    /// reads (or reduces) in the same order another one writes.
    #[inline(always)]
    pub fn for_each_index<T, E, L, S, A>(&self, view: &Mdspan<'_, T, E, L, S, A>, f: impl FnMut(E::Index))
    where
        T: DlElement,
        E: Extents,
        L: Layout,
        S: KernelSpace,
        A: Access,
    {
        #[cfg(target_arch = "nvptx64")]
        let mut f = f;
        #[cfg(target_arch = "nvptx64")]
        walk::<E, L, true>(view.extents(), |visit| match visit {
            Visit::One(index) => f(index),
            Visit::Four(index, fast) => four_indices(index, fast).into_iter().for_each(&mut f),
        });
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

/// [`Thread::for_each`]: [`walk`] over the view's indices, with their elements read.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn read_partition<T, E, L, S>(view: &Mdspan<'_, T, E, L, S, Shared>, mut f: impl FnMut(E::Index, &T))
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
{
    let mapping = *view.mapping();
    let data = view.data_handle().cast_const();
    // SAFETY (of each use): every index the walk makes is inside the extents, so its element
    // is in the span of the view, which nothing writes while it lives.
    let element = |index: &E::Index| data.wrapping_add(mapping.offset_of(index));
    walk::<E, L, true>(view.extents(), |visit| match visit {
        Visit::One(index) => {
            // SAFETY: see `element`.
            f(index, unsafe { &*element(&index) })
        }
        Visit::Four(index, fast) => {
            let first = element(&index);
            let [ia, ib, ic, id] = four_indices(index, fast);
            let stride = mapping.stride(fast);
            let [a, b, c, d] = if stride == 1 && (first as usize).is_multiple_of(4 * size_of::<T>()) {
                // SAFETY: see `element`; with stride 1 the four elements are the four from
                // `first`, which is aligned to their size.
                unsafe { read_contiguous(first) }
            } else {
                // SAFETY: see `element`: four elements of the view, one stride apart.
                [0, 1, 2, 3].map(|k| unsafe { first.wrapping_offset(k * stride).read() })
            };
            f(ia, &a);
            f(ib, &b);
            f(ic, &c);
            f(id, &d);
        }
    });
}

/// The four elements from `first`, read as one vector where their size allows it.
///
/// # Safety
///
/// `first` and the three elements after it are readable elements, and `first` is aligned to
/// four elements' size.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn read_contiguous<T: Copy>(first: *const T) -> [T; 4] {
    match 4 * size_of::<T>() {
        // SAFETY: four readable elements from `first`, aligned to their size (caller).
        4 => unsafe { first.cast::<Align4<T>>().read().0 },
        // SAFETY: as above.
        8 => unsafe { first.cast::<Align8<T>>().read().0 },
        16 => {
            let (a, b, c, d): (u32, u32, u32, u32);
            // SAFETY: sixteen readable bytes at `first`, 16-aligned (caller), in global memory
            // (a kernel's view) that nothing writes while the read-only view lives, which is
            // what the non-coherent path (`.nc`) asks. One vector load, which the compiler
            // would otherwise split where the elements are used one by one.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; ld.global.nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [g]; }}",
                    p = in(reg64) first,
                    a = out(reg32) a,
                    b = out(reg32) b,
                    c = out(reg32) c,
                    d = out(reg32) d,
                    options(pure, readonly, nostack),
                )
            };
            [a, b, c, d].map(|x| {
                // SAFETY: `T` is 4 bytes (this arm), `Copy`, and these are its bytes as stored.
                unsafe { core::mem::transmute_copy::<u32, T>(&x) }
            })
        }
        _ => [0, 1, 2, 3].map(|k| {
            let element = first.wrapping_add(k);
            // SAFETY: one of the four readable elements from `first` (caller).
            unsafe { element.read() }
        }),
    }
}

/// What [`walk`] hands a thread: one index, or four neighbours along the fastest dimension
/// (the first of them, and that dimension).
#[cfg(target_arch = "nvptx64")]
enum Visit<I> {
    One(I),
    Four(I, usize),
}

/// The partition of [`Thread::for_each_mut`] and [`Thread::for_each_index`]: every index inside
/// `extents`, to exactly one thread of the launch.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn walk<E: Extents, L: Layout, const PAIRS: bool>(extents: &E, mut f: impl FnMut(Visit<E::Index>)) {
    let extents = extents.to_array();
    let e = extents.as_ref();
    let rank = e.len();
    if rank == 0 {
        if geometry::linear().id == 0 {
            f(Visit::One(E::Index::zeros()));
        }
        return;
    }
    if rank == 1 {
        // Four neighbours a thread, in linear order over every thread of the launch.
        let mut index = E::Index::zeros();
        geometry::linear().chunks::<PAIRS>(e[0], |chunk| match chunk {
            Chunk::One(i) => {
                index.as_mut()[0] = i;
                f(Visit::One(index));
            }
            Chunk::Four(i) => {
                index.as_mut()[0] = i;
                f(Visit::Four(index, 0));
            }
        });
        return;
    }
    // The fastest dimension on x, the next on y, the rest (outermost last) flattened on z.
    let (fast, next) = if L::FIRST_FASTEST { (0, 1) } else { (rank - 1, rank - 2) };
    let rest = |d: usize| if L::FIRST_FASTEST { d + 2 } else { rank - 3 - d };
    let rest_count: usize = (0..rank - 2).map(|d| e[rest(d)]).product();
    let (x, y) = (geometry::x(), geometry::y());
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
            x.chunks::<PAIRS>(e[fast], |chunk| match chunk {
                Chunk::One(i) => {
                    index.as_mut()[fast] = i;
                    f(Visit::One(index));
                }
                Chunk::Four(i) => {
                    index.as_mut()[fast] = i;
                    f(Visit::Four(index, fast));
                }
            });
        });
    });
}

/// The four indices from `first` along dimension `dim`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn four_indices<I: IndexArray>(first: I, dim: usize) -> [I; 4] {
    [0, 1, 2, 3].map(|k| {
        let mut index = first;
        index.as_mut()[dim] += k;
        index
    })
}

/// [`Thread::for_each_mut`]: [`walk`] over the view's indices, with their elements.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn partition<T, E, L, S>(view: &mut Mdspan<'_, T, E, L, S, Unique>, mut f: impl FnMut(E::Index, &mut T))
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
{
    let mapping = *view.mapping();
    let data = view.data_handle();
    // SAFETY (of each use): every index the walk makes is inside the extents (each axis below
    // its extent), so its element is in the span of a unique view; the partition gives it to
    // this thread alone, and the reference ends with the call of `f`.
    let element = |index: &E::Index| data.wrapping_add(mapping.offset_of(index));
    walk::<E, L, false>(view.extents(), |visit| match visit {
        Visit::One(index) => {
            // SAFETY: see `element`.
            f(index, unsafe { &mut *element(&index) })
        }
        Visit::Four(index, fast) => {
            let first = element(&index);
            let indices = four_indices(index, fast);
            let stride = mapping.stride(fast);
            if stride == 1 && (first as usize).is_multiple_of(4 * size_of::<T>()) {
                // SAFETY: see `element`; with stride 1 the four elements are the four from
                // `first`, which is aligned to their size.
                unsafe { four_contiguous(&mut f, indices, first) };
                return;
            }
            // Four neighbours along the fastest dimension, one stride apart.
            let elements = [0, 1, 2, 3].map(|k| first.wrapping_offset(k * stride));
            // SAFETY: see `element`; four different indices of a unique view reach four
            // different elements.
            unsafe { four(&mut f, indices, elements) };
        }
    });
}
