#!/usr/bin/env bash
# Builds every GPU test and example binary here (no CUDA needed: cudarc loads the driver at run
# time) and gathers them in one folder for a machine with an NVIDIA GPU and no Rust toolchain.
# Usage: scripts/gpu-build.sh [OUT_DIR]   (default: target/gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/gpu-bundle}
mkdir -p "$out"
# (rust_kernels builds its PTX with the nightly toolchain and rust-src.)
cargo build --release -p dlmd-examples --features nccl,kernels --example add_index --example mirrored --example nccl \
    --example rust_kernels --example cooperative
cp target/release/examples/{add_index,mirrored,nccl,rust_kernels,cooperative} "$out/"
# Tensor-core kernels (sm_80 and later), timed against cuBLAS (loaded at run time).
cargo build --release -p dlmd-examples --features tensor-kernels --example tensor_cores
cp target/release/examples/tensor_cores "$out/"
# Hopper kernels (sm_90a): the raw wgmma products and the safe ones (warpgroup), against cuBLAS.
cargo build --release -p dlmd-examples --features hopper-kernels,tensor-kernels --example hopper --example warpgroup \
    --example attention
cp target/release/examples/{hopper,warpgroup,attention} "$out/"
cp scripts/bench_torch_copies.py scripts/bench_nccl_torch.py scripts/bench_multi_gpu.py scripts/check_torchrun.py scripts/bench_row_sums_torch.py \
    scripts/bench_cooperative_torch.py scripts/bench_hopper_torch.py scripts/bench_attention_torch.py examples/cuda/row_sums_cub.cu examples/cuda/read_ceiling.cu "$out/"
# candle's CUDA side (feature candle-cuda): candle's kernels compiled by nvcc 13.0 from NVIDIA's
# pinned wheels (for $CUDA_COMPUTE_CAP, default 90: H100/H200), and link-time stand-ins for the
# CUDA libraries candle links (the GPU machine's real ones load at run time).
cuda_bin=$(DLMD_PTX_VENV=.venv-cuda DLMD_CUDA_WHEELS=scripts/requirements-cuda.txt scripts/cuda-wheel.sh)
cudarc_src=$(cargo metadata --format-version 1 | python3 -c 'import json, os, sys
print(next(os.path.dirname(p["manifest_path"]) for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc"))')
python3 scripts/cuda-link-stubs.py "$cudarc_src" target/cuda-link-stubs/lib
# candle's static kernels call the CUDA runtime: the wheel's real libcudart, by its link name.
ln -sf "$cuda_bin/../lib/libcudart.so.13" target/cuda-link-stubs/lib/libcudart.so
candle_env=(env PATH="$cuda_bin:$PATH" NVCC_PREPEND_FLAGS="-I$cuda_bin/../include/cccl"
    CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}" CUDA_HOME="$PWD/target/cuda-link-stubs")
"${candle_env[@]}" cargo build --release -p dlmd-examples --features candle-cuda --example candle_cuda
cp target/release/examples/candle_cuda "$out/"
# The test binaries: `gpu` (one device) and `multi_gpu` (every device, two or more, with NCCL).
for name in gpu multi_gpu; do
    test_bin=$(cargo test --release -p dlmd-tests --test "$name" --no-run --message-format=json 2>/dev/null |
        NAME=$name python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == os.environ["NAME"]:
        print(m["executable"])')
    cp "$test_bin" "$out/${name//_/-}-tests"
done
# Kernel crates' launches (signatures refused, launches ordered after queued copies), the
# cooperative kernels and the tensor-core kernels against the CPU.
for name in gpu cooperative tensor_cores warpgroup attention attention_backward graph raw_twins; do
    kernel_bin=$(cargo test --release -p dlmd-tests-kernels --test "$name" --no-run --message-format=json 2>/dev/null |
        NAME=$name python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == os.environ["NAME"]:
        print(m["executable"])')
    case $name in
        gpu) bin=kernel-tests ;; cooperative) bin=cooperative-tests ;; warpgroup) bin=hopper-tests ;;
        attention) bin=attention-tests ;; attention_backward) bin=attention-backward-tests ;;
        graph) bin=graph-tests ;; raw_twins) bin=raw-twin-tests ;;
        *) bin=tensor-tests ;;
    esac
    cp "$kernel_bin" "$out/$bin"
done
cp scripts/gpu-run.sh "$out/"
# The guide's first kernel, built as a user builds it (outside the workspace).
scripts/first-kernel.sh "$out"
# The Python module (abi3, Python >= 3.10) and its tests and benchmarks, with candle on CUDA (the
# CUDA libraries it links are the GPU machine's: the wheel carries none).
venv=${DLMD_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r scripts/requirements-test.txt
rm -f "$out"/*.whl
"${candle_env[@]}" PATH="$(cd "$venv" && pwd)/bin:$cuda_bin:$PATH" maturin build --release \
    -m examples/python-memarray/Cargo.toml --features candle-cuda --auditwheel skip -o "$out"
rm -rf "$out/python"
mkdir -p "$out/python"
cp -r examples/python-memarray/tests examples/python-memarray/bench.py examples/python-memarray/bench_cuda.py \
    examples/python-memarray/bench_exchange.py examples/python-memarray/bench_candle.py \
    examples/python-memarray/bench_kernels.py examples/python-memarray/bench_attention.py examples/python-memarray/bench_jax.py \
    examples/python-memarray/count_syncs.c examples/python-memarray/driver_calls.c "$out/python/"
# tvm-ffi, a C consumer and producer of DLPack's exchange table, for the GPU machine's Python
# (installed there with the module, from this folder: that machine has no network).
tvm_ffi=$(sed -n 's/^apache-tvm-ffi==//p' scripts/requirements-test.txt)
"$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$out" "apache-tvm-ffi==$tvm_ffi"
ls -la "$out"
