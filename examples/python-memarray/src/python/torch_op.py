"""``add_index`` as the torch operator ``dlmd::add_index``, and attention as ``dlmd::attention``
(forward) and ``dlmd::attention_backward``, with ``dlmd::attention_varlen`` for sequences
packed together: torch.compile (fullgraph too) and CUDA graphs see each as one operation (the
first mutates its argument, the others return new tensors), and trace it on fake tensors
without running it.

``dlmd::add_index`` (CPU and CUDA) and the dense attention operators (CUDA) are defined and
implemented in Rust (``dlmd::torch``, through torch's stable C ABI): the dispatcher calls the
Rust kernel with no Python in the call, on torch's current stream; ``add_index`` moves its
argument's version counter as torch's in-place operations do. Their fake implementations are
Python. The packed operators are implemented in Python, over the same Rust kernels.

``dlmd::attention`` is differentiable: its backward pass is the operator
``dlmd::attention_backward`` (the Rust backward kernels, deterministic), wired in by
``differentiable``, which makes any pair of forward and backward operators a differentiable
torch operator in a few lines. The log-sum-exp output is not differentiated (as
FlashAttention's): its gradient is taken as zero.
"""

import torch

import dlmd_memarray

_LIBRARY = torch.library.Library("dlmd", "DEF")
# ``dlmd::add_index(Tensor(a!) x) -> ()``,
# ``dlmd::attention(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor)`` and
# ``dlmd::attention_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, float scale,
# bool causal) -> (Tensor, Tensor, Tensor)``, with their Rust kernels.
dlmd_memarray.register_torch_ops()
_LIBRARY.define(
    "attention_varlen(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q,"
    " int max_seqlen_k, float scale, bool causal) -> (Tensor, Tensor)"
)
_LIBRARY.define(
    "attention_varlen_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse,"
    " Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float scale, bool causal)"
    " -> (Tensor, Tensor, Tensor)"
)


@torch.library.register_fake("dlmd::add_index", lib=_LIBRARY)
def _(x):
    # In place: no output to describe.
    return None


@torch.library.register_fake("dlmd::attention", lib=_LIBRARY)
def _(q, k, v, scale, causal):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@torch.library.register_fake("dlmd::attention_backward", lib=_LIBRARY)
def _(grad, q, k, v, o, lse, scale, causal):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _packed(x):
    """A packed ``(total, h, d)`` tensor as the kernels' ``(1, h, total, d)`` view of it (the same
    memory); a ``(h, total)`` log-sum-exp as ``(1, h, total)``."""
    return x.transpose(0, 1).unsqueeze(0) if x.dim() == 3 else x.unsqueeze(0)


def _attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal):
    """Attention over sequences of different lengths packed together, as ``flash_attn_varlen_func``
    takes them, on torch's current stream without waiting: ``q`` ``(total_q, h_q, d)``, ``k`` and
    ``v`` ``(total_k, h_kv, d)``, sequence ``i`` the rows ``cu_seqlens_q[i] .. cu_seqlens_q[i + 1]``
    of ``q`` and ``cu_seqlens_k[i] .. cu_seqlens_k[i + 1]`` of ``k`` and ``v`` (``int32`` CUDA
    tensors of ``b + 1`` offsets each). Returns ``o`` ``(total_q, h_q, d)`` and ``lse``
    ``(h_q, total_q)``; rows past the last offset are left unwritten, as is everything where the
    offsets are not offsets of the tensors (the kernels check them on the device)."""
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream or 1
    dlmd_memarray.attention_varlen_forward(
        *(_packed(x.detach()) for x in (q, k, v)), _packed(o), _packed(lse), cu_seqlens_q, cu_seqlens_k,
        max_seqlen_q=max_seqlen_q, scale=scale, causal=causal, stream=stream,
    )
    return o, lse


_LIBRARY.impl("attention_varlen", _attention_varlen, "CUDA")


@torch.library.register_fake("dlmd::attention_varlen", lib=_LIBRARY)
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal):
    return q.new_empty(q.shape), q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


