//! A thread's four neighbouring elements moved at once (kernels only): as one vector load and
//! store where they are contiguous and aligned, otherwise as four loads before four stores.

use crate::aligned::{Align4, Align8, Align16};

/// `f` on four elements: all four read, `f` on the values, all four written, so that a thread
/// keeps four loads in flight (the compiler moves no load above a store it cannot tell apart).
/// `f` sees what it would through the elements; a read it does not make (a plain write) the
/// compiler drops.
///
/// # Safety
///
/// The four pointers are four different elements of a unique view, given to this thread.
#[inline(always)]
pub(crate) unsafe fn four<I, T: Copy>(f: &mut impl FnMut(I, &mut T), indices: [I; 4], elements: [*mut T; 4]) {
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

/// [`four`] over four contiguous elements from `first`, moved as one vector load and store
/// where their size allows it (4, 8 or 16 bytes).
///
/// # Safety
///
/// `first` and the three elements after it are elements of a unique view given to this thread,
/// and `first` is aligned to four elements' size.
#[inline(always)]
pub(crate) unsafe fn four_contiguous<I, T: Copy>(f: &mut impl FnMut(I, &mut T), indices: [I; 4], first: *mut T) {
    macro_rules! vector {
        ($v:ident) => {{
            let p = first.cast::<$v<T, 4>>();
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

/// The four elements from `first`, read as one vector where their size allows it.
///
/// # Safety
///
/// `first` and the three elements after it are readable elements, and `first` is aligned to
/// four elements' size.
#[inline(always)]
pub(crate) unsafe fn read_four_aligned<T: Copy>(first: *const T) -> [T; 4] {
    match 4 * size_of::<T>() {
        // SAFETY: four readable elements from `first`, aligned to their size (caller).
        4 => unsafe { first.cast::<Align4<T, 4>>().read().0 },
        // SAFETY: as above.
        8 => unsafe { first.cast::<Align8<T, 4>>().read().0 },
        16 => {
            // SAFETY: sixteen readable bytes at `first`, 16-aligned (caller), in global memory
            // (a kernel's view) that nothing writes while the read-only view lives, which is
            // what the non-coherent path asks. The elements are a partition's, each read by one
            // thread once, so they take no room in L1 (`.cs`, evict first).
            let words = unsafe { crate::aligned::load_global_v4::<true>(first.cast()) };
            words.map(|x| {
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

/// Four elements `stride` apart from `first`, as one vector load where they are contiguous
/// (`stride` 1) and `first` is aligned to their size, otherwise as four loads.
///
/// # Safety
///
/// The four elements are readable, and nothing writes them meanwhile.
#[inline(always)]
pub(crate) unsafe fn read_four<T: Copy>(first: *const T, stride: isize) -> [T; 4] {
    if stride == 1 && (first as usize).is_multiple_of(4 * size_of::<T>()) {
        // SAFETY: with stride 1 the four are the four from `first`, aligned to their size
        // (checked), readable (caller).
        unsafe { read_four_aligned(first) }
    } else {
        // SAFETY: four readable elements one stride apart (caller).
        [0, 1, 2, 3].map(|k| unsafe { first.wrapping_offset(k * stride).read() })
    }
}
