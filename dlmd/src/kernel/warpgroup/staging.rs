//! How the consumers write their accumulators out: straight from registers ([`Direct`]), or
//! through a buffer of block-shared memory that the bulk copy engine copies to the view while
//! the warp goes on to its next products ([`Buffered`]).

#[cfg(target_arch = "nvptx64")]
use {
    super::raw, crate::dtype::DlElement, crate::extents::Extents, crate::kernel::KernelSpace,
    crate::kernel::block::Chunk, crate::layout::Layout,
};

/// A buffer row: 64 two-byte elements (128 bytes, one bulk copy), then 16 bytes that keep the
/// eight rows a warp writes at once on distinct banks.
pub(super) const ROW_BYTES: usize = 144;

/// A consumer warp's buffer: its 16 rows of a warpgroup's 64.
pub(super) const WARP_BYTES: usize = 16 * ROW_BYTES;

/// How the consumer warpgroups of a [`Pipeline`](super::Pipeline) write their accumulators
/// ([`Warpgroup::store`](super::Warpgroup::store)): the pipeline's last parameter,
/// [`Direct`] unless named.
pub trait Stores: crate::kernel::block::TileSealed + 'static {
    /// Whether the pipeline keeps a buffer for each consumer warp.
    const BUFFERED: bool;
}

/// The accumulators go from registers to the view, each thread its elements in pairs: no
/// shared memory. The stores take the warp's time before its next products.
pub struct Direct;

/// The accumulators go through a buffer of block-shared memory for each consumer warp (2304
/// bytes a warp, 18 KiB for two consumer warpgroups), 64 columns at a time, which the bulk copy
/// engine copies to the view a row at a time while the warp goes on. Where the warpgroup's part
/// is not whole inside the view, its rows not 16-byte aligned or its element not two bytes
/// wide, the store is [`Direct`]'s.
pub struct Buffered;

impl crate::kernel::block::TileSealed for Direct {}
impl crate::kernel::block::TileSealed for Buffered {}

impl Stores for Direct {
    const BUFFERED: bool = false;
}

impl Stores for Buffered {
    const BUFFERED: bool = true;
}

