"""PyTorch's 1 GiB host/device copies, for comparison with `examples/mirrored.rs --bench` in the
same run: pinned `tensor.to('cuda', non_blocking=True)`, pinned `copy_` back, pageable `.to('cuda')`
and `.cpu()`. Medians of 10 timed runs after 2 warm-ups, wall clock with synchronisation, as the
Rust side measures. Prints `torch <case> <GiB/s>` lines.
"""

import statistics
import time

import torch


def rate(fn, runs=12, warm=2):
    gib = (1 << 28) * 4 / (1 << 30)
    out = []
    for i in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if i >= warm:
            out.append(gib / (time.perf_counter() - t))
    return statistics.median(out)


def main():
    n = 1 << 28
    pinned = torch.ones(n, dtype=torch.float32).pin_memory()
    pageable = torch.ones(n, dtype=torch.float32)
    device = torch.ones(n, dtype=torch.float32, device="cuda")
    pinned_out = torch.empty(n, dtype=torch.float32).pin_memory()
    print(f"torch h2d_pinned {rate(lambda: pinned.to('cuda', non_blocking=True)):.2f} GiB/s")
    print(f"torch d2h_pinned {rate(lambda: pinned_out.copy_(device, non_blocking=True)):.2f} GiB/s")
    print(f"torch h2d_pageable {rate(lambda: pageable.to('cuda')):.2f} GiB/s")
    print(f"torch d2h_pageable {rate(lambda: device.cpu()):.2f} GiB/s")


if __name__ == "__main__":
    main()
