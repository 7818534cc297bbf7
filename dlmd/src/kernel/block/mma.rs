//! The block's tensor-core operations ([`mma`](crate::kernel::mma)): fragments loaded from
//! readable tiles, products into accumulators, and accumulators written to a chunk.

use super::{Block, Chunk, Readable, Tile, TileLayout, TileSet};
use crate::dtype::DlElement;
use crate::extents::Extents;
use crate::kernel::KernelSpace;
use crate::kernel::mma::{Accumulators, Atom, FragmentsA, FragmentsB, Mma};
use crate::layout::Layout;
use core::marker::PhantomData;

/// The depth (`k`) of an operand tile of `A` (`K_FIRST` false: `ROWS × K`) or `B` (`K_FIRST`:
/// `K × COLS`) whose other side is `side`, checked where a kernel that loads it is compiled: the
/// tile is rank 2, its sides are `side` and a multiple of the atom's `k`, and each of its lines
/// (rows of a row-major tile, columns of a column-major one) starts 16 bytes after the last or
/// a multiple thereof, 16-aligned, as `ldmatrix` reads them; its fastest side holds a multiple
/// of 8 elements, so that each row `ldmatrix` reads is 16 bytes inside one line.
const fn operand_depth<T, E: Extents, L: TileLayout>(side: usize, k: usize, k_first: bool) -> usize {
    assert!(E::RANK == 2, "an operand tile is rank 2");
    let (first, last) = match E::STATIC_ENDS {
        (Some(first), Some(last)) => (first, last),
        _ => panic!("a tile's extents are static"),
    };
    let (depth, other) = if k_first { (first, last) } else { (last, first) };
    if k_first {
        assert!(
            other == side,
            "the tile of `B` has the tiling's columns (`Mma::COLS`): it is `K × COLS`"
        );
    } else {
        assert!(
            other == side,
            "the tile of `A` has the tiling's rows (`Mma::ROWS`): it is `ROWS × K`"
        );
    }
    assert!(
        depth > 0 && depth.is_multiple_of(k),
        "an operand tile's depth `K` is a multiple of the atom's (16 for `M16N8K16`)"
    );
    let fast = if L::FIRST_FASTEST { first } else { last };
    assert!(
        size_of::<T>() == 2 && fast.is_multiple_of(8),
        "`ldmatrix` reads rows of 8 16-bit elements: an operand tile's fastest side is a multiple of 8"
    );
    assert!(
        ((fast + L::PAD) * size_of::<T>()).is_multiple_of(16),
        "`ldmatrix` reads rows of 16 bytes, 16-aligned: an operand tile's lines start a multiple of 16 bytes apart (pad by a multiple of 8 elements)"
    );
    depth
}

/// `ldmatrix.x4` from a readable operand tile, lane `8q + r` addressing row `r` of matrix `q`:
/// the tile index `index(q, r)` moved `lines` on along the tile's lines (its slow dimension) is
/// that row's first element. `.trans` where `transposed` (a constant where it is called, so one
/// instruction remains). The part of the move in `lines` is a constant added to an offset the
/// compiler keeps ([`TileLayout::offset_of_moved`]), which is what a swizzled tile needs to
/// keep the addresses of a warp's loads in a few registers.
///
/// # Safety
///
/// Run by every lane of the warp together (uniform code), and the moved index is the first of
/// 8 neighbours along the tile's fastest dimension, all inside its extents, starting at a
/// multiple of 8 along it, in a tile whose lines start a multiple of 16 bytes apart
/// ([`operand_depth`]): 16 bytes, 16-aligned (in a swizzled tile, one whole 16-byte piece,
/// which the swizzle moves whole: [`TileLayout::offset_of`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ldmatrix<T: DlElement, E: Extents<Index = [usize; 2]>, L: TileLayout>(
    tile: &Tile<'_, T, E, L, Readable>,
    lane: usize,
    transposed: bool,
    index: impl Fn(usize, usize) -> [usize; 2],
    lines: usize,
) -> [u32; 4] {
    use crate::kernel::mma::raw::{ldmatrix_x4, shared_address};
    let row = index(lane / 8, lane % 8);
    let slow = if L::FIRST_FASTEST { 1 } else { 0 };
    let offset = L::offset_of_moved::<T, E>(tile.storage().mapping(), &row, slow, lines);
    // The tile's shared address plus the row's byte offset, in 32 bits, as shared addresses
    // are.
    // SAFETY: the tile's first element, in the block's shared memory (an address conversion
    // reads nothing).
    let tile_address = unsafe { shared_address(tile.storage().data_handle().cast_const()) };
    // The offset is inside the tile's span (the row is inside its extents: caller), whose
    // bytes fit in the shared memory, so in 32 bits.
    let address = tile_address.wrapping_add((offset * size_of::<T>()) as u32);
    if transposed {
        // SAFETY: every lane together (caller); `row` is 16 readable bytes, 16-aligned (caller),
        // of a tile written and not written again while it is borrowed readable.
        unsafe { ldmatrix_x4::<true>(address) }
    } else {
        // SAFETY: as above.
        unsafe { ldmatrix_x4::<false>(address) }
    }
}

