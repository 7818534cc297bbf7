"""MemArray on a GPU against PyTorch, CuPy and JAX: exchanges both ways on CUDA, writes seen on
both sides, every dtype each framework has, producer stream rules, a tensor made on a
non-default stream. Skipped, with the reason, where there is no CUDA device or framework.
"""

import gc

import numpy as np
import pytest

import dlmd_memarray as dm
from add_index_reference import expected, index_sum

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

try:
    dm.MemArray((1,), "float32").to_device()
except BufferError as e:  # pragma: no cover - only without a driver
    pytest.skip(f"dlmd sees no GPU: {e}", allow_module_level=True)

GPU_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
              "float64", "complex64", "complex128"]



def released(m):
    gc.collect()
    torch.cuda.synchronize()
    return m.exports == 0


@pytest.mark.parametrize("dtype", GPU_DTYPES)
def test_memarray_to_torch_on_cuda(dtype):
    m = dm.MemArray((3, 4, 5), dtype)
    m.to_device()
    assert m.__dlpack_device__() == (2, 0)
    m.add_index()
    t = torch.from_dlpack(m)
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), expected(np.zeros((3, 4, 5), dtype)))


def test_torch_writes_show_up_in_the_memarray():
    m = dm.MemArray((4, 4), "float32")
    m.to_device()
    t = torch.from_dlpack(m)
    t += 2.0
    del t
    assert released(m)
    m.to_host()
    np.testing.assert_array_equal(np.from_dlpack(m), np.full((4, 4), 2.0, np.float32))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                                   torch.float32, torch.float64, torch.bool])
def test_rust_writes_into_torch_cuda_tensors(dtype):
    x = torch.zeros((5, 6), dtype=dtype, device="cuda")
    dm.add_index(x)
    np.testing.assert_array_equal(x.cpu().numpy(), expected(np.zeros((5, 6), x.cpu().numpy().dtype)))


def test_rust_writes_into_strided_torch_views():
    base = torch.zeros((6, 8), dtype=torch.float32, device="cuda")
    view = base.t()[::2]
    dm.add_index(view)
    np.testing.assert_array_equal(view.cpu().numpy(), index_sum((4, 6)).astype(np.float32))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2,
                                   torch.complex64, torch.complex128, torch.uint16, torch.uint32, torch.uint64])
def test_every_torch_dtype_imports(dtype):
    x = torch.zeros((2, 3), device="cuda").to(dtype)
    assert dm.import_tensor(x) == 2


def test_tensor_made_on_a_non_default_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.arange(4096, dtype=torch.float32, device="cuda") * 2
    dm.add_index(x)
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(4096, dtype=np.float32) * 3)


def test_producer_stream_rules():
    m = dm.MemArray((8,), "float32")
    m.to_device()
    with pytest.raises(BufferError, match="stream=0"):
        m.__dlpack__(stream=0)
    # A stream handle of the consumer's own (torch's default stream has handle 0, which the
    # array API reserves; torch itself passes 1 for it).
    other = torch.cuda.Stream()
    for stream in (None, 1, 2, -1, other.cuda_stream):
        m.__dlpack__(stream=stream, max_version=(1, 3))
    with pytest.raises(BufferError):
        m.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="copy=True"):
        m.__dlpack__(copy=True)
    assert released(m)


def test_memarray_stays_alive_for_torch():
    m = dm.MemArray((1000,), "float64")
    m.to_device()
    m.add_index()
    t = torch.from_dlpack(m)
    del m
    gc.collect()
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(1000.0))


def test_cupy_both_ways():
    cupy = pytest.importorskip("cupy")
    m = dm.MemArray((3, 5), "int32")
    m.to_device()
    m.add_index()
    c = cupy.from_dlpack(m)
    np.testing.assert_array_equal(cupy.asnumpy(c), index_sum((3, 5)).astype(np.int32))
    c += 1
    del c
    assert released(m)
    m.to_host()
    np.testing.assert_array_equal(np.from_dlpack(m), index_sum((3, 5)).astype(np.int32) + 1)
    z = cupy.zeros((4, 4), dtype=cupy.float32)
    dm.add_index(z)
    np.testing.assert_array_equal(cupy.asnumpy(z), index_sum((4, 4)).astype(np.float32))


