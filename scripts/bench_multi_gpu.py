"""Multi-GPU benchmarks, dlmd against torch in the same run, alternating sides round by round
(the first side flips every round):

- all_reduce of 256 MiB, f32 and bf16, over 2 GPUs, one process per GPU: dlmd
  (examples/nccl.rs) against torch.distributed with NCCL (bench_nccl_torch.py); bus bandwidth;
- peer copy of 1 GiB from cuda:0 to cuda:1: dlmd's typed copy against torch's `copy_`.

Usage: bench_multi_gpu.py NCCL_BINARY [--rounds N]. Prints every round, then the medians and the
ratios dlmd / torch.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ranks(cmd, world, env_extra):
    with tempfile.TemporaryDirectory() as tmp:
        id_file = os.path.join(tmp, "id")
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       DLMD_NCCL_ID_FILE=id_file, NCCL_NVLS_ENABLE="0", **env_extra)
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({p.returncode}):\n{out}\n{err}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def run_one(cmd):
    out = subprocess.run(cmd, env=dict(os.environ, NCCL_NVLS_ENABLE="0"), capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    torch_script = os.path.join(HERE, "bench_nccl_torch.py")
    sides = {
        "dlmd": lambda mode, extra: [args.binary, mode, *extra],
        "torch": lambda mode, extra: [sys.executable, torch_script, mode, *extra],
    }
    cases = [
        ("all_reduce f32 256 MiB", "all-reduce", ["--dtype", "f32", "--mib", "256"], "busbw_gbps", True),
        ("all_reduce bf16 256 MiB", "all-reduce", ["--dtype", "bf16", "--mib", "256"], "busbw_gbps", True),
        ("peer copy 1 GiB 0->1", "peer-copy", ["--mib", "1024"], "gbps", False),
    ]
    results = {(name, side): [] for name, *_ in cases for side in sides}
    for r in range(args.rounds):
        order = ["dlmd", "torch"] if r % 2 == 0 else ["torch", "dlmd"]
        for name, mode, extra, key, ranks in cases:
            for side in order:
                cmd = sides[side](mode, extra)
                res = run_ranks(cmd, 2, {}) if ranks else run_one(cmd)
                results[(name, side)].append(res[key])
                print(f"round {r} {name:24} {side:5} {res[key]:8.2f} GB/s  ms/op {[round(x, 4) for x in res['ms']]}",
                      flush=True)
    print()
    print(f"{'case':26} {'dlmd GB/s':>10} {'torch GB/s':>11} {'ratio':>7}  per-round ratios")
    for name, *_ in cases:
        d, t = results[(name, "dlmd")], results[(name, "torch")]
        ratios = [a / b for a, b in zip(d, t)]
        print(f"{name:26} {statistics.median(d):10.2f} {statistics.median(t):11.2f} "
              f"{statistics.median(d) / statistics.median(t):7.3f}  {[round(x, 3) for x in ratios]}")


if __name__ == "__main__":
    main()
