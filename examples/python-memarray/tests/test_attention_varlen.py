"""Attention over sequences of different lengths packed together (`dlmd::attention_varlen`,
`flash_attn_varlen_func`'s tensors and cumulative lengths), forward and backward, on torch
tensors: each packed sequence against the same sequence alone through a float64 reference,
within the tolerance torch's own SDPA tests use; bfloat16 and float16, head dimensions 64 and
128, causal (aligned to each sequence's bottom right) and not, grouped-query ratios 1, 4 and 8,
lengths that are not multiples of the tile, sequences of one row and of none. Also: sequences
of one length packed give the same bits as the batched kernels, offsets that are not offsets of
the tensors write nothing (checked on the device), refused calls, `torch.compile(fullgraph=True)`
and CUDA graph capture. Skipped, with the reason, where there is no CUDA device that runs
`sm_90a` code.
"""

import math

import pytest

import dlmd_memarray as dm

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if torch.cuda.get_device_capability() != (9, 0):
    pytest.skip(f"not a Hopper GPU (sm_90a): {torch.cuda.get_device_name()}", allow_module_level=True)

from test_attention_backward import gradients, reference  # noqa: E402

# (h_q, h_kv, query lengths, key lengths): grouped-query ratios 1, 4 and 8; lengths around the
# tile of 128, one row, no query, no key; long sequences among many empty ones (each of which
# takes one chunk number, not the longest's chunks).
BATCHES = [
    (4, 4, [128, 128, 128], [128, 128, 128]),
    (8, 2, [1, 127, 129, 300, 64], [200, 1, 128, 333, 64]),
    (8, 1, [333, 0, 17, 256], [100, 5, 17, 0]),
    (4, 2, [0] * 40 + [300] + [0] * 40 + [129], [0] * 40 + [257] + [0] * 40 + [200]),
]


def offsets(lengths):
    return torch.tensor([0, *lengths], device="cuda").cumsum(0).to(torch.int32)


def packed_inputs(hq, hkv, lq, lk, d, dtype, seed=0):
    """Packed `q`, `k`, `v` (`(total, h, d)`) and an output gradient, with their offsets."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def make(total, h):
        return torch.randn((total, h, d), generator=g, device="cuda", dtype=dtype)

    return make(sum(lq), hq), make(sum(lk), hkv), make(sum(lk), hkv), make(sum(lq), hq), offsets(lq), offsets(lk)


def packed_reference(q, k, v, lq, lk, scale, causal):
    """Each sequence alone through `reference`, packed back together (differentiable)."""
    out, (i, j) = [], (0, 0)
    for a, b in zip(lq, lk):
        one = [x.transpose(0, 1).unsqueeze(0) for x in (q[i:i + a], k[j:j + b], v[j:j + b])]
        out.append(reference(*one, scale, causal)[0].transpose(0, 1))
        i, j = i + a, j + b
    return torch.cat(out)


def reference_lse(q, k, lq, lk, scale, causal):
    """Each query row's log-sum-exp in float64, `(h, total_q)`; `+inf` where a row sees no key."""
    rows, (i, j) = [], (0, 0)
    group = q.shape[1] // k.shape[1]
    for a, b in zip(lq, lk):
        qs, ks = q[i:i + a].double().transpose(0, 1), k[j:j + b].double().transpose(0, 1)
        s = qs @ ks.repeat_interleave(group, 0).transpose(-1, -2) * scale
        if causal:
            seen = torch.arange(b, device="cuda")[None, :] <= torch.arange(a, device="cuda")[:, None] + b - a
            s = s.masked_fill(~seen, -math.inf)
        lse = torch.logsumexp(s, -1) if b > 0 else torch.full((q.shape[1], a), -math.inf, device="cuda")
        rows.append(lse.masked_fill(torch.isneginf(lse), math.inf))
        i, j = i + a, j + b
    return torch.cat(rows, 1)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"h{b[0]}kv{b[1]}q{sum(b[2])}k{sum(b[3])}")
