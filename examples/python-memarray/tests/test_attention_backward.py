"""Attention's backward pass (`dlmd-example-hopper-kernels`) on torch tensors: the gradients of
the torch operator `dlmd::attention` through autograd (`register_autograd` wiring the operator
`dlmd::attention_backward`), against a float64 reference, within the tolerance torch's own SDPA
tests use (a small multiple of the error of the same computation done by torch at the inputs'
precision); bfloat16 and float16, head dimensions 64 and 128, causal (aligned to the bottom
right) and not, grouped-query ratios 1, 4 and 8, sequence lengths that are not multiples of the
tile, one query and one key, `(b, s, h, d)` tensors transposed to `(b, h, s, d)`. Also: the same
inputs give the same bits (no atomics), `gradcheck` of the autograd wiring on a float64 twin of
the operator, `torch.compile(fullgraph=True)` of a forward and backward pass, CUDA graph capture
of a training step, refused backward calls, and a training run of a small transformer block in
bfloat16 whose loss curve matches SDPA's over 100 steps. Skipped, with the reason, where there
is no CUDA device that runs `sm_90a` code.
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
    """q, k, v and the output's gradient; with `tokens`, made as `(b, s, h, d)` and transposed."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def make(h, s):
        if tokens:
            return torch.randn((b, s, h, d), generator=g, device="cuda", dtype=dtype).transpose(1, 2)
        return torch.randn((b, h, s, d), generator=g, device="cuda", dtype=dtype)

    return make(hq, sq), make(hkv, sk), make(hkv, sk), make(hq, sq)


