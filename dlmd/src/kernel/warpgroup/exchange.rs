//! Accumulators handed from one consumer warpgroup to the others through shared memory
//! ([`Exchange`]): each consumer writes its `64 × 64` accumulators, transposed and converted to
//! the input type, as one panel of an `A` operand tile that every consumer's products then read
//! ([`Warpgroup::exchange`], [`Warpgroup::mma_exchanged`], [`Warpgroup::mma_exchanged_own`]).
//! Attention's backward pass hands the scores' gradient `dSᵀ`, which each warpgroup holds for
//! its 64 keys, to the queries' gradient `dQ = dS · K`, whose depth is every key of the block.
//!
//! # Why safe code cannot race on an exchange
//!
//! Writes to an exchange happen only inside [`Warpgroup::exchange`], between two barriers that
//! every consumer warpgroup of the block reaches (named barriers 1 and 2, over the consumers'
//! threads). Before the first, each warpgroup waits for every product it started
//! (`wgmma.wait_group 0`), so that no product of any consumer reads shared memory while a
//! warpgroup writes; each writes only its own panel, then makes its writes visible to the
//! tensor cores (`fence.proxy.async`) before the second; and no product can start between the
//! two, since the call is one operation of each warpgroup. A product reads an exchange only
//! through [`Exchanged`], which only `exchange` returns, after the second barrier: every
//! panel has then been written in that round, and none is written again until every consumer
//! has reached the next round's first barrier, after its products. All exchanges of a block
//! share the two barriers, so this holds across them; where consumers exchange through
//! different sets in one round, a panel of a set may be last round's (or the zeros every set
//! starts with), never memory being written. A consumer that makes fewer exchanges than the
//! others leaves them waiting: a hang, never a race.

use super::accumulators::{Accumulators, Cols, Product, Width};
use super::borrowed::Borrowed;
use super::operand::{KByN, MnMajor};
use super::pipeline::Operand;
use super::products::{ProductRs, Running};
use super::roles::{ROWS, Warpgroup};
use crate::kernel::block::{TileSealed, TileSet};
use crate::kernel::swizzle::Swizzle128;
use core::marker::PhantomData;

/// The alignment of an exchange's panels: the 128-byte swizzle's period.
const ALIGN: usize = 1024;
/// The bytes of one panel: 64 rows of 128 bytes.
const PANEL: usize = ROWS * 128;

/// Shared memory through which a block's consumer warpgroups hand each other `64 × 64`
/// accumulators of input type `T` (`bf16` or `f16`), zeros at first: a tile set ([`TileSet`]) of `64 × COLS`
/// elements, `COLS` 64 for each consumer warpgroup, in column panels of 64 (one 128-byte
/// swizzled row each, the `A` operand layout of `wgmma`). Declared beside the pipeline in the
/// block's type, `(Streams<…>, Exchange<bf16, 128>)` for two consumers;
/// [`Block::split`](crate::kernel::Block::split) makes it an [`Exchanging`] handle that the
/// consumers' code captures.
pub struct Exchange<T, const COLS: usize>(PhantomData<T>);

impl<T, const COLS: usize> TileSealed for Exchange<T, COLS> {}

impl<T: ProductRs<Cols<64>, Cols<64>>, const COLS: usize> Exchange<T, COLS> {
    /// The slack to align the panels (the set starts 128-aligned) and the panels.
    const TOTAL: usize = {
        assert!(
            COLS.is_multiple_of(64) && COLS >= 64,
            "an exchange holds a panel of 64 columns for each consumer warpgroup"
        );
        assert!(size_of::<T>() == 2, "an exchange holds 16-bit elements");
        (ALIGN - 128) + COLS / 64 * PANEL
    };
}

