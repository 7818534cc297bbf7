"""The Rust kernels behind `add_index` and `accumulate` on framework tensors on a GPU: every
dtype and rank, torch, cupy, jax and MemArray memory through both import paths on non-default
streams, negative strides, arguments the launch refuses, CUDA graph capture and replay,
torch.compile(fullgraph=True) over the torch operator, and tensors held until their kernel is done.
Skipped, with the reason, where there is no CUDA device or framework.
"""

import ctypes
import gc

import numpy as np
import pytest

import dlmd_memarray as dm
from add_index_reference import expected, index_sum
from dlpack_abi import DELETER, DLDataType, DLDevice, DLManagedTensorVersioned, capsule_new, capsule_pointer

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

# Every torch dtype a MemArray holds that numpy can check.
DTYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
          torch.uint32, torch.uint64, torch.float16, torch.float32, torch.float64, torch.complex64,
          torch.complex128]
SHAPES = [(), (7,), (5, 6), (3, 4, 5), (2, 3, 4, 5)]



@pytest.fixture(params=[True, False], ids=["table", "dlpack"])
def exchange_path(request):
    before = dm.use_exchange_api(request.param)
    yield request.param
    dm.use_exchange_api(before)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_rank_on_a_torch_side_stream(exchange_path, dtype):
    # The kernel runs on the side stream (torch's current stream through the table, the one
    # passed through __dlpack__), between two of torch's own operations there and behind a
    # sleep: the clone after it sees its writes with no synchronisation in between.
    side = torch.cuda.Stream()
    for shape in SHAPES:
        start = (torch.arange(int(np.prod(shape)), device="cuda") % 5).reshape(shape).to(dtype)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(20_000_000)
            t = start.clone()
            dm.add_index(t, stream=None if exchange_path else side.cuda_stream)
            after = t.clone()
        side.synchronize()
        want = expected(start.cpu().numpy())
        np.testing.assert_array_equal(after.cpu().numpy(), want, err_msg=f"{dtype} {shape}")


def test_bool_bytes_other_than_0_and_1_reach_the_kernel_as_bytes(exchange_path):
    # torch writes any byte into a bool tensor through a uint8 view of it. A kernel reading
    # such bytes as Rust `bool` would be undefined behaviour: `add_index` takes a bool tensor's
    # bytes as `u8` (true where not 0) and writes back 0 or 1.
    raw = torch.tensor([0, 2, 255, 0, 1, 128], dtype=torch.uint8, device="cuda")
    dm.add_index(raw.view(torch.bool))
    torch.cuda.synchronize()
    assert raw.tolist() == [0, 1, 1, 1, 1, 1]


def test_the_torch_operator_passes_torch_stream_either_way(exchange_path):
    op = dm.torch_op()
    side = torch.cuda.Stream()
    t = torch.ones((64, 48), device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        t.add_(1.0)
        op(t)
        t.mul_(2.0)
    side.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), (2.0 + index_sum((64, 48))) * 2.0)
    # An in-place operation to autograd: the version counter moves, as torch's own do.
    version = t._version
    op(t)
    assert t._version > version


def test_cupy_on_a_non_default_stream(exchange_path):
    cupy = pytest.importorskip("cupy")
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.ones((33, 17), dtype=cupy.float32)
        a += 1
        dm.add_index(a, stream=s.ptr)
        b = a * 2
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(b), (2 + index_sum((33, 17))) * 2)
    # Without a stream: cupy's current (legacy default) stream, through __dlpack__(stream=1).
    c = cupy.zeros((4, 9), dtype=cupy.int16)
    dm.add_index(c)
    np.testing.assert_array_equal(cupy.asnumpy(c), index_sum((4, 9)).astype(np.int16))


def test_jax_arrays_are_written_only_where_jax_allows(exchange_path):
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    y = jax.numpy.zeros((6, 5), dtype=jax.numpy.float32) + 1
    y.block_until_ready()
    capsule = y.__dlpack__(max_version=(1, 0), stream=1)
    versioned = b"dltensor_versioned" in repr(capsule).encode()
    read_only = False
    if versioned:
        managed = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
        read_only = bool(managed.flags & 1)
        del managed
    del capsule
    if read_only:
        with pytest.raises(BufferError, match="read-only|READ_ONLY"):
            dm.add_index(y)
        np.testing.assert_array_equal(np.asarray(y), np.ones((6, 5), np.float32), "nothing written")
    else:
        dm.add_index(y)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(np.asarray(y), 1 + index_sum((6, 5)).astype(np.float32))


def test_memarray_memory_without_waiting():
    m = dm.MemArray((64, 64), "float32")
    m.to_device()
    m.add_index()
    m.add_index()
    t = torch.from_dlpack(m)
    np.testing.assert_array_equal(t.cpu().numpy(), 2 * index_sum((64, 64)))
    del t
    # Changing the array from the host waits for the kernels that still hold it.
    m.add_index()
    m.to_host()
    np.testing.assert_array_equal(np.from_dlpack(m), 3 * index_sum((64, 64)))
    gc.collect()
    torch.cuda.synchronize()
    assert m.exports == 0