impl<'k, const THREADS: usize, S: TileSet, C> Block<'k, THREADS, S, C> {
    /// The tiling's threads are the block's, checked where a kernel that uses the tiling is
    /// compiled.
    const fn tiling_fits<A: Atom, const WM: usize, const WN: usize, const FM: usize, const FN: usize>() {
        assert!(
            Mma::<A, WM, WN, FM, FN>::THREADS == THREADS,
            "a tiling's warps are the block's: `32 · WM · WN` threads"
        );
    }

    /// Accumulators of the tiling `Mma<A, WM, WN, FM, FN>`, all zero. The tiling's warps are the
    /// block's (`32 · WM · WN == THREADS`; otherwise the kernel does not compile).
    #[inline(always)]
    pub fn accumulators<A: Atom, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
    ) -> Accumulators<A, WM, WN, FM, FN> {
        const { Self::tiling_fits::<A, WM, WN, FM, FN>() };
        Accumulators {
            c: [[[0.0; 4]; FN]; FM],
            tiling: PhantomData,
        }
    }

    /// Each warp's fragments of `A` for step `step` (16 along `k` from `16 · step`) of the
    /// readable tile `a` (`ROWS × K`), by `ldmatrix` (`.trans` where the tile is column-major);
    /// `None` past the tile's depth. See [`operand tiles`](crate::kernel::mma#the-pieces).
    #[inline(always)]
    pub fn load_a<A, E, L, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
        a: &Tile<'_, A::Input, E, L, Readable>,
        step: usize,
    ) -> Option<FragmentsA<A, WM, WN, FM, FN>>
    where
        A: Atom,
        E: Extents<Index = [usize; 2]>,
        L: TileLayout,
    {
        const { Self::tiling_fits::<A, WM, WN, FM, FN>() };
        let depth = const { operand_depth::<A::Input, E, L>(Mma::<A, WM, WN, FM, FN>::ROWS, A::K, false) };
        if step >= depth / A::K {
            return None;
        }
        on_gpu!(self.inner, (a), {
            let thread = super::shared::thread_index::<THREADS>();
            let (rows, k0) = ((thread / 32 / WN) * FM * A::M, step * A::K);
            let mut frags = [[0u32; 4]; FM];
            // Written out (`unroll!`), as every loop over registers here: indexed at run time,
            // they would go to local memory.
            crate::unroll!(FM, |fm| {
                let top = rows + fm * A::M;
                // Matrices 0..4: rows 0-7 and 8-15 at `k` 0-7, then at `k` 8-15 (the order of
                // an `m16n8k16` fragment's registers): a row of a `k`-contiguous tile, or a
                // column of a column-major one, read transposed.
                // The lines a row-major tile moves by from one `fm` to the next, a column-major
                // one from one step to the next: one offset a lane, and constants.
                frags[fm] = if L::FIRST_FASTEST {
                    // SAFETY: every lane of every warp runs this (uniform code, a block
                    // operation); each index, moved, starts 8 neighbours along the fastest
                    // dimension at a multiple of 8, inside the tile (the warp's rows are below
                    // `ROWS`, `k` below the depth, and the fastest side a multiple of 8:
                    // `operand_depth`).
                    unsafe { ldmatrix(a, thread % 32, true, |q, r| [top + (q % 2) * 8, (q / 2) * 8 + r], k0) }
                } else {
                    let index = |q: usize, r: usize| [rows + (q % 2) * 8 + r, k0 + (q / 2) * 8];
                    // SAFETY: as above.
                    unsafe { ldmatrix(a, thread % 32, false, index, fm * A::M) }
                };
            });
            Some(FragmentsA {
                a: frags,
                tiling: PhantomData,
            })
        })
    }

    /// Each warp's fragments of `B` for step `step` (16 along `k` from `16 · step`) of the
    /// readable tile `b` (`K × COLS`), by `ldmatrix` (`.trans` where the tile is row-major: a
    /// column-major `b` is a row-major `COLS × K` weight, read as it is); `None` past the
    /// tile's depth.
    #[inline(always)]
    pub fn load_b<A, E, L, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
        b: &Tile<'_, A::Input, E, L, Readable>,
        step: usize,
    ) -> Option<FragmentsB<A, WM, WN, FM, FN>>
    where
        A: Atom,
        E: Extents<Index = [usize; 2]>,
        L: TileLayout,
    {
        const { Self::tiling_fits::<A, WM, WN, FM, FN>() };
        let depth = const { operand_depth::<A::Input, E, L>(Mma::<A, WM, WN, FM, FN>::COLS, A::K, true) };
        if step >= depth / A::K {
            return None;
        }
        on_gpu!(self.inner, (b), {
            let thread = super::shared::thread_index::<THREADS>();
            let (cols, k0) = ((thread / 32 % WN) * FN * A::N, step * A::K);
            let mut frags = [[0u32; 2]; FN];
            crate::unroll!(FN / 2, |pair| {
                let left = cols + pair * 2 * A::N;
                // Matrices 0..4: `k` 0-7 and 8-15 of atom `2 pair`, then of atom `2 pair + 1`:
                // a column of a `k`-contiguous (column-major) tile, or a row of a row-major
                // one, read transposed.
                let [r0, r1, r2, r3] = if L::FIRST_FASTEST {
                    let index = |q: usize, r: usize| [k0 + (q % 2) * 8, cols + (q / 2) * 8 + r];
                    // SAFETY: as in `load_a`: every lane, 8 neighbours inside the readable
                    // tile.
                    unsafe { ldmatrix(b, thread % 32, false, index, pair * 2 * A::N) }
                } else {
                    let index = |q: usize, r: usize| [(q % 2) * 8 + r, left + (q / 2) * 8];
                    // SAFETY: as above.
                    unsafe { ldmatrix(b, thread % 32, true, index, k0) }
                };
                frags[2 * pair] = [r0, r1];
                frags[2 * pair + 1] = [r2, r3];
            });
            Some(FragmentsB {
                b: frags,
                tiling: PhantomData,
            })
        })
    }

    /// `acc + a · b` for one step of fragments, by each warp's `FM × FN` `mma.sync`s.
    #[inline(always)]
    pub fn mma_fragments<A: Atom, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
        acc: Accumulators<A, WM, WN, FM, FN>,
        a: &FragmentsA<A, WM, WN, FM, FN>,
        b: &FragmentsB<A, WM, WN, FM, FN>,
    ) -> Accumulators<A, WM, WN, FM, FN> {
        on_gpu!(self.inner, (acc, a, b), {
            let mut acc = acc;
            crate::unroll!(FM, |fm| {
                crate::unroll!(FN, |fn_| {
                    use crate::kernel::mma::{MmaInput, raw::mma_m16n8k16};
                    acc.c[fm][fn_] = if A::Input::BF16 {
                        // SAFETY: every lane of every warp runs this (uniform code, a block
                        // operation); `load_a` ran, so the kernel is for sm_80 or later.
                        unsafe { mma_m16n8k16::<true>(a.a[fm], b.b[fn_], acc.c[fm][fn_]) }
                    } else {
                        // SAFETY: as above.
                        unsafe { mma_m16n8k16::<false>(a.a[fm], b.b[fn_], acc.c[fm][fn_]) }
                    };
                });
            });
            acc
        })
    }

    /// `acc + a · b` for the readable operand tiles `a` (`ROWS × K`) and `b` (`K × COLS`), step
    /// by step along `k` ([`load_a`](Self::load_a), [`load_b`](Self::load_b),
    /// [`mma_fragments`](Self::mma_fragments)). Both tiles have the same depth `K` (otherwise
    /// the kernel does not compile).
    #[must_use]
    #[inline(always)]
    pub fn mma<A, EA, LA, EB, LB, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
        acc: Accumulators<A, WM, WN, FM, FN>,
        a: &Tile<'_, A::Input, EA, LA, Readable>,
        b: &Tile<'_, A::Input, EB, LB, Readable>,
    ) -> Accumulators<A, WM, WN, FM, FN>
    where
        A: Atom,
        EA: Extents<Index = [usize; 2]>,
        LA: TileLayout,
        EB: Extents<Index = [usize; 2]>,
        LB: TileLayout,
    {
        let steps = const { Self::steps::<A, EA, LA, EB, LB, WM, WN, FM, FN>() };
        let first = (self.load_a(a, 0), self.load_b(b, 0));
        self.mma_from(acc, a, b, first, steps)
    }

    /// [`mma`](Self::mma) that runs `between` on the block once the first step's fragments
    /// are loading, before any product: the work of the next steps (fetching their tiles
    /// into other stages) goes out while the loads are in flight, as a hand-written main
    /// loop places it. Returns the accumulators and what `between` returned. `between` is
    /// run by every thread, as any block operation; the tiles `a` and `b` stay borrowed
    /// readable through it, so that it can neither write them nor hand them to a barrier.
    #[must_use]
    #[inline(always)]
    pub fn mma_with<A, EA, LA, EB, LB, R, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &mut self,
        acc: Accumulators<A, WM, WN, FM, FN>,
        a: &Tile<'_, A::Input, EA, LA, Readable>,
        b: &Tile<'_, A::Input, EB, LB, Readable>,
        between: impl FnOnce(&mut Self) -> R,
    ) -> (Accumulators<A, WM, WN, FM, FN>, R)
    where
        A: Atom,
        EA: Extents<Index = [usize; 2]>,
        LA: TileLayout,
        EB: Extents<Index = [usize; 2]>,
        LB: TileLayout,
    {
        let steps = const { Self::steps::<A, EA, LA, EB, LB, WM, WN, FM, FN>() };
        let first = (self.load_a(a, 0), self.load_b(b, 0));
        let between = between(self);
        (self.mma_from(acc, a, b, first, steps), between)
    }

    /// The steps of 16 along `k` of the operand tiles, checked where a kernel that multiplies
    /// them is compiled (in the public functions, so that an error names the user's call).
    const fn steps<A, EA, LA, EB, LB, const WM: usize, const WN: usize, const FM: usize, const FN: usize>() -> usize
    where
        A: Atom,
        EA: Extents<Index = [usize; 2]>,
        LA: TileLayout,
        EB: Extents<Index = [usize; 2]>,
        LB: TileLayout,
    {
        let (da, db) = (
            operand_depth::<A::Input, EA, LA>(Mma::<A, WM, WN, FM, FN>::ROWS, A::K, false),
            operand_depth::<A::Input, EB, LB>(Mma::<A, WM, WN, FM, FN>::COLS, A::K, true),
        );
        assert!(da == db, "the tiles of `A` and `B` have the same depth `K`");
        da / A::K
    }

    /// The `steps` steps of [`mma`](Self::mma), the first step's fragments loaded (`first`).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn mma_from<A, EA, LA, EB, LB, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &self,
        acc: Accumulators<A, WM, WN, FM, FN>,
        a: &Tile<'_, A::Input, EA, LA, Readable>,
        b: &Tile<'_, A::Input, EB, LB, Readable>,
        first: (
            Option<FragmentsA<A, WM, WN, FM, FN>>,
            Option<FragmentsB<A, WM, WN, FM, FN>>,
        ),
        steps: usize,
    ) -> Accumulators<A, WM, WN, FM, FN>
    where
        A: Atom,
        EA: Extents<Index = [usize; 2]>,
        LA: TileLayout,
        EB: Extents<Index = [usize; 2]>,
        LB: TileLayout,
    {
        // Each step's fragments load while the step before is multiplied: the products of
        // one step wait only for its own loads, issued a step ahead.
        let mut acc = acc;
        let mut now = first;
        macro_rules! step {
            ($step:expr) => {{
                let next = (self.load_a(a, $step + 1), self.load_b(b, $step + 1));
                if let (Some(fa), Some(fb)) = &now {
                    acc = self.mma_fragments(acc, fa, fb);
                }
                now = next;
            }};
        }
        // Written out for the first 16 steps, so that the compiler sees the loads of one step
        // beside the products of the last (a loop would keep them apart); a loop past them.
        crate::unroll!(16, |step| {
            if step < steps {
                step!(step);
            }
        });
        for step in 16..steps {
            step!(step);
        }
        let _ = now;
        acc
    }

    /// Writes the accumulators to `chunk`, element `[i, j]` of the chunk's box as `f(index,
    /// acc)` (`index` in the whole view) by the one thread that holds it ([`Mma::element`]),
    /// nothing past the view's edge. Returns `false`, writing nothing, where the chunk's box is
    /// not the tiling's `ROWS × COLS` (the same answer on every thread: the box is the
    /// block's). Where the whole box lies inside the view, its rows contiguous and aligned to
    /// two elements, each thread writes its two neighbours of a row together (one store for
    /// `f16`, `bf16`, `f32`), as a hand-written epilogue does; elsewhere each element on its
    /// own, after its check. No element is read.
    #[must_use]
    #[inline(always)]
    pub fn store_accumulators<A, T, E, L, Sp, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        acc: Accumulators<A, WM, WN, FM, FN>,
        f: impl Fn([usize; 2], f32) -> T + Sync,
    ) -> bool
    where
        A: Atom,
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: Layout,
        Sp: KernelSpace,
    {
        // Given `()` for the old value: no element is read.
        self.put_held(chunk, acc, |index, value, ()| f(index, value))
    }

    /// [`store_accumulators`](Self::store_accumulators) that reads each element before it
    /// writes it: `f(index, acc, old)`, as `C = α · A · B + β · C` asks. Only the thread that
    /// writes an element reads it.
    #[must_use]
    #[inline(always)]
    pub fn update_accumulators<A, T, E, L, Sp, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        acc: Accumulators<A, WM, WN, FM, FN>,
        f: impl Fn([usize; 2], f32, T) -> T + Sync,
    ) -> bool
    where
        A: Atom,
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: Layout,
        Sp: KernelSpace,
    {
        self.put_held(chunk, acc, |index, value, Was(old)| f(index, value, old))
    }

    /// Writes each accumulator this thread holds to its element of `chunk` as `f(index, acc,
    /// old)` (`index` in the whole view, `old` what [`Old`] reads of the element), nothing past the
    /// view's edge; `false`, writing nothing, where the box is not the tiling's. Where the
    /// tiling's whole box lies inside the view in aligned rows (`Chunk::pairs_whole`), each
    /// two neighbours of a row (`[fm][fn_][0..2]` and `[2..4]`, at an even column) are read and
    /// written together, with no check between them; otherwise each element on its own.
    #[inline(always)]
    fn put_held<A, T, O, E, L, Sp, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        acc: Accumulators<A, WM, WN, FM, FN>,
        f: impl Fn([usize; 2], f32, O) -> T,
    ) -> bool
    where
        A: Atom,
        O: Old<T>,
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: Layout,
        Sp: KernelSpace,
    {
        const { Self::tiling_fits::<A, WM, WN, FM, FN>() };
        // The pairs below: accumulators `2 h` and `2 h + 1` of an atom are neighbours in a row,
        // the first at an even column (`Mma::element`), for atoms 8 columns wide.
        const { assert!(A::N == 8, "an atom's accumulators are pairs of neighbours in rows of 8") };
        if chunk.shape() != [Mma::<A, WM, WN, FM, FN>::ROWS, Mma::<A, WM, WN, FM, FN>::COLS] {
            return false;
        }
        on_gpu!(self.inner, (chunk, acc, f), {
            let mut chunk = chunk;
            let thread = super::shared::thread_index::<THREADS>();
            let box_ = [Mma::<A, WM, WN, FM, FN>::ROWS, Mma::<A, WM, WN, FM, FN>::COLS];
            // Written out (`unroll!`): indexed by loop counters, the accumulators would go to
            // local memory.
            if chunk.pairs_whole(box_) {
                // The common case: no branch between the elements, so that their `f`s
                // overlap, and one store a pair (and one load, for an update).
                let origin = chunk.origin();
                crate::kernel::steps::unrolled!(FM, |fm| {
                    crate::kernel::steps::unrolled!(FN, |fn_| {
                        crate::kernel::steps::unrolled!(2, |h| {
                            let local = Mma::<A, WM, WN, FM, FN>::element(thread, fm, fn_, 2 * h);
                            let index = [origin[0] + local[0], origin[1] + local[1]];
                            let (x, y) = (acc.c[fm][fn_][2 * h], acc.c[fm][fn_][2 * h + 1]);
                            // SAFETY: `pairs_whole` held for the tiling's box, `local` is inside
                            // it at an even column (`Mma::element`: `8 j + 2 (lane % 4)`, atoms
                            // 8 wide), so the pair is inside the view, neighbours, and aligned
                            // to its size; the chunk is this block's alone (`Chunks`) and the
                            // tiling deals both elements to this thread alone, so nothing
                            // writes them meanwhile; a unique view's elements are initialised.
                            let [old_x, old_y] = unsafe { O::pair(chunk.address(local)) };
                            let values = [f(index, x, old_x), f([index[0], index[1] + 1], y, old_y)];
                            // SAFETY: as above.
                            unsafe { chunk.write_pair_whole(local, values) };
                        });
                    });
                });
                return true;
            }
            crate::kernel::steps::unrolled!(FM, |fm| {
                crate::kernel::steps::unrolled!(FN, |fn_| {
                    crate::kernel::steps::unrolled!(4, |r| {
                        let local = Mma::<A, WM, WN, FM, FN>::element(thread, fm, fn_, r);
                        let value = acc.c[fm][fn_][r];
                        let make = |index, element| {
                            // SAFETY: `put_one` gives `element` only where it is inside the
                            // view: readable, and this thread's alone (below).
                            let old = unsafe { O::one(element) };
                            f(index, value, old)
                        };
                        // SAFETY: the tiling deals each local index to the one thread that
                        // holds it (`Mma::element`).
                        unsafe { chunk.put_one(local, make) };
                    });
                });
            });
            true
        })
    }
}

