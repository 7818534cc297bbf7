"""MemArray and dlmd's NCCL collectives on two GPUs: arrays on cuda:1 exchanged with torch and
cupy both ways, kernels run in the context of the data's device, and torch tensors on each GPU
all-reduced by dlmd in place, read back by torch.

Skipped, with the reason, on a machine with fewer than two GPUs; with DLMD_REQUIRE_GPU=1 that
fails instead.
"""

import gc
import os

import numpy as np
import pytest

import dlmd_memarray as dm


def _unavailable():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.device_count() < 2:
        return f"needs 2 GPUs, this machine has {torch.cuda.device_count()}"
    return None


_why = _unavailable()
if _why is not None:
    if os.environ.get("DLMD_REQUIRE_GPU") == "1":
        pytest.fail(f"DLMD_REQUIRE_GPU=1 but {_why}", pytrace=False)
    pytest.skip(_why, allow_module_level=True)

import torch  # noqa: E402

CUDA1 = torch.device("cuda:1")


def index_sum(shape):
    return np.indices(shape).sum(axis=0)


def test_memarray_on_cuda1_goes_to_torch_in_place():
    m = dm.MemArray((3, 4), "float32")
    m.to_device(1)
    assert m.device == "cuda:1"
    assert m.__dlpack_device__() == (2, 1)
    m.add_index()  # dlmd's kernel, loaded and launched on device 1
    t = torch.from_dlpack(m)
    assert t.device == CUDA1
    t += 2.0  # torch writes the MemArray's memory on device 1
    dm.add_index(t)  # and dlmd again, through torch's tensor, on torch's stream of device 1
    torch.cuda.synchronize(CUDA1)
    np.testing.assert_array_equal(t.cpu().numpy(), 2.0 + 2 * index_sum((3, 4)))
    del t
    gc.collect()
    m.to_host()
    np.testing.assert_array_equal(np.from_dlpack(m), 2.0 + 2 * index_sum((3, 4)))


def test_memarray_moves_between_devices():
    m = dm.MemArray((5,), "int64")
    m.to_device(0)
    m.add_index()
    m.to_device(1)
    m.add_index()
    assert m.device == "cuda:1"
    np.testing.assert_array_equal(torch.from_dlpack(m).cpu().numpy(), 2 * np.arange(5))


def test_torch_tensors_on_cuda1_are_written_in_place():
    t = torch.zeros((4, 6), dtype=torch.float64, device=CUDA1)
    dm.add_index(t)
    torch.cuda.synchronize(CUDA1)
    np.testing.assert_array_equal(t.cpu().numpy(), index_sum((4, 6)))
    m = dm.MemArray.from_dlpack(t.cpu(), device="cuda:1")
    assert m.device == "cuda:1"
    np.testing.assert_array_equal(torch.from_dlpack(m).cpu().numpy(), index_sum((4, 6)))


def test_cupy_on_cuda1_both_ways():
    cupy = pytest.importorskip("cupy")
    with cupy.cuda.Device(1):
        a = cupy.zeros((3, 5), dtype=cupy.int32)
        dm.add_index(a)
        cupy.cuda.Device(1).synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(a), index_sum((3, 5)))
    m = dm.MemArray((2, 3), "float32")
    m.to_device(1)
    m.add_index()
    c = cupy.from_dlpack(m)
    assert c.device.id == 1
    np.testing.assert_array_equal(cupy.asnumpy(c), index_sum((2, 3)))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.uint8]
)
def test_torch_tensors_on_each_gpu_all_reduced_by_dlmd(dtype):
    base = torch.arange(3 * 1024, dtype=torch.float32).remainder(61).reshape(3, 1024)
    x0 = (base + 1).to(dtype).to("cuda:0")
    x1 = (2 * base).to(dtype).to(CUDA1)
    dm.all_reduce([x0, x1])
    want = (base + 1).to(dtype) + (2 * base).to(dtype)
    assert torch.equal(x0.cpu(), want)
    assert torch.equal(x1.cpu(), want)


def test_fp8_all_reduce():
    base = torch.arange(64, dtype=torch.float32).remainder(8)
    x0 = base.to(torch.float8_e4m3fn).to("cuda:0")
    x1 = base.to(torch.float8_e4m3fn).to(CUDA1)
    dm.all_reduce([x0, x1])
    assert torch.equal(x0.cpu().float(), 2 * base)
    assert torch.equal(x1.cpu().float(), 2 * base)


@pytest.mark.parametrize("op,combine", [("max", torch.maximum), ("min", torch.minimum), ("prod", torch.mul)])
def test_all_reduce_ops(op, combine):
    a = torch.tensor([1.0, -2.0, 3.5, 4.0])
    b = torch.tensor([2.0, -3.0, 1.0, 4.0])
    x0, x1 = a.to("cuda:0"), b.to(CUDA1)
    dm.all_reduce([x0, x1], op=op)
    assert torch.equal(x0.cpu(), combine(a, b))
    assert torch.equal(x1.cpu(), combine(a, b))


def test_all_reduce_of_memarrays_on_each_gpu():
    m0, m1 = dm.MemArray((2, 8), "float32"), dm.MemArray((2, 8), "float32")
    m0.to_device(0)
    m1.to_device(1)
    m0.add_index()
    m1.add_index()
    dm.all_reduce([m0, m1], op="avg")
    np.testing.assert_array_equal(torch.from_dlpack(m1).cpu().numpy(), index_sum((2, 8)))


def test_all_reduce_refuses_what_it_cannot_do():
    x = torch.ones(4, device="cuda:0")
    with pytest.raises(ValueError, match="one tensor per device"):
        dm.all_reduce([x, torch.ones(4, device="cuda:0")])
    with pytest.raises(TypeError, match="NCCL has no data type"):
        dm.all_reduce([torch.ones(4, device="cuda:0", dtype=torch.bool), torch.ones(4, device=CUDA1, dtype=torch.bool)])
    with pytest.raises(TypeError, match="one dtype"):
        dm.all_reduce([x, torch.ones(4, device=CUDA1, dtype=torch.float64)])
    with pytest.raises(BufferError, match="CUDA tensors"):
        dm.all_reduce([torch.ones(4), torch.ones(4, device=CUDA1)])
    with pytest.raises(ValueError, match="op"):
        dm.all_reduce([x], op="median")
    with pytest.raises((BufferError, ValueError)):
        # Not contiguous row-major: NCCL moves one span.
        dm.all_reduce([torch.ones(4, 4, device="cuda:0").t(), torch.ones(4, 4, device=CUDA1).t()])
