#!/usr/bin/env bash
# Runs the binaries scripts/gpu-build.sh gathered, on a machine with an NVIDIA GPU, and prints a
# table of what passed. GPU tests run with DLMD_REQUIRE_GPU=1: a missing GPU fails.
# Usage: gpu-run.sh [BUNDLE_DIR]   (default: the folder of this script)
# DLMD_SKIP_SINGLE_GPU_BENCH=1 leaves out the one-GPU benchmarks (for a run on a multi-GPU
# machine whose one-GPU figures were taken elsewhere); every test still runs. DLMD_GPU_RUN=kernels
# runs only the Rust kernels on framework tensors: their launches, tests and benchmark;
# DLMD_GPU_RUN=cooperative only the Rust kernels of the launch tests, the examples and the
# guide's first kernel, under compute-sanitizer's four tools, and the cooperative and
# tensor-core kernels' benchmarks; DLMD_GPU_RUN=hopper only the Hopper kernels' tests, under the
# four tools, and their benchmarks.
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
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
# NVLink multicast stays off (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0
# cudarc loads NCCL as libnccl.so; pip's wheel (torch's) ships lib/libnccl.so.2: link it.
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$nccl_lib" ] && [ -e "$nccl_lib/libnccl.so.2" ]; then
    link_dir=$(mktemp -d)
    ln -s "$nccl_lib/libnccl.so.2" "$link_dir/libnccl.so"
    export LD_LIBRARY_PATH="$link_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "NCCL: $nccl_lib/libnccl.so.2"
