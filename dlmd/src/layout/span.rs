//! Spans: how far a mapping reaches forward and back from index 0, and which elements it
//! reaches.

use super::{LayoutError, Mapping};
use crate::extents::Extents;

/// Bit widths `(e, s)` under which the unchecked arithmetic of a rank-`rank` strided mapping
/// cannot overflow: `rank` extents below 2^e multiply to below 2^62 (`e ≤ 62 / rank`), and
/// `rank` steps `(n - 1) × stride`, each below 2^(e + s), add up to below 2^62
/// (`e + s + ⌈log2 rank⌉ ≤ 62`). Extents are capped at 2^40 so that strides keep a useful range.
pub(super) const fn unchecked_bits(rank: usize) -> (u32, u32) {
    if rank == 0 {
        return (62, 62);
    }
    let extent = if 62 / rank > 40 { 40 } else { (62 / rank) as u32 };
    let log2_rank = rank.next_power_of_two().trailing_zeros();
    (extent, 62 - extent - log2_rank)
}

/// Calls `f` with the offset, from the start of the span, of every element `mapping` reaches (in
/// no particular order; an element several indices reach may come more than once, but with
/// `std` there are never more calls than elements in the span), stopping at the first error.
///
/// The work is bounded by the span, not by the number of indices: dimensions that never step
/// (extent 1, stride 0) are dropped, dimensions whose strides tile one another (a contiguous
/// tensor, a sliding window) merge into one, and what still overlaps is marked in a bitmap of
/// the span (with `std`; without it, the remaining indices are walked). A broadcast tensor of
/// 2^61 indices over one element is one call.
pub(crate) fn for_each_reached<M: Mapping, X>(mapping: &M, mut f: impl FnMut(usize) -> Result<(), X>) -> Result<(), X> {
    let extents = mapping.extents().to_array();
    let strides = mapping.strides();
    if extents.as_ref().contains(&0) {
        return Ok(());
    }
    // (extent, |stride|) of the dimensions that step, sorted by stride. Offsets from the span's
    // start are `Σ j·|s|` with `0 ≤ j < n` whatever the signs: negative strides only shift the
    // start, which the mapping's offset already covers.
    let mut dims = [(0usize, 0usize); 64];
    let mut count = 0;
    for (&n, &s) in extents.as_ref().iter().zip(strides.as_ref()) {
        let s = s.unsigned_abs();
        if n > 1 && s > 0 {
            // More than 62 stepping dimensions would hold over 2^62 indices, which no mapping
            // allows.
            let Some(slot) = dims.get_mut(count) else { break };
            *slot = (n, s);
            count += 1;
        }
    }
    let dims = &mut dims[..count];
    dims.sort_unstable_by_key(|&(_, s)| s);
    // Merge each dimension into the previous one where its stride is a multiple `q` of it with
    // `q ≤ n`: `{a·s + b·q·s}` is then `{k·s : k ≤ (n - 1) + (m - 1)·q}`, with no gap.
    let mut merged = 0;
    for k in 0..dims.len() {
        let (m, t) = dims[k];
        if merged > 0 {
            let (n, s) = dims[merged - 1];
            if t % s == 0 && t / s <= n {
                dims[merged - 1].0 = n + (m - 1) * (t / s);
                continue;
            }
        }
        dims[merged] = (m, t);
        merged += 1;
    }
    let dims = &dims[..merged];
    // The indices of the merged dimensions are no more than the span unless they overlap.
    #[cfg(feature = "std")]
    {
        let span = mapping.required_span_size();
        if dims.iter().fold(1usize, |c, &(n, _)| c.saturating_mul(n)) > span {
            return for_each_marked(dims, span, f);
        }
    }
    let mut index = [0usize; 64];
    let index = &mut index[..dims.len()];
    let mut offset = 0usize;
    loop {
        f(offset)?;
        // Odometer over the merged dimensions, keeping the offset as a running sum.
        let mut d = 0;
        loop {
            let Some(&(n, s)) = dims.get(d) else {
                return Ok(());
            };
            if index[d] + 1 < n {
                index[d] += 1;
                offset += s;
                break;
            }
            offset -= (n - 1) * s;
            index[d] = 0;
            d += 1;
        }
    }
}

