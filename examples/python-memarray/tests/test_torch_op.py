"""The torch operator ``dlmd::add_index``, whose kernels are Rust, called by torch's dispatcher
with no Python in the call: every dtype and rank on the CPU and on CUDA (torch's current
stream, behind a sleep on a side stream), strided tensors, the version counter, and the calls it
refuses with a ``RuntimeError`` naming it. (``test_kernels.py`` checks it under
``torch.compile(fullgraph=True)`` and in a CUDA graph.) Skipped where torch is missing.
"""

import numpy as np
import pytest

import dlmd_memarray as dm
from add_index_reference import expected, index_sum

torch = pytest.importorskip("torch")

DTYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
          torch.uint32, torch.uint64, torch.float16, torch.float32, torch.float64, torch.complex64,
          torch.complex128]
SHAPES = [(), (7,), (5, 6), (3, 4, 5), (2, 3, 4, 5)]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])



@pytest.fixture(scope="module")
def op():
    dm.torch_op()  # registers the operators
    return torch.ops.dlmd.add_index


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_rank(op, device, dtype):
    side = torch.cuda.Stream() if device == "cuda" else None
    for shape in SHAPES:
        start = (torch.arange(int(np.prod(shape)), device=device) % 5).reshape(shape).to(dtype)
        t = start.clone()
        if side is not None:
            torch.cuda.synchronize()
            with torch.cuda.stream(side):
                torch.cuda._sleep(20_000_000)
                t = start.clone()
                op(t)
                after = t.clone()
            side.synchronize()
        else:
            op(t)
            after = t
        np.testing.assert_array_equal(after.cpu().numpy(), expected(start.cpu().numpy()), err_msg=f"{dtype} {shape}")


@pytest.mark.parametrize("device", DEVICES)
def test_strided_tensors_are_written_where_they_are(op, device):
    base = torch.zeros((6, 8), device=device)
    view = base.t()[::2]  # (4, 6), strides (2, 8): every other column of base
    op(view)
    want = np.zeros((6, 8), dtype=np.float32)
    want.T[::2] = index_sum((4, 6))
    np.testing.assert_array_equal(base.cpu().numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_the_version_counter_moves_and_autograd_sees_the_change(op, device):
    t = torch.ones(5, device=device)
    before = t._version
    op(t)
    assert t._version == before + 1
    # A tensor saved for backward and then changed: autograd refuses the backward pass, as it
    # does after torch's own in-place operations.
    w = torch.ones(5, device=device, requires_grad=True)
    u = torch.ones(5, device=device)
    y = (w * u).sum()
    op(u)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("device", DEVICES)
def test_refusals_are_runtime_errors_naming_the_operator(op, device):
    t = torch.zeros((1, 1, 1, 1, 1), device=device)
    with pytest.raises(RuntimeError, match="add_index: .*rank 5"):
        op(t)
    with pytest.raises(RuntimeError, match="add_index: .*bfloat16"):
        op(torch.zeros(3, dtype=torch.bfloat16, device=device))
    with torch.inference_mode():
        frozen = torch.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="[Ii]nference"):
        op(frozen)
    np.testing.assert_array_equal(frozen.cpu().numpy(), np.zeros(3))
    with pytest.raises(RuntimeError):
        op(torch.zeros(3, device=device), torch.zeros(3, device=device))
    # The process goes on: the operator still works after each refusal.
    t = torch.zeros(4, device=device)
    op(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(4))


def test_a_cuda_tensor_of_another_device_index_than_the_current_one():
    if torch.cuda.device_count() < 2:
        pytest.skip("one CUDA device")
    dm.torch_op()
    t = torch.zeros(8, device="cuda:1")
    torch.ops.dlmd.add_index(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8))
