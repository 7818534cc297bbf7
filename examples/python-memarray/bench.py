"""Microseconds per call of the DLPack paths of MemArray, each next to numpy's own in the same run.

    producer:  MemArray.__dlpack__()            vs  ndarray.__dlpack__()
    consumer:  np.from_dlpack(MemArray)         vs  np.from_dlpack(ndarray)
    into Rust: dlmd_memarray.import_tensor(nd)  vs  np.from_dlpack(ndarray)

Medians of 15 repeats of 20 000 calls. Run: python bench.py (after installing the module).
"""

import statistics
import sys
import timeit

import numpy as np

import dlmd_memarray as dm


def median_us(stmt, number=20_000, repeat=15):
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main():
    m = dm.MemArray((64, 64), "float32")
    a = np.zeros((64, 64), dtype=np.float32)
    rows = [
        ("producer  __dlpack__()", median_us(lambda: m.__dlpack__()), median_us(lambda: a.__dlpack__())),
        (
            "producer  __dlpack__(max_version=(1, 3))",
            median_us(lambda: m.__dlpack__(max_version=(1, 3))),
            median_us(lambda: a.__dlpack__(max_version=(1, 3))),
        ),
        ("consumer  np.from_dlpack(x)", median_us(lambda: np.from_dlpack(m)), median_us(lambda: np.from_dlpack(a))),
        ("into Rust import_tensor(ndarray)", median_us(lambda: dm.import_tensor(a)), median_us(lambda: np.from_dlpack(a))),
    ]
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    print(f"{'path':<42} {'dlmd µs':>9} {'numpy µs':>9} {'ratio':>6}")
    for name, ours, theirs in rows:
        print(f"{name:<42} {ours:9.3f} {theirs:9.3f} {ours / theirs:6.2f}")


if __name__ == "__main__":
    main()
