"""Attention's forward pass (`dlmd-example-hopper-kernels`) on torch tensors, through the direct
call `attention_forward` and the torch operator `dlmd::attention`: against a float64 reference
computed by torch, bfloat16 and float16, head dimensions 64 and 128, causal (aligned to the
bottom right) and not, grouped-query ratios 1, 4 and 8, sequence lengths that are not multiples
of the tile (1, 100, 333, 520), `(b, h, s, d)` tensors and torch's `(b, s, h, d)` ones transposed
to `(b, h, s, d)` (no copy), inputs that require grad, `torch.library.opcheck` (schema, fake
tensors, AOT dispatch), `torch.compile(fullgraph=True)`, CUDA graph capture and replay on a side
stream, and calls refused with a named error. Skipped, with the reason, where there is no CUDA
device that runs `sm_90a` code.
"""

import math

import pytest

import dlmd_memarray as dm

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if torch.cuda.get_device_capability() != (9, 0):
    pytest.skip(f"not a Hopper GPU (sm_90a): {torch.cuda.get_device_name()}", allow_module_level=True)

# (b, h_q, h_kv, s_q, s_k): grouped-query ratios 1, 4 and 8, ragged lengths, one query, one key.
SHAPES = [(2, 4, 4, 128, 128), (1, 8, 2, 333, 200), (2, 8, 1, 100, 520), (1, 4, 1, 1, 333), (1, 4, 4, 100, 1)]


