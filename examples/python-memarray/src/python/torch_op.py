"""``add_index`` as the torch operator ``dlmd::add_index``, and attention's forward pass as
``dlmd::attention``: torch.compile (fullgraph too) and CUDA graphs see each as one operation
(the first mutates its argument, the second returns new tensors), and trace it on fake tensors
without running it.

It is defined through ``torch.library.Library`` with a kernel for the CPU and CUDA dispatch keys,
rather than ``torch.library.custom_op``, whose Python layers (autograd, in-place bookkeeping,
a dynamo guard) cost about 30 µs a call: here the dispatcher calls the kernel directly, which
bumps the argument's version counter itself as torch's in-place operations do. The operator has
no autograd formula; ``add_index`` refuses tensors that require grad. ``dlmd::attention`` has
no backward kernel yet, so no autograd formula either: it reads tensors that require grad, and
torch's fallback for operators without one warns where a backward pass reaches it.
"""

import torch

import dlmd_memarray

_LIBRARY = torch.library.Library("dlmd", "DEF")
_LIBRARY.define("add_index(Tensor(a!) x) -> ()")
_LIBRARY.define("attention(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor)")


def _add_index(x):
    """Adds to each element of ``x`` the sum of its indices, in place, on ``x``'s device: on a GPU
    on torch's current stream there, without waiting."""
    # DLPack's value for the legacy default stream is 1 (torch's handle for it is 0, which DLPack
    # reserves).
    stream = (torch.cuda.current_stream(x.device).cuda_stream or 1) if x.is_cuda else None
    dlmd_memarray.add_index(x, stream=stream)
    torch.autograd.graph.increment_version(x)


_LIBRARY.impl("add_index", _add_index, "CPU")
_LIBRARY.impl("add_index", _add_index, "CUDA")


@torch.library.register_fake("dlmd::add_index", lib=_LIBRARY)
def _(x):
    # In place: no output to describe.
    return None




def _attention(q, k, v, scale, causal):
    """``softmax(q · kᵀ · scale) · v`` and each query row's log-sum-exp, on torch's current stream
    of ``q``'s device, without waiting: ``q`` ``(b, h_q, s_q, d)``, ``k`` and ``v``
    ``(b, h_kv, s_k, d)``, any strides a tensor map takes (``(b, s, h, d)`` tensors transposed
    to ``(b, h, s, d)`` as they are). The output is a new contiguous ``(b, h_q, s_q, d)``
    tensor of ``q``'s dtype, the log-sum-exp a new ``float32`` ``(b, h_q, s_q)`` one."""
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    # Registered for CUDA alone. DLPack's value for the legacy default stream is 1.
    stream = torch.cuda.current_stream(q.device).cuda_stream or 1
    # Only read: ``detach`` gives the same memory without the autograd flag, which DLPack
    # exports refuse.
    dlmd_memarray.attention_forward(q.detach(), k.detach(), v.detach(), o, lse, scale=scale, causal=causal,
                                    stream=stream)
    return o, lse


_LIBRARY.impl("attention", _attention, "CUDA")


@torch.library.register_fake("dlmd::attention", lib=_LIBRARY)
def _(q, k, v, scale, causal):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


add_index = torch.ops.dlmd.add_index
attention = torch.ops.dlmd.attention
