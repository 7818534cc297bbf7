"""add_index's Rust kernel on torch tensors against references timed in the same run, the sides
alternating round by round (medians of the rounds, quartiles of the per-round ratios):

1. Per-call latency from Python on a 1,024-element float32 CUDA tensor: `dm.add_index(x)` and
   the torch operator `torch.ops.dlmd.add_index(x)`, against torch's own `x.add_(1)` and, where
   triton is installed, a Triton kernel doing `x += 1`. A round is 2,000 calls and one
   synchronisation.
2. A 1 GiB float32 tensor through `add_index`: device time (CUDA events around 5 calls) against
   a device copy of the same tensor (`y.copy_(x)`, as many bytes read and written) and the same
   kernel in CUDA C++ (`add_index_cxx`, which waits after each call).
3. Host waits on the path: every cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize and
   their runtime twins, counted by a CUPTI callback subscriber (count_syncs.c, built here with
   the CUDA toolkit's CUPTI) over 10,000 calls of each Rust-kernel path, on the calling thread
   (what must be 0) and, apart, on other threads (dlmd's releasing thread waits for kernels to
   end, off the launch path). One torch.cuda.synchronize() inside its own window shows the
   counter counts.

Usage: python bench_kernels.py [ROUNDS]
"""

import ctypes
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import dlmd_memarray as dm

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 21
NUMBER = 2_000


def rounds(sides, run):
    """Each side's samples from `run(fn)`, the order of the sides rotating round by round."""
    samples = {name: [] for name in sides}
    names = list(sides)
    for r in range(ROUNDS):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            samples[name].append(run(sides[name]))
    return samples


def per_call_us(fn, number=NUMBER):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / number * 1e6


def device_ms(fn, reps=5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def quartiles(a, b):
    q1, _, q3 = statistics.quantiles([x / y for x, y in zip(a, b)], n=4)
    return f"{q1:.3f}–{q3:.3f}"


def triton_add_one():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

    def run(x):
        add_one[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)

    return run


def latency():
    x = torch.zeros(1024, device="cuda")
    op = dm.torch_op()
    sides = {
        "dm.add_index(x)": lambda: dm.add_index(x),
        "torch.ops.dlmd.add_index(x)": lambda: op(x),
        "x.add_(1) (torch)": lambda: x.add_(1),
    }
    triton = triton_add_one()
    if triton is not None:
        sides["Triton x += 1"] = lambda: triton(x)
    for fn in sides.values():  # compile and load everything before timing
        fn()
    samples = rounds(sides, per_call_us)
    torch_us = samples["x.add_(1) (torch)"]
    print(f"per-call latency, 1,024 float32 elements, {ROUNDS} rounds of {NUMBER} calls:")
    print(f"  {'path':<30} {'µs/call':>8} {'vs torch':>9} {'quartiles':>12}")
    for name, s in samples.items():
        print(f"  {name:<30} {statistics.median(s):8.3f} {statistics.median(s) / statistics.median(torch_us):9.3f} "
              f"{quartiles(s, torch_us):>12}")
    if triton is not None:
        t = statistics.median(samples["Triton x += 1"])
        print(f"  dm.add_index / Triton: {statistics.median(samples['dm.add_index(x)']) / t:.3f}, "
              f"torch operator / Triton: {statistics.median(samples['torch.ops.dlmd.add_index(x)']) / t:.3f}")
    else:
        print("  Triton: not installed here")


def bandwidth():
    n = (1 << 30) // 4
    x = torch.zeros(n, device="cuda")
    y = torch.empty_like(x)
    sides = {
        "Rust add_index": lambda: dm.add_index(x),
        "device copy (torch)": lambda: y.copy_(x),
        "C++ add_index (NVRTC)": lambda: dm.add_index_cxx(x),
    }
    for fn in sides.values():
        fn()
    samples = rounds(sides, device_ms)
    copy = samples["device copy (torch)"]
    print(f"1 GiB float32 tensor, {ROUNDS} rounds of 5 calls timed with CUDA events:")
    print(f"  {'path':<24} {'ms':>8} {'GB/s':>8} {'vs copy':>8} {'quartiles':>12}")
    for name, s in samples.items():
        ms = statistics.median(s)
        print(f"  {name:<24} {ms:8.3f} {2 * (1 << 30) / ms / 1e6:8.1f} {statistics.median(copy) / ms:8.3f} "
              f"{quartiles(copy, s):>12}")


def cupti_library(source):
    """A library built from `source` (a file beside this one) against this machine's CUPTI, and
    the CUPTI it links; or None and why not."""
    roots = ["/usr/local/cuda/extras/CUPTI", "/usr/local/cuda"]
    roots += glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*"))
    for root in roots:
        headers = glob.glob(os.path.join(root, "include", "cupti.h"))
        libs = glob.glob(os.path.join(root, "lib64", "libcupti.so*")) + glob.glob(os.path.join(root, "lib", "libcupti.so*"))
        if headers and libs:
            break
    else:
        return None, "no CUPTI (cupti.h and libcupti.so) found"
    name = os.path.splitext(source)[0]
    out = os.path.join(tempfile.mkdtemp(), f"lib{name}.so")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), source)
    command = ["gcc", "-shared", "-fPIC", "-O2", f"-I{os.path.dirname(headers[0])}", "-I/usr/local/cuda/include",
               path, "-o", out, libs[0], f"-Wl,-rpath,{os.path.dirname(libs[0])}"]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        return None, f"{source} did not build: {built.stderr.strip()}"
    return ctypes.CDLL(out), libs[0]


