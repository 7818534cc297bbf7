"""torch on the shapes of the cooperative kernels' benchmark (examples/cooperative.rs --bench),
in the same GPU run: a device copy of the same bytes (the reference both report against),
x.t().contiguous() at 8192 x 8192, torch.sum(x, dim=1) and torch.softmax(x, dim=1) at
8192 x 8192 and 65536 x 1024, float32, and torch.matmul at 4096 x 4096 x 4096, float32 with
TF32 off (cuBLAS's f32 kernels, the reference of the tiled matrix product). Each side alternated
with the copy, round by round: medians of 25 timed rounds after 5 to warm up, CUDA events.

Each timed span follows a 128 MiB device copy queued just before it, as the Rust side's
`timing::Cover`: the GPU is busy while the host dispatches the call, so the span holds the GPU's
work alone (without it, torch's dispatch, some microseconds, is timed as GPU time), and the L2
cache holds none of the operand, as on the Rust side."""
import torch

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


def bench(name, x, f, read_bytes):
    copy_into = torch.empty_like(x)
    ms, copy_ms = [], []
    for i in range(30):
        t, c = timed(f), timed(lambda: copy_into.copy_(x))
        if i >= 5:
            ms.append(t)
            copy_ms.append(c)
    ms, copy_ms = sorted(ms)[len(ms) // 2], sorted(copy_ms)[len(copy_ms) // 2]
    copy_gbs = 2 * x.numel() * 4 / copy_ms / 1e6
    gbs = read_bytes / ms / 1e6
    print(f"bench {name}: torch {ms:.4f} ms ({gbs:.0f} GB/s), device copy {copy_ms:.4f} ms ({copy_gbs:.0f} GB/s); "
          f"torch / copy bandwidth = {gbs / copy_gbs:.3f}")


x = torch.randn(8192, 8192, device="cuda", dtype=torch.float32)
bench("transpose 8192x8192 f32, x.t().contiguous()", x, lambda: x.t().contiguous(), 2 * x.numel() * 4)
for rows, cols in [(8192, 8192), (65536, 1024)]:
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    bench(f"row_sums {rows}x{cols} f32, torch.sum(x, dim=1) (read)", x, lambda: torch.sum(x, dim=1), x.numel() * 4)
    bench(f"softmax {rows}x{cols} f32, torch.softmax(x, dim=1)", x, lambda: torch.softmax(x, dim=1), 2 * x.numel() * 4)


# cuBLAS f32, TF32 off: what the Rust matmul is measured against (examples/cooperative.rs --bench).
torch.backends.cuda.matmul.allow_tf32 = False
size = 4096
a = torch.randn(size, size, device="cuda", dtype=torch.float32)
b = torch.randn(size, size, device="cuda", dtype=torch.float32)
c = torch.empty(size, size, device="cuda", dtype=torch.float32)
ms = []
for i in range(30):
    t = timed(lambda: torch.matmul(a, b, out=c))
    if i >= 5:
        ms.append(t)
ms = sorted(ms)[len(ms) // 2]
print(f"bench matmul {size}x{size}x{size} f32: torch.matmul (cuBLAS, TF32 off) {ms:.4f} ms "
      f"({2 * size ** 3 / ms / 1e9:.1f} TFLOP/s)")
