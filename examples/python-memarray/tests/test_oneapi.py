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
