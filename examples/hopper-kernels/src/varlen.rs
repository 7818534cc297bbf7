//! Attention over sequences of different lengths packed together, as `flash_attn_varlen_func`
//! takes them ([`attention_varlen_forward_imported`], [`attention_varlen_backward_imported`]):
//! each tensor one batch entry, `[1, h, total, d]` (torch's packed `(total, h, d)` tensors
//! seen as `(1, h, total, d)`), and sequence `i` its rows `cu_seqlens_q[i] ..
//! cu_seqlens_q[i + 1]` of the queries, `cu_seqlens_k[i] .. cu_seqlens_k[i + 1]` of the keys.
//! The offsets stay on the device: the kernels read them, and write nothing where they are not
//! offsets of the tensors (negative, decreasing, or past the rows), which the host cannot see
//! without waiting for the device. The longest sequence's length sizes the grid, as
//! FlashAttention's `max_seqlen` does (a smaller one only leaves each block more chunks), and
//! so do the tensors' rows: the kernels number a head's chunks by where each sequence starts,
//! so many empty sequences cost a chunk number each, not the longest's chunks each. Not
//! causal, the forward pass takes at most one block a multiprocessor, as the batched one does.

use crate::forward::{AttentionError, check_attention, forward_grid, grid, multiprocessors, spread_chunks};
use crate::gradients::{check_gradients, delta_grid};
use crate::imported::{arg, extents};
use dlmd::DlElement;
use dlmd::cuda::{CudaError, Imported, Kernels};
use dlmd::half::{bf16, f16};

/// Checks what a packed call adds to [`check_attention`]: `q` and `k` of one batch entry, and
/// offsets `cu_q` and `cu_k` of as many sequences.
pub fn check_packed([q, k]: [[usize; 4]; 2], [cu_q, cu_k]: [usize; 2]) -> Result<(), AttentionError> {
    for (which, x) in [("q", q), ("k", k)] {
        if x[0] != 1 {
            return Err(AttentionError::Packed { which, batch: x[0] });
        }
    }
    if cu_q != cu_k || cu_q == 0 {
        return Err(AttentionError::Offsets { q: cu_q, k: cu_k });
    }
    Ok(())
}

/// The rows a packed call's grid covers, in chunks of `rows`, as `[b, h, s, d]`: of
/// `[1, h, total, d]` rows in `sequences` sequences of at most `longest` rows, as many chunks a
/// head as the kernels number (`total / rows`, and one more for each sequence, the chunks cut at
/// each sequence's end), or where fewer, `sequences` times the longest's chunks. A grid this
/// size is bounded by the tensors' rows, whatever the offsets: many empty sequences and a
/// `longest` from the caller launch no more blocks than the rows have chunks and the offsets
/// have sequences.
fn packed_rows(sequences: usize, [_, heads, total, d]: [usize; 4], longest: usize, rows: usize) -> [usize; 4] {
    let numbered = (total / rows).saturating_add(sequences);
    // A longest of 0 (a caller's `max_seqlen` of 0, whatever the offsets say) still launches:
    // the grid only shares the chunks out.
    let by_longest = sequences.saturating_mul(longest.max(1).div_ceil(rows));
    [1, heads, numbered.min(by_longest).saturating_mul(rows), d]
}

/// The checked extents of a packed call: `[q, k, v, o]`, `lse`'s, and the offsets' counts.
fn packed_extents(
    [q, k, v, o]: [&Imported; 4],
    lse: &Imported,
    [cu_q, cu_k]: [&Imported; 2],
    scale: f32,
) -> Result<[[usize; 4]; 4], AttentionError> {
    let four = [extents(q, "q")?, extents(k, "k")?, extents(v, "v")?, extents(o, "o")?];
    check_attention(four, extents(lse, "lse")?, scale)?;
    let counts = [
        extents::<1>(cu_q, "cu_seqlens_q")?[0],
        extents::<1>(cu_k, "cu_seqlens_k")?[0],
    ];
    check_packed([four[0], four[1]], counts)?;
    Ok(four)
}

