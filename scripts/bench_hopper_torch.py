"""torch on the shapes of the Hopper products' benchmark (examples/warpgroup.rs --bench), in the
same GPU run: y = x @ w.T at 4096^3 and 8192^3 by torch.matmul in bf16 and f16 (cuBLAS), by
torch._scaled_mm on FP8 E4M3 with per-tensor scales into bf16, and a Linear layer's forward pass
as torch runs it unfused: torch.matmul, then + bias, then GELU (tanh), each its own kernel
(torch.nn.functional.linear's bias folded into cuBLAS's epilogue, then GELU, is timed too).
Medians of 20 timed rounds after 3 to warm up, the sides alternated round by round, CUDA
events, each span after a 128 MiB device copy (as the Rust side's `timing::Cover`)."""
import torch
import torch.nn.functional as F

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


for size in (4096, 8192):
    g = torch.Generator(device="cuda").manual_seed(size)
    x = torch.rand(size, size, device="cuda", generator=g) * 2 - 1
    w = torch.rand(size, size, device="cuda", generator=g) * 2 - 1
    bias = (torch.rand(size, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
    xb, wb = x.to(torch.bfloat16), w.to(torch.bfloat16)
    xh, wh = x.to(torch.float16), w.to(torch.float16)
    x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    scale_x, scale_w = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    sides = {
        "torch.matmul bf16": lambda: torch.matmul(xb, wb.t()),
        "torch.matmul f16": lambda: torch.matmul(xh, wh.t()),
        "torch._scaled_mm e4m3 -> bf16": lambda: torch._scaled_mm(
            x8, w8.t(), scale_a=scale_x, scale_b=scale_w, out_dtype=torch.bfloat16),
        "matmul, + bias, GELU (3 kernels)": lambda: F.gelu(torch.matmul(xb, wb.t()) + bias, approximate="tanh"),
        "F.linear(bias), GELU (2 kernels)": lambda: F.gelu(F.linear(xb, wb, bias), approximate="tanh"),
    }
    times = {name: [] for name in sides}
    names = list(sides)
    for r in range(23):
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            t = timed(sides[name])
            if r >= 3:
                times[name].append(t)
    flop = 2 * size ** 3
    for name in names:
        ms = median(times[name])
        print(f"bench {size}^3 x.wT: {name} {ms:.4f} ms ({flop / ms / 1e9:.0f} TFLOP/s)")