class CudaStrided:
    """A producer that exports a cupy array's memory with its strides as DLPack means them
    (signed element counts, negative ones included): the hand-made capsule of a correct
    producer, which cupy 14.2 is not (it writes negative strides as huge unsigned ones)."""

    def __init__(self, a):
        self.a = a
        self.shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        self.strides = (ctypes.c_int64 * a.ndim)(*[s // a.itemsize for s in a.strides])
        self.deleter = DELETER(lambda _: None)
        m = DLManagedTensorVersioned()
        m.major, m.minor = 1, 3
        m.deleter = self.deleter
        m.dl_tensor.data = a.data.ptr
        m.dl_tensor.device = DLDevice(2, a.device.id)
        m.dl_tensor.ndim = a.ndim
        m.dl_tensor.dtype = DLDataType(2, 32, 1)
        m.dl_tensor.shape = self.shape
        m.dl_tensor.strides = self.strides
        self.managed = m

    def __dlpack_device__(self):
        return (2, self.a.device.id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return capsule_new(ctypes.addressof(self.managed), b"dltensor_versioned", None)


@pytest.mark.parametrize("index", [(slice(None, None, -1), slice(None, None, -1)), (slice(4, None, -2),)],
                         ids=["[::-1, ::-1]", "[4::-2]"])
def test_negative_strides_on_the_device_are_written_in_place(index):
    cupy = pytest.importorskip("cupy")
    base = cupy.arange(60, dtype=cupy.float32).reshape(6, 10) if len(index) == 2 else cupy.arange(10, dtype=cupy.float32)
    view = base[index]
    before = cupy.asnumpy(view).copy()
    producer = CudaStrided(view)
    assert min(producer.strides) < 0
    dm.add_index(producer)
    cupy.cuda.Device().synchronize()
    assert dm.release_completed() == 0
    # As the CPU path writes numpy's view of the same strides.
    host = np.arange(base.size, dtype=np.float32).reshape(base.shape)
    dm.add_index(host[index])
    np.testing.assert_array_equal(cupy.asnumpy(view), before + index_sum(before.shape))
    np.testing.assert_array_equal(cupy.asnumpy(base), host)


def test_the_same_tensor_twice_and_overlapping_views_are_refused(exchange_path):
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    for out, x in [(t, t), (t[:6], t[2:]), (t[::2], t[::2])]:
        with pytest.raises(BufferError, match="cannot launch `accumulate_1`"):
            dm.accumulate(out, x)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8), "nothing written")
    # Interleaved views share their span: refused too, though no element is shared.
    with pytest.raises(BufferError, match="cannot launch `accumulate_1`"):
        dm.accumulate(t[::2], t[1::2])
    # Disjoint halves of one tensor are two arguments.
    dm.accumulate(t[:4], t[4:])
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), [4, 6, 8, 10, 4, 5, 6, 7])


def test_an_expanded_tensor_is_refused_where_written_and_read_where_read(exchange_path):
    base = torch.arange(4, dtype=torch.float32, device="cuda")
    e = base.expand(3, 4)
    with pytest.raises(BufferError, match="several indices to one element"):
        dm.add_index(e)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(base.cpu().numpy(), np.arange(4), "nothing written")
    out = torch.zeros((3, 4), device="cuda")
    dm.accumulate(out, e)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), np.broadcast_to(np.arange(4), (3, 4)))


def test_the_torch_operator_is_captured_in_a_cuda_graph_and_replayed():
    op = dm.torch_op()
    t = torch.zeros((8, 8), device="cuda")
    op(t)  # outside the capture first: the module is loaded once
    torch.cuda.synchronize()
    t.zero_()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        op(t)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), np.zeros((8, 8)), "captured, not run")
    for replays in (1, 2, 3):
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(t.cpu().numpy(), replays * index_sum((8, 8)))


def test_torch_compile_fullgraph_includes_the_torch_operator():
    op = dm.torch_op()
    assert torch.ops.dlmd.add_index is not None

    @torch.compile(fullgraph=True)
    def f(x):
        y = x * 2
        op(y)
        return y + 1

    x = torch.ones((16, 12), device="cuda")
    out = f(x)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), 2 + index_sum((16, 12)) + 1)
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones((16, 12)), "the input is untouched")


def test_a_tensor_released_right_after_the_call_is_held_until_the_kernel_is_done():
    n = 1 << 22
    t = torch.ones(n, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # about a second: the kernel queues behind this
    dm.add_index(t)
    address = t.data_ptr()
    del t
    # The launch holds the tensor: its memory is not torch's to hand out again yet.
    assert dm.release_completed() >= 1
    u = torch.empty(n, device="cuda")
    assert u.data_ptr() != address, "torch reused memory a queued kernel still writes"
    torch.cuda.synchronize()
    assert dm.release_completed() == 0
    v = torch.empty(n, device="cuda")
    del u, v


def test_a_cupy_block_returns_to_its_pool_once_the_kernel_is_done_with_no_further_call():
    # As cupy's own DLPack deleter tests check: once the consumer is done with the memory, the
    # block is back in cupy's pool, here without another dlmd call to let go of it.
    cupy = pytest.importorskip("cupy")
    pool = cupy.get_default_memory_pool()
    cupy.cuda.Device().synchronize()
    before = pool.used_bytes()
    a = cupy.ones(1 << 22, dtype=cupy.float32)
    assert pool.used_bytes() > before
    dm.add_index(a)
    del a
    gc.collect()
    cupy.cuda.Device().synchronize()
    # The kernel is done, and dlmd's releasing thread lets go of the tensor by itself; this
    # only waits for that thread (with the GIL released: cupy's deleter takes it), releasing
    # nothing itself.
    dm.wait_released()
    assert pool.used_bytes() == before


def test_a_tensor_captured_in_a_cuda_graph_is_kept_while_the_graph_lives():
    n = 1 << 20
    t = torch.zeros(n, device="cuda")
    address = t.data_ptr()
    dm.add_index(t)  # warm up: the module is loaded outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dm.add_index(t)
    del t
    gc.collect()
    # The graph still writes the memory on each replay: torch must not hand it out again.
    u = torch.empty(n, device="cuda")
    assert u.data_ptr() != address, "torch reused memory a captured kernel writes"
    g.replay()
    torch.cuda.synchronize()
    del u, g
