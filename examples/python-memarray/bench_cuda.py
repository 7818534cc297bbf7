"""Microseconds per call of DLPack exchanges on CUDA, each next to the same exchange between the
frameworks themselves, in the same run:

    torch.from_dlpack(MemArray)  vs  torch.from_dlpack(cupy array)
    cupy.from_dlpack(MemArray)   vs  cupy.from_dlpack(torch tensor)

Medians of 15 repeats of 5 000 calls.
"""

import statistics
import timeit

import cupy
import torch

import dlmd_memarray as dm


def median_us(fn, number=5_000, repeat=15):
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    m = dm.MemArray((64, 64), "float32")
    m.to_device()
    c = cupy.zeros((64, 64), dtype=cupy.float32)
    t = torch.zeros((64, 64), dtype=torch.float32, device="cuda")
    rows = [
        ("torch.from_dlpack(x)", median_us(lambda: torch.from_dlpack(m)), median_us(lambda: torch.from_dlpack(c)), "cupy array"),
        ("cupy.from_dlpack(x)", median_us(lambda: cupy.from_dlpack(m)), median_us(lambda: cupy.from_dlpack(t)), "torch tensor"),
    ]
    print(f"torch {torch.__version__}, cupy {cupy.__version__}")
    print(f"{'consumer':<24} {'MemArray µs':>12} {'reference µs':>13} {'ratio':>6}  reference")
    for name, ours, ref, what in rows:
        print(f"{name:<24} {ours:12.3f} {ref:13.3f} {ours / ref:6.2f}  {what}")


if __name__ == "__main__":
    main()