def test_packed_sequences_match_each_alone(batch, dtype, d, causal):
    hq, hkv, lq, lk = batch
    q, k, v, grad, cu_q, cu_k = packed_inputs(hq, hkv, lq, lk, d, dtype)
    scale = 1 / math.sqrt(d)
    op = dm.torch_attention_varlen()
    o, lse = op(q, k, v, cu_q, cu_k, max(lq), max(lk), scale, causal)
    expected = reference_lse(q, k, lq, lk, scale, causal)
    assert lse.shape == expected.shape and lse.dtype == torch.float32
    seen = torch.isfinite(expected)
    assert bool(torch.isinf(lse[~seen]).all()), "rows that see no key have an infinite log-sum-exp"
    assert torch.allclose(lse[seen].double(), expected[seen], atol=1e-3, rtol=1e-4)

    def ours(q, k, v):
        return op(q, k, v, cu_q, cu_k, max(lq), max(lk), scale, causal)[0]

    def theirs(q, k, v):
        return packed_reference(q, k, v, lq, lk, scale, causal)

    mine = gradients(ours, q, k, v, grad)
    exact = gradients(theirs, q, k, v, grad, torch.float64)
    low = gradients(theirs, q, k, v, grad)
    scale_of_all = max(r.abs().max().item() for r in exact)
    for name, a, r, lp in zip(("o", "dq", "dk", "dv"), mine, exact, low):
        assert a.shape == r.shape and a.dtype == dtype, name
        err = (a.double() - r).abs().max().item()
        lp_err = (lp.double() - r).abs().max().item()
        assert err <= 4 * lp_err + 1e-3 * scale_of_all, f"{name}: max error {err:.4g}, {dtype}'s {lp_err:.4g}"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sequences_of_one_length_packed_give_the_batched_bits(causal):
    b, hq, hkv, s, d = 3, 8, 2, 200, 128
    q, k, v, grad, cu_q, cu_k = packed_inputs(hq, hkv, [s] * b, [s] * b, d, torch.bfloat16, seed=3)
    packed = gradients(lambda q, k, v: dm.torch_attention_varlen()(q, k, v, cu_q, cu_k, s, s, 0.1, causal)[0],
                       q, k, v, grad)

    def batched(x):
        return x.view(b, s, x.shape[1], d).transpose(1, 2)

    def dense(q, k, v):
        o, _ = dm.torch_attention()(batched(q), batched(k), batched(v), 0.1, causal)
        return o.transpose(1, 2).reshape(b * s, hq, d)

    for a, e in zip(packed, gradients(dense, q, k, v, grad)):
        assert torch.equal(a, e)


def test_a_max_seqlen_of_zero_still_computes_every_sequence():
    # The longest lengths only size the grid: 0 launches a block for each sequence, not none.
    lq, lk, d = [100, 0, 300], [70, 5, 260], 128
    q, k, v, grad, cu_q, cu_k = packed_inputs(4, 2, lq, lk, d, torch.bfloat16, seed=5)
    op = dm.torch_attention_varlen()

    def call(max_q, max_k):
        return gradients(lambda q, k, v: op(q, k, v, cu_q, cu_k, max_q, max_k, 0.1, True)[0], q, k, v, grad)

    for a, e in zip(call(0, 0), call(max(lq), max(lk))):
        assert torch.equal(a, e)


def test_the_direct_calls_write_only_the_sequences_rows():
    # Two rows of each tensor past the last offset: not a sequence's, not written.
    lq, lk, d = [100, 50], [70, 90], 64
    q, k, v, grad, cu_q, cu_k = packed_inputs(4, 2, lq + [2], lk + [2], d, torch.float16, seed=4)
    cu_q, cu_k = cu_q[:-1].contiguous(), cu_k[:-1].contiguous()

    def view(x):
        return x.transpose(0, 1).unsqueeze(0)

    o = torch.full_like(q, math.nan)
    lse = torch.full((4, q.shape[0]), math.nan, device="cuda")
    dm.attention_varlen_forward(view(q), view(k), view(v), view(o), lse.unsqueeze(0), cu_q, cu_k,
                                max_seqlen_q=100, scale=0.125, causal=True)
    dq, dk, dv = (torch.full_like(x, math.nan) for x in (q, k, v))
    delta = torch.full_like(lse, math.nan)
    dm.attention_varlen_backward(*(view(x) for x in (q, k, v, o, grad)), lse.unsqueeze(0), delta.unsqueeze(0),
                                 view(dq), view(dk), view(dv), cu_q, cu_k, max_seqlen_q=100, max_seqlen_k=90,
                                 scale=0.125, causal=True)
    torch.cuda.synchronize()
    rows = sum(lq)
    assert bool(torch.isnan(o[rows:]).all()) and bool(torch.isnan(lse[:, rows:]).all())
    assert bool(torch.isnan(dq[rows:]).all()) and bool(torch.isnan(dk[sum(lk):]).all())
    expected = packed_reference(q[:rows], k[:sum(lk)], v[:sum(lk)], lq, lk, 0.125, True)
    assert (o[:rows].double() - expected.double()).abs().max().item() < 0.01
    _, rq, rk, rv = gradients(lambda q, k, v: packed_reference(q, k, v, lq, lk, 0.125, True),
                              q[:rows], k[:sum(lk)], v[:sum(lk)], grad[:rows], torch.float64)
    for a, r in ((dq[:rows], rq), (dk[:sum(lk)], rk), (dv[:sum(lk)], rv)):
        assert (a.double() - r).abs().max().item() < 0.05 * r.abs().max().item()