def cupti_counter():
    """The counting library, built from count_syncs.c against this machine's CUPTI."""
    lib, where = cupti_library("count_syncs.c")
    if lib is not None:
        lib.dlmd_count_stop.argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_longlong)]
    return lib, where


def counted(lib, fn, calls):
    status = lib.dlmd_count_start()
    if status != 0:
        raise RuntimeError(f"CUPTI subscription failed: status {status}")
    for _ in range(calls):
        fn()
    counts, others = (ctypes.c_longlong * 6)(), (ctypes.c_longlong * 6)()
    lib.dlmd_count_stop(counts, others)
    torch.cuda.synchronize()
    return list(counts), list(others)


def host_waits():
    lib, where = cupti_counter()
    if lib is None:
        print(f"host waits: not counted: {where}")
        return False
    x = torch.zeros(1024, device="cuda")
    op = dm.torch_op()
    names = "cuStreamSynchronize cuCtxSynchronize cuEventSynchronize cudaStreamSynchronize cudaDeviceSynchronize " \
            "cudaEventSynchronize".split()
    print(f"host waits, counted by CUPTI callbacks ({where}):")
    control, _ = counted(lib, torch.cuda.synchronize, 1)
    print(f"  control: torch.cuda.synchronize() once: {dict(zip(names, control))}")
    ok = sum(control) > 0
    for name, fn in [("dm.add_index(x), table path", lambda: dm.add_index(x)),
                     ("torch.ops.dlmd.add_index(x)", lambda: op(x))]:
        fn()
        counts, others = counted(lib, fn, 10_000)
        print(f"  {name}, 10,000 calls: {sum(counts)} waits {dict(zip(names, counts))}; "
              f"other threads: {sum(others)}")
        ok = ok and sum(counts) == 0
    before = dm.use_exchange_api(False)
    try:
        dm.add_index(x)
        counts, others = counted(lib, lambda: dm.add_index(x), 10_000)
        print(f"  dm.add_index(x), __dlpack__ path, 10,000 calls: {sum(counts)} waits {dict(zip(names, counts))}; "
              f"other threads: {sum(others)}")
    finally:
        dm.use_exchange_api(before)
    return ok


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    latency()
    bandwidth()
    sys.exit(0 if host_waits() else 1)


if __name__ == "__main__":
    main()
