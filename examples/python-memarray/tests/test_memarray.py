"""dlmd's MemArray against numpy, a DLPack implementation no one here wrote.

Each test exchanges data both ways through DLPack and checks values, sharing (writes seen on
the other side), lifetimes, and that malformed producers raise Python exceptions, never crash.
"""

import ctypes
import gc
import inspect
import os

import numpy as np
import pytest

import dlmd_memarray as dm
from dlpack_abi import DLDataType, DLDevice, DLTensor

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]
SHAPES = [(), (5,), (2, 3), (2, 3, 4), (2, 1, 3, 2)]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.integers(0, 2, size=shape).astype(bool))
    values = rng.integers(0, 100, size=shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.integers(0, 100, size=shape)
    # Rank 0 arithmetic gives numpy scalars, which are not arrays.
    return np.asarray(values).astype(dtype)


def index_sum(shape):
    if shape == ():
        return np.array(0)
    return np.indices(shape).sum(axis=0)


def expected_after_add_index(a):
    sums = index_sum(a.shape)
    if a.dtype == bool:
        return a | (sums != 0)
    if a.dtype.kind == "c":
        return a + sums.astype(a.real.dtype)
    return (a + sums.astype(a.dtype)).astype(a.dtype)


# ---------------------------------------------------------------------------- both directions


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_numpy_to_memarray_and_back(dtype, shape):
    a = sample(shape, dtype)
    m = dm.MemArray.from_dlpack(a)
    assert m.shape == list(shape)
    assert m.dtype == dtype
    back = np.from_dlpack(m)
    assert back.dtype == a.dtype
    assert back.shape == a.shape
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_memarray_zeros_and_add_index(dtype):
    m = dm.MemArray((2, 3, 4), dtype)
    m.add_index()
    got = np.from_dlpack(m)
    np.testing.assert_array_equal(got, expected_after_add_index(np.zeros((2, 3, 4), dtype)))


def test_dtype_objects_are_accepted():
    assert dm.MemArray((2,), np.float32).dtype == "float32"
    assert dm.MemArray((2,), np.dtype("int16")).dtype == "int16"
    with pytest.raises(TypeError):
        dm.MemArray((2,), "float128")
    assert dm.dlpack_dtype("complex64") == (5, 64, 1)
    assert dm.dlpack_dtype("bool") == (6, 8, 1)


# ------------------------------------------------------------------------ numpy's layouts


def layouts():
    base = np.arange(6 * 8, dtype=np.int32).reshape(6, 8)
    return {
        "c_order": base.copy(),
        "fortran_order": np.asfortranarray(base),
        "stepped": base[::2, 1::3],
        "transposed": base.T,
        "negative_rows": base[::-1],
        "negative_both": base[::-2, ::-3],
        "zero_size": base[:0],
        "zero_size_columns": base[:, 3:3],
        "rank0": np.array(7, dtype=np.int32),
        "rank4": np.arange(2 * 3 * 2 * 2, dtype=np.int32).reshape(2, 3, 2, 2).transpose(3, 1, 0, 2),
    }


@pytest.mark.parametrize("name", list(layouts()))
def test_import_copies_every_layout(name):
    a = layouts()[name]
    m = dm.MemArray.from_dlpack(a)
    np.testing.assert_array_equal(np.from_dlpack(m), a)


@pytest.mark.parametrize("name", list(layouts()))
def test_rust_writes_show_up_in_numpy(name):
    a = layouts()[name]
    before = a.copy()
    dm.add_index(a)
    np.testing.assert_array_equal(a, expected_after_add_index(before))


def test_rust_writes_reach_the_base_array_through_a_view():
    base = np.zeros((4, 6), dtype=np.float64)
    dm.add_index(base[1::2, ::-2])
    assert base[1, 5] == 0 + 0 and base[1, 3] == 1 and base[3, 1] == 1 + 2
    assert base[0].sum() == 0 and base[2].sum() == 0


def test_numpy_writes_show_up_in_the_memarray():
    m = dm.MemArray((3, 4), "int64")
    view = np.from_dlpack(m)
    view[2, 3] = 99
    view[0, :] = 5
    again = dm.MemArray.from_dlpack(m)
    np.testing.assert_array_equal(np.from_dlpack(again)[2, 3], 99)
    np.testing.assert_array_equal(np.from_dlpack(m)[0], [5, 5, 5, 5])


def test_read_numpy_fills_an_existing_array():
    m = dm.MemArray((2, 3), "float32")
    src = np.arange(6, dtype=np.float32).reshape(3, 2).T
    m.read_numpy(src)
    np.testing.assert_array_equal(np.from_dlpack(m), src)
    with pytest.raises(ValueError):
        m.read_numpy(np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError):
        m.read_numpy(np.zeros((2, 3), np.float64))


# ------------------------------------------------------------------ read-only and aliasing


def test_read_only_arrays_import_but_refuse_writes():
    a = np.arange(6, dtype=np.int32)
    a.flags.writeable = False
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(a)), a)
    with pytest.raises(BufferError, match="read-only"):
        dm.add_index(a)


