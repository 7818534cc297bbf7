"""DLPack 1.3's C exchange table (`__dlpack_c_exchange_api__`), both ways, on the CPU.

MemArray publishes a table; tvm-ffi (a real C consumer) must take MemArrays through it, and
dlmd's consumer must take tvm-ffi's `DLTensorTestWrapper` through that type's table. Bad tables
and bad calls through the table must raise Python exceptions, never crash.
"""

import ctypes
import gc
import shutil
import subprocess

import numpy as np
import pytest
import tvm_ffi
import tvm_ffi.libinfo
from dlpack_abi import (
    ALLOCATOR,
    FROM_PY,
    SET_ERROR,
    WORK_STREAM,
    DLDataType,
    DLDevice,
    DLManagedTensorVersioned,
    DLTensor,
    ExchangeAPI,
    Header,
    capsule_new,
    capsule_pointer,
    numpy_managed,
    release,
    table_of,
    take_object,
)

import dlmd_memarray as dm

c_void_p = ctypes.c_void_p

def obj_address(obj):
    return ctypes.c_void_p(id(obj))


def filled(shape, dtype="float32"):
    m = dm.MemArray(shape, dtype)
    m.add_index()
    return m


# ---- MemArray's table, read by a real C consumer (tvm-ffi) ----


def test_memarray_publishes_a_version_1_3_table():
    table = table_of(dm.MemArray)
    assert (table.header.major, table.header.minor) == (1, 3)
    assert not table.header.prev_api
    for entry, _ in ExchangeAPI._fields_[1:]:
        assert ctypes.cast(getattr(table, entry), c_void_p).value, entry


def test_tvm_ffi_takes_a_memarray_through_its_table(monkeypatch):
    m = filled((2, 3))

    def no_dlpack(self, **kwargs):
        raise AssertionError("__dlpack__ called: the exchange table was not used")

    # With __dlpack__ gone, only the table can give tvm-ffi the tensor.
    monkeypatch.setattr(dm.MemArray, "__dlpack__", no_dlpack)
    with pytest.raises(AssertionError):
        np.from_dlpack(m)
    t = tvm_ffi.from_dlpack(m)
    assert t.shape == (2, 3) and str(t.dtype) == "float32"
    assert m.exports == 1
    monkeypatch.undo()
    view = np.from_dlpack(t)
    np.testing.assert_array_equal(view, [[0, 1, 2], [1, 2, 3]])
    # Zero-copy: a write through tvm-ffi's tensor is a write to the MemArray.
    view[1, 2] = 42
    assert np.from_dlpack(m)[1, 2] == 42
    del t, view
    gc.collect()
    assert m.exports == 0


def test_tvm_ffi_returns_tensors_as_memarrays_through_the_table():
    # tvm-ffi turns a returned tensor into an object of the argument's type with the table's
    # managed_tensor_to_py_object_no_sync: a MemArray (holding a copy of the data).
    m = filled((3, 2), "int32")
    echo = tvm_ffi.get_global_func("testing.echo")
    back = echo(m)
    assert isinstance(back, dm.MemArray) and back is not m
    np.testing.assert_array_equal(np.from_dlpack(back), np.from_dlpack(m))
    gc.collect()
    assert m.exports == 0


# ---- dlmd's consumer, reading another producer's table ----


def test_dlmd_takes_tvm_ffi_test_wrapper_through_its_table():
    data = np.arange(6.0).reshape(2, 3)

    class WithoutDlpack(tvm_ffi.core.DLTensorTestWrapper):
        def __dlpack__(self, **kwargs):
            raise AssertionError("__dlpack__ called: the exchange table was not used")

        def __dlpack_device__(self):
            raise AssertionError("__dlpack_device__ called: the exchange table was not used")

    w = WithoutDlpack(tvm_ffi.from_dlpack(data))
    assert dm.import_tensor(w) == 2
    assert dm.borrow_tensor(w) == 2
    copy = dm.MemArray.from_dlpack(w)
    np.testing.assert_array_equal(np.from_dlpack(copy), data)
    dm.add_index(w)
    np.testing.assert_array_equal(data, np.arange(6.0).reshape(2, 3) + [[0, 1, 2], [1, 2, 3]])
    # The switch: off, every import goes through __dlpack__, which this class refuses.
    assert dm.use_exchange_api(False) is True
    try:
        with pytest.raises(AssertionError, match="not used"):
            dm.import_tensor(w)
    finally:
        assert dm.use_exchange_api(True) is False
    assert dm.import_tensor(w) == 2


