"""Multi-GPU benchmarks on N GPUs, dlmd against torch in the same run, alternating sides round by
round (the first side flips every round):

- all_reduce (f32 and bf16), all_gather, reduce_scatter and broadcast of 256 MiB over N GPUs,
  one process per GPU: dlmd (examples/nccl.rs) against torch.distributed with NCCL
  (bench_nccl_torch.py); NCCL's bus bandwidth;
- peer copies of 1 GiB between every ordered pair of the N devices: dlmd's typed copy against
  torch's `copy_`, one process per side running every pair.

Usage: bench_multi_gpu.py NCCL_BINARY [--world N] [--rounds R] [--only all_reduce,peer_copy].
N defaults to every GPU of the machine. Prints every round, then the medians and the ratios
dlmd / torch; for the copies, the matrix of ratios and the lowest.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def outputs(stdout, cmd):
    lines = [json.loads(line) for line in stdout.strip().splitlines() if line.startswith("{")]
    if not lines:
        sys.exit(f"{cmd} printed no result")
    return lines


def run_ranks(cmd, world):
    """The command once per rank, joined through a file; rank 0's result."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       DLMD_NCCL_ID_FILE=os.path.join(tmp, "id"), NCCL_NVLS_ENABLE="0")
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=300) for p in procs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} rank {rank} failed ({p.returncode}):\n{out}\n{err}")
    return outputs(outs[0][0], cmd)[-1]


def run_one(cmd):
    out = subprocess.run(cmd, env=dict(os.environ, NCCL_NVLS_ENABLE="0"), capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        sys.exit(f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return outputs(out.stdout, cmd)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--world", type=int, help="GPUs to use (default: all)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", help="comma-separated: all_reduce, all_gather, reduce_scatter, broadcast, peer_copy")
    args = p.parse_args()
    import torch

    count = torch.cuda.device_count()
    world = args.world or count
    if not 2 <= world <= count:
        sys.exit(f"--world {world}: between 2 and the machine's {count} GPUs")
    torch_script = os.path.join(HERE, "bench_nccl_torch.py")
    sides = {
        "dlmd": lambda mode, extra: [args.binary, mode, *extra],
        "torch": lambda mode, extra: [sys.executable, torch_script, mode, *extra],
    }
    cases = [
        ("all_reduce f32", "all-reduce", ["--dtype", "f32", "--mib", "256"]),
        ("all_reduce bf16", "all-reduce", ["--dtype", "bf16", "--mib", "256"]),
        ("all_gather f32", "all-gather", ["--dtype", "f32", "--mib", "256"]),
        ("reduce_scatter f32", "reduce-scatter", ["--dtype", "f32", "--mib", "256"]),
        ("broadcast f32", "broadcast", ["--dtype", "f32", "--mib", "256"]),
    ]
    only = set(args.only.split(",")) if args.only else None
    cases = [c for c in cases if only is None or c[0].split()[0] in only]
    copies = only is None or "peer_copy" in only
    pairs = ",".join(f"{a}-{b}" for a in range(world) for b in range(world) if a != b)
    results = {}
    print(f"{world} GPUs, {args.rounds} rounds", flush=True)
    for r in range(args.rounds):
        order = ["dlmd", "torch"] if r % 2 == 0 else ["torch", "dlmd"]
        for name, mode, extra in cases:
            for side in order:
                res = run_ranks(sides[side](mode, extra), world)
                results.setdefault((name, side), []).append(res["busbw_gbps"])
                print(f"round {r} {name:20} {side:5} busbw {res['busbw_gbps']:8.2f} GB/s  "
                      f"ms/op {[round(x, 4) for x in res['ms']]}", flush=True)
        if copies:
            for side in order:
                got = run_one(sides[side]("peer-copy", ["--mib", "1024", "--pairs", pairs]))
                for res in got:
                    results.setdefault((f"peer copy {res['from']}->{res['to']}", side), []).append(res["gbps"])
                print(f"round {r} peer copies          {side:5} {len(got)} pairs, "
                      f"{min(x['gbps'] for x in got):.2f} to {max(x['gbps'] for x in got):.2f} GB/s", flush=True)
    print()
    print(f"{'case':22} {'dlmd GB/s':>10} {'torch GB/s':>11} {'ratio':>7}  per-round ratios")
    ratios = {}
    for name, side in results:
        if side != "dlmd":
            continue
        d, t = results[(name, "dlmd")], results[(name, "torch")]
        ratios[name] = statistics.median(d) / statistics.median(t)
        print(f"{name:22} {statistics.median(d):10.2f} {statistics.median(t):11.2f} {ratios[name]:7.3f}  "
              f"{[round(a / b, 3) for a, b in zip(d, t)]}")
    copy = {k: v for k, v in ratios.items() if k.startswith("peer copy")}
    if copy:
        print()
        print("peer copy ratios dlmd / torch (row: from, column: to)")
        print("      " + "".join(f"{b:>7}" for b in range(world)))
        for a in range(world):
            row = "".join(f"{'-':>7}" if a == b else f"{copy[f'peer copy {a}->{b}']:7.3f}" for b in range(world))
            print(f"{a:>5} {row}")
        worst = min(copy, key=copy.get)
        print(f"lowest: {worst} {copy[worst]:.3f}; median over {len(copy)} pairs "
              f"{statistics.median(copy.values()):.3f}")


if __name__ == "__main__":
    main()
