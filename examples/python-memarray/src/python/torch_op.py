"""``add_index`` as the torch custom op ``dlmd::add_index``: torch.compile (fullgraph too) and
CUDA graphs see it as one operation that mutates its argument, and trace it on fake tensors
without running it."""

import torch

import dlmd_memarray


@torch.library.custom_op("dlmd::add_index", mutates_args=("x",))
def add_index(x: torch.Tensor) -> None:
    """Adds to each element of ``x`` the sum of its indices, in place, on ``x``'s device: on a GPU
    on torch's current stream there, without waiting."""
    # DLPack's value for the legacy default stream is 1 (torch's handle for it is 0, which DLPack
    # reserves).
    stream = (torch.cuda.current_stream(x.device).cuda_stream or 1) if x.is_cuda else None
    dlmd_memarray.add_index(x, stream=stream)


@add_index.register_fake
def _(x: torch.Tensor) -> None:
    # In place: no output to describe.
    return None