def inputs(b, hq, hkv, sq, sk, d, dtype, tokens, seed=0):
    """q, k, v of the shapes; with `tokens`, made as `(b, s, h, d)` and transposed (strided)."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def make(h, s):
        if tokens:
            return torch.randn((b, s, h, d), generator=g, device="cuda", dtype=dtype).transpose(1, 2)
        return torch.randn((b, h, s, d), generator=g, device="cuda", dtype=dtype)

    return make(hq, sq), make(hkv, sk), make(hkv, sk)


def reference(q, k, v, scale, causal):
    """Output and log-sum-exp in float64; rows that see no key give 0 and +inf."""
    group = q.shape[1] // k.shape[1]
    q, k, v = q.double(), k.double().repeat_interleave(group, 1), v.double().repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) * scale
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(sq, device="cuda")[:, None]
        j = torch.arange(sk, device="cuda")[None, :]
        s = s.masked_fill(j > i + sk - sq, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def check(o, lse, q, k, v, scale, causal):
    ref_o, ref_lse = reference(q, k, v, scale, causal)
    err = (o.double() - ref_o).abs()
    bound = 0.01 + 0.02 * ref_o.abs()
    assert bool((err <= bound).all()), f"max error {err.max().item():.4g}"
    assert err.mean().item() < 2e-3
    seen = torch.isfinite(ref_lse)
    assert bool((lse[~seen] == math.inf).all()), "rows that see no key have lse +inf"
    assert torch.allclose(lse[seen].double(), ref_lse[seen], atol=1e-3, rtol=1e-4)


@pytest.mark.parametrize("tokens", [False, True], ids=["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "b{}h{}kv{}q{}k{}".format(*s))
def test_the_direct_call_matches_the_reference(shape, dtype, d, causal, tokens):
    b, hq, hkv, sq, sk = shape
    q, k, v = inputs(b, hq, hkv, sq, sk, d, dtype, tokens)
    o = torch.full((b, hq, sq, d), math.nan, device="cuda", dtype=dtype)
    lse = torch.full((b, hq, sq), math.nan, device="cuda")
    scale = 1 / math.sqrt(d)
    dm.attention_forward(q, k, v, o, lse, scale=scale, causal=causal)
    torch.cuda.synchronize()
    check(o, lse, q, k, v, scale, causal)


def test_the_operator_runs_on_torch_stream_and_reads_tensors_that_require_grad():
    op = dm.torch_attention()
    q, k, v = inputs(2, 8, 2, 333, 333, 128, torch.bfloat16, tokens=True, seed=1)
    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        o, lse = op(q, k, v, 0.05, True)
    side.synchronize()
    assert o.shape == (2, 8, 333, 128) and o.dtype == torch.bfloat16 and o.is_contiguous()
    assert lse.shape == (2, 8, 333) and lse.dtype == torch.float32
    check(o, lse, q.detach(), k.detach(), v.detach(), 0.05, True)


def test_opcheck_passes_the_schema_and_fake_tensors():
    op = dm.torch_attention()
    q, k, v = inputs(1, 4, 2, 200, 130, 64, torch.float16, tokens=True, seed=2)
    torch.library.opcheck(op, (q, k, v, 0.125, False),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_torch_compile_fullgraph_includes_the_operator():
    op = dm.torch_attention()

    @torch.compile(fullgraph=True)
    def block(x, wk, wv):
        q = x * 2
        o, lse = op(q, x @ wk, x @ wv, 0.1, True)
        return o + 1, lse

    torch.manual_seed(3)
    x = torch.randn((2, 4, 256, 64), device="cuda", dtype=torch.bfloat16)
    wk = torch.randn((64, 64), device="cuda", dtype=torch.bfloat16) / 8
    wv = torch.randn((64, 64), device="cuda", dtype=torch.bfloat16) / 8
    o, lse = block(x, wk, wv)
    torch.cuda.synchronize()
    check(o - 1, lse, x * 2, x @ wk, x @ wv, 0.1, True)


def test_the_operator_is_captured_in_a_cuda_graph_and_replayed_on_new_inputs():
    op = dm.torch_attention()
    q, k, v = inputs(1, 8, 8, 256, 256, 128, torch.bfloat16, tokens=False, seed=4)
    op(q, k, v, 0.09, False)  # outside the capture first: the kernels are loaded once
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, lse = op(q, k, v, 0.09, False)
    for seed in (5, 6):
        nq, nk, nv = inputs(1, 8, 8, 256, 256, 128, torch.bfloat16, tokens=False, seed=seed)
        q.copy_(nq), k.copy_(nk), v.copy_(nv)
        g.replay()
        torch.cuda.synchronize()
        check(o, lse, nq, nk, nv, 0.09, False)


def test_calls_that_do_not_fit_are_refused_by_name():
    q, k, v = inputs(1, 4, 2, 64, 64, 128, torch.bfloat16, tokens=False)
    o = torch.zeros_like(q)
    lse = torch.zeros(q.shape[:3], device="cuda")

    def refused(error, match, *args, scale=0.1):
        with pytest.raises(error, match=match):
            dm.attention_forward(*args, scale=scale, causal=False)

    refused(ValueError, "head dimension is 96", q[..., :96], k[..., :96], v[..., :96], o[..., :96], lse)
    refused(ValueError, "keys and values", q, k, v[:, :, :32], o, lse)
    refused(ValueError, "k's heads dividing q's", q, k[:, :1].expand(1, 3, 64, 128), v[:, :1].expand(1, 3, 64, 128),
            o, lse)
    refused(ValueError, "rank 4", q[0], k, v, o, lse)
    refused(ValueError, "one log-sum-exp", q, k, v, o, lse[:, :, :10])
    refused(ValueError, "scale is", q, k, v, o, lse, scale=-1.0)
    refused(TypeError, "bfloat16 and float16", q.float(), k.float(), v.float(), o.float(), lse)
    refused(TypeError, "^k: ", q, k.half(), v.half(), o, lse)
    # Rows 16-byte aligned apart, elements contiguous: a map's rules, named for the tensor.
    refused(ValueError, "^q: .*stride", q.transpose(2, 3).contiguous().transpose(2, 3), k, v, o, lse)
    # The output is written: a read-only view of it (expanded, stride 0) is refused.
    refused(ValueError, "^o: ", q, k, v, o[:, :1].expand(1, 4, 64, 128), lse)
    refused(ValueError, "at least one key", q, k[:, :, :0], v[:, :, :0], o, lse)
    # An output sharing memory with an input: the launch refuses the pair.
    refused(ValueError, "share", q, k, v, q, lse)
    torch.cuda.synchronize()
    assert bool((o == 0).all()) and bool((lse == 0).all()), "nothing ran"
    q_before = inputs(1, 4, 2, 64, 64, 128, torch.bfloat16, tokens=False)[0]
    assert torch.equal(q, q_before), "q untouched"
