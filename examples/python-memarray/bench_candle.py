"""torch → candle on CUDA through dlmd, each side timed against a reference in the same run,
alternating round by round; medians and ratios.

1. Per-tensor cost, nanoseconds per tensor, 1 000 tensors per call (no Python call per tensor):
   - dlmd's own owning import of a torch tensor (the reference);
   - a candle tensor coming back into candle (zero-copy: `candle_import` of a CandleTensor),
     taken as it is, and through DLPack (`__dlpack__`, the capsule, dlmd's import, which
     recognises its own export);
   - a torch tensor into candle (one device copy into candle's own allocation: candle frees its
     memory itself and cannot hold torch's), 64×64 f32.
2. A 256 MiB torch tensor into candle (a new candle allocation and one device copy, finished
   when the import returns) against torch's own device copy of the same bytes (`y.copy_(x)`, and
   into a new tensor, `torch.empty_like(x).copy_(x)`, whose memory torch's caching allocator
   keeps), synchronised the same way.

Usage: python bench_candle.py [ROUNDS]
"""

import statistics
import sys
import time

import torch

import dlmd_memarray as dm

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15


def per_call_s(fn, number):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / number


def alternate(pairs, number):
    samples = {name: [] for name, _ in pairs}
    for r in range(ROUNDS):
        for name, fn in pairs if r % 2 == 0 else reversed(pairs):
            samples[name].append(per_call_s(fn, number))
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    if not torch.cuda.is_available():
        sys.exit("bench_candle.py needs a CUDA device")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {ROUNDS} rounds")

    small = torch.ones((64, 64), device="cuda")
    candle = dm.candle_import(small)
    assert torch.equal(torch.from_dlpack(candle), small)
    n = 1000
    torch_batch, candle_batch = [small] * n, [candle] * n
    small_copies = [torch.ones((64, 64), device="cuda") for _ in range(n)]
    per_tensor = alternate(
        [
            ("owned", lambda: dm.import_batch(torch_batch, "owned")),
            ("candle", lambda: dm.candle_import_batch(candle_batch, "candle")),
            ("candle-dlpack", lambda: dm.candle_import_batch(candle_batch, "dlpack")),
            ("torch-copy", lambda: dm.candle_import_batch(small_copies, "candle")),
        ],
        number=3,
    )
    owned = per_tensor["owned"] / n * 1e9
    print("\n1. into candle on CUDA, ns per tensor (batches of 1000, no Python call each)")
    print(f"{'path':<58} {'ns':>10} {'/ owned':>9}")
    for name, label in [
        ("owned", "reference: dlmd's owning import of a torch tensor"),
        ("candle", "candle tensor back into candle (zero-copy)"),
        ("candle-dlpack", "  the same through DLPack (__dlpack__ + capsule)"),
        ("torch-copy", "torch tensor 64x64 f32 into candle (one device copy)"),
    ]:
        ns = per_tensor[name] / n * 1e9
        print(f"{label:<58} {ns:10.1f} {ns / owned:9.3f}")

    big = torch.randn(64 * 1024 * 1024, device="cuda")  # 256 MiB
    out = torch.empty_like(big)
    imported = dm.candle_import(big)
    assert torch.equal(torch.from_dlpack(imported), big)
    del imported
    bw = alternate(
        [
            ("candle", lambda: dm.candle_import(big)),
            ("torch", lambda: out.copy_(big)),
            ("torch-new", lambda: torch.empty_like(big).copy_(big)),
        ],
        number=5,
    )
    bytes_moved = 2 * big.numel() * big.element_size()
    print("\n2. a 256 MiB f32 torch tensor into candle against torch's device copy")
    for name, label in [
        ("candle", "torch -> candle (new allocation + copy)"),
        ("torch", "torch y.copy_(x)"),
        ("torch-new", "torch empty_like(x).copy_(x)"),
    ]:
        s = bw[name]
        print(f"{label:<40} {s * 1e3:8.3f} ms {bytes_moved / s / 1e9:8.0f} GB/s")
    print(f"{'candle bandwidth / torch copy bandwidth':<40} {bw['torch'] / bw['candle']:8.3f}")


if __name__ == "__main__":
    main()
