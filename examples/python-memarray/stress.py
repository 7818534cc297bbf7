"""The Python boundary under load, for a memory checker (scripts/valgrind-python.sh).

Each phase makes N round trips (default 100 000, `--rounds` to change): numpy produces and dlmd
consumes, dlmd produces and numpy consumes, capsules consumed, left unconsumed and consumed
twice, exceptions raised half-way through an exchange (by the producer, by the consumer after
taking the tensor), exports released on other threads, and exports still alive when the
interpreter shuts down. It asserts what it can see (values, export counts); the memory checker
reports what it cannot (leaks, invalid reads and writes, double frees).
"""

import argparse
import gc
import threading

import numpy as np

import dlmd_memarray as dm


class SameCapsule:
    """A producer that hands out one capsule twice."""

    def __init__(self, array):
        self.capsule = array.__dlpack__(max_version=(1, 3))
        self.device = array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class Failing:
    """A producer whose `__dlpack__` raises."""

    def __dlpack__(self, **kwargs):
        raise RuntimeError("producer failed")

    def __dlpack_device__(self):
        return (1, 0)


def expect(error, f, *args):
    try:
        f(*args)
    except error:
        return
    raise AssertionError(f"{f.__name__} did not raise {error.__name__}")


def numpy_to_dlmd(n):
    a = np.arange(64, dtype=np.float32)
    for _ in range(n):
        assert dm.import_tensor(a) == 1
    m = dm.MemArray.from_dlpack(a)
    np.testing.assert_array_equal(np.from_dlpack(m), a)


def dlmd_to_numpy(n):
    m = dm.MemArray((8, 8), "float64")
    m.add_index()
    for _ in range(n):
        v = np.from_dlpack(m)
        assert v[7, 7] == 14.0
    del v
    assert m.exports == 0


def capsules(n):
    m = dm.MemArray((16,), "int32")
    a = np.arange(16, dtype=np.int32)
    for i in range(n):
        m.__dlpack__(max_version=(1, 3))  # unconsumed, versioned
        m.__dlpack__()  # unconsumed, legacy
        if i % 4 == 0:
            producer = SameCapsule(a)
            dm.import_tensor(producer)  # consumed
            expect(ValueError, dm.import_tensor, producer)  # consumed twice
    assert m.exports == 0


def exceptions(n):
    read_only = np.arange(8.0)
    read_only.flags.writeable = False
    failing = Failing()
    for _ in range(n // 4):
        expect(BufferError, dm.add_index, read_only)  # tensor taken, then refused
        expect(RuntimeError, dm.import_tensor, failing)  # the producer raises
        expect(BufferError, dm.MemArray.from_dlpack, np.array(["strings"]))  # numpy refuses
        expect(TypeError, dm.MemArray, (2,), "object")


def threads(n):
    m = dm.MemArray((32,), "uint8")
    held = [np.from_dlpack(m) for _ in range(min(n, 1000))]

    def release(views):
        views.clear()
        gc.collect()

    t = threading.Thread(target=release, args=(held,))
    t.start()
    t.join()
    assert m.exports == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100_000)
    n = parser.parse_args().rounds
    for phase in (numpy_to_dlmd, dlmd_to_numpy, capsules, exceptions, threads):
        phase(n)
        gc.collect()
        print(f"{phase.__name__}: {n} rounds")
    # Exports alive at shutdown: numpy views of a MemArray, an unconsumed capsule, an import.
    global LIVE
    m = dm.MemArray((4,), "float32")
    LIVE = (np.from_dlpack(m), m.__dlpack__(max_version=(1, 3)), dm.MemArray.from_dlpack(np.ones(3)))
    print("shutdown with live exports")


if __name__ == "__main__":
    main()
