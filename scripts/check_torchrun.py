"""The nccl example started by torchrun, checked: the id exchange through torchrun's rendezvous
address and the all_reduce's sums.

Usage: check_torchrun.py NCCL_BINARY. Needs torch (for torchrun) and a GPU with NCCL.

- 4 ranks exchange the unique id (whatever the GPU count: only rank 0 calls NCCL), with
  torchrun's static rendezvous (MASTER_PORT given) and with `--standalone` (a port torchrun
  picks): every rank prints the same id, rank 0's.
- All the machine's GPUs, one rank each, all_reduce 64 MiB: every rank checks the sums
  1 + 2 + … + N (the example fails otherwise), rank 0 reports the world size.
- A rank whose rank 0 never comes fails within its timeout, with an error that says so.
"""

import json
import os
import socket
import subprocess
import sys

import torch


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, args, rdzv):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--no-python", f"--nproc-per-node={nproc}", *rdzv, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main():
    binary = sys.argv[1]
    for name, rdzv in [("static", ["--master-addr=127.0.0.1", f"--master-port={free_port()}"]),
                       ("standalone", ["--standalone"])]:
        lines = torchrun(4, [binary, "rendezvous", "--timeout-s", "60"], rdzv)
        ranks = sorted(line["rank"] for line in lines)
        ids = {line["id"] for line in lines}
        assert ranks == [0, 1, 2, 3], ranks
        assert all(line["world"] == 4 for line in lines), lines
        assert len(ids) == 1 and len(ids.pop()) == 256, lines
        print(f"torchrun ({name} rendezvous), 4 ranks: every rank joined with rank 0's id")

    gpus = torch.cuda.device_count()
    lines = torchrun(gpus, [binary, "all-reduce", "--mib", "64", "--reps", "2"],
                     ["--master-addr=127.0.0.1", f"--master-port={free_port()}"])
    assert len(lines) == 1 and lines[0]["world"] == gpus and lines[0]["op"] == "all_reduce", lines
    print(f"torchrun, {gpus} rank(s) on {gpus} GPU(s): all_reduce sums checked on every rank, "
          f"{lines[0]['busbw_gbps']} GB/s bus bandwidth")

    env = dict(os.environ, RANK="1", WORLD_SIZE="2", LOCAL_RANK="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()))
    env.pop("DLMD_NCCL_ID_FILE", None)
    env.pop("DLMD_NCCL_ID", None)
    out = subprocess.run([binary, "rendezvous", "--timeout-s", "2"], capture_output=True, text=True, timeout=60,
                         env=env)
    assert out.returncode != 0 and "rank 1: no id from rank 0 within 2s" in out.stderr, (out.returncode, out.stderr)
    print(f"without rank 0: {out.stderr.strip()}")


if __name__ == "__main__":
    main()
