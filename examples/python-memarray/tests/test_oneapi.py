"""MemArray and dlmd against dpnp 0.20 (`dpnp.tensor.usm_ndarray`, which carries dpctl's DLPack
code) on a SYCL device: oneAPI USM of every kind, both directions, zero-copy where the host can
reach the memory, refused with a clear error where it cannot.

This file runs in its own environment (dpnp and the Intel OpenCL CPU runtime, see
scripts/test.sh); a missing SYCL device is a failure, not a skip.
"""

import ctypes

import dpctl
import dpnp.tensor as dpt
import numpy as np
import pytest
from dlpack_abi import DLManagedTensorVersioned, capsule_pointer

import dlmd_memarray as dm

KDL_ONEAPI = 14


def test_a_sycl_device_is_there():
    assert dpctl.get_devices(), "no SYCL device: set OCL_ICD_FILENAMES to the Intel OpenCL runtime"


def arange(usm_type, shape=(2, 3), dtype="float32"):
    n = int(np.prod(shape))
    return dpt.reshape(dpt.arange(n, dtype=dtype, usm_type=usm_type), shape)


@pytest.mark.parametrize("usm_type", ["host", "shared"])
def test_host_reachable_usm_is_imported_in_place(usm_type):
    x = arange(usm_type)
    assert x.__dlpack_device__() == (KDL_ONEAPI, 0)
    m = dm.MemArray.from_dlpack(x)
    np.testing.assert_array_equal(np.from_dlpack(m), np.arange(6, dtype=np.float32).reshape(2, 3))
    # Zero-copy: Rust writes into dpnp's USM allocation.
    dm.add_index(x)
    np.testing.assert_array_equal(dpt.asnumpy(x), np.arange(6).reshape(2, 3) + np.indices((2, 3)).sum(axis=0))
    # Strided views of USM too.
    y = arange(usm_type, (4, 5), "int64")
    dm.add_index(y[::2, ::-1])
    want = np.arange(20).reshape(4, 5)
    want[::2, ::-1] += np.indices((2, 5)).sum(axis=0)
    np.testing.assert_array_equal(dpt.asnumpy(y), want)


@pytest.mark.parametrize("usm_type", ["host", "shared"])
def test_work_still_queued_is_waited_for(usm_type):
    # dpnp queues its kernels; the consumer passes a SYCL queue as the stream and waits on it
    # before reading, so a large result just computed is read whole.
    n = 1 << 20
    for _ in range(5):
        x = dpt.arange(n, dtype="int64", usm_type=usm_type) * 3 + 1
        m = dm.MemArray.from_dlpack(x)
        assert int(np.from_dlpack(m).sum()) == 3 * n * (n - 1) // 2 + n


def test_device_usm_is_refused_unless_a_host_copy_is_asked_for():
    x = arange("device", dtype="int32")
    with pytest.raises(BufferError, match="device USM"):
        dm.add_index(x)
    with pytest.raises(BufferError, match="device USM"):
        dm.MemArray.from_dlpack(x)
    # dl_device=(kDLCPU, 0): dpnp copies to the host.
    m = dm.MemArray.from_dlpack(x, device="cpu")
    np.testing.assert_array_equal(np.from_dlpack(m), np.arange(6, dtype=np.int32).reshape(2, 3))


@pytest.mark.parametrize("usm_type", ["host", "shared", "device"])
def test_dlmd_computes_the_device_id_as_dpctl_does(usm_type):
    x = arange(usm_type)
    assert dm.oneapi_device_of(x) == x.__dlpack_device__()
    # Host memory no SYCL context knows.
    assert dm.oneapi_device_of(np.arange(3)) is None


class Relabelled:
    """A dpnp array's DLPack export with its device or data changed by `edit(managed)`."""

    def __init__(self, array, edit, device=None):
        self.array, self.edit, self.device = array, edit, device

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        capsule = self.array.__dlpack__(max_version=(1, 0))
        self.edit(DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned")))
        return capsule


def test_tensors_whose_label_lies_are_refused():
    x = arange("shared")

    def other_device(managed):
        managed.dl_tensor.device.device_id = 5

    with pytest.raises(BufferError, match="oneAPI device 5 does not exist"):
        dm.MemArray.from_dlpack(Relabelled(x, other_device, device=(KDL_ONEAPI, 5)))

    host = np.arange(6, dtype=np.float32)

    def not_usm(managed):
        managed.dl_tensor.data = host.ctypes.data

    with pytest.raises(BufferError, match="not a USM allocation"):
        dm.MemArray.from_dlpack(Relabelled(x, not_usm))


def test_dpnp_reads_memarrays():
    m = dm.MemArray((3, 4), "float64")
    m.add_index()
    device = dpctl.SyclDevice()
    y = dpt.from_dlpack(m, device=device)
    assert isinstance(y, dpt.usm_ndarray)
    np.testing.assert_array_equal(dpt.asnumpy(y), np.indices((3, 4)).sum(axis=0))
    del y
    assert m.exports == 0


def test_a_oneapi_tensor_is_not_a_cuda_or_host_tensor_to_dlmd():
    x = arange("host")
    capsule = x.__dlpack__(max_version=(1, 0))
    managed = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
    assert managed.dl_tensor.device.device_type == KDL_ONEAPI
    assert ctypes.sizeof(managed) == 80
    # Through the GPU path (the oneAPI device is no CUDA device) or the plain host path, the
    # label is refused; only the oneAPI runtime makes USM a host view.
    with pytest.raises(BufferError):
        dm.MemArray((2, 3), "float32").read_numpy(Relabelled(x, lambda m: setattr(m.dl_tensor.device, "device_type", 2)))


# ---- dpnp's own DLPack tests (dpnp/tests/tensor/test_usm_ndarray_dlpack.py), with MemArray as
# ---- the consumer in dpnp's place ----

# The types of dpnp's `_typestrs_list` that MemArray holds (all of them).
TYPESTRS = ["b1", "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8", "c8", "c16"]


def supported(typestr, device):
    if typestr in ("f8", "c16") and not device.has_aspect_fp64:
        return False
    return typestr != "f2" or device.has_aspect_fp16


def filled(shape, typestr, usm_type, device=None, queue=None):
    n = int(np.prod(shape))
    x = dpt.asarray(np.arange(n).astype(typestr).reshape(shape), usm_type=usm_type, device=device, sycl_queue=queue)
    return x


@pytest.mark.parametrize("shape", [tuple(), (2,), (3, 0, 1), (2, 2, 2)])
@pytest.mark.parametrize("typestr", TYPESTRS)
@pytest.mark.parametrize("usm_type", ["host", "shared", "device"])
def test_from_dlpack(shape, typestr, usm_type):
    for device in dpctl.get_devices():
        if not supported(typestr, device):
            continue
        x = filled(shape, typestr, usm_type, device=device)
        want = dpt.asnumpy(x)
        if usm_type == "device" and x.size:
            with pytest.raises(BufferError, match="device USM"):
                dm.MemArray.from_dlpack(x)
            m = dm.MemArray.from_dlpack(x, device="cpu")
        else:
            m = dm.MemArray.from_dlpack(x)
        assert m.shape == list(shape)
        np.testing.assert_array_equal(np.from_dlpack(m), want)
        if x.ndim and usm_type != "device":
            # Reversed views: negative strides into USM.
            v = x[::-1]
            np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(v)), dpt.asnumpy(v))