def test_dlmd_borrows_a_memarray_without_an_export():
    m = filled((4, 5), "int16")
    assert dm.borrow_tensor(m) == 2
    assert m.exports == 0


# ---- MemArray's table, called directly with good and bad arguments ----


def test_table_entries_export_and_lend_memarrays():
    table = table_of(dm.MemArray)
    m = filled((2, 3))
    out = c_void_p()
    assert table.managed_tensor_from_py_object_no_sync(obj_address(m), ctypes.byref(out)) == 0
    managed = DLManagedTensorVersioned.from_address(out.value)
    assert (managed.major, managed.minor) == (1, 3)
    t = managed.dl_tensor
    assert (t.ndim, t.device.device_type, t.dtype.code, t.dtype.bits) == (2, 1, 2, 32)
    assert [t.shape[i] for i in range(2)] == [2, 3] and [t.strides[i] for i in range(2)] == [3, 1]
    assert t.data == np.from_dlpack(m).ctypes.data
    assert m.exports == 1
    release(out.value)
    assert m.exports == 0

    lent = DLTensor()
    assert table.dltensor_from_py_object_no_sync(obj_address(m), ctypes.byref(lent)) == 0
    assert (lent.ndim, lent.data) == (2, np.from_dlpack(m).ctypes.data)
    assert [lent.shape[i] for i in range(2)] == [2, 3] and [lent.strides[i] for i in range(2)] == [3, 1]
    assert m.exports == 0

    stream = c_void_p(1234)
    assert table.current_work_stream(1, 0, ctypes.byref(stream)) == 0
    assert stream.value is None


def test_table_to_py_object_and_allocator():
    table = table_of(dm.MemArray)
    m = filled((2, 2), "float64")
    out = c_void_p()
    assert table.managed_tensor_from_py_object_no_sync(obj_address(m), ctypes.byref(out)) == 0
    obj = c_void_p()
    # The tensor is handed over: converted, then released by the table.
    assert table.managed_tensor_to_py_object_no_sync(out, ctypes.byref(obj)) == 0
    back = take_object(obj.value)
    assert isinstance(back, dm.MemArray)
    np.testing.assert_array_equal(np.from_dlpack(back), np.from_dlpack(m))
    gc.collect()
    assert m.exports == 0

    errors = []
    set_error = SET_ERROR(lambda ctx, kind, message: errors.append((kind.decode(), message.decode())))
    shape = (ctypes.c_int64 * 2)(3, 4)
    prototype = DLTensor(None, DLDevice(1, 0), 2, DLDataType(0, 16, 1), shape, None, 0)
    assert table.managed_tensor_allocator(ctypes.byref(prototype), ctypes.byref(out), None, set_error) == 0
    made = DLManagedTensorVersioned.from_address(out.value).dl_tensor
    assert [made.shape[i] for i in range(2)] == [3, 4] and made.dtype.code == 0 and made.dtype.bits == 16
    release(out.value)
    assert errors == []

    for bad, kind, what in [
        (DLTensor(None, DLDevice(1, 0), 1, DLDataType(2, 24, 1), shape, None, 0), "BufferError", "dtype"),
        (DLTensor(None, DLDevice(9, 0), 1, DLDataType(2, 32, 1), shape, None, 0), "BufferError", "(9, 0)"),
        (DLTensor(None, DLDevice(1, 0), 2, DLDataType(2, 32, 1), None, None, 0), "ValueError", "shape is NULL"),
        (DLTensor(None, DLDevice(1, 0), -1, DLDataType(2, 32, 1), shape, None, 0), "ValueError", "ndim -1"),
    ]:
        errors.clear()
        assert table.managed_tensor_allocator(ctypes.byref(bad), ctypes.byref(out), None, set_error) == -1
        assert len(errors) == 1 and errors[0][0] == kind and what in errors[0][1], errors
    negative = (ctypes.c_int64 * 1)(-3)
    bad = DLTensor(None, DLDevice(1, 0), 1, DLDataType(2, 32, 1), negative, None, 0)
    errors.clear()
    assert table.managed_tensor_allocator(ctypes.byref(bad), ctypes.byref(out), None, set_error) == -1
    assert errors[0][0] == "ValueError" and "-3" in errors[0][1]
    errors.clear()
    assert table.managed_tensor_allocator(None, ctypes.byref(out), None, set_error) == -1
    assert errors[0][0] == "ValueError"

    # A shape array one byte off its alignment (C callers do not all align it): read as it lies.
    raw = ctypes.create_string_buffer(8 * 2 + 1)
    ctypes.memmove(ctypes.addressof(raw) + 1, ctypes.byref((ctypes.c_int64 * 2)(5, 7)), 16)
    unaligned = ctypes.cast(ctypes.addressof(raw) + 1, ctypes.POINTER(ctypes.c_int64))
    prototype = DLTensor(None, DLDevice(1, 0), 2, DLDataType(2, 32, 1), unaligned, None, 0)
    errors.clear()
    assert table.managed_tensor_allocator(ctypes.byref(prototype), ctypes.byref(out), None, set_error) == 0, errors
    made = DLManagedTensorVersioned.from_address(out.value).dl_tensor
    assert [made.shape[i] for i in range(2)] == [5, 7]
    release(out.value)