// SAFETY: `BYTES` covers the slack to align the panels and the panels; `tiles` makes one handle
// over them, which reaches nothing outside.
unsafe impl<T: ProductRs<Cols<64>, Cols<64>> + 'static, const COLS: usize> TileSet for Exchange<T, COLS> {
    type Tiles<'k> = Exchanging<'k, T, COLS>;
    const BYTES: usize = Self::TOTAL;
    #[inline(always)]
    unsafe fn tiles<'k>(base: *mut u8) -> Exchanging<'k, T, COLS> {
        #[cfg(target_arch = "nvptx64")]
        {
            // The panels start as zeros, written by the block's threads in turn and fenced for
            // the tensor cores: a product over an exchange reads initialised memory even where a
            // panel's consumer made its exchange through another set.
            use core::arch::nvptx;
            // SAFETY: the set's memory is the block's shared memory (the caller's contract).
            let tile =
                unsafe { crate::kernel::mma::raw::shared_address(base.cast_const()) }.next_multiple_of(ALIGN as u32);
            // SAFETY: a special register, no precondition.
            let thread = unsafe { nvptx::_thread_idx_x() } as u32;
            // SAFETY: as above.
            let threads = unsafe { nvptx::_block_dim_x() } as u32;
            let mut at = 4 * thread;
            while at < (COLS / 64 * PANEL) as u32 {
                // SAFETY: 4 bytes of the panels (`at` below their bytes, a multiple of 4), the
                // set's alone (the caller's contract), each written by one thread (`at`'s
                // stride is the block's threads); nothing reads them before the barrier that
                // begins a specialisation, the only place an exchange is read.
                unsafe { super::raw::st_shared_u32(tile + at, 0) };
                at += 4 * threads;
            }
            // SAFETY: on sm_90a (a kernel with an exchange issues `wgmma`).
            unsafe { super::raw::fence_proxy_async() };
        }
        Exchanging {
            base: base as usize,
            kind: PhantomData,
        }
    }
}

/// The shared memory of an [`Exchange`], in a block: captured by the consumers' code, which
/// writes it only through [`Warpgroup::exchange`]. No other code reaches its memory.
pub struct Exchanging<'k, T, const COLS: usize> {
    /// The set's generic address (the block's shared memory, 128-aligned).
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    base: usize,
    kind: PhantomData<(&'k (), T)>,
}

/// An [`Exchange`] once every consumer warpgroup has written its panel in this round: the
/// `A` operand (`64 × COLS`, K-major) of [`Warpgroup::mma_exchanged`] and
/// [`Warpgroup::mma_exchanged_own`]. Its panel `w` holds consumer `w`'s accumulators,
/// transposed: row `j`, column `64 w + i` is element `[i, j]` of consumer `w`'s. A handle kept
/// past the next exchange reads that exchange's panels: make the products of a round before
/// the next.
pub struct Exchanged<'c, T, const COLS: usize> {
    /// The first panel (shared state space), 1024-aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    tile: u32,
    kind: PhantomData<(&'c (), T, *mut u8)>,
}