def _attention_varlen_backward(grad, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                               scale, causal):
    """The gradients of ``q``, ``k`` and ``v`` for the gradient ``grad`` of
    ``dlmd::attention_varlen``'s output ``o``: new contiguous tensors of the inputs' shapes."""
    dq, dk, dv = (torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in (q, k, v))
    delta = torch.empty(lse.shape, dtype=torch.float32, device=q.device)
    stream = torch.cuda.current_stream(q.device).cuda_stream or 1
    grad = grad.detach().contiguous()
    dm_inputs = [_packed(x.detach()) for x in (q, k, v, o, grad, lse)]
    dlmd_memarray.attention_varlen_backward(
        *dm_inputs, _packed(delta), _packed(dq), _packed(dk), _packed(dv), cu_seqlens_q, cu_seqlens_k,
        max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, scale=scale, causal=causal, stream=stream,
    )
    return dq, dk, dv


_LIBRARY.impl("attention_varlen_backward", _attention_varlen_backward, "CUDA")


@torch.library.register_fake("dlmd::attention_varlen_backward", lib=_LIBRARY)
def _(grad, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


_FRAGMENTS = []


def differentiable(forward, backward, *, saved, differentiated, lib=None):
    """Makes the operator ``forward`` differentiable by the operator ``backward``.

    ``forward`` and ``backward`` are operators (``"namespace::name"``). ``saved(inputs, outputs)``
    returns the tensors and values to keep for the backward pass, as a tuple; ``backward`` is
    called with the gradients of the outputs in ``differentiated`` (indices into the outputs; the
    others' are not propagated), then the saved values, and returns one gradient for each of the
    first tensor inputs, in order; the tensor inputs after those (offsets, indices) and the
    non-tensor inputs get ``None``."""
    def lookup(name):
        namespace, op = name.split("::")
        return getattr(getattr(torch.ops, namespace), op).default

    tensor_inputs = [isinstance(a.type, torch.TensorType) for a in lookup(forward)._schema.arguments]
    backward_op = lookup(backward)

    def setup_context(ctx, inputs, output):
        outputs = output if isinstance(output, tuple) else (output,)
        kept = saved(inputs, outputs)
        tensors = [x for x in kept if isinstance(x, torch.Tensor)]
        ctx.save_for_backward(*tensors)
        ctx.layout = [isinstance(x, torch.Tensor) for x in kept]
        ctx.values = [None if isinstance(x, torch.Tensor) else x for x in kept]

    def run_backward(ctx, *grads):
        tensors = iter(ctx.saved_tensors)
        kept = [next(tensors) if is_tensor else value for is_tensor, value in zip(ctx.layout, ctx.values)]
        wanted = [grads[i] for i in differentiated]
        if any(g is None for g in wanted):
            # An output the result does not depend on: no gradient flows back through it.
            return tuple(None for _ in tensor_inputs)
        # A gradient may come broadcast (strides of 0) or strided: the kernels read rows of
        # contiguous elements, which ``contiguous`` gives (a no-op where it already is).
        wanted = [g.contiguous() for g in wanted]
        computed = iter(backward_op(*wanted, *kept))
        return tuple(next(computed, None) if is_tensor else None for is_tensor in tensor_inputs)

    if lib is None:
        # The autograd kernel is registered through a library of the operator's namespace,
        # kept as long as the module.
        lib = torch.library.Library(forward.split("::")[0], "FRAGMENT")
        _FRAGMENTS.append(lib)
    torch.library.register_autograd(forward, run_backward, setup_context=setup_context, lib=lib)


differentiable(
    "dlmd::attention",
    "dlmd::attention_backward",
    # grad, then q, k, v, o, lse, scale, causal
    saved=lambda inputs, outputs: (*inputs[:3], *outputs, *inputs[3:]),
    differentiated=[0],
    lib=_LIBRARY,
)

differentiable(
    "dlmd::attention_varlen",
    "dlmd::attention_varlen_backward",
    # grad, then q, k, v, o, lse, the offsets, the longest lengths, scale, causal
    saved=lambda inputs, outputs: (*inputs[:3], *outputs, *inputs[3:]),
    differentiated=[0],
    lib=_LIBRARY,
)

add_index = torch.ops.dlmd.add_index
attention = torch.ops.dlmd.attention
attention_backward = torch.ops.dlmd.attention_backward
attention_varlen = torch.ops.dlmd.attention_varlen
attention_varlen_backward = torch.ops.dlmd.attention_varlen_backward