def test_jax_reads_a_memarray():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    m = dm.MemArray((2, 3), "float32")
    m.to_device()
    m.add_index()
    j = jax.dlpack.from_dlpack(m)
    np.testing.assert_array_equal(np.asarray(j), index_sum((2, 3)).astype(np.float32))
    y = jax.numpy.zeros((3, 3), dtype=jax.numpy.float32) + 1
    assert dm.import_tensor(y) == 2


def test_managed_memory_from_cupy():
    cupy = pytest.importorskip("cupy")
    pool = cupy.cuda.MemoryPool(cupy.cuda.malloc_managed)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(pool.malloc)
    try:
        z = cupy.zeros((3, 4), dtype=cupy.float64)
        dm.add_index(z)
        np.testing.assert_array_equal(cupy.asnumpy(z), index_sum((3, 4)).astype(np.float64))
    finally:
        cupy.cuda.set_allocator(previous)


def test_memarray_from_dlpack_waits_for_cupy_managed_writes():
    """A copy on the host of a cupy managed array holds a write cupy still has queued."""
    cupy = pytest.importorskip("cupy")
    pool = cupy.cuda.MemoryPool(cupy.cuda.malloc_managed)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(pool.malloc)
    spin = cupy.RawKernel(
        r"""extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) {}
        }""",
        "spin",
    )
    n = 1 << 20
    try:
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            for round in range(3):
                z = cupy.zeros(n, dtype=cupy.float32)
                stream.synchronize()
                spin((1,), (1,), (cupy.int64(100_000_000),))  # keeps the write below queued
                z += round + 1
                m = dm.MemArray.from_dlpack(z)
                got = np.from_dlpack(m)
                stale = int((got != round + 1).sum())
                assert stale == 0, f"round {round}: {stale} of {n} values stale"
    finally:
        cupy.cuda.set_allocator(previous)


def test_every_cupy_dtype_imports():
    cupy = pytest.importorskip("cupy")
    for dtype in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "float16", "float32", "float64", "complex64", "complex128"]:
        assert dm.import_tensor(cupy.zeros((2, 2), dtype=dtype)) == 2, dtype


def test_every_jax_dtype_imports():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    for dtype in [jnp.bool_, jnp.int8, jnp.int16, jnp.int32, jnp.uint8, jnp.uint16, jnp.uint32,
                  jnp.float16, jnp.bfloat16, jnp.float32, jnp.complex64]:
        assert dm.import_tensor(jnp.zeros((2, 3), dtype=dtype)) == 2, dtype


def test_stream_integers_that_are_not_streams_are_errors():
    """An integer that is no stream must be an error, not a crash: run in a child process so
    that a crash fails this test instead of ending the run."""
    import subprocess
    import sys

    code = """
import dlmd_memarray as dm
m = dm.MemArray((4,), "float32"); m.to_device()
for bad in (3, 4097, 1 << 60, 0x10000, 0x100000000000):
    try:
        m.__dlpack__(stream=bad, max_version=(1, 3))
    except BufferError as e:
        print("refused", hex(bad), e)
    else:
        print("ACCEPTED", hex(bad))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    print(run.stdout, run.stderr)
    assert run.returncode == 0, f"the producer crashed (exit {run.returncode}): {run.stderr[-2000:]}"
    assert "ACCEPTED" not in run.stdout
    assert run.stdout.count("refused") == 5


def test_stream_true_is_refused_on_cuda():
    m = dm.MemArray((4,), "float32")
    m.to_device()
    with pytest.raises(TypeError, match="not a bool"):
        m.__dlpack__(stream=True)


# ---- DLPack's C exchange table on the GPU: torch's (native) and MemArray's ----


class NoDlpackTensor(torch.Tensor):
    """A torch tensor whose __dlpack__ refuses: importable only through torch's C table."""

    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("__dlpack__ called: the exchange table was not used")


def test_torch_publishes_the_c_exchange_table():
    assert type(torch.Tensor.__dlpack_c_exchange_api__).__name__ == "PyCapsule"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_dlmd_imports_torch_tensors_through_torch_table(device):
    t = torch.zeros((3, 4), dtype=torch.float32, device=device).as_subclass(NoDlpackTensor)
    assert dm.import_tensor(t) == 2
    assert dm.borrow_tensor(t) == 2
    dm.add_index(t)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(torch.Tensor.cpu(t).numpy(), index_sum((3, 4)))