impl<'c, const THREADS: usize> Warpgroup<'c, THREADS> {
    /// Hands `acc` (`64 × 64`, no product running: they were waited for) to every consumer
    /// warpgroup: waits for every product this warpgroup started, then for every consumer
    /// warpgroup to reach its own `exchange`, writes `acc` transposed and converted to `T`
    /// (rounded to nearest even) as panel [`index`](Self::index) of `to`, and returns once
    /// every consumer has written its panel. Every consumer warpgroup makes the same number of
    /// exchanges, or those that make more wait forever.
    #[inline(always)]
    pub fn exchange<T, const COLS: usize>(
        &mut self,
        to: &Exchanging<'_, T, COLS>,
        acc: &Accumulators<T, Cols<64>>,
    ) -> Exchanged<'c, T, COLS>
    where
        T: ProductRs<Cols<64>, Cols<64>>,
    {
        const {
            assert!(
                COLS == 64 * (THREADS / 128 - 1),
                "an exchange holds a panel of 64 columns for each consumer warpgroup of the block"
            );
        };
        let _ = Exchange::<T, COLS>::TOTAL;
        #[cfg(target_arch = "nvptx64")]
        {
            use super::raw;
            // SAFETY: the set's memory is the block's shared memory (`TileSet::tiles`).
            let tile =
                unsafe { crate::kernel::mma::raw::shared_address(to.base as *const u8) }.next_multiple_of(ALIGN as u32);
            let consumers = (THREADS - 128) as u32;
            // SAFETY: all 128 threads of the warpgroup, in its uniform code, on sm_90a: every
            // product it started is done before it writes, or before another consumer does
            // (the barrier below, which each consumer reaches only after this).
            unsafe { raw::wgmma_wait::<0>() };
            // SAFETY: named barrier 1 is used by exchanges alone, always over the consumers'
            // threads (a multiple of 128), which reach it converged (their uniform code).
            unsafe { raw::named_barrier_sync(1, consumers) };
            let (warp, lane) = (self.thread / 32, self.thread % 32);
            let panel = tile + (self.index * PANEL) as u32;
            // Matrix `q` of step `g` is the 8 × 8 piece of rows `16 warp + 8 h ..` and columns
            // `8 c ..` (`c = 2 g + q / 2`, `h = q % 2`): the thread's pair `4 g + q`, as the
            // accumulators hold it. Stored transposed, its row `j` is row `8 c + j` of the
            // panel, at the 16-byte piece `2 warp + h` of the row, swizzled.
            let (q, j) = (lane / 8, lane % 8);
            crate::unroll!(4, |g| {
                let mut regs = [0u32; 4];
                crate::unroll!(4, |m| {
                    let p = 4 * g + m;
                    let x = |i: usize| <Cols<64> as Width>::get(&acc.regs, i);
                    regs[m] = T::pack(x(2 * p), x(2 * p + 1));
                });
                let (c, h) = (2 * g + q / 2, q % 2);
                let row = panel + ((8 * c + j) * 128 + (((2 * warp + h) ^ j) * 16)) as u32;
                // SAFETY: all 32 threads of each warp (the warpgroup's uniform code), on sm_90;
                // `row` is 16 bytes of this warpgroup's panel (row `8 c + j < 64`, piece below
                // 8), 16-aligned; each warp writes its own 16 columns of the panel (pieces
                // `2 warp`, `2 warp + 1`), each lane its own row of them, and no product reads
                // the exchange meanwhile (the barrier above; the one below before any does).
                unsafe { raw::stmatrix_x4_trans(row, regs) };
            });
            // SAFETY: on sm_90: the writes above, visible to `wgmma` (the async proxy) once the
            // barrier below orders them before its reads.
            unsafe { raw::fence_proxy_async() };
            // SAFETY: named barrier 2, as barrier 1 above.
            unsafe { raw::named_barrier_sync(2, consumers) };
            Exchanged {
                tile,
                kind: PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (to, acc);
            self.never()
        }
    }

    /// Starts `acc += a · b` over the whole exchange: `a` (`64 × COLS`: every consumer's
    /// accumulators, transposed, side by side) times this warpgroup's `N` columns of `b`
    /// (`COLS × N · consumers`, read MN-major: a resident tile lent [`by_n`](super::Landed::by_n)),
    /// columns `N · index ..`. Attention's `dQ = dS · K` for 64 queries and the 64 keys of each
    /// consumer, each consumer computing its share of the head dimension. Returns the
    /// accumulators [`Running`]; [`wait`](Self::wait) gives them back. (Where `b` has too few
    /// columns to share, [`mma_exchanged_own`](Self::mma_exchanged_own) shares the depth
    /// instead: at head dimension 64.)
    #[inline(always)]
    pub fn mma_exchanged<'h, T, const COLS: usize, R, const N: usize>(
        &mut self,
        acc: Accumulators<T, Cols<N>>,
        a: &'h Exchanged<'c, T, COLS>,
        b: Borrowed<'h, KByN<R>>,
    ) -> Running<'h, T, Cols<N>, Borrowed<'h, KByN<R>>>
    where
        Cols<N>: Width,
        T: Product<Cols<N>, MnMajor> + ProductRs<Cols<64>, Cols<64>>,
        R: Operand<Element = T, Swizzle = Swizzle128>,
    {
        const {
            assert!(
                R::ROWS == COLS,
                "the `B` tile of an exchange's product holds a row for each column of the exchange"
            );
            assert!(
                R::COLS == N * (THREADS / 128 - 1) && N.is_multiple_of(64),
                "each consumer warpgroup reads its `N` columns of the `B` tile, whole 64-column panels"
            );
        };
        #[cfg(target_arch = "nvptx64")]
        {
            let mut regs = acc.regs;
            // SAFETY: all 128 threads of the warpgroup, on sm_90a (the consumer's uniform code);
            // `a` is an exchange of `COLS / 64` panels, `b` a landed tile of `R::ROWS = COLS`
            // rows whose panels `index · N / 64 ..` are this warpgroup's `N` columns (inside
            // the tile: checked above); the result borrows both.
            unsafe { exchanged::<T, Cols<N>>(&mut regs, (a.tile, b.tile), R::ROWS, self.index * N / 64, 0..COLS / 64) };
            Running::of(regs, b)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (acc, a, b);
            self.never()
        }
    }