/// Attention's forward pass over sequences packed together: as
/// [`attention_forward_imported`](crate::attention_forward_imported), with `q` and `o`
/// `1 × h_q × total_q × d`, `k` and `v` `1 × h_kv × total_k × d`, `lse` `1 × h_q × total_q`,
/// and `cu_q`, `cu_k` the `int32` cumulative lengths of the queries' and keys' sequences
/// (`b + 1` each, on the device), `max_q` the longest query sequence (it sizes the grid).
/// `causal` is aligned to each sequence's bottom right. Rows of `o` and `lse` past the last
/// offset are not written, nor anything where the offsets are not offsets of the tensors.
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen_forward_imported(
    kernels: &Kernels,
    [q, k, v]: [&Imported; 3],
    o: &Imported,
    lse: &Imported,
    [cu_q, cu_k]: [&Imported; 2],
    max_q: usize,
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    let four = packed_extents([q, k, v, o], lse, [cu_q, cu_k], scale)?;
    let sequences = extents::<1>(cu_q, "cu_seqlens_q")?[0] - 1;
    let chunk = crate::forward_chunk(four[0][3]).rows;
    let Some(config) = forward_grid(packed_rows(sequences, four[0], max_q.min(four[0][2]), chunk)) else {
        return Ok(());
    };
    // As the batched call: not causal, at most one block a multiprocessor.
    let config = spread_chunks(config, causal, || multiprocessors(&*o.context().ok()?));
    let dtype = q.tensor().dl_tensor().dtype;
    macro_rules! run {
        ($kernel:ident, $args:ident) => {
            crate::$kernel(
                o.launch(kernels, config)?,
                crate::$args {
                    q: arg(q, "q")?,
                    k: arg(k, "k")?,
                    v: arg(v, "v")?,
                    o: arg(o, "o")?,
                    lse: arg(lse, "lse")?,
                    cu_q: arg(cu_q, "cu_seqlens_q")?,
                    cu_k: arg(cu_k, "cu_seqlens_k")?,
                    scale,
                    causal,
                },
            )
        };
    }
    let launched: Result<(), CudaError> = match (dtype, four[0][3]) {
        (t, 64) if t == bf16::DTYPE => run!(attention_varlen_bf16_d64, AttentionVarlenBf16D64Args),
        (t, _) if t == bf16::DTYPE => run!(attention_varlen_bf16_d128, AttentionVarlenBf16D128Args),
        (t, 64) if t == f16::DTYPE => run!(attention_varlen_f16_d64, AttentionVarlenF16D64Args),
        (t, _) if t == f16::DTYPE => run!(attention_varlen_f16_d128, AttentionVarlenF16D128Args),
        _ => return Err(AttentionError::DataType { dtype }),
    };
    Ok(launched?)
}

/// Attention's backward pass over sequences packed together: as
/// [`attention_backward_imported`](crate::attention_backward_imported), with the tensors of
/// [`attention_varlen_forward_imported`] (`do`, `dq` as `q`; `dk`, `dv` as `k`; `delta` as
/// `lse`), and `[max_q, max_k]` the longest query and key sequences (they size the grids).
#[allow(clippy::too_many_arguments)]
pub fn attention_varlen_backward_imported(
    kernels: &Kernels,
    [q, k, v, o, d_o]: [&Imported; 5],
    lse: &Imported,
    delta: &Imported,
    [dq, dk, dv]: [&Imported; 3],
    [cu_q, cu_k]: [&Imported; 2],
    [max_q, max_k]: [usize; 2],
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    let forward = packed_extents([q, k, v, o], lse, [cu_q, cu_k], scale)?;
    let grads = [
        extents(d_o, "do")?,
        extents(dq, "dq")?,
        extents(dk, "dk")?,
        extents(dv, "dv")?,
    ];
    check_gradients([forward[0], forward[1]], grads, extents(delta, "delta")?)?;
    let sequences = extents::<1>(cu_q, "cu_seqlens_q")?[0] - 1;
    let rows = delta_grid(forward[0]);
    let queries = grid(packed_rows(sequences, forward[0], max_q.min(forward[0][2]), 128));
    let keys = grid(packed_rows(sequences, forward[1], max_k.min(forward[1][2]), 128));
    let dtype = q.tensor().dl_tensor().dtype;
    macro_rules! run {
        ($delta:ident, $delta_args:ident, $dq:ident, $dq_args:ident, $dkv:ident, $dkv_args:ident) => {{
            // Every tensor as its argument first: a refused one stops the call before any
            // kernel is queued.
            let delta_args = crate::$delta_args {
                o: arg(o, "o")?,
                d_o: arg(d_o, "do")?,
                delta_out: arg(delta, "delta")?,
            };
            let dq_args = crate::$dq_args {
                q: arg(q, "q")?,
                k: arg(k, "k")?,
                v: arg(v, "v")?,
                d_o: arg(d_o, "do")?,
                lse: arg(lse, "lse")?,
                delta: arg(delta, "delta")?,
                dq_out: arg(dq, "dq")?,
                cu_q: arg(cu_q, "cu_seqlens_q")?,
                cu_k: arg(cu_k, "cu_seqlens_k")?,
                scale,
                causal,
            };
            let dkv_args = crate::$dkv_args {
                k: arg(k, "k")?,
                v: arg(v, "v")?,
                q: arg(q, "q")?,
                d_o: arg(d_o, "do")?,
                lse: arg(lse, "lse")?,
                delta: arg(delta, "delta")?,
                dk_out: arg(dk, "dk")?,
                dv_out: arg(dv, "dv")?,
                cu_q: arg(cu_q, "cu_seqlens_q")?,
                cu_k: arg(cu_k, "cu_seqlens_k")?,
                scale,
                causal,
            };
            if let (Some(rows), Some(queries)) = (rows, queries) {
                crate::$delta(delta.launch(kernels, rows)?, delta_args)?;
                crate::$dq(dq.launch(kernels, queries)?, dq_args)?;
            }
            match keys {
                Some(keys) => crate::$dkv(dk.launch(kernels, keys)?, dkv_args),
                None => Ok(()),
            }
        }};
    }
    let launched: Result<(), CudaError> = match (dtype, forward[0][3]) {
        (t, 64) if t == bf16::DTYPE => run!(
            attention_delta_bf16,
            AttentionDeltaBf16Args,
            attention_varlen_dq_bf16_d64,
            AttentionVarlenDqBf16D64Args,
            attention_varlen_dkv_bf16_d64,
            AttentionVarlenDkvBf16D64Args
        ),
        (t, _) if t == bf16::DTYPE => run!(
            attention_delta_bf16,
            AttentionDeltaBf16Args,
            attention_varlen_dq_bf16_d128,
            AttentionVarlenDqBf16D128Args,
            attention_varlen_dkv_bf16_d128,
            AttentionVarlenDkvBf16D128Args
        ),
        (t, 64) if t == f16::DTYPE => run!(
            attention_delta_f16,
            AttentionDeltaF16Args,
            attention_varlen_dq_f16_d64,
            AttentionVarlenDqF16D64Args,
            attention_varlen_dkv_f16_d64,
            AttentionVarlenDkvF16D64Args
        ),
        (t, _) if t == f16::DTYPE => run!(
            attention_delta_f16,
            AttentionDeltaF16Args,
            attention_varlen_dq_f16_d128,
            AttentionVarlenDqF16D128Args,
            attention_varlen_dkv_f16_d128,
            AttentionVarlenDkvF16D128Args
        ),
        _ => return Err(AttentionError::DataType { dtype }),
    };
    Ok(launched?)
}

