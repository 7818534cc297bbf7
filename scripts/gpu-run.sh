#!/usr/bin/env bash
# Runs the binaries scripts/gpu-build.sh gathered, on a machine with an NVIDIA GPU, and prints a
# table of what passed. GPU tests run with DLMD_REQUIRE_GPU=1: a missing GPU fails.
# Usage: gpu-run.sh [BUNDLE_DIR]   (default: the folder of this script)
set -uo pipefail
dir=${1:-$(dirname "$0")}
export DLMD_REQUIRE_GPU=1
status=0
declare -a rows
run() {
    local name=$1; shift
    local log
    log=$("$@" 2>&1); local rc=$?
    echo "$log"
    [ $rc -eq 0 ] || status=1
    rows+=("$(printf '%-34s %s' "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (exit $rc)")")")
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
run "gpu tests (header vs Rust views)" "$dir/gpu-tests" --test-threads=1
run "add_index example + benchmark" "$dir/add_index" --bench
run "MirroredArray example + 1 GiB copies" "$dir/mirrored" --bench
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    run "torch 1 GiB copies (reference)" python3 "$dir/bench_torch_copies.py"
fi
site=$(mktemp -d)
if python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$dir"/*.whl; then
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    # The oneAPI tests need dpnp's own environment (scripts/test.sh runs them on a CPU).
    echo "test_oneapi.py: not run here (no dpnp); scripts/test.sh runs it on a SYCL CPU device"
    run "pytest: numpy, torch, cupy, jax, tvm-ffi" python3 -m pytest -q -p no:cacheprovider "$dir/python/tests" \
        --ignore="$dir/python/tests/test_oneapi.py"
    run "bench: CUDA DLPack exchanges" python3 "$dir/python/bench_cuda.py"
    run "bench: DLPack C exchange table" python3 "$dir/python/bench_exchange.py"
    run "bench: CPU DLPack paths" python3 "$dir/python/bench.py"
else
    rows+=("$(printf '%-34s %s' "python module install" "FAIL")")
    status=1
fi
echo
echo "== summary"
printf '%s\n' "${rows[@]}"
exit $status
