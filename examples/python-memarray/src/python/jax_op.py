"""``add_index`` for JAX, inside ``jax.jit``: an XLA FFI custom call whose handlers are Rust
(``dlmd::xla``), registered here for XLA's CPU and CUDA backends.

On CUDA the handler launches the Rust kernel of ``MemArray.add_index`` on XLA's stream, in place
on the result (which shares the argument's buffer: ``input_output_aliases={0: 0}``; XLA copies
the argument first where it is still needed), without a host wait; it says it launches the same
work on every call, so XLA may capture it into a command buffer (a CUDA graph). On the CPU the
handler does the same arithmetic on the host.

- ``jax.vmap``: a batching rule (``custom_vmap``), not a loop: a batch of arrays is one call
  whose leading ``batch_dims`` dimensions are left out of each element's index sum.
- ``jax.grad``: ``add_index(x) = x + c`` with ``c`` independent of ``x``, so its vector-Jacobian
  product is the cotangent itself (``custom_vjp``); no kernel is needed for it.
"""

import functools

import jax
import numpy as np
from jaxlib import xla_client

import dlmd_memarray

TARGET = "dlmd_add_index"

for _platform, _capsule in dlmd_memarray.xla_add_index().items():
    jax.ffi.register_ffi_target(
        TARGET,
        _capsule,
        platform=_platform,
        api_version=1,
        traits=(
            xla_client.CustomCallTargetTraits.COMMAND_BUFFER_COMPATIBLE
            if _platform == "CUDA"
            else xla_client.CustomCallTargetTraits.DEFAULT
        ),
    )


def _call(x, batch_dims):
    return jax.ffi.ffi_call(
        TARGET,
        jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x, batch_dims=np.int64(batch_dims))


@functools.cache
def _batched(batch_dims):
    """``add_index`` over arrays whose first ``batch_dims`` dimensions index a batch."""

    @jax.custom_batching.custom_vmap
    def add(x):
        return _call(x, batch_dims)

    @add.def_vmap
    def _rule(axis_size, in_batched, x):
        del axis_size
        (batched,) = in_batched
        # custom_vmap puts a batched argument's batch dimension first.
        return (_batched(batch_dims + 1) if batched else add)(x), batched

    return add


@jax.custom_vjp
def add_index(x):
    """``x`` with each element plus the sum of its indices (ranks 0 to 4)."""
    return _batched(0)(x)


def _forward(x):
    return _batched(0)(x), None


def _backward(_, cotangent):
    return (cotangent,)


add_index.defvjp(_forward, _backward)


# Attention on CUDA: the forward and backward kernels of the torch operator dlmd::attention.
ATTENTION, ATTENTION_BACKWARD = "dlmd_attention", "dlmd_attention_backward"
_forward_capsule, _backward_capsule = dlmd_memarray.xla_attention()
for _name, _capsule in ((ATTENTION, _forward_capsule), (ATTENTION_BACKWARD, _backward_capsule)):
    jax.ffi.register_ffi_target(_name, _capsule, platform="CUDA", api_version=1,
                                traits=xla_client.CustomCallTargetTraits.COMMAND_BUFFER_COMPATIBLE)


def _attention_call(q, k, v, scale, causal):
    b, h, s, _ = q.shape
    return jax.ffi.ffi_call(
        ATTENTION,
        (jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, h, s), np.float32)),
    )(q, k, v, scale=np.float32(scale), causal=bool(causal))


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def attention(q, k, v, scale, causal):
    """``softmax(q · kᵀ · scale) · v`` and each query row's log-sum-exp: ``q`` ``(b, h_q, s_q, d)``,
    ``k`` and ``v`` ``(b, h_kv, s_k, d)`` (``h_kv`` dividing ``h_q``), ``bfloat16`` or ``float16``,
    ``d`` 64 or 128. Returns ``(o, lse)``; ``lse`` is not differentiated (its gradient is taken as
    zero, as FlashAttention's)."""
    return _attention_call(q, k, v, scale, causal)


def _attention_forward(q, k, v, scale, causal):
    o, lse = _attention_call(q, k, v, scale, causal)
    return (o, lse), (q, k, v, o, lse)


def _attention_backward(scale, causal, residuals, cotangents):
    q, k, v, o, lse = residuals
    d_o, _ = cotangents
    b, h, s, _ = q.shape
    dq, dk, dv, _delta = jax.ffi.ffi_call(
        ATTENTION_BACKWARD,
        (jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct(k.shape, k.dtype),
         jax.ShapeDtypeStruct(v.shape, v.dtype), jax.ShapeDtypeStruct((b, h, s), np.float32)),
    )(q, k, v, o, d_o.astype(q.dtype), lse, scale=np.float32(scale), causal=bool(causal))
    return dq, dk, dv


attention.defvjp(_attention_forward, _attention_backward)