/// Writes a warpgroup's `64 × n` accumulators to `part` through the running warp's buffer at
/// `buffer`, `n` the accumulators' columns and `held(i)` the running thread's `i`-th element
/// with its index in the `64 × n` (`Accumulators::held`): for each 64 columns, each thread
/// writes its pairs `f(index, value)` to the buffer, the warp waits for its writes (made
/// visible to the bulk copy engine), and its first 16 threads each copy one row of 128 bytes
/// to the view. Before a buffer is written, the copies that read it before have read it.
///
/// # Safety
///
/// All 32 threads of each warp of the warpgroup, on `sm_90`; `thread` is the running thread's
/// index in the warpgroup; `buffer` is the shared-state-space address of the running warp's
/// [`WARP_BYTES`] of the block's shared memory, 16-aligned, which only this function reaches
/// (each warp its own); `U` is two bytes; `n` is a multiple of 64, at most 256; `held` is the
/// accumulators' layout, which deals each element of the `64 × n` to one thread, the warp `w`
/// of the warpgroup rows `16 w ..`; `part` is the warpgroup's alone, and
/// `part.runs_whole` holds for the `64 × n` of its matrix, with 16 bytes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(super) unsafe fn store<U, E, L, Sp>(
    buffer: u32,
    n: usize,
    thread: usize,
    part: &mut Chunk<'_, U, E, L, Sp>,
    held: impl Fn(usize) -> ([usize; 2], f32),
    f: &impl Fn(E::Index, f32) -> U,
) where
    U: DlElement,
    E: Extents,
    L: Layout,
    Sp: KernelSpace,
{
    let (warp, lane) = (thread / 32, thread % 32);
    crate::unroll!(4, |q| {
        if q < n / 64 {
            if lane < 16 {
                // SAFETY: sm_90 (caller).
                unsafe { raw::bulk_wait_read::<0>() };
            }
            // SAFETY: every thread of the warp (caller), in its uniform code. What the warp's
            // copies read of the buffer is read before any thread of it writes the buffer.
            unsafe { raw::syncwarp() };
            // The 8-column groups `8 q ..` of the piece, in each its two rows.
            crate::unroll!(8, |g| {
                crate::unroll!(2, |h| {
                    // SAFETY: every thread of the warp, its buffer, `part`, `held` and `f`
                    // (caller), `lane = thread % 32`; `q < n / 64 ≤ 4` (above), `g < 8` and `h
                    // < 2` (the counts); its copies have read the buffer (above).
                    unsafe { put_pair(buffer, lane, [q, g, h], part, &held, f) };
                });
            });
            // SAFETY: sm_90 (caller).
            unsafe { raw::fence_proxy_async() };
            // SAFETY: every thread of the warp, in its uniform code: the piece's writes, made
            // visible to the async proxy, before the copies below.
            unsafe { raw::syncwarp() };
            if lane < 16 {
                let row = 16 * warp + lane;
                let dst = part
                    .address(Chunk::<'_, U, E, L, Sp>::in_matrix([row, 64 * q]))
                    .cast::<u8>();
                // SAFETY: `runs_whole` for `64 × n`, 16 bytes (caller): row `row` < 64 of the part from
                // column `64 q` (< n, a multiple of 64 elements, 128 bytes: eight runs of 16
                // bytes) is 128 contiguous bytes of the view, 16-aligned, inside the part,
                // which is the warpgroup's alone (caller) and this row this thread's alone; the
                // source is the buffer's row `lane`, 16-aligned (144 · lane), written and made
                // visible above, and written again only after this thread's `bulk_wait_read`
                // (above, next time); `specialise` waits for every group before it returns.
                unsafe { raw::bulk_store(dst, buffer + (lane * ROW_BYTES) as u32, 128) };
                // SAFETY: sm_90 (caller).
                unsafe { raw::bulk_commit() };
            }
        }
    });
}

/// Writes the running thread's pair of step `[q, g, h]` of [`store`] to the warp's buffer: its
/// elements `i` and `i + 1` (`i = 4 (8 q + g) + 2 h`), row `lane / 4 + 8 h` of the warp's 16,
/// columns `8 g + 2 (lane % 4)` and the next of the piece `q`. (A function of its own, not
/// text in each of the 64 steps: the steps are type-checked once.)
///
/// # Safety
///
/// [`store`]'s, for the running thread's `buffer`, `part`, `held` and `f`; `lane` is the running
/// thread's lane (`thread % 32`); `q < n / 64` (so at most 3), `g < 8`, `h < 2`; the bulk copies
/// that read the buffer before have read it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn put_pair<U, E, L, Sp>(
    buffer: u32,
    lane: usize,
    [q, g, h]: [usize; 3],
    part: &Chunk<'_, U, E, L, Sp>,
    held: &impl Fn(usize) -> ([usize; 2], f32),
    f: &impl Fn(E::Index, f32) -> U,
) where
    U: DlElement,
    E: Extents,
    L: Layout,
    Sp: KernelSpace,
{
    let i = 4 * (8 * q + g) + 2 * h;
    let (local, a) = held(i);
    let (_, b) = held(i + 1);
    let index = part.index_of(Chunk::<'_, U, E, L, Sp>::in_matrix(local));
    let next = part.index_of(Chunk::<'_, U, E, L, Sp>::in_matrix([local[0], local[1] + 1]));
    let values = [f(index, a), f(next, b)];
    // SAFETY: `U` is two bytes (caller), so `[U; 2]` is four, `U: Copy`.
    let bits = unsafe { core::mem::transmute_copy::<[U; 2], u32>(&values) };
    // Row `lane / 4 + 8 h` of the warp's 16 (`held`: the warp's rows are `16 warp ..`), columns
    // `8 g + 2 (lane % 4)` of the piece.
    let at = buffer + ((lane / 4 + 8 * h) * ROW_BYTES + (8 * g + 2 * (lane % 4)) * 2) as u32;
    // SAFETY: inside the warp's buffer (row < 16 as `lane < 32`, byte < 128 of the row's 144),
    // 4-aligned (the buffer is 16-aligned, rows 144 bytes, an even column of two-byte elements);
    // the buffer is this warp's alone, and its copies have read it (caller); each lane writes
    // its own word of each `(g, h)`, so no two threads write one word.
    unsafe { raw::st_shared_u32(at, bits) };
}