@pytest.mark.parametrize("which, bad", [
    ("q", [0, 100, 50, 150]), ("q", [0, 50, 100, 151]), ("q", [-1, 50, 100, 150]), ("k", [0, 60, 50, 150]),
    ("k", [0, 50, 100, 151]),
], ids=["q-decreasing", "q-past-the-rows", "q-negative", "k-decreasing", "k-past-the-rows"])
def test_offsets_that_are_not_offsets_of_the_tensors_write_nothing(which, bad):
    q, k, v, _, cu_q, cu_k = packed_inputs(4, 4, [50, 50, 50], [50, 50, 50], 64, torch.bfloat16, seed=5)
    wrong = torch.tensor(bad, dtype=torch.int32, device="cuda")
    cu_q, cu_k = (wrong, cu_k) if which == "q" else (cu_q, wrong)

    def view(x):
        return x.transpose(0, 1).unsqueeze(0)

    o = torch.full_like(q, math.nan)
    lse = torch.full((4, q.shape[0]), math.nan, device="cuda")
    dm.attention_varlen_forward(view(q), view(k), view(v), view(o), lse.unsqueeze(0), cu_q, cu_k,
                                max_seqlen_q=150, scale=0.125, causal=False)
    torch.cuda.synchronize()
    assert bool(torch.isnan(o).all()) and bool(torch.isnan(lse).all())


def test_packed_calls_that_do_not_fit_are_refused_by_name():
    q, k, v, _, cu_q, cu_k = packed_inputs(4, 2, [30, 40], [30, 40], 64, torch.bfloat16, seed=6)
    op = dm.torch_attention_varlen()
    with pytest.raises(ValueError, match="cu_seqlens_q has 3 offsets and cu_seqlens_k 2"):
        op(q, k, v, cu_q, cu_k[:2], 40, 40, 0.1, False)
    with pytest.raises(TypeError, match="^cu_seqlens_k: "):
        op(q, k, v, cu_q, cu_k.long(), 40, 40, 0.1, False)
    with pytest.raises(ValueError, match="dividing"):
        op(q, k[:, :1].expand(-1, 3, -1), v[:, :1].expand(-1, 3, -1), cu_q, cu_k, 40, 40, 0.1, False)

    def view(x):
        return x.transpose(0, 1).unsqueeze(0)

    o, lse = torch.zeros_like(q), torch.zeros((1, 4, q.shape[0]), device="cuda")
    with pytest.raises(ValueError, match="packed sequences are rows of one batch entry"):
        dm.attention_varlen_forward(*(view(x).expand(2, -1, -1, -1) for x in (q, k, v, o)), lse.expand(2, -1, -1),
                                    cu_q, cu_k, max_seqlen_q=40, scale=0.1, causal=False)


def test_torch_compile_fullgraph_and_cuda_graphs_run_the_packed_operator():
    lq, lk = [100, 300, 7], [90, 310, 7]
    q, k, v, grad, cu_q, cu_k = packed_inputs(8, 2, lq, lk, 128, torch.bfloat16, seed=7)
    op = dm.torch_attention_varlen()

    @torch.compile(fullgraph=True)
    def loss(q, k, v):
        o, _ = op(q * 2, k, v, cu_q, cu_k, 300, 310, 0.1, True)
        return (o.float() ** 2).sum()

    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    loss(*xs).backward()
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    (packed_reference(ref[0] * 2, ref[1], ref[2], lq, lk, 0.1, True) ** 2).sum().backward()
    for a, r in zip(xs, ref):
        assert (a.grad.double() - r.grad).abs().max().item() < 0.05 * r.grad.abs().max().item()

    for x in xs:
        x.grad = None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        op(*xs, cu_q, cu_k, 300, 310, 0.1, True)[0].backward(grad)
    torch.cuda.current_stream().wait_stream(side)
    for x in xs:
        x.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        op(*xs, cu_q, cu_k, 300, 310, 0.1, True)[0].backward(grad)
    nq, nk, nv, ng, _, _ = packed_inputs(8, 2, lq, lk, 128, torch.bfloat16, seed=8)
    with torch.no_grad():
        for x, n in zip(xs, (nq, nk, nv)):
            x.copy_(n)
        grad.copy_(ng)
    g.replay()
    torch.cuda.synchronize()
    _, rq, rk, rv = gradients(lambda q, k, v: packed_reference(q, k, v, lq, lk, 0.1, True), nq, nk, nv, ng,
                              torch.float64)
    for x, r in zip(xs, (rq, rk, rv)):
        assert (x.grad.double() - r).abs().max().item() < 0.05 * r.abs().max().item()