def test_table_entries_refuse_bad_calls_with_exceptions():
    table = table_of(dm.MemArray)
    m = filled((2,))
    out = c_void_p()
    with pytest.raises(ValueError, match="NULL object"):
        table.managed_tensor_from_py_object_no_sync(None, ctypes.byref(out))
    with pytest.raises(ValueError, match="output pointer is NULL"):
        table.managed_tensor_from_py_object_no_sync(obj_address(m), None)
    a = np.arange(3)
    with pytest.raises(TypeError, match="ndarray"):
        table.managed_tensor_from_py_object_no_sync(obj_address(a), ctypes.byref(out))
    with pytest.raises(TypeError, match="ndarray"):
        table.dltensor_from_py_object_no_sync(obj_address(a), ctypes.byref(DLTensor()))
    with pytest.raises(ValueError, match="NULL"):
        table.dltensor_from_py_object_no_sync(obj_address(m), None)
    with pytest.raises(ValueError, match="NULL"):
        table.managed_tensor_to_py_object_no_sync(None, ctypes.byref(out))
    with pytest.raises(ValueError, match="NULL"):
        table.current_work_stream(1, 0, None)
    # A tensor handed over with a NULL output is still released (it was handed over).
    assert table.managed_tensor_from_py_object_no_sync(obj_address(m), ctypes.byref(out)) == 0
    assert m.exports == 1
    with pytest.raises(ValueError, match="output pointer is NULL"):
        table.managed_tensor_to_py_object_no_sync(out, None)
    assert m.exports == 0


# ---- bad tables on the consumer's side ----

keep = []


def table_class(value, with_dlpack=False, attribute="__dlpack_c_exchange_api__"):
    """A fresh class (the consumer caches tables per type) publishing `value`."""
    namespace = {attribute: value}
    if with_dlpack:
        data = np.arange(4.0)
        namespace["__dlpack__"] = lambda self, **kw: data.__dlpack__(**kw)
        namespace["__dlpack_device__"] = lambda self: (1, 0)
    return type("Producer", (), namespace)


def python_table(from_py, major=1, prev=None, work_stream=None):
    def no_allocator(prototype, out, ctx, set_error):
        return -1

    def default_stream(device_type, device_id, out):
        out[0] = None
        return 0

    table = ExchangeAPI()
    table.header.major, table.header.minor = major, 0
    if prev is not None:
        table.header.prev_api = ctypes.cast(ctypes.pointer(prev), ctypes.POINTER(Header))
    table.managed_tensor_allocator = ALLOCATOR(no_allocator)
    table.managed_tensor_from_py_object_no_sync = FROM_PY(from_py) if from_py else FROM_PY()
    table.current_work_stream = WORK_STREAM(work_stream or default_stream)
    keep.append(table)
    return table


