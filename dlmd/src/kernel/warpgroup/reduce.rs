//! Accumulators added to an [`Atomic`] view ([`Warpgroup::add_to`]): the partial sums that
//! several blocks contribute to one matrix, as attention's backward pass adds each block's
//! share of the queries' gradient `dQ` to an `f32` accumulator of the whole. The view is
//! wrapped as [`Sums`], which a specialised block's roles may share: it only ever adds.
//!
//! Where many blocks add to one matrix, [`Warpgroup::add_rows_to`] hands whole rows to the bulk
//! copy engine instead (`cp.reduce.async.bulk .add.f32`): each consumer warp writes its 16 rows
//! to a buffer of its own in shared memory ([`SumBuffers`], declared beside the pipeline), and
//! one request adds a row of 64 to the view while the warp goes on to its next products.
//!
//! # Why safe code cannot race on the buffers
//!
//! A warp's buffer is written only inside `add_rows_to`, by that warp (each consumer warp of
//! the block has its own: buffer `4 · index + warp` of its warpgroup), after the threads that
//! started the copies from it last have waited for those copies' reads
//! (`cp.async.bulk.wait_group.read 0`) and the warp has met (`bar.warp.sync`). Its writes are
//! made visible to the bulk copy engine (`fence.proxy.async`) and the warp meets again before a
//! copy starts; nothing else reads the buffers. Every consumer thread waits for all its copies
//! (`cp.async.bulk.wait_group 0`) before a specialisation returns, so the view's additions are
//! done while it is still borrowed.

use super::accumulators::{Accumulators, Width};
#[cfg(target_arch = "nvptx64")]
use super::roles::ROWS;
use super::roles::Warpgroup;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::layout::Layout;
use crate::view::{Atomic, Mdspan};
use core::marker::PhantomData;

/// The bytes of a row of a warp's buffer: 64 `f32`s (256 bytes, one bulk request), then 32
/// bytes that put the eight rows a warp writes at once on distinct banks.
const ROW_BYTES: usize = 256;
/// A consumer warp's buffer: its 16 rows of a warpgroup's 64.
const WARP_BYTES: usize = 16 * ROW_BYTES;

/// Shared memory for [`Warpgroup::add_rows_to`]: a buffer of 16 rows of 64 `f32`s for each warp
/// of `CONSUMERS` consumer warpgroups (4.5 KiB a warp, 36 KiB for two consumers). Declared beside
/// the pipeline in the block's type, `(Streams<…>, SumBuffers<2>)`;
/// [`Block::split`](crate::kernel::Block::split) makes it a [`SumBuffering`] handle that the
/// consumers' code captures.
pub struct SumBuffers<const CONSUMERS: usize>;

impl<const CONSUMERS: usize> crate::kernel::block::TileSealed for SumBuffers<CONSUMERS> {}

// SAFETY: `BYTES` covers a buffer for each consumer warp (a multiple of 128 bytes, so that a
// set after it starts 128-aligned); `tiles` makes one handle over them, which reaches nothing
// outside.
unsafe impl<const CONSUMERS: usize> crate::kernel::block::TileSet for SumBuffers<CONSUMERS> {
    type Tiles<'k> = SumBuffering<'k, CONSUMERS>;
    const BYTES: usize = {
        assert!(CONSUMERS >= 1, "sum buffers are for one consumer warpgroup or more");
        assert!(WARP_BYTES.is_multiple_of(128));
        4 * CONSUMERS * WARP_BYTES
    };
    #[inline(always)]
    unsafe fn tiles<'k>(base: *mut u8) -> SumBuffering<'k, CONSUMERS> {
        SumBuffering {
            base: base as usize,
            call: PhantomData,
        }
    }
}

/// The shared memory of [`SumBuffers`], in a block: captured by the consumers' code, which
/// writes it only through [`Warpgroup::add_rows_to`]. No other code reaches its memory.
pub struct SumBuffering<'k, const CONSUMERS: usize> {
    /// The buffers' generic address (the block's shared memory, 128-aligned).
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    base: usize,
    call: PhantomData<&'k ()>,
}

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
    requests: PhantomData<R>,
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
            requests: PhantomData,
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
            requests: PhantomData,
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
            // The whole `64 × N` inside the view: each element's offset is then the origin's
            // moved by the strides, with no test. Alike in every thread of the warpgroup.
            let whole = whole_box(mapping, origin, W::N);
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