def test_add_index_runs_on_torch_current_stream():
    # The kernel is queued on torch's current stream (the table's current_work_stream) without
    # waiting: work queued after it on that stream sees its result, with no synchronisation.
    side = torch.cuda.Stream()
    t = torch.zeros((256, 256), device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keep the stream busy: a kernel elsewhere would run first
        t.add_(1.0)
        dm.add_index(t)
        t.mul_(2.0)
    side.synchronize()
    want = (1.0 + index_sum((256, 256))) * 2.0
    np.testing.assert_array_equal(t.cpu().numpy(), want)


def test_add_index_is_captured_in_a_torch_cuda_graph():
    t = torch.zeros((8, 8), device="cuda")
    dm.add_index(t)  # warm up: compile the kernel outside the capture
    torch.cuda.synchronize()
    t.zero_()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dm.add_index(t)
    # Captured, not run: the graph runs it on each replay.
    for replays in (1, 2, 3):
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(t.cpu().numpy(), replays * index_sum((8, 8)))


def test_torch_reads_a_memarray_inside_a_cuda_graph_capture():
    m = dm.MemArray((8, 8), "float32")
    m.to_device()
    m.add_index()
    torch.cuda.synchronize()
    out = torch.zeros((8, 8), device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        t = torch.from_dlpack(m)
        out.copy_(t * 2.0)
    g.replay()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), 2.0 * index_sum((8, 8)))
    del t
    assert released(m)


def test_memarray_export_under_capture_with_work_in_flight_is_a_clear_error():
    m = dm.MemArray((1024, 1024), "float32")
    m.to_device()
    capture = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(BufferError, match="capturing a CUDA graph"):
        with torch.cuda.graph(g, stream=capture, capture_error_mode="relaxed"):
            # Work in flight on MemArray's stream (the legacy default stream), queued during
            # the capture (torch synchronises the device when a capture begins).
            with torch.cuda.stream(torch.cuda.default_stream()):
                torch.cuda._sleep(500_000_000)
            m.__dlpack__(stream=capture.cuda_stream, max_version=(1, 0))
    torch.cuda.synchronize()


def test_tvm_ffi_takes_a_cuda_memarray_through_its_table(monkeypatch):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    m = dm.MemArray((4, 3), "float32")
    m.to_device()
    m.add_index()

    def no_dlpack(self, **kwargs):
        raise AssertionError("__dlpack__ called: the exchange table was not used")

    monkeypatch.setattr(dm.MemArray, "__dlpack__", no_dlpack)
    t = tvm_ffi.from_dlpack(m)
    monkeypatch.undo()
    assert t.__dlpack_device__() == (2, 0)
    back = torch.from_dlpack(t)
    np.testing.assert_array_equal(back.cpu().numpy(), index_sum((4, 3)))
    del t, back
    assert released(m)


# ---- packed FP4 pairs: torch's float4_e2m1fn_x2 ----


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_torch_float4_e2m1fn_x2_round_trips(device):
    raw = torch.arange(256, dtype=torch.uint8).reshape(16, 16)
    t = raw.view(torch.float4_e2m1fn_x2).to(device)
    m = dm.MemArray.from_dlpack(t.cpu())
    assert (m.dtype, m.shape) == ("float4_e2m1fn_x2", [16, 16])
    if device == "cuda":
        m.to_device()
    back = torch.from_dlpack(m)
    assert back.dtype == torch.float4_e2m1fn_x2 and back.device.type == device
    assert torch.equal(back.view(torch.uint8).cpu(), raw)
    del back
    assert released(m)


