"""add_index for JAX, inside jax.jit, against references timed in the same run, the sides
alternating round by round (medians of the rounds, quartiles of the per-round ratios):

1. Per-call latency on a 1,024-element float32 CUDA array: the jitted `add_index` (a custom
   call whose handler is Rust, launching the Rust kernel on XLA's stream) against the same
   jitted function with `x + 1` in its place. Both donate their argument (`x = f(x)`, in place
   for the custom call); a round is 2,000 calls and one wait. The same without donation, where
   XLA copies the argument before the in-place call.
2. A 1 GiB float32 array: time per call of each (20 calls and one wait), against a device copy
   of the array (a jitted `jnp.copy`, as many bytes read and written).
3. Host waits on the path: cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize and their
   runtime twins, counted by CUPTI (count_syncs.c, as bench_kernels.py builds it) over 10,000
   jitted calls, on the calling thread and, apart, on every other thread.
4. The driver calls of a jitted call, each side's: how many of each, and the mean time of each
   (CUPTI, driver_calls.c), over 10,000 donated calls on 1,024 elements. What the custom call
   adds to XLA's own launch is the rows only its side has.

Usage: python bench_jax.py [ROUNDS]
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import dlmd_memarray as dm
from bench_kernels import cupti_counter, cupti_library, rounds

def report(title, samples, reference, unit, scale):
    print(f"\n{title}")
    ref = samples[reference]
    for name, values in samples.items():
        ratios = sorted(v / r for v, r in zip(values, ref))
        q = statistics.quantiles(ratios, n=4)
        print(f"  {name:44s} {statistics.median(values) * scale:9.2f} {unit}"
              f"   ratio {statistics.median(ratios):.3f} [{q[0]:.3f}, {q[2]:.3f}]")


def main():
    gpu = jax.devices("cuda")[0]
    add_index = dm.jax_add_index()
    number = 2_000
    print(f"jax {jax.__version__}, {gpu.device_kind}")

    def per_call(donated, n):
        def run(f):
            x = jax.device_put(jnp.zeros(n, jnp.float32), gpu)
            x = f(x)
            x.block_until_ready()
            start = time.perf_counter()
            for _ in range(number):
                x = f(x)
            x.block_until_ready()
            return (time.perf_counter() - start) / number
        return run

    # The handler's checks without its launch: XLA's custom call and dlmd's frame, apart.
    jax.ffi.register_ffi_target("dlmd_bench_checks", dm.xla_checks_only(), platform="CUDA", api_version=1)
    checks = jax.ffi.ffi_call("dlmd_bench_checks", jax.ShapeDtypeStruct((1024,), jnp.float32),
                              input_output_aliases={0: 0})
    sides = {
        "jit(add_index), donated": jax.jit(add_index, donate_argnums=0),
        "jit(x + 1), donated": jax.jit(lambda x: x + 1, donate_argnums=0),
        "the handler's checks, no launch, donated": jax.jit(lambda x: checks(x, batch_dims=np.int64(0)),
                                                            donate_argnums=0),
    }
    report("1,024 float32, per call (donated)", rounds(sides, per_call(True, 1024)), "jit(x + 1), donated", "us", 1e6)
    # The call's steps, each side one more than the last (examples/python-memarray/src/jax.rs,
    # `Steps`): what each costs is the difference of two rows.
    jax.ffi.register_ffi_target("dlmd_bench_steps", dm.xla_steps(), platform="CUDA", api_version=1)
    steps = jax.ffi.ffi_call("dlmd_bench_steps", jax.ShapeDtypeStruct((1024,), jnp.float32),
                             input_output_aliases={0: 0})
    names = ["0: the call's checks", "1: + the imports", "2: + the kernel argument", "3: + the launch, not run",
             "4: + the kernel launched"]
    sides = {"jit(x + 1), donated": jax.jit(lambda x: x + 1, donate_argnums=0)}
    for i, name in enumerate(names):
        sides[name] = jax.jit(lambda x, i=i: steps(x, steps=np.int64(i)), donate_argnums=0)
    report("1,024 float32, the steps of a call (donated)", rounds(sides, per_call(True, 1024)),
           "jit(x + 1), donated", "us", 1e6)
    # The handler's own host time, by step (timed inside it): where a step's row grows by more
    # than its handler does, the time is XLA's or the device's, not the handler's.
    print("  the handler's own host time, µs a call: "
          + ", ".join(f"{i}: {t:.2f}" for i, t in enumerate(dm.xla_steps_host_us())))
    sides = {
        "jit(add_index)": jax.jit(add_index),
        "jit(x + 1)": jax.jit(lambda x: x + 1),
    }
    report("1,024 float32, per call (not donated)", rounds(sides, per_call(False, 1024)), "jit(x + 1)", "us", 1e6)

    n = (1 << 30) // 4
    big = jax.device_put(jnp.zeros(n, jnp.float32), gpu)
    compiled = jax.jit(add_index, donate_argnums=0).lower(big).compile().as_text()
    print("\n1 GiB, the compiled program (donated):")
    print("\n".join("  " + line for line in compiled.splitlines() if "ENTRY" in line or " = " in line))
    copy = jax.jit(lambda x: jnp.copy(x))

    def bulk(f):
        """Time per call of `f` on the 1 GiB array: in place (the array replaced) but for the copy."""
        nonlocal big

        def step():
            nonlocal big
            out = f(big)
            if f is not copy:
                big = out
            return out

        step().block_until_ready()
        start = time.perf_counter()
        for _ in range(20):
            out = step()
        out.block_until_ready()
        return (time.perf_counter() - start) / 20

    sides = {
        "device copy (jit(jnp.copy))": copy,
        "jit(add_index), donated": jax.jit(add_index, donate_argnums=0),
        "jit(x + 1), donated": jax.jit(lambda x: x + 1, donate_argnums=0),
    }
    samples = rounds(sides, bulk)
    report("1 GiB float32, per call", samples, "device copy (jit(jnp.copy))", "ms", 1e3)
    for name, values in samples.items():
        print(f"  {name:44s} {2 * (1 << 30) / statistics.median(values) / 1e9:9.1f} GB/s (read + write)")
    del big

    lib, where = cupti_counter()
    if lib is None:
        print(f"\nhost waits: not counted: {where}")
        return
    import ctypes
    names = "cuStreamSynchronize cuCtxSynchronize cuEventSynchronize cudaStreamSynchronize " \
            "cudaDeviceSynchronize cudaEventSynchronize".split()
    print("\nhost waits over 10,000 jitted calls (the calling thread; other threads, XLA's among them):")
    for name, f in [("jit(add_index), donated", jax.jit(add_index, donate_argnums=0)),
                    ("jit(x + 1), donated (reference)", jax.jit(lambda x: x + 1, donate_argnums=0))]:
        x = f(jax.device_put(jnp.zeros(1024, jnp.float32), gpu))
        x.block_until_ready()
        if lib.dlmd_count_start() != 0:
            print("  CUPTI refused the subscriber")
            return
        for _ in range(10_000):
            x = f(x)
        counts = (ctypes.c_longlong * 6)()
        others = (ctypes.c_longlong * 6)()
        lib.dlmd_count_stop(counts, others)
        x.block_until_ready()
        print(f"  {name}: {sum(counts)} {dict(zip(names, counts))}; other threads {sum(others)} {dict(zip(names, others))}")
    driver_calls(gpu, add_index)
    # 10,001 calls of add_index on zeros: element i is 10,001 · i.
    last = np.asarray(jax.jit(add_index, donate_argnums=0)(jax.device_put(jnp.zeros(4, jnp.float32), gpu)))
    assert list(last) == [0, 1, 2, 3], last


def driver_calls(gpu, add_index):
    """Section 4: the driver calls of each side's jitted call, counted and timed by CUPTI."""
    import ctypes
    lib, where = cupti_library("driver_calls.c")
    if lib is None:
        print(f"\ndriver calls: not counted: {where}")
        return
    calls = 10_000
    print(f"\ndriver calls a jitted call makes, over {calls:,} donated calls (CUPTI lengthens each; "
          "the times compare with each other):")
    for name, f in [("jit(add_index)", jax.jit(add_index, donate_argnums=0)),
                    ("jit(x + 1) (reference)", jax.jit(lambda x: x + 1, donate_argnums=0))]:
        x = jax.device_put(jnp.zeros(1024, jnp.float32), gpu)
        for _ in range(1_000):
            x = f(x)
        x.block_until_ready()
        if lib.dlmd_calls_start() != 0:
            print("  CUPTI refused the subscriber")
            return
        for _ in range(calls):
            x = f(x)
        x.block_until_ready()
        out = ctypes.create_string_buffer(1 << 16)
        lib.dlmd_calls_stop(out, len(out))
        rows = []
        for line in out.value.decode().splitlines():
            thread, api, count, ns = line.split()
            rows.append((int(ns) / calls, thread, api, int(count) / calls, int(ns) / int(count)))
        print(f"  {name}:")
        for per_call, thread, api, count, each in sorted(rows, reverse=True):
            if count >= 0.01:
                print(f"    {api:28s} {thread:6s} {count:6.2f} a call {each / 1e3:7.2f} us each")


if __name__ == "__main__":
    main()