/// [`for_each_reached`] for dimensions that overlap: each dimension widens a bitmap of the
/// reachable offsets along chains of its stride, in one pass over the span.
#[cfg(feature = "std")]
#[cold]
fn for_each_marked<X>(
    dims: &[(usize, usize)],
    span: usize,
    mut f: impl FnMut(usize) -> Result<(), X>,
) -> Result<(), X> {
    let mut bits = std::vec![0u64; span.div_ceil(64)];
    let get = |bits: &[u64], x: usize| bits[x / 64] >> (x % 64) & 1 != 0;
    bits[0] = 1;
    for &(n, s) in dims {
        // An offset x is reached after this dimension if some x - j·s (j < n) was reached
        // before it: walk each residue class of s upwards, remembering the last one reached.
        for r in 0..s.min(span) {
            let mut last: Option<usize> = None;
            let mut x = r;
            while x < span {
                if get(&bits, x) {
                    last = Some(x);
                } else if last.is_some_and(|l| (x - l) / s < n) {
                    bits[x / 64] |= 1 << (x % 64);
                }
                x += s;
            }
        }
    }
    for x in 0..span {
        if get(&bits, x) {
            f(x)?;
        }
    }
    Ok(())
}

/// The span `1 + Σ (e - 1)·|s|` (0 when empty) and how far the negative strides reach back, with
/// the element count and the span checked to fit in `isize`: one pass.
#[inline(always)]
pub(super) fn strided_span(extents: &[usize], strides: &[isize]) -> Result<(usize, usize), LayoutError> {
    let mut count = 1usize;
    let mut forward = 0usize;
    let mut back = 0usize;
    let (mut too_many, mut too_far) = (false, false);
    let mut empty = false;
    for (&n, &s) in extents.iter().zip(strides) {
        let (c, o1) = count.overflowing_mul(n);
        let (reach, o2) = n.wrapping_sub(1).overflowing_mul(s.unsigned_abs());
        let side = if s < 0 { &mut back } else { &mut forward };
        let (sum, o3) = side.overflowing_add(reach);
        *side = sum;
        count = c;
        empty |= n == 0;
        too_many |= o1;
        too_far |= o2 | o3;
    }
    if empty {
        return Ok((0, 0));
    }
    let (span, o) = forward.overflowing_add(back);
    if too_many || count > isize::MAX as usize {
        return Err(LayoutError::SpanOverflow);
    }
    if too_far || o || span >= isize::MAX as usize {
        return Err(farthest(extents, strides));
    }
    Ok((span + 1, back))
}

/// The error for strides that reach further than `isize` counts: the dimension that reaches
/// furthest, `(n - 1)·|s|`.
#[cold]
fn farthest(extents: &[usize], strides: &[isize]) -> LayoutError {
    let reach = |d: usize| (extents[d].saturating_sub(1) as u128) * strides[d].unsigned_abs() as u128;
    match (0..extents.len().min(strides.len())).max_by_key(|&d| (reach(d), core::cmp::Reverse(d))) {
        Some(dim) => LayoutError::StrideReach {
            dim,
            extent: extents[dim],
            stride: strides[dim] as i64,
        },
        None => LayoutError::SpanOverflow,
    }
}

/// Whether a positive `stride` (in elements) looks like a negative one that its producer wrote
/// as an unsigned number of bytes and divided by the item size: `stride · k` lies in
/// `[2^63, 2^64)` for an item size `k` (a power of two from 2 to 64 bytes, unique where it
/// exists), and read as a signed 64-bit byte count it is a small negative one. Returns the
/// stride it meant, in elements, and `k`. (cupy 14.2 exports reversed arrays so.)
pub(crate) fn unsigned_negative(stride: i64) -> Option<(i64, u32)> {
    if stride <= 0 {
        return None;
    }
    (1..=6).find_map(|shift: u32| {
        let k = 1u128 << shift;
        let bytes = stride as u128 * k;
        let wrapped = (bytes as u64) as i64;
        (bytes >> 63 == 1 && wrapped > -(1 << 40)).then_some((wrapped / k as i64, k as u32))
    })
}

/// How many elements the negative strides reach back from index 0: `Σ (n - 1)·|s|` over the
/// dimensions whose stride is negative, 0 for extents without elements.
#[inline(always)]
pub(crate) fn negative_reach(extents: &[usize], strides: &[isize]) -> Result<usize, LayoutError> {
    if extents.contains(&0) {
        return Ok(0);
    }
    let mut back = 0usize;
    for (&n, &s) in extents.iter().zip(strides) {
        if s < 0 {
            let reach = (n - 1).checked_mul(s.unsigned_abs()).ok_or(LayoutError::SpanOverflow)?;
            back = back.checked_add(reach).ok_or(LayoutError::SpanOverflow)?;
        }
    }
    Ok(back)
}
