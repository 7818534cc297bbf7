"""DLPack's C exchange table against the other ways a tensor crosses, each pair timed in the same
run, alternating the two sides round by round; medians and ratios.

1. Importing a torch tensor into Rust (dlmd's consumer), nanoseconds per tensor, 1 000 tensors
   per call (no Python call per tensor): the table's owning import, its borrowed
   (allocation-free) import (alone, and asking the producer's work stream too), and `__dlpack__`
   with a capsule, and the floor under the borrowed import (the producer's own entry, called
   directly); against tvm-ffi's own
   `tvm_ffi.from_dlpack(torch tensor)`, which goes through torch's table too, timed per call, next
   to dlmd's single-tensor calls and an empty call of the same module for the floor.
2. `tvm_ffi.from_dlpack(MemArray)` (MemArray's table) against `tvm_ffi.from_dlpack(torch tensor)`
   (torch's), per call.

Runs on CUDA tensors where there is a GPU (and dlmd sees it), on CPU tensors otherwise.
Usage: python bench_exchange.py [ROUNDS]
"""

import statistics
import sys
import timeit

import torch
import tvm_ffi

import dlmd_memarray as dm

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 21


def per_call_ns(fn, number):
    return timeit.timeit(fn, number=number) / number * 1e9


def alternate(pairs, number):
    """Times every function of `pairs` once per round, in turn (in reverse order every other
    round); medians in ns per call."""
    samples = {name: [] for name, _ in pairs}
    for r in range(ROUNDS):
        for name, fn in pairs if r % 2 == 0 else reversed(pairs):
            samples[name].append(per_call_ns(fn, number))
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    cuda = torch.cuda.is_available()
    if cuda:
        try:
            dm.MemArray((1,), "float32").to_device()
        except BufferError:
            cuda = False
    device = "cuda" if cuda else "cpu"
    print(f"torch {torch.__version__}, tvm-ffi {tvm_ffi.__version__}, tensors on {device}, {ROUNDS} rounds")

    t = torch.zeros((64, 64), dtype=torch.float32, device=device)
    batch = [t] * 1000
    n = len(batch)
    assert dm.import_batch(batch, "owned") == n
    paths = [
        ("owned", lambda: dm.import_batch(batch, "owned")),
        ("borrowed", lambda: dm.import_batch(batch, "borrowed")),
        ("borrowed+stream", lambda: dm.import_batch(batch, "borrowed+stream")),
        ("borrowed+writes", lambda: dm.import_batch(batch, "borrowed+writes")),
        ("dlpack", lambda: dm.import_batch(batch, "dlpack")),
        ("table", lambda: dm.import_batch(batch, "table")),
    ]
    try:
        dm.import_batch(batch, "borrowed+writes")
    except ValueError:  # a build from before writes_refused: compared without that path
        paths = [p for p in paths if p[0] != "borrowed+writes"]
    per_tensor = alternate(paths, number=20)
    per_call = alternate(
        [
            ("tvm_ffi.from_dlpack(torch)", lambda: tvm_ffi.from_dlpack(t)),
            ("dm.import_tensor(torch)", lambda: dm.import_tensor(t)),
            ("dm.borrow_tensor(torch)", lambda: dm.borrow_tensor(t)),
            ("empty call dm.use_exchange_api(True)", lambda: dm.use_exchange_api(True)),
        ],
        number=20_000,
    )
    tvm = per_call["tvm_ffi.from_dlpack(torch)"]
    print("\n1. a torch tensor into Rust, ns per tensor (batches of 1000, no Python call each)")
    print(f"{'path':<40} {'ns':>9} {'/ tvm-ffi':>10}")
    for name, label in [
        ("borrowed", "dlmd, C table, borrowed (no allocation)"),
        ("borrowed+stream", "  the same, asking the work stream too"),
        ("borrowed+writes", "  the same, asking whether it is writable"),
        ("owned", "dlmd, C table, owning"),
        ("dlpack", "dlmd, __dlpack__ + capsule"),
        ("table", "floor: the producer's entry alone"),
    ]:
        if name in per_tensor:
            print(f"{label:<40} {per_tensor[name] / n:9.1f} {per_tensor[name] / n / tvm:10.3f}")
    print("   per Python call (each includes the call itself)")
    for name, ns in per_call.items():
        print(f"{name:<40} {ns:9.1f} {ns / tvm:10.3f}")

    m = dm.MemArray((64, 64), "float32")
    if cuda:
        m.to_device()
    pair = alternate(
        [
            ("tvm_ffi.from_dlpack(MemArray)", lambda: tvm_ffi.from_dlpack(m)),
            ("tvm_ffi.from_dlpack(torch tensor)", lambda: tvm_ffi.from_dlpack(t)),
        ],
        number=20_000,
    )
    ours, ref = pair["tvm_ffi.from_dlpack(MemArray)"], pair["tvm_ffi.from_dlpack(torch tensor)"]
    print("\n2. tvm-ffi consuming through each producer's C table, ns per call")
    print(f"{'tvm_ffi.from_dlpack(MemArray)':<40} {ours:9.1f}")
    print(f"{'tvm_ffi.from_dlpack(torch tensor)':<40} {ref:9.1f}")
    print(f"{'ratio MemArray / torch':<40} {ours / ref:9.3f}")


if __name__ == "__main__":
    main()
