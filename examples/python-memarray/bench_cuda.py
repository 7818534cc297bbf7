"""Microseconds per call of DLPack exchanges on CUDA, each next to the same exchange between the
frameworks themselves, timed in the same run, the two sides alternating round by round:

    torch.from_dlpack(MemArray)  vs  torch.from_dlpack(cupy array)
    cupy.from_dlpack(MemArray)   vs  cupy.from_dlpack(torch tensor)

Medians of the rounds (default 41) of 2 000 calls each, with the spread of the per-round ratios
(quartiles). Usage: python bench_cuda.py [ROUNDS]
"""

import statistics
import sys
import timeit

import cupy
import torch

import dlmd_memarray as dm

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 41
NUMBER = 2_000


def alternate(ours, reference):
    """Median µs per call of each side, timing one after the other in every round (which side
    goes first alternates too), and the quartiles of the per-round ratios."""
    a, b = [], []
    for r in range(ROUNDS):
        sides = [(a, ours), (b, reference)]
        for samples, fn in sides if r % 2 == 0 else reversed(sides):
            samples.append(timeit.timeit(fn, number=NUMBER) / NUMBER * 1e6)
    q1, _, q3 = statistics.quantiles([x / y for x, y in zip(a, b)], n=4)
    return statistics.median(a), statistics.median(b), f"{q1:.2f}–{q3:.2f}"


def main():
    m = dm.MemArray((64, 64), "float32")
    m.to_device()
    c = cupy.zeros((64, 64), dtype=cupy.float32)
    t = torch.zeros((64, 64), dtype=torch.float32, device="cuda")
    rows = [
        ("torch.from_dlpack(x)", *alternate(lambda: torch.from_dlpack(m), lambda: torch.from_dlpack(c)), "cupy array"),
        ("cupy.from_dlpack(x)", *alternate(lambda: cupy.from_dlpack(m), lambda: cupy.from_dlpack(t)), "torch tensor"),
    ]
    print(f"torch {torch.__version__}, cupy {cupy.__version__}, {ROUNDS} alternating rounds of {NUMBER} calls")
    print(f"{'consumer':<24} {'MemArray µs':>12} {'reference µs':>13} {'ratio':>6} {'quartiles':>10}  reference")
    for name, ours, ref, spread, what in rows:
        print(f"{name:<24} {ours:12.3f} {ref:13.3f} {ours / ref:6.2f} {spread:>10}  {what}")


if __name__ == "__main__":
    main()
