"""The torch side of the multi-GPU benchmarks, measured as examples/nccl.rs measures dlmd's:

  RANK=r WORLD_SIZE=n DLMD_NCCL_ID_FILE=F bench_nccl_torch.py all-reduce --dtype f32 --mib 256
      torch.distributed's collective (NCCL backend, one process per GPU, initialised through the
      file F, or through torchrun's MASTER_ADDR/MASTER_PORT where F is not given), `--iters`
      calls between two CUDA events, `--reps` times. The collectives: all-reduce and broadcast
      (from rank 0) in place, all-gather (all_gather_into_tensor) and reduce-scatter
      (reduce_scatter_tensor), of `--mib` MiB in all as the Rust example counts them.
  bench_nccl_torch.py peer-copy --mib 1024 [--pairs all|A-B,C-D,...]
      `b.copy_(a)` from cuda:A to cuda:B, on cuda:B's stream, for every ordered pair of devices
      or the pairs listed.

Each checks its result first and prints JSON lines (rank 0 for the collectives, one per pair
for the copies), with the same fields as the Rust example.
"""

import argparse
import json
import os
import statistics

import torch

BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}


def time_ms(stream, iters, op):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(iters):
        op()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / iters


def collective(args):
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    id_file = os.environ.get("DLMD_NCCL_ID_FILE")
    dist.init_process_group(
        "nccl", init_method="file://" + id_file if id_file else "env://", rank=rank, world_size=world,
        device_id=torch.device("cuda", local),
    )
    op = args.mode.replace("-", "_")
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    nbytes = args.mib << 20
    n = nbytes // dtype.itemsize
    part = n // world
    send = torch.full((part if op == "all_gather" else n,), float(rank + 1), dtype=dtype, device="cuda")
    recv = {"all_gather": lambda: torch.zeros(n, dtype=dtype, device="cuda"),
            "reduce_scatter": lambda: torch.zeros(part, dtype=dtype, device="cuda")}.get(op, lambda: send)()
    run = {
        "all_reduce": lambda: dist.all_reduce(send),
        "broadcast": lambda: dist.broadcast(send, 0),
        "all_gather": lambda: dist.all_gather_into_tensor(recv, send),
        "reduce_scatter": lambda: dist.reduce_scatter_tensor(recv, send),
    }[op]
    run()
    total = world * (world + 1) / 2
    want = {
        "all_reduce": lambda: torch.full_like(recv, total),
        "reduce_scatter": lambda: torch.full_like(recv, total),
        "broadcast": lambda: torch.ones_like(recv),
        "all_gather": lambda: (torch.arange(n, device="cuda") // part + 1).to(dtype),
    }[op]()
    if not torch.equal(recv, want):
        raise SystemExit(f"{op}: rank {rank}: wrong values")
    stream = torch.cuda.current_stream()
    for _ in range(3):
        run()
    ms = [time_ms(stream, args.iters, run) for _ in range(args.reps)]
    t = statistics.median(ms)
    algbw = nbytes / (t * 1e-3) / 1e9
    if rank == 0:
        print(json.dumps({"side": "torch", "op": op, "dtype": args.dtype, "bytes": nbytes, "world": world,
                          "ms": ms, "algbw_gbps": round(algbw, 2),
                          "busbw_gbps": round(algbw * BUS_FACTOR[op](world), 2)}), flush=True)
    dist.destroy_process_group()


def pairs(text):
    if text == "all":
        n = torch.cuda.device_count()
        if n < 2:
            raise SystemExit(f"a peer copy needs 2 devices, this machine has {n}")
        return [(a, b) for a in range(n) for b in range(n) if a != b]
    return [tuple(int(d) for d in pair.split("-")) for pair in text.split(",")]


def peer_copy(args):
    nbytes = args.mib << 20
    todo = pairs(args.pairs)
    devices = sorted({d for pair in todo for d in pair})
    values = torch.arange(nbytes // 4, dtype=torch.float32).remainder_(1000)
    srcs = {d: values.to(f"cuda:{d}") for d in devices}
    dsts = {d: torch.zeros(nbytes // 4, dtype=torch.float32, device=f"cuda:{d}") for d in devices}
    for d in devices:
        torch.cuda.synchronize(d)
    for a, b in todo:
        src, dst = srcs[a], dsts[b]
        with torch.cuda.device(b):
            stream = torch.cuda.current_stream()
            dst.zero_()
            dst.copy_(src)
            if not torch.equal(dst.cpu(), values):
                raise SystemExit(f"peer copy {a} -> {b}: the copy differs from the source")
            ms = [time_ms(stream, args.iters, lambda: dst.copy_(src)) for _ in range(args.reps)]
        t = statistics.median(ms)
        print(json.dumps({"side": "torch", "op": "peer_copy", "from": a, "to": b, "bytes": nbytes, "ms": ms,
                          "gbps": round(nbytes / (t * 1e-3) / 1e9, 2)}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["all-reduce", "all-gather", "reduce-scatter", "broadcast", "peer-copy"])
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    p.add_argument("--mib", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--pairs", default="all")
    args = p.parse_args()
    if args.mode == "peer-copy":
        args.mib, args.iters = args.mib or 1024, args.iters or 10
        peer_copy(args)
    else:
        args.mib, args.iters = args.mib or 256, args.iters or 20
        collective(args)


if __name__ == "__main__":
    main()
