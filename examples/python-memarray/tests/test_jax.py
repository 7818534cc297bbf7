"""``add_index`` inside ``jax.jit``: the Rust XLA FFI handlers (``dlmd::xla``) on XLA's CPU
backend, and on its CUDA backend where JAX has a GPU. Every dtype and rank against numpy, under
``jit``, ``vmap`` (nested too) and ``grad``; calls the handlers refuse, each raised by JAX with
the handler's message; on CUDA, XLA's stream, command buffers, and no host wait.
"""

import numpy as np
import pytest

import dlmd_memarray as dm

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

add_index = dm.jax_add_index()

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (5,), (2, 3), (2, 3, 4), (2, 1, 3, 2)]


def gpus():
    try:
        return jax.devices("cuda")
    except RuntimeError:
        return []


PLATFORMS = ["cpu"] + (["cuda"] if gpus() else [])


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    values = rng.integers(0, 100, size=shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.integers(0, 100, size=shape)
    return np.asarray(values).astype(dtype)


def expected(a, batch_dims=0):
    """``a`` plus each element's index sum, leaving out its first ``batch_dims`` indices."""
    shape = a.shape
    sums = np.indices(shape)[batch_dims:].sum(axis=0) if len(shape) > batch_dims else np.zeros(shape, int)
    if a.dtype == bool:
        return a | (sums != 0)
    if a.dtype.kind == "c":
        return a + sums.astype(a.real.dtype)
    return (a + sums.astype(a.dtype)).astype(a.dtype)


def on(platform, a):
    return jax.device_put(a, jax.devices(platform)[0])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_rank_inside_jit(platform, dtype):
    f = jax.jit(add_index)
    for shape in SHAPES:
        a = sample(shape, dtype)
        y = f(on(platform, a))
        assert y.dtype == a.dtype and y.shape == a.shape
        assert y.devices() == {jax.devices(platform)[0]}
        np.testing.assert_array_equal(np.asarray(y), expected(a))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_outside_jit_and_the_argument_left_unchanged(platform):
    a = sample((3, 4), "float32")
    x = on(platform, a)
    y = add_index(x)
    np.testing.assert_array_equal(np.asarray(y), expected(a))
    # The call writes a copy where the argument is still used: `x` keeps its values.
    np.testing.assert_array_equal(np.asarray(x), a)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vmap_is_one_call_over_the_batch(platform):
    a = sample((4, 3, 5), "float32")
    f = jax.jit(jax.vmap(add_index))
    np.testing.assert_array_equal(np.asarray(f(on(platform, a))), expected(a, batch_dims=1))
    # The batch is one custom call with one more batch dimension, not a loop.
    text = f.lower(on(platform, a)).as_text()
    assert text.count("dlmd_add_index") == 1 and "batch_dims = 1" in text
    # Nested, and along another axis.
    b = sample((2, 3, 4, 2), "int32")
    g = jax.jit(jax.vmap(jax.vmap(add_index)))
    np.testing.assert_array_equal(np.asarray(g(on(platform, b))), expected(b, batch_dims=2))
    h = jax.jit(jax.vmap(add_index, in_axes=1, out_axes=1))
    moved = np.moveaxis(expected(np.moveaxis(a, 1, 0), batch_dims=1), 0, 1)
    np.testing.assert_array_equal(np.asarray(h(on(platform, a))), moved)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_grad_and_vjp(platform):
    a = sample((3, 4), "float32")
    x = on(platform, a)
    g = jax.jit(jax.grad(lambda x: (add_index(x) * x).sum()))(x)
    # d/dx Σ (x + c)·x = 2x + c.
    np.testing.assert_allclose(np.asarray(g), 2 * a + (expected(a) - a))
    y, vjp = jax.vjp(add_index, x)
    (ct,) = vjp(jnp.ones_like(y))
    np.testing.assert_array_equal(np.asarray(ct), np.ones_like(a))
    # Gradients of a batch.
    gb = jax.jit(jax.vmap(jax.grad(lambda x: add_index(x).sum())))(on(platform, sample((2, 3), "float32")))
    np.testing.assert_array_equal(np.asarray(gb), np.ones((2, 3), np.float32))


def call(x, *, result=None, aliased=True, **attributes):
    """The custom call itself, as a caller that gets it wrong would make it."""
    result = result if result is not None else jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.ffi.ffi_call(
        "dlmd_add_index", result, input_output_aliases={0: 0} if aliased else None
    )(x, **attributes)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_malformed_calls_are_refused_by_name(platform):
    x = sample((2, 3), "float32")
    refused = [
        (lambda x: call(x), x, "the call has no attribute `batch_dims`"),
        (lambda x: call(x, batch_dims=np.float32(1)), x,
         "attribute `batch_dims` is a scalar of F32, and the handler takes a scalar of S64"),
        (lambda x: call(x, batch_dims=np.int64(3)), x, "batch_dims is 3, and x has rank 2"),
        (lambda x: call(x, batch_dims=np.int64(-1)), x, "batch_dims is -1"),
        (lambda x: call(x, result=jax.ShapeDtypeStruct((3, 2), x.dtype), aliased=False, batch_dims=np.int64(0)), x,
         "add_index returns its argument's shape and type"),
        (lambda x: call(x, batch_dims=np.int64(0)), np.zeros((1, 1, 1, 1, 2), np.float32), "(ranks 0 to 4"),
        (lambda x: call(x, batch_dims=np.int64(0)), np.zeros(4, jnp.int4), "S4, which has no DLPack element type"),
        # (The host handler and the CUDA kernels' dispatch each name the type their way.)
        (lambda x: call(x, batch_dims=np.int64(0)), np.zeros(4, jnp.float8_e4m3fn), "float8_e4m3fn"),
    ]
    for run, a, message in refused:
        # The argument, committed to the platform's device, puts the call there.
        with pytest.raises(Exception, match="INVALID_ARGUMENT") as e:
            np.asarray(jax.jit(run)(on(platform, a)))
        assert message in str(e.value), (message, str(e.value))
        assert "RuntimeError" in type(e.value).__name__


@pytest.mark.parametrize("dtype", ["int16", "bool"])
def test_without_aliasing_the_host_handler_writes_its_result(dtype):
    # A result XLA does not alias holds whatever was there: `bool` results are written as bytes.
    a = sample((2, 3), dtype)
    y = jax.jit(lambda x: call(x, aliased=False, batch_dims=np.int64(0)))(on("cpu", a))
    np.testing.assert_array_equal(np.asarray(y), expected(a))


@pytest.mark.skipif(not gpus(), reason="no CUDA device for JAX")
def test_on_cuda_the_kernel_runs_in_place_on_xla_s_stream():
    a = sample((64, 128), "float32")
    x = on("cuda", a)
    # Without the alias the CUDA handler refuses: it writes the argument's buffer.
    with pytest.raises(Exception, match="runs in place on CUDA"):
        np.asarray(jax.jit(lambda x: call(x, aliased=False, batch_dims=np.int64(0)))(x))
    # A donated argument is written in place: no copy before the kernel.
    f = jax.jit(add_index, donate_argnums=0)
    y = f(on("cuda", a))
    np.testing.assert_array_equal(np.asarray(y), expected(a))
    # Many calls in one program, after XLA's own work on the same stream: each sees the last.
    g = jax.jit(lambda x: add_index(add_index(x * 2) + 1))
    np.testing.assert_array_equal(np.asarray(g(x)), expected(expected(a * 2) + 1))
    for _ in range(20):
        np.testing.assert_array_equal(np.asarray(g(x)), expected(expected(a * 2) + 1))



@pytest.mark.skipif(not gpus(), reason="no CUDA device for JAX")
def test_back_to_back_programs_over_buffers_xla_reuses_see_every_launch():
    # The CUDA handler's launches hold nothing and record nothing: XLA keeps a call's buffers
    # for the work queued on its stream and reuses them after it. Eight programs queued without
    # a wait, each donating the last one's result and looping over the kernel, 16 MiB a buffer.
    shape = (2048, 2048)
    step = jax.jit(lambda x: jax.lax.fori_loop(0, 5, lambda _, y: add_index(y) + 1.0, x), donate_argnums=0)
    x = on("cuda", np.zeros(shape, np.float32))
    for _ in range(8):
        x = step(x)
    sums = np.indices(shape).sum(axis=0)
    np.testing.assert_array_equal(np.asarray(x), (40 * (sums + 1)).astype(np.float32))

COMMAND_BUFFER = """
import numpy as np, jax, jax.numpy as jnp
import dlmd_memarray as dm
add_index = dm.jax_add_index()
# Enough work around the custom call for XLA to put the program into one command buffer.
f = jax.jit(lambda x: add_index(add_index(x * 2 + 1) * 3 - 1) + 5)
a = np.arange(4096, dtype=np.float32).reshape(64, 64)
x = jax.device_put(a, jax.devices("cuda")[0])
s = np.indices(a.shape).sum(axis=0).astype(np.float32)
want = ((a * 2 + 1 + s) * 3 - 1 + s) + 5
for _ in range(30):
    np.testing.assert_array_equal(np.asarray(f(x)), want)
print(dm.xla_cuda_calls())
"""


@pytest.mark.skipif(not gpus(), reason="no CUDA device for JAX")
def test_in_a_command_buffer_xla_replays_the_kernel_without_the_handler():
    import os
    import subprocess
    import sys

    flags = "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
    env = dict(os.environ, XLA_FLAGS=flags)
    ran = subprocess.run([sys.executable, "-c", COMMAND_BUFFER], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    calls = int(ran.stdout.split()[-1])
    # 30 runs of a program with two calls: captured once (a call per custom call, perhaps a
    # few more where XLA captures again), then replayed without calling the handler.
    assert 2 <= calls < 30, (calls, ran.stderr[-2000:])


def hopper():
    return bool(gpus()) and getattr(gpus()[0], "compute_capability", "") == "9.0"


def attention_reference(q, k, v, scale, causal):
    """Output and log-sum-exp in float32, queries aligned to the end of the keys when causal."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.astype(jnp.float32) for x in (q, k, v))
    k, v = jnp.repeat(k, group, axis=1), jnp.repeat(v, group, axis=1)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        i, j = jnp.arange(sq)[:, None], jnp.arange(sk)[None, :]
        s = jnp.where(j > i + sk - sq, -jnp.inf, s)
    lse = jax.nn.logsumexp(s, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", jnp.exp(s - lse[..., None]), v), lse


@pytest.mark.skipif(not hopper(), reason="no Hopper GPU (sm_90a) for JAX")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(2, 4, 4, 128, 128), (1, 8, 2, 333, 333), (2, 8, 1, 100, 100), (1, 4, 1, 1, 333)],
                         ids=lambda s: "b{}h{}kv{}q{}k{}".format(*s))
def test_attention_and_its_gradients_inside_jit(shape, dtype, d, causal):
    attention = dm.jax_attention()
    b, hq, hkv, sq, sk = shape
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    q = jax.random.normal(keys[0], (b, hq, sq, d), dtype)
    k = jax.random.normal(keys[1], (b, hkv, sk, d), dtype)
    v = jax.random.normal(keys[2], (b, hkv, sk, d), dtype)
    w = jax.random.normal(keys[3], (b, hq, sq, d), jnp.float32)
    scale = 1 / np.sqrt(d)
    o, lse = jax.jit(attention, static_argnums=(3, 4))(q, k, v, scale, causal)
    ref_o, ref_lse = attention_reference(q, k, v, scale, causal)
    assert o.dtype == q.dtype and o.shape == q.shape and lse.dtype == jnp.float32 and lse.shape == (b, hq, sq)
    err = jnp.abs(o.astype(jnp.float32) - ref_o)
    assert bool((err <= 0.01 + 0.02 * jnp.abs(ref_o)).all()), float(err.max())
    np.testing.assert_allclose(np.asarray(lse), np.asarray(ref_lse), atol=1e-3, rtol=1e-4)

    def loss(f):
        return lambda q, k, v: (f(q, k, v, scale, causal)[0].astype(jnp.float32) * w).sum()

    grads = jax.jit(jax.grad(loss(attention), argnums=(0, 1, 2)))(q, k, v)
    ref = jax.grad(loss(attention_reference), argnums=(0, 1, 2))(q, k, v)
    for name, g, r in zip("qkv", grads, ref):
        assert g.dtype == q.dtype and g.shape == r.shape, name
        err = jnp.abs(g.astype(jnp.float32) - r.astype(jnp.float32))
        scale_of = float(jnp.abs(r.astype(jnp.float32)).max())
        assert float(err.max()) <= 0.03 * scale_of + 0.02, (name, float(err.max()), scale_of)


@pytest.mark.skipif(not hopper(), reason="no Hopper GPU (sm_90a) for JAX")
def test_attention_calls_the_kernels_refuse_are_raised_by_jax():
    attention = dm.jax_attention()
    q = jnp.zeros((1, 2, 64, 96), jnp.bfloat16)
    with pytest.raises(Exception, match="INVALID_ARGUMENT.*head dimension is 96"):
        np.asarray(jax.jit(attention, static_argnums=(3, 4))(q, q, q, 0.1, False)[0])
    q = jnp.zeros((1, 2, 64, 64), jnp.float32)
    with pytest.raises(Exception, match="INVALID_ARGUMENT.*data type is float32"):
        np.asarray(jax.jit(attention, static_argnums=(3, 4))(q, q, q, 0.1, False)[0])
    q = jnp.zeros((1, 4, 64, 64), jnp.bfloat16)
    k = jnp.zeros((1, 3, 64, 64), jnp.bfloat16)
    with pytest.raises(Exception, match="INVALID_ARGUMENT.*k's heads dividing q's"):
        np.asarray(jax.jit(attention, static_argnums=(3, 4))(q, k, k, 0.1, False)[0])
    with pytest.raises(Exception, match="INVALID_ARGUMENT.*scale is -1"):
        np.asarray(jax.jit(attention, static_argnums=(3, 4))(q, q, q, -1.0, False)[0])
