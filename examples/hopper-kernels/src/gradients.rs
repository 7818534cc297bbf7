//! Attention's backward pass over imported tensors ([`attention_backward_imported`]): from a
//! framework's `q`, `k`, `v`, the forward pass's `o` and `lse`, and the output's gradient
//! `do`, the gradients `dq`, `dk` and `dv`, by three kernels queued on the producers' stream
//! (`Δ = Σ do ∘ o`, then the queries' gradient, then the keys' and values'), the call
//! returning without waiting. Each tensor is checked as `Imported::arg` checks it, and the
//! shapes as [`check_attention`](crate::check_attention) checks the forward pass's; each
//! refusal names the tensor.

use crate::forward::{AttentionError, check_attention, grid, multiprocessors, spread_chunks};
use crate::imported::{arg, extents};
use dlmd::DlElement;
use dlmd::cuda::{CudaError, Imported, Kernels, LaunchConfig};
use dlmd::half::{bf16, f16};

/// Checks the gradients' tensors against the forward pass's: `do` and `dq` of `q`'s extents,
/// `dk` and `dv` of `k`'s, `Δ` of `lse`'s.
pub fn check_gradients(
    [q, k]: [[usize; 4]; 2],
    [d_o, dq, dk, dv]: [[usize; 4]; 4],
    delta: [usize; 3],
) -> Result<(), AttentionError> {
    for (which, expected, found) in [("do", q, d_o), ("dq", q, dq), ("dk", k, dk), ("dv", k, dv)] {
        if found != expected {
            return Err(AttentionError::Gradient { which, expected, found });
        }
    }
    if delta != [q[0], q[1], q[2]] {
        return Err(AttentionError::Lse { q, lse: delta });
    }
    Ok(())
}

/// The launch of the `Δ` kernel: a thread a query row, blocks of 256 rows of one head (the
/// kernel's threads split `[b, h, s]` as `z`, `y`, `x`; each covers the rest in strides).
pub(crate) fn delta_grid([b, h, s, _]: [usize; 4]) -> Option<LaunchConfig> {
    let rows = b.saturating_mul(h).saturating_mul(s);
    let side = |n: usize, most: usize| n.clamp(1, most) as u32;
    (rows > 0).then(|| LaunchConfig {
        grid_dim: (side(s.div_ceil(256), 1 << 30), side(h, 65_535), side(b, 65_535)),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// The gradients of `o = softmax(q · kᵀ · scale) · v` (as
/// [`attention_forward_imported`](crate::attention_forward_imported) computed it, with its
/// `lse`) for the output's gradient `do`, into `dq`, `dk` and `dv`, for tensors imported from a
/// framework: `q`, `k`, `v`, `o`, `do` and the gradients `bf16` or `f16` (one type), shaped as
/// the forward pass's (`do` and `dq` as `q`, `dk` and `dv` as `k`), `lse` and `delta` `f32`
/// `b × h_q × s_q`. `delta` is scratch the call writes (`Δ = Σ do ∘ o` for each query row); the
/// gradients are written, each element once (no atomics: the same inputs give the same
/// bits), and a key-value head's gradients sum its group of query heads'. Every other tensor
/// is only read.
///
/// Three kernels are queued, in order, on the stream every tensor's producer named, and the
/// call returns at once; the launches hold the tensors until their kernels are done (those not
/// [lent](dlmd::cuda::Imported::lent), which their owner keeps for the stream's work). Every
/// refusal is an [`AttentionError`]: of the shapes, the element types, strides and memory,
/// before anything is queued; of a written tensor sharing memory with another (which each
/// launch checks for its own arguments), at the launch that finds it, after the kernels before
/// it, which write `delta` and `dq` only.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_imported(
    kernels: &Kernels,
    [q, k, v, o, d_o]: [&Imported; 5],
    lse: &Imported,
    delta: &Imported,
    [dq, dk, dv]: [&Imported; 3],
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    let forward = [extents(q, "q")?, extents(k, "k")?, extents(v, "v")?, extents(o, "o")?];
    check_attention(forward, extents(lse, "lse")?, scale)?;
    let grads = [
        extents(d_o, "do")?,
        extents(dq, "dq")?,
        extents(dk, "dk")?,
        extents(dv, "dv")?,
    ];
    check_gradients([forward[0], forward[1]], grads, extents(delta, "delta")?)?;
    // Without a query or a key there is no block to launch for that side (a tensor map has no
    // extent 0, so such a `q` or `k` is refused above, as an argument).
    let (rows, queries, keys) = (delta_grid(forward[0]), grid(forward[0]), grid(forward[1]));
    // `dq`'s and `dk dv`'s chunks spread over the multiprocessors where they are alike (the
    // launching tensors' device; where it cannot be told, a block a chunk, and the arguments
    // refused below by name).
    // The count is asked once, for both.
    let sms = (!causal).then(|| multiprocessors(&*dq.context().ok()?)).flatten();
    let (queries, keys) = (
        queries.map(|c| spread_chunks(c, causal, || sms)),
        keys.map(|c| spread_chunks(c, causal, || sms)),
    );
    let dtype = q.tensor().dl_tensor().dtype;
    let d = forward[0][3];
    macro_rules! run {
        ($delta:ident, $delta_args:ident, $dq:ident, $dq_args:ident, $dkv:ident, $dkv_args:ident) => {{
            // Every tensor as its argument first, so that a tensor refused for its type,
            // strides or memory stops the call before any kernel is queued.
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
    let launched: Result<(), CudaError> = match (dtype, d) {
        (t, 64) if t == bf16::DTYPE => run!(
            attention_delta_bf16,
            AttentionDeltaBf16Args,
            attention_dq_bf16_d64,
            AttentionDqBf16D64Args,
            attention_dkv_bf16_d64,
            AttentionDkvBf16D64Args
        ),
        (t, _) if t == bf16::DTYPE => run!(
            attention_delta_bf16,
            AttentionDeltaBf16Args,
            attention_dq_bf16_d128,
            AttentionDqBf16D128Args,
            attention_dkv_bf16_d128,
            AttentionDkvBf16D128Args
        ),
        (t, 64) if t == f16::DTYPE => run!(
            attention_delta_f16,
            AttentionDeltaF16Args,
            attention_dq_f16_d64,
            AttentionDqF16D64Args,
            attention_dkv_f16_d64,
            AttentionDkvF16D64Args
        ),
        (t, _) if t == f16::DTYPE => run!(
            attention_delta_f16,
            AttentionDeltaF16Args,
            attention_dq_f16_d128,
            AttentionDqF16D128Args,
            attention_dkv_f16_d128,
            AttentionDkvF16D128Args
        ),
        _ => return Err(AttentionError::DataType { dtype }),
    };
    Ok(launched?)
}
