#!/usr/bin/env bash
# dlmd in one build with crates that choose cudarc's features their own way (tests/compose):
# candle-core 0.11.1's cudarc features (linking, the CUDA version from nvcc), an application
# linking CUDA 12.8, one loading CUDA 13.0, and candle-core itself beside dlmd's candle feature.
# nvcc comes from the pinned `nvidia-cuda-nvcc` wheel (scripts/requirements-ptx.txt), as on a
# machine without a CUDA toolkit. Needs no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

nvcc_bin=$(scripts/cuda-wheel.sh)

# In the workspace's target directory: what these builds share with dlmd's own (dependencies
# with the same features, candle-core's CPU build) is built once.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
manifest=tests/compose/Cargo.toml
for features in loaded-cuda-13 linked-cuda-12; do
    echo "-- $features"
    cargo check -q --manifest-path "$manifest" --features "$features"
done
echo "-- candle-cudarc (nvcc: $("$nvcc_bin/nvcc" --version | tail -1))"
PATH="$nvcc_bin:$PATH" cargo check -q --manifest-path "$manifest" --features candle-cudarc
echo "-- candle"
cargo test -q --manifest-path "$manifest" --features candle
echo "dlmd builds beside every cudarc choice above, and beside candle-core"
