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
/// `index(q, r)` is the tile index of that row's first element. `.trans` where `transposed` (a
/// constant where it is called, so one instruction remains).
///
/// # Safety
///
/// Run by every lane of the warp together (uniform code), and `index(q, r)` is the first of 8
/// neighbours along the tile's fastest dimension, all inside its extents, starting at a multiple
/// of 8 along it, in a tile whose lines start a multiple of 16 bytes apart
/// ([`operand_depth`]): 16 bytes, 16-aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ldmatrix<T: DlElement, E: Extents<Index = [usize; 2]>, L: TileLayout>(
    tile: &Tile<'_, T, E, L, Readable>,
    lane: usize,
    transposed: bool,
    index: impl Fn(usize, usize) -> [usize; 2],
) -> [u32; 4] {
    use crate::kernel::mma::raw::{ldmatrix_x4, shared_address};
    use crate::layout::Mapping;
    let row = index(lane / 8, lane % 8);
    let row = tile
        .storage()
        .data_handle()
        .cast_const()
        .wrapping_add(tile.storage().mapping().offset_of(&row));
    // SAFETY: `row` is in the tile, in the block's shared memory.
    let address = unsafe { shared_address(row) };
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
                // SAFETY: every lane of every warp runs this (uniform code, a block operation);
                // each index starts 8 neighbours along the fastest dimension at a multiple of 8,
                // inside the tile (the warp's rows are below `ROWS`, `k` below the depth, and the
                // fastest side a multiple of 8: `operand_depth`).
                frags[fm] = unsafe {
                    ldmatrix(a, thread % 32, L::FIRST_FASTEST, |q, r| {
                        if L::FIRST_FASTEST {
                            [top + (q % 2) * 8, k0 + (q / 2) * 8 + r]
                        } else {
                            [top + (q % 2) * 8 + r, k0 + (q / 2) * 8]
                        }
                    })
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
                // SAFETY: as in `load_a`: every lane, 8 neighbours inside the readable tile.
                let [r0, r1, r2, r3] = unsafe {
                    ldmatrix(b, thread % 32, !L::FIRST_FASTEST, |q, r| {
                        if L::FIRST_FASTEST {
                            [k0 + (q % 2) * 8, left + (q / 2) * 8 + r]
                        } else {
                            [k0 + (q % 2) * 8 + r, left + (q / 2) * 8]
                        }
                    })
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
        let steps = const {
            let (da, db) = (
                operand_depth::<A::Input, EA, LA>(Mma::<A, WM, WN, FM, FN>::ROWS, A::K, false),
                operand_depth::<A::Input, EB, LB>(Mma::<A, WM, WN, FM, FN>::COLS, A::K, true),
            );
            assert!(da == db, "the tiles of `A` and `B` have the same depth `K`");
            da / A::K
        };
        let mut acc = acc;
        for step in 0..steps {
            if let (Some(fa), Some(fb)) = (self.load_a(a, step), self.load_b(b, step)) {
                acc = self.mma_fragments(acc, &fa, &fb);
            }
        }
        acc
    }

    /// Writes the accumulators to `chunk`, element `[i, j]` of the chunk's box as `f(index,
    /// acc)` (`index` in the whole view) by the one thread that holds it ([`Mma::element`]),
    /// nothing past the view's edge. Returns `false`, writing nothing, where the chunk's box is
    /// not the tiling's `ROWS × COLS` (the same answer on every thread: the box is the
    /// block's).
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
        self.each_held(chunk, acc, |chunk, local, value| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `each_held` gives each local index to the one thread that holds it.
            unsafe {
                chunk.store_one(local, |index| f(index, value))
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (chunk, local, value, &f);
        })
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
        self.each_held(chunk, acc, |chunk, local, value| {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: `each_held` gives each local index to the one thread that holds it.
            unsafe {
                chunk.update_one(local, |index, old| f(index, value, old))
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let _ = (chunk, local, value, &f);
        })
    }

    /// `put(chunk, local, value)` for each accumulator this thread holds, `local` its index in
    /// the chunk's box ([`Mma::element`]: no other thread's); `false`, with no call, where the
    /// box is not the tiling's.
    #[inline(always)]
    fn each_held<A, T, E, L, Sp, const WM: usize, const WN: usize, const FM: usize, const FN: usize>(
        &mut self,
        chunk: Chunk<'_, T, E, L, Sp>,
        acc: Accumulators<A, WM, WN, FM, FN>,
        put: impl Fn(&mut Chunk<'_, T, E, L, Sp>, [usize; 2], f32),
    ) -> bool
    where
        A: Atom,
        T: DlElement,
        E: Extents<Index = [usize; 2]>,
        L: Layout,
        Sp: KernelSpace,
    {
        const { Self::tiling_fits::<A, WM, WN, FM, FN>() };
        if chunk.shape() != [Mma::<A, WM, WN, FM, FN>::ROWS, Mma::<A, WM, WN, FM, FN>::COLS] {
            return false;
        }
        on_gpu!(self.inner, (chunk, acc, put), {
            let mut chunk = chunk;
            let thread = super::shared::thread_index::<THREADS>();
            // Written out (`unroll!`): indexed by loop counters, the accumulators would go to
            // local memory.
            crate::unroll!(FM, |fm| {
                crate::unroll!(FN, |fn_| {
                    crate::unroll!(4, |r| {
                        let local = Mma::<A, WM, WN, FM, FN>::element(thread, fm, fn_, r);
                        put(&mut chunk, local, acc.c[fm][fn_][r]);
                    });
                });
            });
            true
        })
    }
}
