#!/usr/bin/env bash
# dlmd's DLPack conversions against their C++ reference, CCCL's cuda::to_dlpack_tensor and
# cuda::to_host_mdspan, on this machine in one run: both sides time the same cases by the same
# method (dlmd/benches/cccl.rs, dlmd/benches/cccl/dlpack_cccl.cpp), in alternation, and the
# script prints each side's median over the rounds and the ratio dlmd / CCCL per case.
#
# No GPU or CUDA toolkit is needed: CCCL's host code builds with g++ from three wheels of the
# Python package index, downloaded once into $DLMD_CCCL_CACHE (default target/cccl). Set CXX to
# use another compiler (nvcc works too), ROUNDS for the number of alternations (default 5), and
# BENCH_OUT to keep the raw output (a temporary folder by default).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${DLMD_CCCL_CACHE:-target/cccl}
rounds=${ROUNDS:-5}
out=${BENCH_OUT:-$(mktemp -d)}
cxx=${CXX:-g++}
wheels=(nvidia-cuda-cccl==13.3.5.0.6 nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37)

include="$cache/root/nvidia/cu13/include"
if [ ! -f "$include/cccl/cuda/mdspan" ] || [ ! -f "$include/cuda_runtime_api.h" ]; then
    echo "== fetching CCCL's headers into $cache"
    rm -rf "$cache" && mkdir -p "$cache/wheels"
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$cache/wheels" "${wheels[@]}"
    for wheel in "$cache"/wheels/*.whl; do
        python3 -m zipfile -e "$wheel" "$cache/root"
    done
fi

echo "== building CCCL's side with $cxx"
"$cxx" -O3 -std=c++17 -I "$include/cccl" -I "$include" -I dlmd/benches/cccl \
    dlmd/benches/cccl/dlpack_cccl.cpp -o "$out/dlpack_cccl"
echo "== building dlmd's side"
dlmd=$(cargo bench -q -p dlmd --bench cccl --no-run --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cccl":
        print(m["executable"])')

for round in $(seq 1 "$rounds"); do
    echo "== round $round of $rounds"
    "$out/dlpack_cccl" >"$out/cccl.$round.txt"
    "$dlmd" --bench >"$out/dlmd.$round.txt"
done

python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(side):
    cases = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{side}.{r}.txt"):
            name, ns = line.rsplit(" ", 1)
            cases.setdefault(name, []).append(float(ns))
    return {name: statistics.median(v) for name, v in cases.items()}
cccl, dlmd = runs("cccl"), runs("dlmd")
print(f"\nmedian ns per call over {rounds} alternated rounds (raw output in {out})")
print(f"{'case':40} {'dlmd':>10} {'CCCL':>10} {'dlmd/CCCL':>10}")
for name, ref in cccl.items():
    ours = dlmd[name]
    print(f"{name:40} {ours:10.3f} {ref:10.3f} {ours / ref:10.2f}")
PY
