"""MemArray and dlmd's NCCL collectives on every GPU of the machine (N ≥ 2): arrays on each
device exchanged with torch and cupy both ways, kernels run in the context of the data's device,
and torch tensors on all N GPUs all-reduced by dlmd in place, read back by torch.

Skipped, with the reason, on a machine with fewer than two GPUs; with DLMD_REQUIRE_GPU=1 that
fails instead.
"""

import functools
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

N = torch.cuda.device_count()
DEVICES = [torch.device("cuda", d) for d in range(N)]
LAST = DEVICES[-1]
# Every device but the first, which the one-GPU tests cover.
OTHERS = list(range(1, N))


def index_sum(shape):
    return np.indices(shape).sum(axis=0)


@pytest.mark.parametrize("d", OTHERS)
def test_memarray_on_each_device_goes_to_torch_in_place(d):
    m = dm.MemArray((3, 4), "float32")
    m.to_device(d)
    assert m.device == f"cuda:{d}"
    assert m.__dlpack_device__() == (2, d)
    m.add_index()  # dlmd's kernel, loaded and launched on device d
    t = torch.from_dlpack(m)
    assert t.device == DEVICES[d]
    t += 2.0  # torch writes the MemArray's memory on device d
    dm.add_index(t)  # and dlmd again, through torch's tensor, on torch's stream of device d
    torch.cuda.synchronize(DEVICES[d])
    np.testing.assert_array_equal(t.cpu().numpy(), 2.0 + 2 * index_sum((3, 4)))
    del t
    gc.collect()
    m.to_host()
    np.testing.assert_array_equal(np.from_dlpack(m), 2.0 + 2 * index_sum((3, 4)))


def test_memarray_moves_through_every_device():
    m = dm.MemArray((5,), "int64")
    for d in range(N):
        m.to_device(d)
        m.add_index()
        assert m.device == f"cuda:{d}"
    np.testing.assert_array_equal(torch.from_dlpack(m).cpu().numpy(), N * np.arange(5))


@pytest.mark.parametrize("d", OTHERS)
def test_torch_tensors_on_each_device_are_written_in_place(d):
    t = torch.zeros((4, 6), dtype=torch.float64, device=DEVICES[d])
    dm.add_index(t)
    torch.cuda.synchronize(DEVICES[d])
    np.testing.assert_array_equal(t.cpu().numpy(), index_sum((4, 6)))
    m = dm.MemArray.from_dlpack(t.cpu(), device=f"cuda:{d}")
    assert m.device == f"cuda:{d}"
    np.testing.assert_array_equal(torch.from_dlpack(m).cpu().numpy(), index_sum((4, 6)))


@pytest.mark.parametrize("d", OTHERS)
def test_cupy_on_each_device_both_ways(d):
    cupy = pytest.importorskip("cupy")
    with cupy.cuda.Device(d):
        a = cupy.zeros((3, 5), dtype=cupy.int32)
        dm.add_index(a)
        cupy.cuda.Device(d).synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(a), index_sum((3, 5)))
    m = dm.MemArray((2, 3), "float32")
    m.to_device(d)
    m.add_index()
    c = cupy.from_dlpack(m)
    assert c.device.id == d
    np.testing.assert_array_equal(cupy.asnumpy(c), index_sum((2, 3)))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.uint8]
)
def test_torch_tensors_on_every_gpu_all_reduced_by_dlmd(dtype):
    # Device d holds base + d: the sum, at most 8 × 28 + 28 = 252 on 8 GPUs, is exact in every
    # dtype here, uint8 and bfloat16 included.
    base = torch.arange(3 * 1024, dtype=torch.float32).remainder(29).reshape(3, 1024)
    xs = [(base + d).to(dtype).to(dev) for d, dev in enumerate(DEVICES)]
    dm.all_reduce(xs)
    want = (N * base + N * (N - 1) // 2).to(dtype)
    for d, x in enumerate(xs):
        assert torch.equal(x.cpu(), want), f"cuda:{d}"


def test_fp8_all_reduce():
    # Ones and twos: every partial sum, at most 16, is exact in E4M3.
    base = torch.arange(64, dtype=torch.float32).remainder(2) + 1
    xs = [base.to(torch.float8_e4m3fn).to(dev) for dev in DEVICES]
    dm.all_reduce(xs)
    for x in xs:
        assert torch.equal(x.cpu().float(), N * base)


@pytest.mark.parametrize("op,combine", [("max", torch.maximum), ("min", torch.minimum), ("prod", torch.mul)])
def test_all_reduce_ops(op, combine):
    # Powers of two, rolled per device: products stay exact.
    rows = [torch.tensor([1.0, -2.0, 0.5, 4.0, -1.0]).roll(d) for d in range(N)]
    xs = [r.to(dev) for r, dev in zip(rows, DEVICES)]
    dm.all_reduce(xs, op=op)
    want = functools.reduce(combine, rows)
    for x in xs:
        assert torch.equal(x.cpu(), want)


def test_all_reduce_of_memarrays_on_every_gpu():
    ms = [dm.MemArray((2, 8), "float32") for _ in range(N)]
    for d, m in enumerate(ms):
        m.to_device(d)
        m.add_index()
    dm.all_reduce(ms, op="avg")
    for m in ms:
        np.testing.assert_array_equal(torch.from_dlpack(m).cpu().numpy(), index_sum((2, 8)))


def test_all_reduce_refuses_what_it_cannot_do():
    x = torch.ones(4, device="cuda:0")
    with pytest.raises(ValueError, match="one tensor per device"):
        dm.all_reduce([x, torch.ones(4, device="cuda:0")])
    with pytest.raises(TypeError, match="NCCL has no data type"):
        dm.all_reduce([torch.ones(4, device="cuda:0", dtype=torch.bool), torch.ones(4, device=LAST, dtype=torch.bool)])
    with pytest.raises(TypeError, match="one dtype"):
        dm.all_reduce([x, torch.ones(4, device=LAST, dtype=torch.float64)])
    with pytest.raises(BufferError, match="CUDA tensors"):
        dm.all_reduce([torch.ones(4), torch.ones(4, device=LAST)])
    with pytest.raises(ValueError, match="op"):
        dm.all_reduce([x], op="median")
    with pytest.raises((BufferError, ValueError)):
        # Not contiguous row-major: NCCL moves one span.
        dm.all_reduce([torch.ones(4, 4, device="cuda:0").t(), torch.ones(4, 4, device=LAST).t()])
