"""torch.sum(x, dim=1) of an 8192 x 8192 float32 CUDA tensor: the reference of the Rust row_sums
kernel (examples/rust_kernels.rs --bench-row-sums), alternated with it by scripts/gpu-run.sh.
Median of 25 timed calls (after 5 to warm up), CUDA events; the output is allocated by each
call, as torch does. Each call follows a 128 MiB device copy queued just before its span (the
Rust side's `timing::Cover`): torch's dispatch happens while the GPU copies, so the span holds
the GPU's work alone, with none of `x` left in L2 by the call before."""
import torch

rows, cols = 8192, 8192
x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
cover_from = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
cover_to = torch.empty_like(cover_from)
times = []
for i in range(30):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cover_to.copy_(cover_from)
    start.record()
    torch.sum(x, dim=1)
    end.record()
    end.synchronize()
    if i >= 5:
        times.append(start.elapsed_time(end))
times.sort()
ms = times[len(times) // 2]
print(f"bench row_sums {rows}x{cols} f32: torch.sum(x, dim=1) {ms:.4f} ms ({rows * cols * 4 / ms / 1e6:.0f} GB/s read)")