    /// Starts `acc += a · b` over this warpgroup's own panel of the exchange: `a` (its own
    /// accumulators, transposed: `64 × 64`) times its own 64 rows of `b` (`64 · consumers × N`,
    /// read MN-major), rows `64 · index ..`. Attention's `dQ = dS · K` for 64 queries and this
    /// consumer's 64 keys, each consumer adding its own (at head dimension 64, where
    /// [`mma_exchanged`](Self::mma_exchanged)'s split of the columns would leave each 32).
    /// Returns the accumulators [`Running`].
    #[inline(always)]
    pub fn mma_exchanged_own<'h, T, const COLS: usize, R, const N: usize>(
        &mut self,
        acc: Accumulators<T, Cols<N>>,
        a: &'h Exchanged<'c, T, COLS>,
        b: Borrowed<'h, KByN<R>>,
    ) -> Running<'h, T, Cols<N>, Borrowed<'h, KByN<R>>>
    where
        Cols<N>: Width,
        T: Product<Cols<N>, MnMajor> + ProductRs<Cols<64>, Cols<64>>,
        R: Operand<Element = T, Swizzle = Swizzle128>,
    {
        const {
            assert!(
                R::ROWS == COLS && R::COLS == N,
                "the `B` tile of an exchange's own product holds a row for each column of the exchange, `N` columns"
            );
        };
        #[cfg(target_arch = "nvptx64")]
        {
            let mut regs = acc.regs;
            let own = self.index;
            // SAFETY: as for `mma_exchanged`: this warpgroup's panel of the exchange (`index`
            // below the consumers: `COLS / 64` panels) and rows `64 · index ..` of `b` (inside
            // its `COLS` rows), its `N` columns from the first.
            unsafe { exchanged::<T, Cols<N>>(&mut regs, (a.tile, b.tile), R::ROWS, 0, own..own + 1) };
            Running::of(regs, b)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = (acc, a, b);
            self.never()
        }
    }
}

/// `acc += a · b` over the exchange's panels `panels`: for each panel `p`, the products of its
/// 64 rows of 128 bytes (K-major, at `tiles.0`) with rows `64 p ..` of the `B` tile at
/// `tiles.1` (MN-major, `rows` rows a 64-column panel), from its panel `column` on.
///
/// # Safety
///
/// As [`Product::mma_row`] for each product: all 128 threads of a warpgroup, converged, on
/// `sm_90a`; the exchange's panels `panels` written and fenced since its last exchange (an
/// [`Exchanged`]), not written until a wait sees these products done (the next exchange waits
/// for them); the `B` tile landed, 1024-aligned, of `rows` rows a panel, holding panels
/// `column ..` as far as `W`'s columns reach, `rows` at least `64 · panels.end`, and not
/// released until these products are done; both in the 128-byte swizzle, 1024-aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn exchanged<T: Product<W, MnMajor>, W: Width>(
    regs: &mut W::Regs,
    (a, b): (u32, u32),
    rows: usize,
    column: usize,
    panels: core::ops::Range<usize>,
) {
    use super::raw::{descriptor_128, descriptor_128_mn};
    let panel_bytes = (rows * 128) as u32;
    let columns = b + column as u32 * panel_bytes;
    for p in panels {
        let offset = (p * PANEL) as u32;
        // SAFETY: the caller's contract, for panel `p` of the exchange and rows `64 p ..` of
        // `b`'s panels (`PANEL` bytes: 64 rows of 128).
        unsafe {
            T::mma_row(
                regs,
                descriptor_128(a + offset),
                descriptor_128_mn(columns + offset, panel_bytes),
            )
        };
    }
}