def test_broadcast_arrays_refuse_writes():
    a = np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3))
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(a)), a)
    with pytest.raises(BufferError):
        dm.add_index(a)


def test_memarray_cannot_change_from_rust_while_exported():
    m = dm.MemArray((2, 2), "int32")
    view = np.from_dlpack(m)
    assert m.exports == 1
    with pytest.raises(BufferError, match="exported"):
        m.add_index()
    with pytest.raises(BufferError):
        m.read_numpy(np.ones((2, 2), np.int32))
    del view
    gc.collect()
    assert m.exports == 0
    m.add_index()
    np.testing.assert_array_equal(np.from_dlpack(m), [[0, 1], [1, 2]])


# -------------------------------------------------------------------- capsules and versions


def capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


def test_versioned_and_legacy_capsules():
    m = dm.MemArray((3,), "float64")
    assert capsule_name(m.__dlpack__()) == "dltensor"
    assert capsule_name(m.__dlpack__(max_version=None)) == "dltensor"
    assert capsule_name(m.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(m.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(m.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"
    gc.collect()
    assert m.exports == 0, "unconsumed capsules release their tensors"


class LegacyProducer:
    """A producer from before DLPack 1.0: `__dlpack__` takes no keyword arguments."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_consumer_retries_without_max_version():
    a = np.arange(4, dtype=np.uint16)
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(LegacyProducer(a))), a)
    dm.add_index(LegacyProducer(a))
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


def test_numpy_versioned_and_legacy_exports_import():
    a = np.arange(5, dtype=np.int8)
    assert capsule_name(a.__dlpack__()) == "dltensor"
    assert capsule_name(a.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert dm.import_tensor(a) == 1
    assert dm.import_tensor(LegacyProducer(a)) == 1


def test_copy_true_copies_and_copy_false_shares():
    m = dm.MemArray((3,), "int32")
    copied = np.from_dlpack(m, copy=True)
    copied[0] = 7
    assert np.from_dlpack(m)[0] == 0
    shared = np.from_dlpack(m, copy=False)
    shared[1] = 8
    assert np.from_dlpack(m)[1] == 8


def test_cpu_exports_refuse_streams_and_other_devices():
    m = dm.MemArray((3,), "int32")
    # The standard names no error type for a stream on the CPU: numpy's main branch raises
    # ValueError (its releases up to 2.4 raise RuntimeError).
    for stream in (1, -1, 5):
        with pytest.raises(ValueError, match="stream"):
            m.__dlpack__(stream=stream)
    with pytest.raises(BufferError):
        m.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=False"):
        m.__dlpack__(dl_device=(2, 0), copy=False)
    assert capsule_name(m.__dlpack__(dl_device=(1, 0))) == "dltensor"
    assert m.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match=r"device \(1, 7\)"):
        m.__dlpack__(dl_device=(1, 7))
    with pytest.raises(TypeError, match="not a bool"):
        m.__dlpack__(stream=True)
    with pytest.raises(TypeError, match="not a bool"):
        m.__dlpack__(stream=False)
    assert m.exports == 0


# ------------------------------------------------------------------------------- lifetimes


def test_data_outlives_the_memarray_while_numpy_holds_it():
    m = dm.MemArray((1000,), "float64")
    m.add_index()
    view = np.from_dlpack(m)
    del m
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(1000.0))
    view[:] = -1.0
    assert view.sum() == -1000.0


class SameCapsule:
    """A producer that hands out one capsule twice."""

    def __init__(self, array):
        self.capsule = array.__dlpack__(max_version=(1, 3))
        self.device = array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def test_a_capsule_is_consumed_once():
    a = np.arange(3, dtype=np.float32)
    producer = SameCapsule(a)
    assert dm.import_tensor(producer) == 1
    with pytest.raises(ValueError, match="already consumed"):
        dm.import_tensor(producer)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc to read RSS")
def test_round_trips_do_not_leak():
    m = dm.MemArray((64,), "float32")
    a = np.arange(64, dtype=np.float32)
    for _ in range(20_000):
        np.from_dlpack(m)
        dm.import_tensor(a)
    gc.collect()
    before = rss_bytes()
    for _ in range(100_000):
        np.from_dlpack(m)
        dm.import_tensor(a)
        m.__dlpack__(max_version=(1, 3))
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 4 * 1024 * 1024, f"RSS grew by {grown} bytes over 100 000 round trips"
    assert m.exports == 0


# -------------------------------------------------------------------------- bad producers


class Producer:
    def __init__(self, result, device=(1, 0)):
        self.result = result
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.result

    def __dlpack_device__(self):
        return self.device


def test_dlpack_returning_a_non_capsule():
    with pytest.raises(TypeError, match="not a DLPack capsule"):
        dm.import_tensor(Producer(42))


def test_capsule_with_a_wrong_name():
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    buffer = ctypes.create_string_buffer(80)
    capsule = new(ctypes.addressof(buffer), b"not_a_tensor", None)
    with pytest.raises(ValueError, match="not a DLPack capsule"):
        dm.import_tensor(Producer(capsule))


def test_bare_capsules_and_objects_without_dlpack():
    # The array API: AttributeError for what has no __dlpack__ / __dlpack_device__, as numpy.
    a = np.arange(3.0)
    with pytest.raises(AttributeError, match="bare capsule"):
        dm.import_tensor(a.__dlpack__())
    for consume in (dm.import_tensor, dm.MemArray.from_dlpack, dm.add_index):
        with pytest.raises(AttributeError, match="__dlpack"):
            consume([1, 2, 3])
        with pytest.raises(AttributeError, match="__dlpack"):
            np.from_dlpack([1, 2, 3])

    class NoDevice:
        def __dlpack__(self, **kwargs):
            return a.__dlpack__(**kwargs)

    with pytest.raises(AttributeError, match="__dlpack_device__"):
        dm.import_tensor(NoDevice())


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DeleterCount:
    """A C deleter that counts its calls, for "deleter exactly once" from Python."""

    def __init__(self):
        self.calls = 0
        self.callback = DELETER(self._delete)

    def _delete(self, _managed):
        self.calls += 1


def handmade_capsule(keep, ndim=1, shape=(4,), strides=None, major=1, data=True, deleter=None):
    """A versioned capsule built by hand; `keep` holds every buffer it points into."""
    values = (ctypes.c_float * 4)(1, 2, 3, 4)
    shape_array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    managed = DLManagedTensorVersioned()
    managed.major, managed.minor = major, 3
    if deleter is not None:
        managed.deleter = ctypes.cast(deleter.callback, ctypes.c_void_p).value
    managed.dl_tensor.data = ctypes.addressof(values) if data else None
    managed.dl_tensor.device = DLDevice(1, 0)
    managed.dl_tensor.ndim = ndim
    managed.dl_tensor.dtype = DLDataType(2, 32, 1)
    managed.dl_tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)) if shape else None
    if strides is not None:
        strides_array = (ctypes.c_int64 * len(strides))(*strides)
        managed.dl_tensor.strides = ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
        keep.append(strides_array)
    keep.extend([values, shape_array, managed])
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), b"dltensor_versioned", None)


def test_handmade_capsule_imports():
    keep = []
    m = dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, strides=(1,))))
    np.testing.assert_array_equal(np.from_dlpack(m), [1, 2, 3, 4])


def test_null_shape():
    keep = []
    with pytest.raises(ValueError, match="shape is NULL"):
        dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, ndim=2, shape=())))


def test_huge_ndim():
    keep = []
    # More dimensions than MemArray holds: valid DLPack it cannot import (BufferError).
    with pytest.raises(BufferError, match="rank"):
        dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, ndim=1_000_000)))
    with pytest.raises(ValueError):
        dm.add_index(Producer(handmade_capsule(keep, ndim=-5)))


def test_null_data_with_elements():
    keep = []
    with pytest.raises(ValueError, match="data is NULL"):
        dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, data=False, strides=(1,))))


def test_unknown_major_version():
    keep = []
    with pytest.raises(BufferError, match="major version 2"):
        dm.import_tensor(Producer(handmade_capsule(keep, major=2)))


def test_handmade_deleters_run_exactly_once():
    keep = []
    imported = DeleterCount()
    m = dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, strides=(1,), deleter=imported)))
    np.testing.assert_array_equal(np.from_dlpack(m), [1, 2, 3, 4])
    assert imported.calls == 1, "a copy made, the producer's tensor released once"

    refused = DeleterCount()
    with pytest.raises(ValueError, match="shape is NULL"):
        dm.MemArray.from_dlpack(Producer(handmade_capsule(keep, ndim=2, shape=(), deleter=refused)))
    assert refused.calls == 1, "a tensor taken then refused is released once"

    foreign = DeleterCount()
    with pytest.raises(BufferError, match="major version 9"):
        dm.import_tensor(Producer(handmade_capsule(keep, major=9, deleter=foreign)))
    assert foreign.calls == 1, "a foreign major version is released, nothing else read"

    written = DeleterCount()
    dm.add_index(Producer(handmade_capsule(keep, strides=(1,), deleter=written)))
    assert written.calls == 1
    np.testing.assert_array_equal(np.ctypeslib.as_array(keep[-3]), [1, 3, 5, 7])

    twice = DeleterCount()
    capsule = handmade_capsule(keep, strides=(1,), deleter=twice)
    dm.import_tensor(Producer(capsule))
    with pytest.raises(ValueError, match="already consumed"):
        dm.import_tensor(Producer(capsule))
    assert twice.calls == 1, "a capsule consumed twice releases once"


def test_empty_numpy_arrays_import_whatever_their_strides():
    a = np.zeros((2, 0, 5))
    assert a.__dlpack__ and a.strides == (0, 0, 0)
    m = dm.MemArray.from_dlpack(a)
    assert m.shape == [2, 0, 5]
    dm.add_index(a)
    for layout in [np.zeros((0, 3), order="F"), np.zeros((4, 0))[::-1], np.zeros((3, 4))[:, 2:2]]:
        assert dm.MemArray.from_dlpack(layout).shape == list(layout.shape)
        dm.add_index(layout)
    assert np.from_dlpack(dm.MemArray((2, 0, 5), "float64")).shape == (2, 0, 5)


def test_two_imports_of_one_array_write_in_turn():
    a = np.zeros(4, dtype=np.int64)
    dm.add_index(a)
    dm.add_index(a[::1])
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


def test_lying_dlpack_device():
    with pytest.raises(BufferError, match="__dlpack_device__ said"):
        dm.import_tensor(Producer(np.arange(3.0).__dlpack__(max_version=(1, 3)), device=(2, 0)))


# -------------------------------------------------------------------------- __dlpack__'s arguments


def test_dlpack_signature_and_argument_errors():
    import inspect

    m = dm.MemArray((2,), "int8")
    assert str(inspect.signature(m.__dlpack__)) == "(*, stream=None, max_version=None, dl_device=None, copy=None)"
    with pytest.raises(TypeError, match="only keyword arguments"):
        m.__dlpack__(None)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        m.__dlpack__(version=(1, 3))
    with pytest.raises(TypeError, match="copy must be None or a bool"):
        m.__dlpack__(copy="yes")
    with pytest.raises(TypeError, match="doesn't apply"):
        dm.MemArray.__dlpack__(np.arange(3))
    for bad in [(1,), (1, 2, 3), [1, 0], "1.0", (1.0, 0), (-1, 0), (1, 2**40)]:
        with pytest.raises(TypeError, match="max_version"):
            m.__dlpack__(max_version=bad)
    for bad in [(1,), "cpu", (1, "0")]:
        with pytest.raises(TypeError, match="dl_device"):
            m.__dlpack__(dl_device=bad)
    assert m.exports == 0


def test_keywords_made_at_run_time_and_repeated():
    """Keyword names that are not interned (as C consumers make them), and the same names and
    max_version tuples again and again, give the same answers as literal ones."""
    m = dm.MemArray((2, 3), "float32")
    for _ in range(3):
        for major, name in [(0, "dltensor"), (1, "dltensor_versioned"), (2, "dltensor_versioned")]:
            kwargs = {"".join(["max_", "version"]): (major, 0), "".join(["co", "py"]): None}
            assert capsule_name(m.__dlpack__(**kwargs)) == name
        assert capsule_name(m.__dlpack__(**{"".join(["dl_", "device"]): (1, 0)})) == "dltensor"
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            m.__dlpack__(**{"".join(["stre", "am2"]): None})
    assert m.exports == 0


def test_max_version_of_integer_like_objects():
    class Major:
        """An integer through __index__ that changes: never taken for a constant."""

        def __init__(self):
            self.value = 0

        def __index__(self):
            self.value += 1
            return self.value - 1

    m = dm.MemArray((2,), "int8")
    version = (Major(), 0)
    assert capsule_name(m.__dlpack__(max_version=version)) == "dltensor"
    assert capsule_name(m.__dlpack__(max_version=version)) == "dltensor_versioned"
    assert capsule_name(m.__dlpack__(max_version=(np.int64(1), np.int32(3)))) == "dltensor_versioned"


def test_consumer_passes_errors_of_the_producer_through():
    class Failing:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            raise AttributeError("inside __dlpack__")

    class DeviceOnly:
        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(AttributeError, match="inside __dlpack__"):
        dm.import_tensor(Failing())
    with pytest.raises(AttributeError, match="__dlpack__"):
        dm.import_tensor(DeviceOnly())
    for device in [None, (1,), ("cpu", 0), (1, 2**40)]:
        with pytest.raises(TypeError, match="__dlpack_device__ must return"):
            dm.import_tensor(Producer(np.arange(3.0).__dlpack__(), device=device))


def test_exports_released_on_other_threads():
    """Consumers release tensors from any thread; the MemArray counts them back."""
    import threading

    m = dm.MemArray((4, 4), "float64")
    views = [np.from_dlpack(m) for _ in range(8)]
    assert m.exports == 8

    def release(chunk):
        for v in chunk:
            v[0, 0] += 1
        chunk.clear()

    threads = [threading.Thread(target=release, args=([views.pop() for _ in range(2)],)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert m.exports == 0
    m.add_index()
    assert np.from_dlpack(m)[0, 0] == 8


def test_every_public_name_has_a_user_facing_docstring():
    """help(dlmd_memarray) reads as Python documentation: the module, the class, every method
    and function say what they do, and none leaks Rust internals."""
    documented = [dm, dm.MemArray, dm.add_index, dm.import_tensor, dm.dlpack_dtype]
    documented += [
        getattr(dm.MemArray, name)
        for name in dir(dm.MemArray)
        if not name.startswith("_") or name in ("__dlpack__", "__dlpack_device__")
    ]
    for obj in documented:
        doc = obj.__doc__ or ""
        assert len(doc.strip()) > 20, f"{obj!r} has no docstring"
        for internal in ("GilCell", "frozen", "RefCell", "Rust", "pyo3", "unsafe"):
            assert internal not in doc, f"{obj!r} mentions {internal}: {doc!r}"
    assert str(inspect.signature(dm.MemArray)) == "(shape, dtype)"
    assert str(inspect.signature(dm.add_index)) == "(x, /, *, stream=None)"
    assert str(inspect.signature(dm.MemArray.__dlpack__)) == "(self, /, *, stream=None, max_version=None, dl_device=None, copy=None)"


class StreamRecorder:
    """A GPU producer that records the `stream` each `__dlpack__` call asks for (and exports
    nothing: there is no GPU here)."""

    def __init__(self, device):
        self.device, self.asked = device, []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked.append(stream)
        raise BufferError("recorded")

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize(
    "device, default",
    [((2, 0), 1), ((13, 0), 1), ((3, 0), 1), ((10, 0), 0), ((11, 0), 0)],
    ids=["cuda", "managed", "pinned", "rocm", "rocm_host"],
)
def test_gpu_producers_are_always_told_the_stream(device, default):
    # torch >= 2.10 reads a missing `stream` as "no synchronisation": the default stream is
    # asked for by name (CUDA's legacy 1, ROCm's 0), on every consumer path.
    p = StreamRecorder(device)
    for consume in (dm.import_tensor, dm.add_index, dm.MemArray.from_dlpack, dm.borrow_tensor):
        with pytest.raises(BufferError, match="recorded"):
            consume(p)
    assert p.asked == [default] * 4


def test_element_reads_in_place_and_an_index_outside_raises_index_error():
    a = np.arange(12.0).reshape(3, 4)
    assert dm.element(a, [2, 3]) == 11.0
    assert dm.element(a[::-1, ::2], [0, 1]) == 10.0  # negative and non-unit strides, in place
    assert dm.element(np.float32([1.5]), [0]) == 1.5
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 of extent 4"):
        dm.element(a, [0, 4])
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 of extent 3"):
        dm.element(a, [3, 0])
    with pytest.raises(IndexError, match="1 indices for a tensor of rank 2"):
        dm.element(a, [0])
    with pytest.raises(TypeError, match="float32 and float64"):
        dm.element(np.arange(3), [0])
    # An IndexError is an Exception, which a PanicException is not.
    try:
        dm.element(a, [9, 9])
    except Exception as e:
        assert isinstance(e, IndexError)