/// What an accumulator's epilogue is given of the element it replaces: nothing (`()`, for
/// [`Block::store_accumulators`], which reads no element) or its value ([`Was`], for
/// [`Block::update_accumulators`]).
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
trait Old<T>: Sized {
    /// What is read of the element at `first` and of the one after it.
    ///
    /// # Safety
    ///
    /// Both are readable and nothing writes them meanwhile; `first` is aligned to two
    /// elements' size.
    unsafe fn pair(first: *const T) -> [Self; 2];

    /// What is read of the element at `element`.
    ///
    /// # Safety
    ///
    /// It is readable and nothing writes it meanwhile.
    unsafe fn one(element: *const T) -> Self;
}

impl<T> Old<T> for () {
    #[inline(always)]
    unsafe fn pair(_: *const T) -> [Self; 2] {
        [(), ()]
    }

    #[inline(always)]
    unsafe fn one(_: *const T) -> Self {}
}

/// An element's value before an update.
struct Was<T>(T);

impl<T: Copy> Old<T> for Was<T> {
    #[inline(always)]
    unsafe fn pair(first: *const T) -> [Self; 2] {
        // SAFETY: two neighbouring readable elements, aligned to their size (caller).
        unsafe { crate::aligned::read_aligned_run::<T, 2>(first) }.map(Was)
    }

    #[inline(always)]
    unsafe fn one(element: *const T) -> Self {
        // SAFETY: readable, and nothing writes it meanwhile (caller).
        Was(unsafe { element.read() })
    }
}
