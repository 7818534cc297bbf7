"""``add_index`` as the torch operator ``dlmd::add_index``: torch.compile (fullgraph too) and
CUDA graphs see it as one operation that mutates its argument, and trace it on fake tensors
without running it.

It is defined through ``torch.library.Library`` with a kernel for the CPU and CUDA dispatch keys,
rather than ``torch.library.custom_op``, whose Python layers (autograd, in-place bookkeeping,
a dynamo guard) cost about 30 µs a call: here the dispatcher calls the kernel directly, which
bumps the argument's version counter itself as torch's in-place operations do. The operator has
no autograd formula; ``add_index`` refuses tensors that require grad.
"""

import torch

import dlmd_memarray

_LIBRARY = torch.library.Library("dlmd", "DEF")
_LIBRARY.define("add_index(Tensor(a!) x) -> ()")


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


add_index = torch.ops.dlmd.add_index
