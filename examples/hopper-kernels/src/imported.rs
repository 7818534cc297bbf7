//! Attention's forward pass over imported tensors ([`attention_forward_imported`]): a
//! framework's `q`, `k` and `v` (torch's strided views as they are) go to the kernels as tensor
//! maps, and its `o` and `lse` as written views, on the stream its producer named, and the call
//! returns without waiting, as any launch over imports does. Each tensor is checked as
//! `Imported::arg` checks it, and the call as [`attention_forward`](crate::attention_forward)
//! checks it; each refusal names the tensor.

use crate::forward::{AttentionError, check_attention, forward_grid, multiprocessors, spread_chunks};
use dlmd::DlElement;
use dlmd::cuda::{Arg, CudaError, ImportParam, Imported, Kernels};
use dlmd::half::{bf16, f16};

/// The extents of `x`, a tensor of rank `R`, or [`AttentionError::Shape`] naming it.
pub(crate) fn extents<const R: usize>(x: &Imported, which: &'static str) -> Result<[usize; R], AttentionError> {
    let shape = x.tensor().shape().unwrap_or(&[]);
    let refused = || AttentionError::Shape {
        which,
        shape: shape.to_vec(),
        rank: R,
    };
    if shape.len() != R {
        return Err(refused());
    }
    let mut extents = [0; R];
    for (to, &e) in extents.iter_mut().zip(shape) {
        *to = usize::try_from(e).map_err(|_| refused())?;
    }
    Ok(extents)
}

/// `x` as the kernel argument `P`, its refusal named after `which`.
pub(crate) fn arg<'i, P: ImportParam>(x: &'i Imported, which: &'static str) -> Result<Arg<'i, P>, AttentionError> {
    x.arg().map_err(|source| AttentionError::Argument { which, source })
}

/// `o = softmax(q · kᵀ · scale) · v` and each query row's log-sum-exp into `lse`, as
/// [`attention_forward`](crate::attention_forward) computes them, for tensors imported from a
/// framework: `q`, `k`, `v` and `o` `bf16` or `f16` (one type), `q` and `o`
/// `b × h_q × s_q × d`, `k` and `v` `b × h_kv × s_k × d` (`h_kv` dividing `h_q`), `d` 64 or
/// 128, `lse` `f32` `b × h_q × s_q`. `q`, `k` and `v` are only read (a tensor that requires
/// grad is fine, where its producer exports it); `o` and `lse` are written, and must allow it.
///
/// The kernel is queued on the stream every tensor's producer named (one stream for all five:
/// [`LaunchError::Stream`](dlmd::cuda::LaunchError::Stream) otherwise) and the call returns at
/// once; the launch holds the tensors until the kernel is done (those not
/// [lent](dlmd::cuda::Imported::lent), which their owner keeps for the stream's work). Inside
/// a CUDA graph capture of that stream the launch is captured, with its tensor maps in its
/// parameters. Every refusal is an [`AttentionError`] before anything is queued; no query is
/// no work.
pub fn attention_forward_imported(
    kernels: &Kernels,
    [q, k, v]: [&Imported; 3],
    o: &Imported,
    lse: &Imported,
    scale: f32,
    causal: bool,
) -> Result<(), AttentionError> {
    let four = [extents(q, "q")?, extents(k, "k")?, extents(v, "v")?, extents(o, "o")?];
    check_attention(four, extents(lse, "lse")?, scale)?;
    let Some(config) = forward_grid(four[0]) else {
        return Ok(());
    };
    // Over the launching tensor's device (asked only where not causal; a call refused for its
    // arguments is refused below, by name, as before).
    let config = spread_chunks(config, causal, || multiprocessors(&*o.context().ok()?));
    let dtype = q.tensor().dl_tensor().dtype;
    let d = four[0][3];
    let launch = || o.launch(kernels, config).map_err(AttentionError::Cuda);
    macro_rules! run {
        ($kernel:ident, $args:ident) => {
            crate::$kernel(
                launch()?,
                crate::$args {
                    q: arg(q, "q")?,
                    k: arg(k, "k")?,
                    v: arg(v, "v")?,
                    o: arg(o, "o")?,
                    lse: arg(lse, "lse")?,
                    scale,
                    causal,
                },
            )
        };
    }
    let launched: Result<(), CudaError> = if dtype == bf16::DTYPE {
        if d == 64 {
            run!(attention_bf16_d64, AttentionBf16D64Args)
        } else {
            run!(attention_bf16_d128, AttentionBf16D128Args)
        }
    } else if dtype == f16::DTYPE {
        if d == 64 {
            run!(attention_f16_d64, AttentionF16D64Args)
        } else {
            run!(attention_f16_d128, AttentionF16D128Args)
        }
    } else {
        return Err(AttentionError::DataType { dtype });
    };
    Ok(launched?)
}
