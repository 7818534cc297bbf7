#!/usr/bin/env bash
# Runs the DLPack conversion benchmark of dlmd and its C++ reference, CCCL's
# cuda::to_dlpack_tensor / cuda::to_host_mdspan, on one machine in one run, and prints both.
#
# Output goes to $BENCH_OUT (a temporary folder by default).
# Needs: nvcc (the C++ side includes <cuda/mdspan>, which needs the CUDA headers), CCCL >= 3.2
# headers (CCCL_INCLUDE, default the toolkit's), and the dlmd benchmark binary (DLMD_BENCH,
# built with `cargo bench -p dlmd --bench dlpack --no-run`).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-$(mktemp -d)}
cccl=${CCCL_INCLUDE:-/usr/local/cuda/include/cccl}
bench=${DLMD_BENCH:?set DLMD_BENCH to the dlmd dlpack benchmark binary}

nvcc -O3 -std=c++17 -I "$cccl" -I dlmd/benches/cccl dlmd/benches/cccl/dlpack_cccl.cpp -o "$out/dlpack_cccl"
echo "== CCCL (C++): median ns per call"
"$out/dlpack_cccl" | tee "$out/cccl.txt"
echo "== dlmd (Rust, criterion): ns per call [low estimate high]"
"$bench" --bench --warm-up-time 1 --measurement-time 3 2>&1 | tee "$out/dlmd-raw.txt" |
    awk '/^(export|import)/ { name = $0 } /time:/ { print name, $2, $4, $6 }' | tee "$out/dlmd.txt"
