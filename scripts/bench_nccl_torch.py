"""The torch side of the multi-GPU benchmarks, measured as examples/nccl.rs measures dlmd's:

  RANK=r WORLD_SIZE=n DLMD_NCCL_ID_FILE=F bench_nccl_torch.py all-reduce --dtype f32 --mib 256
      torch.distributed.all_reduce (NCCL backend, one process per GPU, initialised through the
      file F), in place, `--iters` calls between two CUDA events, `--reps` times.
  bench_nccl_torch.py peer-copy --mib 1024
      `b.copy_(a)` from cuda:0 to cuda:1, on cuda:1's stream.

Each checks its result first and prints one JSON line (rank 0 for the all-reduce), with the
same fields as the Rust example.
"""

import argparse
import json
import os
import statistics

import torch


def time_ms(stream, iters, op):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(iters):
        op()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / iters


def all_reduce(args):
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dist.init_process_group(
        "nccl", init_method="file://" + os.environ["DLMD_NCCL_ID_FILE"], rank=rank, world_size=world,
        device_id=torch.device("cuda", local),
    )
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    nbytes = args.mib << 20
    x = torch.full((nbytes // dtype.itemsize,), float(rank + 1), dtype=dtype, device="cuda")
    dist.all_reduce(x)
    want = world * (world + 1) / 2
    if not bool((x == want).all()):
        raise SystemExit("all_reduce: wrong values")
    stream = torch.cuda.current_stream()
    for _ in range(3):
        dist.all_reduce(x)
    ms = [time_ms(stream, args.iters, lambda: dist.all_reduce(x)) for _ in range(args.reps)]
    t = statistics.median(ms)
    busbw = nbytes * 2 * (world - 1) / world / (t * 1e-3) / 1e9
    if rank == 0:
        print(json.dumps({"side": "torch", "op": "all_reduce", "dtype": args.dtype, "bytes": nbytes,
                          "world": world, "ms": ms, "busbw_gbps": round(busbw, 2)}), flush=True)
    dist.destroy_process_group()


def peer_copy(args):
    nbytes = args.mib << 20
    a = torch.arange(nbytes // 4, dtype=torch.float32, device="cuda:0").remainder_(1000)
    b = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda:1")
    torch.cuda.synchronize("cuda:0")
    with torch.cuda.device(1):
        stream = torch.cuda.current_stream()
        b.copy_(a)
        if not torch.equal(b.cpu(), a.cpu()):
            raise SystemExit("peer copy: the copy differs from the source")
        ms = [time_ms(stream, args.iters, lambda: b.copy_(a)) for _ in range(args.reps)]
    t = statistics.median(ms)
    print(json.dumps({"side": "torch", "op": "peer_copy", "bytes": nbytes, "ms": ms,
                      "gbps": round(nbytes / (t * 1e-3) / 1e9, 2)}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["all-reduce", "peer-copy"])
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    p.add_argument("--mib", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    if args.mode == "all-reduce":
        args.mib, args.iters = args.mib or 256, args.iters or 20
        all_reduce(args)
    else:
        args.mib, args.iters = args.mib or 1024, args.iters or 10
        peer_copy(args)


if __name__ == "__main__":
    main()