def reference(q, k, v, scale, causal):
    """Attention in the inputs' dtype by torch's own operations, differentiable; rows that see no
    key give 0 (and 0 gradients), as the kernels do."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q @ k.transpose(-1, -2)).to(torch.promote_types(q.dtype, torch.float32)) * scale
    sq, sk = q.shape[2], k.shape[2]
    seen = torch.ones((sq, sk), dtype=torch.bool, device=q.device)
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        seen = j <= i + sk - sq
    any_key = seen.any(-1, keepdim=True)
    s = s.masked_fill(~seen, -math.inf).masked_fill(~any_key, 0.0)
    p = torch.softmax(s, -1) * any_key
    return p.to(q.dtype) @ v


def gradients(fn, q, k, v, grad, dtype=None):
    """The output and the gradients of `q`, `k`, `v` of `fn`, on copies in `dtype`."""
    xs = [x.detach().to(dtype or x.dtype).requires_grad_() for x in (q, k, v)]
    o = fn(*xs)
    o.backward(grad.to(o.dtype))
    return [o.detach()] + [x.grad for x in xs]


def check_gradients(q, k, v, grad, scale, causal):
    op = dm.torch_attention()
    ours = gradients(lambda q, k, v: op(q, k, v, scale, causal)[0], q, k, v, grad)
    exact = gradients(lambda q, k, v: reference(q, k, v, scale, causal), q, k, v, grad, torch.float64)
    low = gradients(lambda q, k, v: reference(q, k, v, scale, causal), q, k, v, grad)
    # A gradient that is zero exactly (one key: the softmax is constant) is matched within
    # rounding at the scale of the largest one.
    scale_of_all = max(r.abs().max().item() for r in exact)
    for name, a, r, lp in zip(("o", "dq", "dk", "dv"), ours, exact, low):
        assert a.shape == r.shape and a.dtype == q.dtype, name
        err = (a.double() - r).abs().max().item()
        lp_err = (lp.double() - r).abs().max().item()
        # torch's SDPA tests: within a fudge factor of the low-precision reference's own error.
        bound = 4 * lp_err + 1e-3 * scale_of_all
        assert err <= bound, f"{name}: max error {err:.4g}, the {q.dtype} reference's {lp_err:.4g}"


@pytest.mark.parametrize("tokens", [False, True], ids=["bhsd", "bshd"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "b{}h{}kv{}q{}k{}".format(*s))
def test_the_gradients_match_the_reference(shape, dtype, d, causal, tokens):
    b, hq, hkv, sq, sk = shape
    q, k, v, grad = inputs(b, hq, hkv, sq, sk, d, dtype, tokens)
    check_gradients(q, k, v, grad, 1 / math.sqrt(d), causal)


def test_the_same_inputs_give_the_same_bits():
    q, k, v, grad = inputs(2, 8, 2, 300, 300, 128, torch.bfloat16, tokens=True, seed=7)
    op = dm.torch_attention()
    first = gradients(lambda q, k, v: op(q, k, v, 0.1, True)[0], q, k, v, grad)
    for _ in range(3):
        again = gradients(lambda q, k, v: op(q, k, v, 0.1, True)[0], q, k, v, grad)
        assert all(torch.equal(a, b) for a, b in zip(first, again))


def test_the_direct_backward_call_writes_the_gradients():
    q, k, v, grad = inputs(1, 4, 2, 200, 150, 64, torch.float16, tokens=False, seed=8)
    o, lse = dm.torch_attention()(q, k, v, 0.125, False)
    dq, dk, dv = (torch.full_like(x, math.nan) for x in (q, k, v))
    delta = torch.full(q.shape[:3], math.nan, device="cuda")
    dm.attention_backward(q, k, v, o, grad, lse, delta, dq, dk, dv, scale=0.125, causal=False)
    torch.cuda.synchronize()
    assert torch.allclose(delta, (grad.float() * o.float()).sum(-1), atol=1e-2, rtol=1e-3)
    _, rq, rk, rv = gradients(lambda q, k, v: reference(q, k, v, 0.125, False), q, k, v, grad, torch.float64)
    for a, r in ((dq, rq), (dk, rk), (dv, rv)):
        assert bool(torch.isfinite(a).all())
        assert (a.double() - r).abs().max().item() < 0.05 * r.abs().max().item()


def test_gradcheck_of_the_autograd_wiring_on_a_float64_twin():
    # The kernels run bfloat16 and float16; the wiring (`dm.differentiable`: saved values, the
    # order of the gradients, None for the non-tensor inputs) is checked in float64 on a twin
    # operator whose forward and backward are torch's math.
    lib = torch.library.Library("dlmd_test", "DEF")
    lib.define("attention(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor)")
    lib.define("attention_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, float scale,"
               " bool causal) -> (Tensor, Tensor, Tensor)")

    def forward(q, k, v, scale, causal):
        o = reference(q, k, v, scale, causal)
        return o, torch.zeros(q.shape[:3], dtype=torch.float32, device=q.device)

    def backward(grad, q, k, v, o, lse, scale, causal):
        with torch.enable_grad():
            xs = [x.detach().requires_grad_() for x in (q, k, v)]
            return torch.autograd.grad(reference(*xs, scale, causal), xs, grad)

    lib.impl("attention", forward, "CUDA")
    lib.impl("attention_backward", backward, "CUDA")
    dm.differentiable("dlmd_test::attention", "dlmd_test::attention_backward",
                      saved=lambda inputs, outputs: (*inputs[:3], *outputs, *inputs[3:]), differentiated=[0])
    q, k, v, _ = inputs(1, 4, 2, 9, 7, 8, torch.float64, tokens=False, seed=9)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v: torch.ops.dlmd_test.attention(q, k, v, 0.3, True)[0], (q, k, v))


def test_torch_compile_fullgraph_runs_forward_and_backward():
    op = dm.torch_attention()

    @torch.compile(fullgraph=True)
    def loss(q, k, v):
        o, _ = op(q * 2, k, v, 0.1, True)
        return (o.float() ** 2).sum()

    q, k, v, _ = inputs(2, 4, 2, 256, 256, 64, torch.bfloat16, tokens=True, seed=10)
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    loss(*xs).backward()
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    (reference(ref[0] * 2, ref[1], ref[2], 0.1, True) ** 2).sum().backward()
    for a, r in zip(xs, ref):
        assert (a.grad.double() - r.grad).abs().max().item() < 0.05 * r.grad.abs().max().item()


def test_a_training_step_is_captured_in_a_cuda_graph_and_replayed():
    op = dm.torch_attention()
    q, k, v, grad = inputs(1, 8, 8, 256, 256, 128, torch.bfloat16, tokens=False, seed=11)
    xs = [x.detach().requires_grad_() for x in (q, k, v)]

    def step():
        for x in xs:
            x.grad = None
        o, _ = op(*xs, 0.09, False)
        o.backward(grad)
        return [x.grad for x in xs]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm up outside the capture: the kernels are loaded once
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    for x in xs:
        x.grad = None
    with torch.cuda.graph(g):
        o, _ = op(*xs, 0.09, False)
        o.backward(grad)
    for seed in (12, 13):
        nq, nk, nv, ng = inputs(1, 8, 8, 256, 256, 128, torch.bfloat16, tokens=False, seed=seed)
        with torch.no_grad():
            for x, n in zip(xs, (nq, nk, nv)):
                x.copy_(n)
            grad.copy_(ng)
        g.replay()
        torch.cuda.synchronize()
        _, rq, rk, rv = gradients(lambda q, k, v: reference(q, k, v, 0.09, False), nq, nk, nv, ng, torch.float64)
        for x, r in zip(xs, (rq, rk, rv)):
            assert (x.grad.double() - r).abs().max().item() < 0.05 * r.abs().max().item()


def test_backward_calls_that_do_not_fit_are_refused_by_name():
    q, k, v, grad = inputs(1, 4, 2, 64, 64, 128, torch.bfloat16, tokens=False)
    o, lse = dm.torch_attention()(q, k, v, 0.1, False)
    dq, dk, dv = (torch.zeros_like(x) for x in (q, k, v))
    delta = torch.zeros(q.shape[:3], device="cuda")

    def refused(error, match, *args):
        with pytest.raises(error, match=match):
            dm.attention_backward(*args, scale=0.1, causal=False)

    refused(ValueError, "^dk is", q, k, v, o, grad, lse, delta, dq, dk[:, :, :32], dv)
    refused(ValueError, "^do is", q, k, v, o, grad[:, :, :32], lse, delta, dq, dk, dv)
    refused(ValueError, "one log-sum-exp", q, k, v, o, grad, lse, delta[:, :, :10], dq, dk, dv)
    refused(TypeError, "^dv: ", q, k, v, o, grad, lse, delta, dq, dk, dv.half())
    torch.cuda.synchronize()
    assert all(bool((x == 0).all()) for x in (dq, dk, dv, delta)), "nothing ran"
    # A written tensor sharing memory with a read one: refused by the launch that finds it.
    refused(ValueError, "share", q, k, v, o, grad, lse, delta, dq, k, dv)


class Block(torch.nn.Module):
    """A pre-norm transformer block over `(b, s, 256)` tokens: causal self-attention with four
    heads of 64 and a two-layer MLP."""

    def __init__(self, attend):
        super().__init__()
        self.attend = attend
        self.norm1, self.norm2 = torch.nn.LayerNorm(256), torch.nn.LayerNorm(256)
        self.qkv, self.proj = torch.nn.Linear(256, 3 * 256), torch.nn.Linear(256, 256)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, 4, 64).unbind(2)
        o = self.attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, 256))
        return x + self.mlp(self.norm2(x))


def train(attend, steps=100):
    torch.manual_seed(0)
    embed, block, head = torch.nn.Embedding(512, 256), Block(attend), torch.nn.Linear(256, 512)
    model = torch.nn.Sequential(embed, block, head).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator(device="cuda").manual_seed(1)
    # Sequences of a rule to learn: each token from the one before it and the one two before.
    data = torch.randint(0, 512, (8, 257), device="cuda", generator=g)
    for t in range(2, 257):
        data[:, t] = (5 * data[:, t - 1] + data[:, t - 2] + 3) % 512
    losses = []
    for _ in range(steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, 512), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_a_transformer_block_trains_as_with_sdpa():
    op = dm.torch_attention()
    ours = train(lambda q, k, v: op(q, k, v, 0.125, True)[0])
    theirs = train(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert ours[-1] < 0.5 * ours[0], f"the loss fell from {ours[0]:.3f} to {ours[-1]:.3f} only"
    # bfloat16 noise: the two runs round differently from the first step on.
    gaps = [abs(a - b) for a, b in zip(ours, theirs)]
    print(f"losses: ours {ours[0]:.4f} .. {ours[-1]:.4f}, SDPA's {theirs[0]:.4f} .. {theirs[-1]:.4f}, "
          f"largest gap {max(gaps):.4f} at step {gaps.index(max(gaps))}")
    assert max(gaps) < 0.02 * theirs[0], f"the loss curves part by {max(gaps):.4f} (step {gaps.index(max(gaps))})"


def test_the_native_operators_raise_by_name_and_take_a_broadcast_gradient():
    # `dlmd::attention` and `dlmd::attention_backward` are Rust behind torch's dispatcher: a call
    # that does not fit is a RuntimeError naming the operator, and nothing is written.
    q, k, v, grad = inputs(1, 4, 2, 64, 64, 128, torch.bfloat16, tokens=False, seed=21)
    with pytest.raises(RuntimeError, match="attention: .*bfloat16 and float16"):
        torch.ops.dlmd.attention(q.float(), k.float(), v.float(), 0.1, False)
    with pytest.raises(RuntimeError, match="attention: .*rank 4|attention: q has extents"):
        torch.ops.dlmd.attention(q[0], k, v, 0.1, False)
    o, lse = torch.ops.dlmd.attention(q, k, v, 0.1, False)
    with pytest.raises(RuntimeError, match="attention_backward: do is"):
        torch.ops.dlmd.attention_backward(grad[:, :, :32], q, k, v, o, lse, 0.1, False)
    # `o.sum()`'s gradient is a one broadcast over the output (strides of 0): the autograd
    # formula passes it contiguous.
    ones = torch.ones_like(q)
    ours = gradients(lambda q, k, v: dm.torch_attention()(q, k, v, 0.1, False)[0], q, k, v, ones)
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    dm.torch_attention()(*xs, 0.1, False)[0].sum().backward()
    for a, b in zip(ours[1:], (x.grad for x in xs)):
        assert torch.equal(a, b)


def test_no_query_gives_zero_gradients_of_the_keys_and_values():
    # The forward pass takes a batch of no query (an empty output); its backward pass gives
    # zero gradients for the keys and values, as SDPA does.
    q, k, v, _ = inputs(1, 4, 2, 0, 64, 128, torch.bfloat16, tokens=False, seed=22)
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    o, lse = dm.torch_attention()(*xs, 0.1, False)
    assert o.shape == q.shape and lse.shape == q.shape[:3]
    o.sum().backward()
    assert xs[0].grad.shape == q.shape
    for x in xs[1:]:
        assert x.grad.shape == x.shape and bool((x.grad == 0).all())