def capsule_of(table, name=b"dlpack_exchange_api"):
    return capsule_new(ctypes.addressof(table), name, None)


def test_a_table_written_in_python_is_used():
    data = np.arange(5, dtype=np.int64)
    calls = []

    def from_py(obj, out):
        calls.append(obj)
        out[0] = numpy_managed(data)
        return 0

    table = python_table(from_py)
    Producer = table_class(capsule_of(table))
    p = Producer()
    assert dm.import_tensor(p) == 1
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(p)), data)
    assert len(calls) == 2 and calls[0] == id(p)
    # DLPack 1.2's integer attribute holds the table's address.
    Producer12 = table_class(ctypes.addressof(table), attribute="__c_dlpack_exchange_api__")
    assert dm.import_tensor(Producer12()) == 1
    # An unknown major version links an older table through prev_api.
    newer = python_table(None, major=2, prev=table)
    assert dm.import_tensor(table_class(capsule_of(newer))()) == 1
    assert len(calls) == 4


def test_bad_tables_raise_python_exceptions():
    def returns(status, out_value=None):
        def from_py(obj, out):
            out[0] = out_value
            return status

        return from_py

    good = python_table(returns(0, None))
    with pytest.raises(TypeError, match="named \"dlpack_exchange_api\""):
        dm.import_tensor(table_class(capsule_of(good, b"not_the_table"))())
    with pytest.raises(ValueError, match="0x0"):
        dm.import_tensor(table_class(0, attribute="__c_dlpack_exchange_api__")())
    with pytest.raises(ValueError, match="no exchange table can be"):
        dm.import_tensor(table_class(12345)())
    with pytest.raises(TypeError, match="not a capsule"):
        dm.import_tensor(table_class("a string")())
    with pytest.raises(TypeError, match="managed_tensor_from_py_object_no_sync"):
        dm.import_tensor(table_class(capsule_of(python_table(None)))())
    with pytest.raises(BufferError, match="without setting an exception"):
        dm.import_tensor(table_class(capsule_of(python_table(returns(-1))))())
    with pytest.raises(BufferError, match="without setting an exception"):
        dm.import_tensor(table_class(capsule_of(python_table(returns(7))))())
    with pytest.raises(BufferError, match="and no tensor"):
        dm.import_tensor(table_class(capsule_of(good))())
    # A major version 2 table with nothing older: refused without __dlpack__ to fall back on...
    newer = python_table(None, major=2)
    with pytest.raises(BufferError, match="DLPack 2.0 exchange table"):
        dm.import_tensor(table_class(capsule_of(newer))())
    # ...and passed over for __dlpack__ where there is one.
    assert dm.import_tensor(table_class(capsule_of(newer), with_dlpack=True)()) == 1
    # A chain that loops.
    loop = python_table(None, major=2)
    loop.header.prev_api = ctypes.cast(ctypes.pointer(loop.header), ctypes.POINTER(Header))
    with pytest.raises(ValueError, match="a loop"):
        dm.import_tensor(table_class(capsule_of(loop))())
    # A tensor of another major version from the table is released and refused.
    data = np.arange(3.0)

    def future_tensor(obj, out):
        address = numpy_managed(data)
        DLManagedTensorVersioned.from_address(address).major = 2
        out[0] = address
        return 0

    with pytest.raises(BufferError, match="major version 2"):
        dm.import_tensor(table_class(capsule_of(python_table(future_tensor)))())


# ---- the array API's from_dlpack(x, /, *, device=None, copy=None) ----


def test_memarray_from_dlpack_keywords():
    a = np.arange(6.0).reshape(2, 3)
    for kwargs in ({}, {"device": "cpu"}, {"copy": True}, {"device": "cpu", "copy": None}):
        np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(a, **kwargs)), a)
    with pytest.raises(BufferError, match="copy=False"):
        dm.MemArray.from_dlpack(a, copy=False)
    with pytest.raises(ValueError, match="tpu"):
        dm.MemArray.from_dlpack(a, device="tpu")
    with pytest.raises(TypeError):
        dm.MemArray.from_dlpack(a, "cpu")  # device is keyword-only


