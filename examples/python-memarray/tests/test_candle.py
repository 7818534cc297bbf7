"""candle between Python frameworks: a numpy array (or torch tensor) goes into candle through
DLPack, candle computes a softmax, and the result comes back as a CandleTensor that numpy and torch
read without a copy, read-only. On CUDA (a build with the `candle-cuda` feature, a GPU and torch)
the same runs on the device and is checked against torch.softmax.
"""

import gc

import numpy as np
import pytest

import dlmd_memarray as dm

if not hasattr(dm, "candle_softmax"):  # pragma: no cover - a build without the candle feature
    pytest.skip("dlmd_memarray was built without the candle feature", allow_module_level=True)


def softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_through_candle_and_back(dtype):
    a = np.random.default_rng(1).standard_normal((5, 7)).astype(dtype)
    t = dm.candle_softmax(a)
    assert t.shape == [5, 7]
    assert t.__dlpack_device__() == (1, 0)
    out = np.from_dlpack(t)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out, softmax(a), rtol=1e-5 if dtype == "float32" else 1e-12)
    # The consumer reads candle's own storage, which candle may share: read-only.
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[0, 0] = 1.0


def test_strided_numpy_arrays_are_copied_in_order():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (a.T, a[:, ::2], a[::-1], np.asfortranarray(a)):
        out = np.from_dlpack(dm.candle_import(view))
        np.testing.assert_array_equal(out, view)


@pytest.mark.parametrize("dtype", ["uint8", "uint32", "int16", "int32", "int64", "float16", "float32", "float64"])
def test_every_numpy_dtype_candle_has(dtype):
    a = (np.arange(12) % 7).astype(dtype).reshape(3, 4)
    t = dm.candle_import(a)
    assert t.shape == [3, 4]
    np.testing.assert_array_equal(np.from_dlpack(t), a)


def test_dtypes_candle_lacks_are_refused():
    for a in (np.zeros(3, dtype=bool), np.zeros(3, dtype=np.int8), np.zeros(3, dtype=np.complex64)):
        with pytest.raises(BufferError, match="no candle dtype"):
            dm.candle_import(a)


def test_a_candle_tensor_comes_back_as_itself():
    t = dm.candle_softmax(np.ones((2, 3), dtype=np.float32))
    back = dm.candle_import(t)
    assert back.tensor_id == t.tensor_id
    assert dm.candle_import_batch([t] * 10) == 10


def test_the_export_keeps_candle_alive():
    out = np.from_dlpack(dm.candle_softmax(np.zeros((3, 4), dtype=np.float32)))
    gc.collect()
    np.testing.assert_allclose(out, np.full((3, 4), 0.25, dtype=np.float32))


def test_torch_on_the_cpu():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 9)
    out = torch.from_dlpack(dm.candle_softmax(x))
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))


def cuda_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    try:
        dm.candle_import(torch.zeros(1, device="cuda"))
    except BufferError as e:
        if "candle here takes CPU memory, not" not in str(e):
            raise
        pytest.skip(f"this build takes no CUDA tensors into candle: {e}")
    return torch


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_torch_through_candle_and_back_on_cuda(dtype):
    torch = cuda_or_skip()
    x = torch.randn(64, 1000, device="cuda").to(getattr(torch, dtype))
    t = dm.candle_softmax(x)
    assert t.__dlpack_device__() == (2, 0)
    out = torch.from_dlpack(t)
    assert out.is_cuda and out.dtype == x.dtype
    tol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 2e-2)
    torch.testing.assert_close(out, torch.softmax(x, dim=-1), rtol=tol, atol=tol)


def test_cuda_tensors_of_every_integer_dtype_copy_exactly():
    torch = cuda_or_skip()
    for dtype in (torch.uint8, torch.int16, torch.int32, torch.int64, torch.uint32):
        x = (torch.arange(1000, device="cuda") % 251).to(dtype).reshape(10, 100)
        t = dm.candle_import(x)
        assert torch.equal(torch.from_dlpack(t), x)


def test_non_contiguous_cuda_tensors_are_refused_with_the_fix():
    torch = cuda_or_skip()
    x = torch.randn(8, 8, device="cuda").t()
    with pytest.raises(BufferError, match="contiguous"):
        dm.candle_import(x)
    assert dm.candle_import(x.contiguous()).shape == [8, 8]


def test_writes_made_on_torchs_stream_are_seen_by_candle():
    torch = cuda_or_skip()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.zeros(4096, 4096, device="cuda")
        x += 3.0
        t = dm.candle_import(x)
    assert torch.from_dlpack(t).eq(3.0).all()