fi
# candle's CUDA side links libnvrtc, libcublas, libcublasLt and libcurand: torch's wheels have
# them (nvidia/cu13/lib).
cuda_libs=$(python3 -c 'import nvidia, os
print(":".join(sorted({os.path.join(b, s, "lib") for b in nvidia.__path__ for s in os.listdir(b)
    if os.path.isdir(os.path.join(b, s, "lib"))})))' 2>/dev/null)
[ -n "$cuda_libs" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_libs"
sanitizer=/usr/local/cuda/bin/compute-sanitizer
# Every Rust kernel (the GPU tests, the launch tests, the cooperative tests, both kernel
# examples) under each compute-sanitizer tool: out-of-bounds and misaligned accesses, shared-memory races, barrier
# misuse, uninitialised reads. Any reported error fails the row.
sanitize_rust_kernels() {
    if [ ! -x "$sanitizer" ]; then
        rows+=("$(printf '%-34s %s' "compute-sanitizer" "NOT RUN (missing)")")
        return
    fi
    for tool in memcheck racecheck synccheck initcheck; do
        run "compute-sanitizer $tool: Rust kernels" bash -c '
            s=$1; tool=$2; dir=$3; status=0
            for cmd in "$dir/gpu-tests --test-threads=1" "$dir/kernel-tests --test-threads=1" \
                       "$dir/cooperative-tests --test-threads=1" "$dir/tensor-tests --test-threads=1" \
                       "$dir/raw-twin-tests --test-threads=1" \
                       "$dir/rust_kernels" "$dir/cooperative" "$dir/tensor_cores" "$dir/first-kernel"; do
                [ -x "${cmd%% *}" ] || { echo "-- $tool: ${cmd##*/}: not in this bundle"; continue; }
                out=$("$s" --tool "$tool" --error-exitcode 1 $cmd 2>&1); rc=$?
                echo "-- $tool: ${cmd##*/}"
                grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|match the CPU|elements right" <<<"$out"
                [ $rc -eq 0 ] || { tail -40 <<<"$out"; echo "FAILED (exit $rc): $tool $cmd"; status=1; }
            done
            exit $status' _ "$sanitizer" "$tool" "$dir"
    done
    sanitize_hopper_kernels
}
# The Hopper kernels (sm_90a) under the four tools: synccheck tracks their barrier objects
# (--num-cuda-barriers), for the small checks of every kernel (the tests' grids need more than it
# can allocate).
sanitize_hopper_kernels() {
    [ -x "$sanitizer" ] || return
    for tool in memcheck racecheck initcheck; do
        for cmd in "$dir/hopper-tests --test-threads=1" "$dir/warpgroup --small" "$dir/hopper --small"; do
            run "compute-sanitizer $tool: ${cmd#"$dir/"}" "$sanitizer" --tool "$tool" --error-exitcode 1 $cmd
        done
    done
    run "compute-sanitizer synccheck: warpgroup --small" "$sanitizer" --tool synccheck --num-cuda-barriers 1000000 \
        --error-exitcode 1 "$dir/warpgroup" --small
}
# CUB's row sums (row_sums_cub.cu), the reference of the cooperative row sums, built here by
# nvcc for this GPU and given to the cooperative benchmark.
cub=()
build_cub() {
    local nvcc cubin
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    cubin=$(mktemp -d)/row_sums_cub.cubin
    run "build: CUB row sums (nvcc)" "$nvcc" -O3 -arch=native -cubin -o "$cubin" "$dir/row_sums_cub.cu"
    [ -f "$cubin" ] && cub=(--cub "$cubin")
}
# The read ceiling (read_ceiling.cu): how fast the fastest CUDA C++ designs, row sums and a
# plain streaming read, read the row sums' bytes on this GPU; built here by nvcc.
read_ceiling() {
    local nvcc bin
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    bin=$(mktemp -d)/read_ceiling
    run "build: read ceiling (nvcc)" "$nvcc" -O3 -arch=native -o "$bin" "$dir/read_ceiling.cu"
    [ -x "$bin" ] && run "bench: read ceiling (CUDA C++)" "$bin"
}
# The Hopper products (raw and safe) against cuBLAS, and torch's on the same shapes (FP8 by
# torch._scaled_mm, the unfused Linear epilogue), alternated process by process.
hopper_bench() {
    run "bench: raw wgmma products vs cuBLAS" "$dir/hopper" --bench
    for round in 1 2; do
        run "bench: safe wgmma products (round $round)" "$dir/warpgroup" --bench
        if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
            run "bench: torch on those shapes (round $round)" python3 "$dir/bench_hopper_torch.py"
        fi
    done
}
if [ "${DLMD_GPU_RUN:-all}" = hopper ]; then
    run "Hopper kernels vs the CPU" "$dir/hopper-tests" --test-threads=1
    run "attention vs the CPU" "$dir/attention-tests" --test-threads=1
    run "attention gradients vs the CPU" "$dir/attention-backward-tests" --test-threads=1
    run "a Hopper launch captured into a CUDA graph" "$dir/graph-tests"
    run "Hopper products vs the CPU and cuBLAS" "$dir/warpgroup"
    sanitize_hopper_kernels
    hopper_bench
    echo
    echo "== summary"
    printf '%s\n' "${rows[@]}"
    exit $status
fi
if [ "${DLMD_GPU_RUN:-all}" = cooperative ]; then
    run "kernel launches (signatures, order)" "$dir/kernel-tests" --test-threads=1
    run "cooperative kernels vs the CPU" "$dir/cooperative-tests" --test-threads=1
    run "tensor-core kernels vs the CPU" "$dir/tensor-tests" --test-threads=1
    run "Hopper kernels vs the CPU" "$dir/hopper-tests" --test-threads=1
    run "attention vs the CPU" "$dir/attention-tests" --test-threads=1
    run "attention gradients vs the CPU" "$dir/attention-backward-tests" --test-threads=1
    run "a Hopper launch captured into a CUDA graph" "$dir/graph-tests"
    run "raw twins refuse launches they were not written for" "$dir/raw-twin-tests" --test-threads=1
    run "first kernel (the guide's, as printed)" bash -c '"$1" | tee /dev/stderr | grep -q "all 1000000 elements right"' _ "$dir/first-kernel"
    sanitize_rust_kernels
    run "bench: tensor cores vs cuBLAS" "$dir/tensor_cores" --bench
    hopper_bench
    build_cub
    for round in 1 2 3; do
        run "bench: cooperative kernels (round $round)" "$dir/cooperative" --bench "${cub[@]}"
        if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
            run "bench: torch, same shapes (round $round)" python3 "$dir/bench_cooperative_torch.py"
        fi
    done
    read_ceiling
    echo
    echo "== summary"
    printf '%s\n' "${rows[@]}"
    exit $status
fi
if [ "${DLMD_GPU_RUN:-all}" = kernels ]; then
    # The kernels on framework tensors alone: launches, the Python tests of the road from a
    # framework's tensor to a Rust kernel (under compute-sanitizer too) and its benchmark.
    run "kernel launches (signatures, order)" "$dir/kernel-tests" --test-threads=1
    run "Rust kernels (checked against the CPU)" "$dir/rust_kernels"
    site=$(mktemp -d)
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$dir"/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    run "pytest: kernels on imports, torch/cupy/jax" python3 -m pytest -q -p no:cacheprovider \
        "$dir/python/tests/test_kernels.py" "$dir/python/tests/test_cuda.py"
    for tool in memcheck racecheck; do
        run "compute-sanitizer $tool: kernels on imports" /usr/local/cuda/bin/compute-sanitizer --tool "$tool" \
            --error-exitcode 1 python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_kernels.py" \
            -k "held_until or negative_strides or same_tensor or expanded"
    done
    run "bench: Rust kernel vs torch, Triton" python3 "$dir/python/bench_kernels.py"
    echo
    echo "== summary"
    printf '%s\n' "${rows[@]}"
    exit $status
fi
run "gpu tests (header vs Rust views)" "$dir/gpu-tests" --test-threads=1
run "kernel launches (signatures, order)" "$dir/kernel-tests" --test-threads=1
run "cooperative kernels vs the CPU" "$dir/cooperative-tests" --test-threads=1
run "tensor-core kernels vs the CPU" "$dir/tensor-tests" --test-threads=1
run "Hopper kernels vs the CPU" "$dir/hopper-tests" --test-threads=1
run "attention vs the CPU" "$dir/attention-tests" --test-threads=1
run "attention gradients vs the CPU" "$dir/attention-backward-tests" --test-threads=1
run "a Hopper launch captured into a CUDA graph" "$dir/graph-tests"
run "raw twins refuse launches they were not written for" "$dir/raw-twin-tests" --test-threads=1
run "first kernel (the guide's, as printed)" bash -c '"$1" | tee /dev/stderr | grep -q "all 1000000 elements right"' _ "$dir/first-kernel"
sanitize_rust_kernels
# candle, and (below) the Python paths, under memcheck and racecheck.
pending_python_sanitizer=()
if [ -x "$sanitizer" ]; then
    for tool in memcheck racecheck; do
        run "compute-sanitizer $tool: candle" "$sanitizer" --tool "$tool" --error-exitcode 1 "$dir/candle_cuda"
        pending_python_sanitizer+=("$tool")
    done
fi
# Two GPUs or more (all of them): skipped with a line below that, failing under
# DLMD_REQUIRE_GPU=1 (set above) unless this machine has fewer than 2, where it is said and not run.
if [ "$gpus" -ge 2 ]; then
    run "multi-GPU tests ($gpus GPUs: peer, NCCL)" "$dir/multi-gpu-tests" --test-threads=1
else
    echo "multi-GPU tests: not run, this machine has $gpus GPU(s)"
    rows+=("$(printf '%-34s %s' "multi-GPU tests" "NOT RUN ($gpus GPU)")")
fi
single_bench=$([ "${DLMD_SKIP_SINGLE_GPU_BENCH:-0}" = 1 ] && echo 0 || echo 1)
if [ "$single_bench" = 1 ]; then
    run "add_index example + benchmark" "$dir/add_index" --bench
    run "Rust kernels + benchmarks" "$dir/rust_kernels" --bench
    build_cub
    run "cooperative kernels + benchmarks" "$dir/cooperative" --bench "${cub[@]}"
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        run "torch on the cooperative shapes" python3 "$dir/bench_cooperative_torch.py"
    fi
    run "tensor cores + bench vs cuBLAS" "$dir/tensor_cores" --bench
    hopper_bench
    read_ceiling
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        # The Rust row sums and torch.sum(x, dim=1), alternated process by process.
        for round in 1 2 3; do
            run "row sums, Rust (round $round)" "$dir/rust_kernels" --bench-row-sums
            run "row sums, torch (round $round)" python3 "$dir/bench_row_sums_torch.py"
        done
    fi
    run "candle CUDA both ways + benchmarks" "$dir/candle_cuda" --bench
    run "MirroredArray example + 1 GiB copies" "$dir/mirrored" --bench
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        run "torch 1 GiB copies (reference)" python3 "$dir/bench_torch_copies.py"
    fi
else
    run "add_index example" "$dir/add_index"
    run "Rust kernels" "$dir/rust_kernels"
    run "cooperative kernels" "$dir/cooperative"
    run "tensor cores vs the CPU and cuBLAS" "$dir/tensor_cores"
    run "Hopper products vs the CPU and cuBLAS" "$dir/warpgroup"
    run "MirroredArray example" "$dir/mirrored"
fi
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    run "torchrun: rendezvous, all_reduce" python3 "$dir/check_torchrun.py" "$dir/nccl"
fi
site=$(mktemp -d)
if python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$dir"/*.whl; then
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    # The oneAPI tests need dpnp's own environment (scripts/test.sh runs them on a CPU).
    echo "test_oneapi.py: not run here (no dpnp); scripts/test.sh runs it on a SYCL CPU device"
    ignore=(--ignore="$dir/python/tests/test_oneapi.py")
    if [ "$gpus" -lt 2 ]; then
        echo "test_multi_gpu.py: not run, this machine has $gpus GPU(s)"
        ignore+=(--ignore="$dir/python/tests/test_multi_gpu.py")
    fi
    run "pytest: numpy, torch, cupy, jax, tvm-ffi" python3 -m pytest -q -p no:cacheprovider "$dir/python/tests" \
        "${ignore[@]}"
    # The host copy of cupy managed memory with a write queued, and Rust kernels on imported
    # tensors (released right after the call, negative strides, refused arguments), under
    # compute-sanitizer.
    for tool in "${pending_python_sanitizer[@]}"; do
        run "compute-sanitizer $tool: managed import" "$sanitizer" --tool "$tool" --error-exitcode 1 \
            python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_cuda.py" -k waits_for_cupy_managed
        run "compute-sanitizer $tool: kernels on imports" "$sanitizer" --tool "$tool" --error-exitcode 1 \
            python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_kernels.py" \
            -k "held_until or negative_strides or same_tensor or expanded"
        run "compute-sanitizer $tool: attention on torch tensors" "$sanitizer" --tool "$tool" --error-exitcode 1 \
            python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_attention.py" \
            -k "b2h4kv4q128k128 or b1h8kv2q333k200 or graph or refused"
        run "compute-sanitizer $tool: attention's gradients" "$sanitizer" --tool "$tool" --error-exitcode 1 \
            python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_attention_backward.py" \
            -k "b1h8kv2q333k200 or b1h4kv1q1k333 or direct or refused"
        run "compute-sanitizer $tool: attention over packed sequences" "$sanitizer" --tool "$tool" \
            --error-exitcode 1 python3 -m pytest -q -p no:cacheprovider "$dir/python/tests/test_attention_varlen.py" \
            -k "(h8kv2q621k726 and bfloat16 and 128) or direct or not_offsets or refused"
    done
    if [ "$single_bench" = 1 ]; then
        run "bench: CUDA DLPack exchanges" python3 "$dir/python/bench_cuda.py"
        run "bench: DLPack C exchange table" python3 "$dir/python/bench_exchange.py"
        run "bench: CPU DLPack paths" python3 "$dir/python/bench.py"
        run "bench: torch -> candle exchanges" python3 "$dir/python/bench_candle.py"
        run "bench: Rust kernel vs torch, Triton" python3 "$dir/python/bench_kernels.py"
        run "bench: attention operator vs SDPA" python3 "$dir/python/bench_attention.py"
    fi
    if [ "$gpus" -ge 2 ]; then
        run "bench: $gpus GPUs, dlmd vs torch" python3 "$dir/bench_multi_gpu.py" "$dir/nccl" --rounds "${DLMD_BENCH_ROUNDS:-5}"
    fi
else
    rows+=("$(printf '%-34s %s' "python module install" "FAIL")")
    status=1
fi
echo
echo "== summary"
printf '%s\n' "${rows[@]}"
exit $status