def test_consumer_refuses_a_tensor_on_another_device_than_asked():
    a = np.arange(3.0)

    class WrongId:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            # Asked for the CPU, answers with a tensor that says CPU device 1.
            capsule = a.__dlpack__(max_version=(1, 0))
            managed = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
            managed.dl_tensor.device.device_id = 1
            return capsule

    with pytest.raises(BufferError, match=r"dl_device asked for \(1, 0\) but the tensor is on \(1, 1\)"):
        dm.MemArray.from_dlpack(WrongId(), device="cpu")
    with pytest.raises(BufferError, match="said"):
        dm.import_tensor(WrongId())


def test_memarray_producer_refuses_a_device_id_the_data_is_not_on():
    m = filled((2,))
    for device in [(1, 1), (1, -1), (2, 0)]:
        with pytest.raises(BufferError, match="cannot be exported"):
            m.__dlpack__(dl_device=device)
    assert m.__dlpack__(dl_device=(1, 0)) is not None


# ---- the ABI, against the C header ----


def test_ctypes_mirror_matches_the_c_header(tmp_path):
    """The structs these tests call the table through have the layout of `dlpack.h` 1.3 (the
    header tvm-ffi ships), compiled with the system C compiler; Rust's layout of the same structs
    is checked field by field in tests/abi.rs."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to read dlpack.h's layout"
    fields = {
        "DLPackExchangeAPIHeader": (Header, ["version", "prev_api"]),
        "DLPackExchangeAPI": (ExchangeAPI, [name for name, _ in ExchangeAPI._fields_]),
        "DLTensor": (DLTensor, [name for name, _ in DLTensor._fields_]),
        "DLManagedTensorVersioned": (DLManagedTensorVersioned, ["version", "manager_ctx", "deleter", "flags", "dl_tensor"]),
    }
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include <dlpack/dlpack.h>', "int main(void) {"]
    lines.append('printf("version %d %d\\n", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);')
    for struct, (_, names) in fields.items():
        lines.append(f'printf("{struct} size %zu\\n", sizeof({struct}));')
        for name in names:
            lines.append(f'printf("{struct} {name} %zu\\n", offsetof({struct}, {name}));')
    lines.append("return 0; }")
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", tvm_ffi.libinfo.find_dlpack_include_path(), str(source), "-o", str(exe)], check=True)
    c = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    assert c["version 1"] == "3"
    # ctypes names the version's two halves separately: the version is at the first's offset.
    ctypes_name = {"version": "major"}
    for struct, (mirror, names) in fields.items():
        assert int(c[f"{struct} size"]) == ctypes.sizeof(mirror), struct
        for name in names:
            assert int(c[f"{struct} {name}"]) == getattr(mirror, ctypes_name.get(name, name)).offset, (struct, name)


# ---- packed FP4 pairs (torch's float4_e2m1fn_x2) ----


def test_fp4_pairs_travel_packed_with_shapes_counting_bytes():
    m = dm.MemArray((2, 3), "float4_e2m1fn_x2")
    m.add_index()
    assert dm.dlpack_dtype("float4_e2m1fn_x2") == (17, 4, 2)
    capsule = m.__dlpack__(max_version=(1, 3))
    managed = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
    t = managed.dl_tensor
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (17, 4, 2)
    assert [t.shape[i] for i in range(2)] == [2, 3]
    assert managed.flags & 4 == 0  # packed, not IS_SUBBYTE_TYPE_PADDED
    # Each byte holds the index sum twice, as FP4 (3.0 is 0b0101; sums past 6 saturate).
    fp4 = {0: 0x0, 1: 0x2, 2: 0x4, 3: 0x5}
    got = ctypes.string_at(t.data, 6)
    assert list(got) == [fp4[i + j] * 0x11 for i in range(2) for j in range(3)]
    del managed, t, capsule
    # Through DLPack and back into a MemArray: the same bytes.
    copy = dm.MemArray.from_dlpack(m)
    assert copy.dtype == "float4_e2m1fn_x2" and copy.shape == [2, 3]
    again = copy.__dlpack__(max_version=(1, 3))
    data = DLManagedTensorVersioned.from_address(capsule_pointer(again, b"dltensor_versioned")).dl_tensor.data
    assert ctypes.string_at(data, 6) == got


def grad_producer():
    """A producer like torch: `requires_grad`, a table that exports whatever, and a `__dlpack__`
    that refuses tensors requiring grad."""
    data = np.zeros((2, 3), dtype=np.float64)

    def from_py(obj, out):
        out[0] = numpy_managed(data)
        return 0

    table = python_table(from_py)

    def dlpack(self, **kwargs):
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return data.__dlpack__(**kwargs)

    namespace = {
        "__dlpack_c_exchange_api__": capsule_of(table),
        "__dlpack__": dlpack,
        "__dlpack_device__": lambda self: (1, 0),
        "__init__": lambda self, requires_grad: setattr(self, "_grad", requires_grad),
        # A property of the type, as torch's is.
        "requires_grad": property(lambda self: self._grad),
    }
    return type("GradTensor", (), namespace), data


@pytest.mark.parametrize("table", [True, False], ids=["table", "dlpack"])
def test_requires_grad_refuses_writes_through_either_path(table):
    GradTensor, data = grad_producer()
    before = dm.use_exchange_api(table)
    try:
        with pytest.raises(BufferError, match="grad"):
            dm.add_index(GradTensor(True))
        assert not data.any(), "written behind autograd's back"
        if table:
            # Reads stay allowed through the table, as its C consumers read it.
            assert dm.import_tensor(GradTensor(True)) == 2
        dm.add_index(GradTensor(False))
        np.testing.assert_array_equal(data, [[0, 1, 2], [1, 2, 3]])
    finally:
        dm.use_exchange_api(before)


def math_bit_producer():
    """A producer like torch: a lazily negated or conjugated view whose memory holds the values
    before the bit, exported by its table and (for the negative bit) by its `__dlpack__` as if
    the bit were not set."""
    data = np.arange(6, dtype=np.float64).reshape(2, 3)

    def from_py(obj, out):
        out[0] = numpy_managed(data)
        return 0

    table = python_table(from_py)

    def dlpack(self, **kwargs):
        if self._conj:
            raise BufferError("can't export a tensor with the conjugate bit set")
        return data.__dlpack__(**kwargs)

    def init(self, neg=False, conj=False):
        self._neg, self._conj = neg, conj

    namespace = {
        "__dlpack_c_exchange_api__": capsule_of(table),
        "__dlpack__": dlpack,
        "__dlpack_device__": lambda self: (1, 0),
        "__init__": init,
        "is_neg": lambda self: self._neg,
        "is_conj": lambda self: self._conj,
        "resolve_neg": lambda self: self,
    }
    return type("MathBitTensor", (), namespace), data


@pytest.mark.parametrize("table", [True, False], ids=["table", "dlpack"])
def test_math_bits_are_refused_for_reading_and_writing_through_either_path(table):
    MathBitTensor, data = math_bit_producer()
    before = dm.use_exchange_api(table)
    try:
        for bit, kwargs in [("negative", {"neg": True}), ("conjugate", {"conj": True})]:
            with pytest.raises(BufferError, match=f"{bit} bit set"):
                dm.add_index(MathBitTensor(**kwargs))
            with pytest.raises(BufferError, match=f"{bit} bit set"):
                dm.MemArray.from_dlpack(MathBitTensor(**kwargs))
            with pytest.raises(BufferError, match=f"{bit} bit set"):
                dm.import_tensor(MathBitTensor(**kwargs))
            with pytest.raises(BufferError, match=f"{bit} bit set"):
                dm.borrow_tensor(MathBitTensor(**kwargs))
        np.testing.assert_array_equal(data, np.arange(6).reshape(2, 3), "nothing written")
        # Without the bits the same producer is read and written.
        np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(MathBitTensor())), data)
        dm.add_index(MathBitTensor())
        np.testing.assert_array_equal(data, [[0, 2, 4], [4, 6, 8]])
    finally:
        dm.use_exchange_api(before)
