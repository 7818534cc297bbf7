//! The partition of a view's indices among the threads of a launch (kernels only): every
//! index to exactly one thread, the fastest dimension in memory on the `x` threads, four
//! neighbours at a time.

use super::KernelSpace;
use super::geometry::{self, Chunk};
use super::vector::{four, four_contiguous, read_four};
use crate::dtype::DlElement;
use crate::extents::{Extents, IndexArray};
use crate::layout::{Layout, Mapping};
use crate::view::{Access, Mdspan, Shared, Unique};

/// [`Thread::for_each`]: [`walk`] over the view's indices, with their elements read.
#[inline(always)]
pub(crate) fn read_partition<T, E, L, S>(view: &Mdspan<'_, T, E, L, S, Shared>, mut f: impl FnMut(E::Index, &T))
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
            // SAFETY: see `element`: four elements of the view, one stride apart.
            let [a, b, c, d] = unsafe { read_four(first, mapping.stride(fast)) };
            f(ia, &a);
            f(ib, &b);
            f(ic, &c);
            f(id, &d);
        }
    });
}

/// What [`walk`] hands a thread: one index, or four neighbours along the fastest dimension
/// (the first of them, and that dimension).
pub(crate) enum Visit<I> {
    One(I),
    Four(I, usize),
}

/// The partition of [`Thread::for_each_mut`] and [`Thread::for_each_index`]: every index inside
/// `extents`, to exactly one thread of the launch.
#[inline(always)]
pub(crate) fn walk<E: Extents, L: Layout, const PAIRS: bool>(extents: &E, mut f: impl FnMut(Visit<E::Index>)) {
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
#[inline(always)]
pub(crate) fn four_indices<I: IndexArray>(first: I, dim: usize) -> [I; 4] {
    [0, 1, 2, 3].map(|k| {
        let mut index = first;
        index.as_mut()[dim] += k;
        index
    })
}

/// [`Thread::for_each_mut`]: [`walk`] over the view's indices, with their elements.
#[inline(always)]
pub(crate) fn partition<T, E, L, S>(view: &mut Mdspan<'_, T, E, L, S, Unique>, mut f: impl FnMut(E::Index, &mut T))
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

/// [`Thread::for_each_index`](super::Thread::for_each_index): [`walk`] over the view's indices.
#[inline(always)]
pub(crate) fn indices<T, E, L, S, A>(view: &Mdspan<'_, T, E, L, S, A>, mut f: impl FnMut(E::Index))
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
    A: Access,
{
    walk::<E, L, true>(view.extents(), |visit| match visit {
        Visit::One(index) => f(index),
        Visit::Four(index, fast) => four_indices(index, fast).into_iter().for_each(&mut f),
    });
}

/// [`Thread::element_mut`](super::Thread::element_mut): the element at `index`, `None` outside
/// the extents.
///
/// # Safety
///
/// While the returned reference lives, no other thread of the launch reads or writes that
/// element (through any view).
#[inline(always)]
pub(crate) unsafe fn element_mut<'v, T, E, L, S>(
    view: &'v mut Mdspan<'_, T, E, L, S, Unique>,
    index: E::Index,
) -> Option<&'v mut T>
where
    T: DlElement,
    E: Extents,
    L: Layout,
    S: KernelSpace,
{
    let mapping = view.mapping();
    if !mapping.contains(&index) {
        return None;
    }
    let offset = mapping.offset_of(&index);
    // SAFETY: `index` is inside the extents, so the element is in the view's span, in memory
    // this kernel reaches; the caller promises no other thread touches it while the reference
    // lives, and `view` is borrowed mutably for as long.
    Some(unsafe { &mut *view.data_handle().wrapping_add(offset) })
}