@pytest.mark.parametrize("mod", [2, 5])
@pytest.mark.parametrize("typestr", TYPESTRS)
@pytest.mark.parametrize("usm_type", ["host", "shared"])
def test_from_dlpack_strides(mod, typestr, usm_type):
    for device in dpctl.get_devices():
        if not supported(typestr, device):
            continue
        x0 = filled((3 * mod,), typestr, usm_type, device=device)
        for start in range(mod):
            x = x0[slice(-start - 1, None, -mod)]
            np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(x)), dpt.asnumpy(x))


def test_from_dlpack_input_validation():
    with pytest.raises(AttributeError):
        dm.MemArray.from_dlpack(None)

    class DummyWithProperty:
        @property
        def __dlpack__(self):
            return None

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError):
        dm.MemArray.from_dlpack(DummyWithProperty())

    class DummyWithMethod:
        def __dlpack__(self, **kwargs):
            return None

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match="not a DLPack capsule"):
        dm.MemArray.from_dlpack(DummyWithMethod())


def test_from_dlpack_fortran_contig_array_roundtripping():
    ar2d_c = dpt.reshape(dpt.arange(15, dtype="i4", usm_type="shared"), (3, 5), order="C")
    ar2d_f = dpt.asarray(ar2d_c, order="F")
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(ar2d_f)), dpt.asnumpy(ar2d_c))
    dm.add_index(ar2d_f)
    np.testing.assert_array_equal(dpt.asnumpy(ar2d_f), np.arange(15).reshape(3, 5) + np.indices((3, 5)).sum(axis=0))


def test_dlpack_from_subdevice():
    """USM of a sub-device, bound to the platform's default context, travels labelled with the
    root device's position, and dlmd finds it there."""
    dev = dpctl.SyclDevice()
    try:
        sdevs = dev.create_sub_devices(partition="next_partitionable")
    except dpctl.SyclSubDeviceCreationError:
        sdevs = dev.create_sub_devices(partition=[1, 1])
    ctx = sdevs[0].sycl_platform.default_context
    try:
        q = dpctl.SyclQueue(ctx, sdevs[0])
    except dpctl.SyclQueueCreationError:
        # As dpnp's test: this runtime cannot queue on a sub-device in the default context.
        pytest.skip(f"{dev.name}: no queue on a sub-device in the platform's default context")
    x = dpt.arange(64, dtype=dpt.int32, usm_type="shared", sycl_queue=q)
    assert x.__dlpack_device__() == (KDL_ONEAPI, dpctl.get_devices().index(dev))
    assert dm.oneapi_device_of(x) == x.__dlpack_device__()
    dm.add_index(x)
    np.testing.assert_array_equal(dpt.asnumpy(x), np.arange(64) * 2)


def test_dlpack_size_0():
    x = dpt.ones(0, dtype="i4", usm_type="shared")
    m = dm.MemArray.from_dlpack(x)
    assert m.shape == [0]
    x = dpt.ones(0, dtype="i4", usm_type="device")
    assert dm.MemArray.from_dlpack(x).shape == [0]


def test_from_dlpack_kwargs():
    x = filled((4,), "f4", "shared")
    for kwargs in ({"copy": True}, {"device": "cpu"}, {"device": "cpu", "copy": True}):
        np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(x, **kwargs)), np.arange(4))
    with pytest.raises(BufferError, match="copy=False"):
        dm.MemArray.from_dlpack(x, copy=False)


class Container:
    """dpnp's generic container: any object with the DLPack methods of the array it holds."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_generic_container():
    c = Container(dpt.linspace(0, 100, num=20, dtype="int16", usm_type="host"))
    np.testing.assert_array_equal(np.from_dlpack(dm.MemArray.from_dlpack(c)), dpt.asnumpy(c._array))
    dm.add_index(c)
    np.testing.assert_array_equal(dpt.asnumpy(c._array), np.linspace(0, 100, num=20).astype("int16") + np.arange(20))
