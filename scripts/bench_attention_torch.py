"""torch's attention on the shapes of examples/attention.rs, in the same GPU run: the forward
pass of torch.nn.functional.scaled_dot_product_attention in bf16, (b, h, s, d) contiguous, with
its FlashAttention-2 backend (SDPBackend.FLASH_ATTENTION) and its cuDNN backend
(SDPBackend.CUDNN_ATTENTION), causal and not; and, with --backward, forward plus backward.
Medians of 10 timed rounds after 3 to warm up, the backends alternated round by round, CUDA
events, each span after a 128 MiB device copy (as the Rust side's `timing::Cover`). TFLOP/s as
FlashAttention counts them: 4 b h s^2 d forward, halved when causal, 3.5 times that forward
plus backward."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [
    (4, 32, 4096, 128, False), (4, 32, 4096, 128, True),
    (16, 16, 2048, 128, False), (16, 16, 2048, 128, True),
    (4, 32, 4096, 64, False), (4, 32, 4096, 64, True),
    (1, 32, 16384, 128, False), (1, 32, 16384, 128, True),
]
BACKENDS = {"FA2 (flash)": SDPBackend.FLASH_ATTENTION, "cuDNN": SDPBackend.CUDNN_ATTENTION}

_cover_from = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
_cover_to = torch.empty_like(_cover_from)


def timed(f):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    _cover_to.copy_(_cover_from)
    start.record()
    f()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def median(v):
    return sorted(v)[len(v) // 2]


backward = "--backward" in sys.argv
for b, h, s, d, causal in SHAPES:
    g = torch.Generator(device="cuda").manual_seed(s + d)
    q, k, v = ((torch.rand(b, h, s, d, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
               .requires_grad_(backward) for _ in range(3))
    grad = torch.rand(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16)

    def side(backend):
        def run():
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                if backward:
                    o.backward(grad)
        return run

    times = {name: [] for name in BACKENDS}
    names = list(BACKENDS)
    for r in range(13):
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            t = timed(side(BACKENDS[name]))
            if r >= 3:
                times[name].append(t)
    flops = 4 * b * h * s * s * d / (2 if causal else 1) * (3.5 if backward else 1)
    what = "forward+backward" if backward else "forward"
    for name in names:
        ms = median(times[name])
        print(f"bench attention b={b} h={h} s={s} d={d} causal={causal}: torch {name} {what} "
              f"{ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s")