/// The offset of `origin` in `mapping` where the `64 × n` box from it (along the last two
/// dimensions) is whole inside the extents (its first and last elements are), so that each
/// element's offset is the origin's moved by the strides.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn whole_box<M: crate::layout::Mapping>(
    mapping: &M,
    origin: <M::Extents as Extents>::Index,
    n: usize,
) -> Option<usize> {
    let last = <M::Extents as Extents>::RANK - 1;
    if !mapping.contains(&origin) {
        return None;
    }
    let mut far = origin;
    let slots = far.as_mut();
    let (row, col) = (slots[last - 1].checked_add(ROWS - 1)?, slots[last].checked_add(n - 1)?);
    (slots[last - 1], slots[last]) = (row, col);
    mapping.contains(&far).then(|| mapping.offset_of(&origin))
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Adds the first `rows` rows of the accumulators to the view of `sums`: element `[i, j]`
    /// of the `64 × N` with `i < rows`, as `f([i, j], value)`, to the element at `origin` moved
    /// by `i` rows and `j` columns, where that is inside the view; atomically, as
    /// [`add_to`](Self::add_to) adds, and with it. Where the whole `64 × N` is inside the view,
    /// its rows contiguous and 16-byte aligned and `N` a multiple of 64, each warp writes its 16
    /// rows to its buffer of `buffers`, 64 columns at a time, and hands each row of 64 to the
    /// bulk copy engine, which adds it while the warp goes on (`cp.reduce.async.bulk .add.f32`:
    /// one request where `add_to` makes 32 or 64); elsewhere these are `add_to`'s additions.
    /// `f` is called on every element, `rows` or not.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn add_rows_to<T, W, E, L, Sp, R: Requests, const CONSUMERS: usize>(
        &mut self,
        sums: &Sums<'_, E, L, Sp, R>,
        buffers: &SumBuffering<'_, CONSUMERS>,
        origin: E::Index,
        rows: usize,
        acc: Accumulators<T, W>,
        f: impl Fn([usize; 2], f32) -> f32 + Sync,
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
            );
            assert!(
                CONSUMERS == THREADS / 128 - 1,
                "sum buffers hold a buffer for each warp of the block's consumer warpgroups: `SumBuffers<CONSUMERS>` with one fewer than the block's warpgroups"
            );
        };
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw;
            use crate::layout::Mapping;
            let view = &sums.view;
            let mapping = view.mapping();
            let base = view.data_handle();
            let last = E::RANK - 1;
            let (row_stride, col_stride) = (mapping.stride(last - 1), mapping.stride(last));
            // Rows of 64 contiguous `f32`s, each 16-aligned: the bulk requests' (alike in
            // every thread of the warpgroup).
            let bulk = whole_box(mapping, origin, W::N).filter(|&from| {
                W::N.is_multiple_of(64)
                    && col_stride == 1
                    && row_stride % 4 == 0
                    && (base.wrapping_add(from) as usize).is_multiple_of(16)
            });
            let Some(from) = bulk else {
                self.add_to(sums, origin, acc, |local, x| (local[0] < rows).then(|| f(local, x)));
                return;
            };
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            // SAFETY: the set's memory is the block's shared memory (`TileSet::tiles`).
            let buffer = unsafe { crate::kernel::mma::raw::shared_address(buffers.base as *const u8) }
                + ((4 * self.index + warp) * WARP_BYTES) as u32;
            // The row that lane `lane < 16` hands over: the warp's `lane`-th.
            let row = 16 * warp + lane;
            let start = base
                .wrapping_add(from)
                .wrapping_offset((row as isize).wrapping_mul(row_stride));
            crate::unroll!(4, |q| {
                if q < W::N / 64 {
                    if lane < 16 {
                        // SAFETY: sm_90 (a consumer warpgroup's code).
                        unsafe { raw::bulk_wait_read::<0>() };
                    }
                    // SAFETY: every thread of the warp, in the warpgroup's uniform code: what
                    // the warp's copies read of the buffer is read before any thread writes it.
                    unsafe { raw::syncwarp() };
                    crate::unroll!(16, |k| {
                        // The thread's pair `p` of the piece's columns `64 q ..`.
                        let p = 16 * q + k;
                        let (local, a) = acc.held(self.thread, 2 * p);
                        let (next, b) = acc.held(self.thread, 2 * p + 1);
                        let at = buffer + ((local[0] % 16) * ROW_BYTES + (local[1] % 64) * 4) as u32;
                        // SAFETY: inside the warp's buffer (the warp's rows are `16 warp ..`, so
                        // `local[0] % 16` is the row in it; column `local[1] % 64` even, below
                        // 64), 8-aligned (the set 128-aligned, buffers and rows multiples of 8
                        // bytes); the buffer is this warp's alone and its copies have read it
                        // (above); the accumulators deal each pair to one thread.
                        unsafe { raw::st_shared_v2_f32(at, [f(local, a), f(next, b)]) };
                    });
                    // SAFETY: sm_90.
                    unsafe { raw::fence_proxy_async() };
                    // SAFETY: every thread of the warp, in its uniform code: the piece's writes,
                    // visible to the async proxy, before the requests below.
                    unsafe { raw::syncwarp() };
                    // Rows one after another in the view, a whole row a piece: the warp's rows
                    // are one run, one request.
                    let run = row_stride == 64 && W::N == 64;
                    let warp_rows = rows.saturating_sub(16 * warp).min(16);
                    if run {
                        if lane == 0 {
                            if warp_rows > 0 {
                                // SAFETY: as below, for the warp's first `warp_rows` rows, one
                                // run of the view (rows 64 apart, 64 long).
                                unsafe { raw::bulk_reduce_add_f32(start, buffer, (256 * warp_rows) as u32) };
                            }
                            // SAFETY: sm_90.
                            unsafe { raw::bulk_commit() };
                        }
                    } else if lane < 16 {
                        if row < rows {
                            // SAFETY: row `row` < 64 of the box, columns `64 q ..` (< N, the
                            // box whole inside the view, its rows contiguous): 256 bytes of the
                            // view's span, 16-aligned (the origin's address and the row stride
                            // in bytes are), in global memory the kernel reaches and updated
                            // only atomically while the view lives; the source is the buffer's
                            // row `lane`, 16-aligned, written and made visible above, written
                            // again only after this thread's `bulk_wait_read`; `specialise`
                            // waits for every group before it returns.
                            unsafe {
                                raw::bulk_reduce_add_f32(
                                    start.wrapping_add(64 * q),
                                    buffer + (lane * ROW_BYTES) as u32,
                                    256,
                                )
                            };
                        }
                        // SAFETY: sm_90.
                        unsafe { raw::bulk_commit() };
                    }
                }
            });
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (sums, buffers, origin, rows, acc, f);
            self.never()
        }
    }
}
