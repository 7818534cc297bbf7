"""Microseconds per call of the DLPack paths of MemArray, each next to numpy's own in the same run.

    producer:  MemArray.__dlpack__()            vs  ndarray.__dlpack__()
    consumer:  np.from_dlpack(MemArray)         vs  np.from_dlpack(ndarray)
    into Rust: dlmd_memarray.import_tensor(nd)  vs  np.from_dlpack(ndarray)

Each pair is timed in alternation, 21 runs of 20 000 calls each; the ratio is the median of
the 21 ratios. Run: python bench.py (after installing the module).
"""

import statistics
import sys
import timeit

import numpy as np

import dlmd_memarray as dm


def pair_us(ours, theirs, number=20_000, repeat=21):
    """Medians, in µs per call, of `ours` and `theirs` timed in alternation, and the median of
    the ratios of each pair of runs (robust to the machine's speed drifting during the run)."""
    a, b = [], []
    for _ in range(repeat):
        a.append(timeit.timeit(ours, number=number) / number * 1e6)
        b.append(timeit.timeit(theirs, number=number) / number * 1e6)
    ratio = statistics.median(x / y for x, y in zip(a, b))
    return statistics.median(a), statistics.median(b), ratio


def main():
    m = dm.MemArray((64, 64), "float32")
    a = np.zeros((64, 64), dtype=np.float32)
    rows = [
        ("producer  __dlpack__()", pair_us(lambda: m.__dlpack__(), lambda: a.__dlpack__())),
        (
            "producer  __dlpack__(max_version=(1, 3))",
            pair_us(lambda: m.__dlpack__(max_version=(1, 3)), lambda: a.__dlpack__(max_version=(1, 3))),
        ),
        ("consumer  np.from_dlpack(x)", pair_us(lambda: np.from_dlpack(m), lambda: np.from_dlpack(a))),
        ("into Rust import_tensor(ndarray)", pair_us(lambda: dm.import_tensor(a), lambda: np.from_dlpack(a))),
    ]
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    print(f"{'path':<42} {'dlmd µs':>9} {'numpy µs':>9} {'ratio':>6}")
    for name, (ours, theirs, ratio) in rows:
        print(f"{name:<42} {ours:9.3f} {theirs:9.3f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
