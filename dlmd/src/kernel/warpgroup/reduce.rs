//! Accumulators added to an [`Atomic`] view ([`Warpgroup::add_to`]): the partial sums that
//! several blocks contribute to one matrix, as attention's backward pass adds each block's
//! share of the queries' gradient `dQ` to an `f32` accumulator of the whole. The view is
//! wrapped as [`Sums`], which a specialised block's roles may share: it only ever adds.

use super::accumulators::{Accumulators, Width};
#[cfg(target_arch = "nvptx64")]
use super::roles::ROWS;
use super::roles::Warpgroup;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Atomic, Mdspan};

mod sealed {
    pub trait Sealed {}
}

/// How [`Warpgroup::add_to`] adds a pair of neighbours along a row: [`Singles`] or [`Pairs`].
pub trait Requests: sealed::Sealed + 'static {
    /// Whether a pair is one request, so that it is worth aligning for.
    #[doc(hidden)]
    const PAIRS: bool;
    /// Adds `values` to the two neighbouring `f32`s at `at`, atomically.
    ///
    /// # Safety
    ///
    /// `at` is an 8-aligned generic address of two `f32`s of global memory that the kernel
    /// reaches and that are updated only atomically meanwhile; on `sm_90`.
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    unsafe fn add_pair(at: *mut f32, values: [f32; 2]);
}

/// One element a request (`red.global.add.f32`): any PTX ISA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Singles;

/// Two neighbours of a row a request (`red.global.add.v2.f32`) where the view's rows are
/// contiguous and the pair 8-byte aligned, several times faster where many blocks add to one
/// matrix. PTX ISA 8.1 or later (`dlmd_build::PtxBuild::ptx_isa(8, 1)`): `ptxas` refuses the
/// instruction in an older module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pairs;

impl sealed::Sealed for Singles {}
impl sealed::Sealed for Pairs {}

impl Requests for Singles {
    const PAIRS: bool = false;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn add_pair(at: *mut f32, [a, b]: [f32; 2]) {
        // SAFETY: the first element, as the caller's contract says.
        unsafe { super::raw::red_global_add_f32(at, a) };
        // SAFETY: the second.
        unsafe { super::raw::red_global_add_f32(at.wrapping_add(1), b) };
    }
}

impl Requests for Pairs {
    const PAIRS: bool = true;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn add_pair(at: *mut f32, values: [f32; 2]) {
        // SAFETY: the caller's contract; PTX ISA 8.1 (this type's, which `ptxas` checks).
        unsafe { super::raw::red_global_add_v2_f32(at, values) };
    }
}

/// An `f32` [`Atomic`] view that consumer warpgroups add their accumulators to
/// ([`Warpgroup::add_to`]), captured by a specialised block's roles, each pair of neighbours
/// added as `R` says ([`Singles`], or [`Pairs`] for PTX ISA 8.1 or later). An atomic view
/// alone is not `Sync`: a thread's atomic read
/// ([`Thread::atomic_fetch_add`](crate::kernel::Thread::atomic_fetch_add)) would give each
/// thread of a warpgroup its own value, and a branch on it split the warpgroup's collective
/// operations. `Sums` lends no such read: it only adds, and returns nothing.
pub struct Sums<'a, E: Extents, L: Layout, Sp: KernelSpace, R: Requests = Singles> {
    view: Mdspan<'a, f32, E, L, Sp, Atomic>,
    requests: core::marker::PhantomData<R>,
}

// SAFETY: the only use of the view through `&Sums` is `Warpgroup::add_to`'s atomic additions,
// which any number of threads may make at once, and which return nothing.
unsafe impl<E: Extents, L: Layout, Sp: KernelSpace, R: Requests> Sync for Sums<'_, E, L, Sp, R> {}

impl<'a, E: Extents, L: Layout, Sp: KernelSpace> Sums<'a, E, L, Sp, Singles> {
    /// The view, to be added to by warpgroups an element a request ([`Singles`]).
    #[inline(always)]
    pub fn new(view: Mdspan<'a, f32, E, L, Sp, Atomic>) -> Self {
        Sums {
            view,
            requests: core::marker::PhantomData,
        }
    }
}

impl<'a, E: Extents, L: Layout, Sp: KernelSpace> Sums<'a, E, L, Sp, Pairs> {
    /// The view, to be added to by warpgroups a pair of neighbours a request where it can
    /// ([`Pairs`]: PTX ISA 8.1).
    #[inline(always)]
    pub fn pairs(view: Mdspan<'a, f32, E, L, Sp, Atomic>) -> Self {
        Sums {
            view,
            requests: core::marker::PhantomData,
        }
    }
}

