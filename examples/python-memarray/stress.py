"""The Python boundary under load, for a memory checker (scripts/valgrind-python.sh).

Each phase makes N round trips (default 100 000, `--rounds` to change): numpy produces and dlmd
consumes, dlmd produces and numpy consumes, capsules consumed, left unconsumed and consumed
twice, exceptions raised half-way through an exchange (by the producer, by the consumer after
taking the tensor), DLPack's C exchange table (MemArray's entries called as C calls them, with
good and bad arguments, and dlmd's consumer through MemArray's table and one written here),
exports released on other threads, and exports still alive when the interpreter shuts down. It asserts what it can see (values, export counts); the memory checker
reports what it cannot (leaks, invalid reads and writes, double frees).
"""

import argparse
import ctypes
import gc
import os
import sys
import threading

import numpy as np

import dlmd_memarray as dm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))
import dlpack_abi as abi  # noqa: E402


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


def exchange_table(n):
    table = abi.table_of(dm.MemArray)
    m = dm.MemArray((3, 5), "float32")
    m.add_index()
    obj = ctypes.c_void_p(id(m))
    out, back, stream = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    lent = abi.DLTensor()
    errors = []
    set_error = abi.SET_ERROR(lambda ctx, kind, message: errors.append(kind))
    shape = (ctypes.c_int64 * 2)(4, 2)
    prototype = abi.DLTensor(None, abi.DLDevice(1, 0), 2, abi.DLDataType(1, 16, 1), shape, None, 0)
    bad_prototype = abi.DLTensor(None, abi.DLDevice(1, 0), 2, abi.DLDataType(1, 16, 1), None, None, 0)
    data = np.arange(6.0)

    def from_py(_, out):
        out[0] = abi.numpy_managed(data)
        return 0

    python_table = abi.ExchangeAPI()
    python_table.header.major = 1
    python_table.managed_tensor_from_py_object_no_sync = abi.FROM_PY(from_py)
    python_table.current_work_stream = abi.WORK_STREAM(lambda t, i, out: 0)
    Producer = type(
        "Producer",
        (),
        {"__dlpack_c_exchange_api__": abi.capsule_new(ctypes.addressof(python_table), b"dlpack_exchange_api", None)},
    )
    producer = Producer()
    # Bad tables on the consumer's side: a capsule of another name, NULL, a version 2 table.
    newer = abi.ExchangeAPI()
    newer.header.major = 2
    bad = [
        type("WrongName", (), {"__dlpack_c_exchange_api__": abi.capsule_new(ctypes.addressof(python_table), b"x", None)}),
        type("Null", (), {"__c_dlpack_exchange_api__": 0}),
        type("Newer", (), {"__dlpack_c_exchange_api__": abi.capsule_new(ctypes.addressof(newer), b"dlpack_exchange_api", None)}),
    ]
    for i in range(n // 4):
        assert table.managed_tensor_from_py_object_no_sync(obj, ctypes.byref(out)) == 0
        if i % 2:
            abi.release(out.value)
        else:
            assert table.managed_tensor_to_py_object_no_sync(out, ctypes.byref(back)) == 0
            assert abi.take_object(back.value).shape == [3, 5]
        assert table.dltensor_from_py_object_no_sync(obj, ctypes.byref(lent)) == 0
        assert table.current_work_stream(2, 0, ctypes.byref(stream)) == 0
        assert table.managed_tensor_allocator(ctypes.byref(prototype), ctypes.byref(out), None, set_error) == 0
        abi.release(out.value)
        assert table.managed_tensor_allocator(ctypes.byref(bad_prototype), ctypes.byref(out), None, set_error) == -1
        expect(TypeError, table.managed_tensor_from_py_object_no_sync, ctypes.c_void_p(id(data)), ctypes.byref(out))
        expect(ValueError, table.managed_tensor_to_py_object_no_sync, None, ctypes.byref(back))
        assert dm.import_tensor(m) == 2 and dm.borrow_tensor(m) == 2
        assert dm.import_tensor(producer) == 1
        for cls, error in zip(bad, (TypeError, ValueError, BufferError)):
            expect(error, dm.import_tensor, cls())
    assert len(errors) == n // 4
    assert m.exports == 0


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
    for phase in (numpy_to_dlmd, dlmd_to_numpy, capsules, exceptions, exchange_table, threads):
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