#[cfg(test)]
mod tests {
    use super::{AttentionError, check_packed, packed_rows};

    #[test]
    fn packed_calls_are_one_batch_entry_with_offsets_for_both() {
        let (q, k) = ([1, 8, 700, 128], [1, 2, 650, 128]);
        check_packed([q, k], [5, 5]).unwrap();
        // No sequence: one offset each.
        check_packed([q, k], [1, 1]).unwrap();
        let e = check_packed([[2, 8, 700, 128], k], [5, 5]).unwrap_err();
        assert!(matches!(e, AttentionError::Packed { which: "q", batch: 2 }), "{e}");
        let e = check_packed([q, [3, 2, 650, 128]], [5, 5]).unwrap_err();
        assert!(matches!(e, AttentionError::Packed { which: "k", batch: 3 }), "{e}");
        for counts in [[5, 4], [0, 0], [0, 1]] {
            let e = check_packed([q, k], counts).unwrap_err();
            assert!(matches!(e, AttentionError::Offsets { .. }), "{counts:?}: {e}");
        }
        let message = check_packed([q, k], [5, 3]).unwrap_err().to_string();
        assert!(
            message.contains("5 offsets") && message.contains("cu_seqlens_k 3"),
            "{message}"
        );
    }

    #[test]
    fn a_packed_grid_is_bounded_by_the_rows_and_the_sequences() {
        // Four sequences of at most 300 rows in 700: the 5 + 4 chunk numbers the kernels
        // have, fewer than four times the longest's three chunks of 128 rows; of at most 100
        // rows, four times one chunk.
        assert_eq!(packed_rows(4, [1, 8, 700, 128], 300, 128), [1, 8, 9 * 128, 128]);
        assert_eq!(packed_rows(4, [1, 8, 700, 128], 100, 128), [1, 8, 4 * 128, 128]);
        // 10⁶ sequences, one of 100 000 rows and the rest empty, with the caller's longest:
        // 781 + 10⁶ chunk numbers a head, not 10⁶ times 782.
        assert_eq!(
            packed_rows(1_000_000, [1, 2, 100_000, 64], 100_000, 128),
            [1, 2, (781 + 1_000_000) * 128, 64]
        );
        // A longest past every bound saturates rather than wraps.
        assert_eq!(packed_rows(3, [1, 1, 10, 64], usize::MAX, 192), [1, 1, 3 * 192, 64]);
        assert_eq!(packed_rows(0, [1, 4, 500, 128], 500, 128), [1, 4, 0, 128]);
        // A longest of 0 from the caller: a chunk for each sequence, not none.
        assert_eq!(packed_rows(3, [1, 4, 500, 128], 0, 128), [1, 4, 3 * 128, 128]);
    }
}