impl<E: Extents, L: Layout, Sp: KernelSpace, R: Requests> Sums<'_, E, L, Sp, R> {
    /// The view's extents.
    #[inline(always)]
    pub fn extents(&self) -> &E {
        self.view.extents()
    }
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Adds the accumulators to the view of `sums` atomically: element `[i, j]` of the `64 ×
    /// N`, as `f([i, j], value)`, to the element at `origin` moved by `i` rows and `j` columns
    /// (its last two dimensions), where that is inside the view and `f` gives a value (`None`
    /// adds nothing: rows past a sequence's end, say). Any number of warpgroups, of any
    /// blocks, may add to one element at once (relaxed atomics, at GPU scope). Each element is
    /// added once, by the thread that holds it, with its neighbour along the row in one request
    /// for [`Pairs`] where the whole `64 × N` is inside the view, its rows contiguous and
    /// 8-byte aligned; `f`'s index is local, where [`store`](Self::store)'s is the view's.
    #[inline(always)]
    pub fn add_to<T, W, E, L, Sp, R: Requests>(
        &mut self,
        sums: &Sums<'_, E, L, Sp, R>,
        origin: E::Index,
        acc: Accumulators<T, W>,
        f: impl Fn([usize; 2], f32) -> Option<f32> + Sync,
    ) where
        T: super::WgmmaInput,
        W: Width,
        E: Extents,
        L: Layout,
        Sp: KernelSpace,
    {
        const {
            assert!(
                E::RANK >= 2,
                "accumulators are added to a matrix: a view of rank 2 or more"
            )
        };
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw::red_global_add_f32;
            use crate::layout::Mapping;
            let view = &sums.view;
            let mapping = view.mapping();
            let base = view.data_handle();
            let last = E::RANK - 1;
            let (row_stride, col_stride) = (mapping.stride(last - 1), mapping.stride(last));
            // The whole `64 × N` inside the view (its first and last elements are): each
            // element's offset is then the origin's moved by the strides, with no test. Alike
            // in every thread of the warpgroup.
            let whole = mapping
                .contains(&origin)
                .then(|| mapping.offset_of(&origin))
                .filter(|_| {
                    let mut far = origin;
                    let slots = far.as_mut();
                    match (slots[last - 1].checked_add(ROWS - 1), slots[last].checked_add(W::N - 1)) {
                        (Some(row), Some(col)) => {
                            (slots[last - 1], slots[last]) = (row, col);
                            mapping.contains(&far)
                        }
                        _ => false,
                    }
                });
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            // The offsets of the thread's two rows' first pairs (rows `16 warp + lane / 4 + 8 h`,
            // column `2 (lane % 4)`), which the compiler cannot see into, so that it does not
            // keep a sum of the loop-invariant parts of each element's across the caller's loops
            // (32 registers of pointers at `N` 64).
            let first = |h: usize| {
                let row = 16 * warp + lane / 4 + 8 * h;
                let mut offset = (whole.unwrap_or(0) as isize)
                    .wrapping_add((row as isize).wrapping_mul(row_stride))
                    .wrapping_add(((2 * (lane % 4)) as isize).wrapping_mul(col_stride));
                // SAFETY: an empty instruction on a register.
                unsafe { core::arch::asm!("// {o}", o = inout(reg64) offset, options(pure, nomem, nostack)) };
                offset
            };
            let firsts = [first(0), first(1)];
            // Element `e` of the thread's pair `p = 2 j + h` (row half `h`, columns `8 j ..`
            // past the row's first pair), where it is inside the view.
            let at = |p: usize, e: usize, [i, j]: [usize; 2]| match whole {
                Some(_) => {
                    Some(firsts[p % 2].wrapping_add(((8 * (p / 2) + e) as isize).wrapping_mul(col_stride)) as usize)
                }
                None => {
                    let mut index = origin;
                    let slots = index.as_mut();
                    slots[last - 1] = slots[last - 1].checked_add(i)?;
                    slots[last] = slots[last].checked_add(j)?;
                    mapping.contains(&index).then(|| mapping.offset_of(&index))
                }
            };
            // One element, `f` of `value`, at `offset`, where it is inside.
            let one = |local: [usize; 2], offset: Option<usize>, value: f32| {
                if let Some(value) = f(local, value)
                    && let Some(offset) = offset
                {
                    // SAFETY: an element of the view's span (inside its extents: `at`), in
                    // global memory the kernel reaches (a kernel space's view); an atomic
                    // view's elements are updated only atomically while it lives.
                    unsafe { red_global_add_f32(base.wrapping_add(offset), value) };
                }
            };
            // Pairs: contiguous, 8-aligned rows (each pair then starts at an even column from
            // the origin).
            let pairs = R::PAIRS
                && whole.is_some_and(|from| (base.wrapping_add(from) as usize).is_multiple_of(8))
                && col_stride == 1
                && row_stride % 2 == 0;
            if pairs {
                crate::unroll!(16, |pa| {
                    crate::unroll!(4, |pb| {
                        let p = 4 * pa + pb;
                        if p < W::N / 4 {
                            let (local, a) = acc.held(self.thread, 2 * p);
                            let (next, b) = acc.held(self.thread, 2 * p + 1);
                            let offset = firsts[p % 2] as usize + 8 * (p / 2);
                            match (f(local, a), f(next, b)) {
                                // SAFETY: two neighbours of a row of the `64 × N`, all of which
                                // is inside the view (`whole`), its rows contiguous and the pair
                                // 8-aligned (`pairs`), in global memory the kernel reaches;
                                // updated only atomically while the view lives; on sm_90 (a
                                // consumer warpgroup's code).
                                (Some(a), Some(b)) => unsafe { R::add_pair(base.wrapping_add(offset), [a, b]) },
                                (a, b) => {
                                    for (offset, value) in [(offset, a), (offset + 1, b)] {
                                        if let Some(value) = value {
                                            // SAFETY: one of the two, as above.
                                            unsafe { red_global_add_f32(base.wrapping_add(offset), value) };
                                        }
                                    }
                                }
                            }
                        }
                    });
                });
                return;
            }
            crate::unroll!(16, |pa| {
                crate::unroll!(4, |pb| {
                    let p = 4 * pa + pb;
                    if p < W::N / 4 {
                        crate::unroll!(2, |e| {
                            let (local, value) = acc.held(self.thread, 2 * p + e);
                            one(local, at(p, e, local), value);
                        });
                    }
                });
            });
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (sums, origin, acc, f);
            self.never()
        }
    }
}
