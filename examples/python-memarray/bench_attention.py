"""Attention's forward pass through the torch operator `dlmd::attention` (the Rust kernels of
`dlmd-example-hopper-kernels`) against torch's `scaled_dot_product_attention` with its
FlashAttention-2 and cuDNN backends, timed in the same run, the sides alternating round by round
(medians of the rounds, quartiles of the per-round ratios), bfloat16, on a Hopper GPU:

1. Per-call latency from Python on a small shape (1, 4, 128, 64): rounds of 1,000 calls and one
   synchronisation, the operator and the direct call `dm.attention_forward` into preallocated
   outputs against SDPA's call as a model makes it (torch choosing the backend) and with each
   backend chosen. Build the module with `maturin build --release` for this: a debug build's
   host path is several times slower.
2. Device time on FlashAttention's benchmark shapes (4, 32, 4096, 128), causal and not: CUDA
   events around 5 calls, in TFLOP/s as FlashAttention counts them (4·b·h·s²·d, halved when
   causal).
3. Forward and backward (`o.backward(grad)` through autograd, the backward pass the Rust kernels
   of `dlmd::attention_backward`) on the issue's shapes, in TFLOP/s as FlashAttention counts
   them (3.5 times the forward pass's count).
4. Sequences of different lengths packed together (`dlmd::attention_varlen`, 16 sequences of
   512 to 4,096 rows, 32 heads of 128), forward and forward + backward, against torch's own
   packed attention (`torch.nn.attention.varlen.varlen_attn`, FlashAttention-2's varlen kernels)
   where this torch has it, in TFLOP/s counted sequence by sequence.
5. Host waits on the operator's path, forward and backward, counted by CUPTI (`count_syncs.c`)
   over 1,000 calls.

Usage: python bench_attention.py [ROUNDS]
"""

import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dlmd_memarray as dm
from bench_kernels import counted, cupti_counter, device_ms, per_call_us, quartiles, rounds

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 11
CALLS = 1_000


def sdpa(backend, q, k, v, causal):
    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def sides(shape, causal):
    b, h, s, d = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    op = dm.torch_attention()
    scale = 1 / math.sqrt(d)
    o, lse = torch.empty_like(q), torch.empty((b, h, s), device="cuda")
    return {
        "torch.ops.dlmd.attention": lambda: op(q, k, v, scale, causal),
        "dm.attention_forward (into)": lambda: dm.attention_forward(q, k, v, o, lse, scale=scale, causal=causal),
        "SDPA, FlashAttention-2": sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal),
        "SDPA, cuDNN": sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
        "SDPA, torch's choice": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
    }


def table(samples, reference, unit, value):
    ref = samples[reference]
    print(f"  {'path':<30} {unit:>9} {'÷ ' + reference.split(', ')[-1]:>12} {'quartiles':>12}")
    for name, s in samples.items():
        print(f"  {name:<30} {value(statistics.median(s)):9.2f} "
              f"{statistics.median(ref) / statistics.median(s):12.3f} {quartiles(ref, s):>12}")


def latency():
    fns = sides((1, 4, 128, 64), False)
    for fn in fns.values():
        fn()
    samples = rounds(fns, lambda fn: per_call_us(fn, CALLS))
    print(f"per-call latency, (1, 4, 128, 64) bfloat16, {ROUNDS} rounds of {CALLS} calls (µs/call; "
          f"ratio > 1 is faster than SDPA's call with no backend chosen; the others choose theirs in a "
          f"context manager, which costs a few µs):")
    table(samples, "SDPA, torch's choice", "µs/call", lambda x: x)


def throughput():
    for causal in (False, True):
        shape = (4, 32, 4096, 128)
        fns = sides(shape, causal)
        del fns["SDPA, torch's choice"]
        for fn in fns.values():
            fn()
        samples = rounds(fns, device_ms)
        b, h, s, d = shape
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        print(f"{shape}, {'causal' if causal else 'not causal'}, {ROUNDS} rounds of 5 calls (TFLOP/s; ratio to "
              f"cuDNN, > 1 is faster):")
        table(samples, "SDPA, cuDNN", "TFLOP/s", lambda ms: flops / ms / 1e9)