@pytest.fixture(params=[True, False], ids=["table", "dlpack"])
def exchange_path(request):
    """Runs a test with the C exchange table on (torch's table) and off (`__dlpack__`)."""
    before = dm.use_exchange_api(request.param)
    yield request.param
    dm.use_exchange_api(before)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_tensors_that_require_grad_are_not_written_either_way(exchange_path, device):
    t = torch.zeros(3, 4, device=device, requires_grad=True)
    # torch's __dlpack__ refuses it; the table path refuses the write the same way.
    with pytest.raises(BufferError, match="grad"):
        dm.add_index(t)
    torch.cuda.synchronize()
    assert not t.detach().any(), "written behind autograd's back"
    if exchange_path:
        # Reading through the table stays allowed, as tvm-ffi's consumers read it.
        assert dm.import_tensor(t) == 2
    d = t.detach()
    dm.add_index(d)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.detach().cpu().numpy(), index_sum((3, 4)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_rank_0_cuda_tensors_as_on_the_cpu(exchange_path, dtype):
    for device in ["cpu", "cuda"]:
        t = torch.ones((), dtype=dtype, device=device)
        dm.add_index(t)
        torch.cuda.synchronize()
        assert t.item() == 1, device
    m = dm.MemArray((), "float32")
    m.to_device()
    m.add_index()
    assert torch.from_dlpack(m).item() == 0


def math_bit_views(device):
    """torch's lazily negated and conjugated views, with the bit each has."""
    x = torch.arange(12, dtype=torch.float32, device=device).reshape(3, 4)
    z = torch.complex(x, x + 100)
    return [
        ("negative", torch._neg_view(x)),
        ("negative", z.conj().imag),
        ("conjugate", z.conj()),
    ]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_negative_and_conjugate_bits_are_refused_either_way(exchange_path, device):
    for bit, view in math_bit_views(device):
        assert view.is_neg() or view.is_conj()
        before = view.resolve_neg().resolve_conj().clone()
        with pytest.raises(BufferError, match=f"{bit} bit set"):
            dm.add_index(view)
        with pytest.raises(BufferError, match=f"{bit} bit set"):
            dm.MemArray.from_dlpack(view)
        with pytest.raises(BufferError, match=f"{bit} bit set"):
            dm.import_tensor(view)
        with pytest.raises(BufferError, match=f"{bit} bit set"):
            dm.borrow_tensor(view)
        torch.cuda.synchronize()
        assert torch.equal(view.resolve_neg().resolve_conj(), before), "nothing written"
        # Resolved, the same values are read and written as torch reads them.
        resolved = view.resolve_neg().resolve_conj()
        if not resolved.is_complex():
            dm.add_index(resolved)
            torch.cuda.synchronize()
            expected = before.cpu().numpy() + index_sum(tuple(before.shape))
            np.testing.assert_array_equal(resolved.cpu().numpy(), expected)
        copied = dm.MemArray.from_dlpack(resolved.cpu())
        np.testing.assert_array_equal(np.from_dlpack(copied), resolved.cpu().numpy())


@pytest.mark.parametrize(
    "dtype",
    # Every dtype the GPU add_index handles that torch multiplies on the GPU.
    [torch.float16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
     torch.complex64, torch.complex128],
)
def test_add_index_follows_work_still_pending_on_torch_stream(exchange_path, dtype):
    # The tensor's last write is still queued on torch's current stream (behind a sleep) when
    # add_index imports it. Through the table the kernel runs on that stream; through
    # __dlpack__ the producer is told the stream the kernel runs on (torch 2.10 and later do
    # nothing for a missing `stream`), so either way the kernel sees the write: 3 + index,
    # never (1 + index) * 3.
    side = torch.cuda.Stream()
    t = torch.ones((16, 32), dtype=dtype, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        t.mul_(3)
        dm.add_index(t)
    torch.cuda.synchronize()
    want = 3 + index_sum((16, 32))
    np.testing.assert_array_equal(t.cpu().numpy().astype(np.complex128), want.astype(np.complex128))


def test_a_reversed_cupy_array_as_cupy_14_2_exports_it_names_the_stride():
    # cupy 14.2 divides the byte stride by an unsigned item size (cupy#10172): a[::-1] of 8 f32s
    # arrives with stride 4611686018427387903 where -1 was meant. Refused, naming the dimension,
    # the stride and what it looks like.
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(8, dtype=cupy.float32)[::-1]
    capsule = a.__dlpack__(max_version=(1, 0), stream=1)
    from dlpack_abi import DLManagedTensorVersioned, capsule_pointer

    managed = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
    exported = managed.dl_tensor.strides[0]
    del managed, capsule
    if exported != -1:
        assert exported == 4611686018427387903, exported
        with pytest.raises(BufferError, match="stride 4611686018427387903 of dimension 0 .extent 8.") as e:
            dm.add_index(a)
        assert "a stride of -1 elements whose byte stride (-4)" in str(e.value)
        np.testing.assert_array_equal(cupy.asnumpy(a), np.arange(8, dtype=np.float32)[::-1], "nothing written")
    else:
        # A cupy that exports -1 as DLPack means it: written in place as the CPU path writes.
        dm.add_index(a)
        cupy.cuda.Device().synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(a), np.arange(8, dtype=np.float32)[::-1] + np.arange(8))