def training_sides(shape, causal):
    b, h, s, d = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, grad = (torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    op = dm.torch_attention()
    scale = 1 / math.sqrt(d)

    def step(forward):
        def run():
            forward().backward(grad)
        return run

    return {
        "torch.ops.dlmd.attention": step(lambda: op(q, k, v, scale, causal)[0]),
        "SDPA, FlashAttention-2": step(sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)),
        "SDPA, cuDNN": step(sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)),
    }


def training():
    for shape in ((4, 32, 4096, 128), (16, 16, 2048, 128), (4, 32, 4096, 64)):
        for causal in (False, True):
            fns = training_sides(shape, causal)
            for fn in fns.values():
                fn()
            samples = rounds(fns, device_ms)
            b, h, s, d = shape
            flops = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
            print(f"forward + backward, {shape}, {'causal' if causal else 'not causal'}, {ROUNDS} rounds of 5 "
                  f"calls (TFLOP/s; ratio to cuDNN, > 1 is faster):")
            table(samples, "SDPA, cuDNN", "TFLOP/s", lambda ms: flops / ms / 1e9)


def torch_varlen(varlen_attn, args, causal):
    """torch's packed attention, causal as this torch spells it (`is_causal`, or a window open to
    the left only in later versions)."""
    try:
        varlen_attn(*args, is_causal=causal)
        return lambda: varlen_attn(*args, is_causal=causal)
    except TypeError:
        window = (-1, 0) if causal else (-1, -1)
        return lambda: varlen_attn(*args, window_size=window)


def varlen():
    g = torch.Generator(device="cuda").manual_seed(0)
    lengths = torch.randint(512, 4097, (16,), generator=g, device="cuda").tolist()
    h, d, total = 32, 128, sum(lengths)
    cu = torch.tensor([0, *lengths], device="cuda").cumsum(0).to(torch.int32)
    q, k, v, grad = (torch.randn((total, h, d), generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    op, scale, longest = dm.torch_attention_varlen(), 1 / math.sqrt(d), max(lengths)
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        varlen_attn = None
    for causal in (False, True):
        forward = {"torch.ops.dlmd.attention_varlen": lambda: op(q, k, v, cu, cu, longest, longest, scale, causal)[0]}
        if varlen_attn is not None:
            forward["varlen_attn, FlashAttention-2"] = torch_varlen(varlen_attn, (q, k, v, cu, cu, longest, longest),
                                                                    causal)
        flops = sum(4 * h * n * n * d for n in lengths) / (2 if causal else 1)
        for what, factor, fns in (("forward", 1, {n: (lambda f=f: f().detach()) for n, f in forward.items()}),
                                  ("forward + backward", 3.5, {n: (lambda f=f: f().backward(grad))
                                                               for n, f in forward.items()})):
            with torch.no_grad() if factor == 1 else torch.enable_grad():
                for fn in fns.values():
                    fn()
                samples = rounds(fns, device_ms)
            print(f"packed {what}, 16 sequences of {min(lengths)}–{longest} rows ({total} in all), {h} heads of {d}, "
                  f"{'causal' if causal else 'not causal'}, {ROUNDS} rounds of 5 calls (TFLOP/s):")
            reference = "varlen_attn, FlashAttention-2" if varlen_attn is not None else next(iter(fns))
            table(samples, reference, "TFLOP/s", lambda ms: factor * flops / ms / 1e9)


def host_waits():
    lib, where = cupti_counter()
    if lib is None:
        print(f"host waits: not counted: {where}")
        return True
    total = 0
    for name, fn in (("torch.ops.dlmd.attention", sides((1, 4, 128, 64), True)["torch.ops.dlmd.attention"]),
                     ("its forward and backward", training_sides((1, 4, 128, 64), True)["torch.ops.dlmd.attention"])):
        fn()
        counts, others = counted(lib, fn, CALLS)
        print(f"host waits over {CALLS} calls of {name} ({where}): {sum(counts)} on the calling thread, "
              f"{sum(others)} on others")
        total += sum(counts)
    return total == 0


if __name__ == "__main__":
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("attention: not run, the kernels need a Hopper GPU (sm_90a)")
        sys.exit(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    latency()
    throughput()
    training()
    varlen()
    sys.exit(0 if host_waits() else 1)
