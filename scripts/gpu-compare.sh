#!/usr/bin/env bash
# Times the kernels of two bundles of scripts/gpu-build.sh against each other on one GPU: a
# baseline (say, the last release's) and a candidate. Each round runs both sides, the baseline
# first in odd rounds and the candidate first in even ones: the cooperative kernels
# (`cooperative --bench`, with CUB's row sums where nvcc is there), the element-wise Rust kernels
# (`rust_kernels --bench`) and, where torch and both bundles' wheels are, a framework's tensor
# through a Rust kernel (`python/bench_kernels.py`). It prints every figure, then each kernel's
# median time on both sides and their ratio (candidate / baseline: above 1 is slower).
# Usage: gpu-compare.sh BASE_DIR NEW_DIR [ROUNDS]   (default 3 rounds)
set -uo pipefail
base=$1 new=$2 rounds=${3:-3}
log=$(mktemp)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
cub=()
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ] && [ -f "$new/row_sums_cub.cu" ]; then
    cubin=$(mktemp -d)/row_sums_cub.cubin
    "$nvcc" -O3 -arch=native -cubin -o "$cubin" "$new/row_sums_cub.cu" && cub=(--cub "$cubin")
fi
# Each bundle's Python module in a folder of its own.
declare -A site
for side in base new; do
    dir=${!side}
    site[$side]=$(mktemp -d)
    if ls "$dir"/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target "${site[$side]}" "$dir"/*.whl
    fi
done
torch=$(python3 -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
one() {
    local side=$1 dir=${!1}
    "$dir/cooperative" --bench "${cub[@]}" 2>&1 | sed "s/^/$side: /"
    "$dir/rust_kernels" --bench 2>&1 | grep '^bench' | sed "s/^/$side: /"
    if [ "$torch" = 1 ] && [ -f "$dir/python/bench_kernels.py" ] && ls "$dir"/*.whl >/dev/null 2>&1; then
        PYTHONPATH="${site[$side]}" python3 "$dir/python/bench_kernels.py" 11 2>&1 | sed "s/^/$side: /"
    fi
}
for ((round = 1; round <= rounds; round++)); do
    echo "== round $round"
    if ((round % 2)); then order=(base new); else order=(new base); fi
    for side in "${order[@]}"; do one "$side"; done | tee -a "$log"
done
echo
echo "== medians over $rounds rounds (candidate / baseline)"
python3 - "$log" <<'EOF'
import re, statistics, sys
times = {}
for line in open(sys.argv[1]):
    side, _, text = line.rstrip("\n").partition(": ")
    if side not in ("base", "new"):
        continue
    text = text.strip()
    m = re.match(r"bench (.+?): (.*)", text)
    if m:
        what, rest = m.groups()
        for who, ms in re.findall(r"(safe|raw|Rust kernel) ([0-9.]+) ms", rest):
            times.setdefault((f"{what}, {who}", "ms"), {}).setdefault(side, []).append(float(ms))
        continue
    m = re.match(r"(dm\.add_index\(x\)|torch\.ops\.dlmd\.add_index\(x\)|x\.add_\(1\) \(torch\)|Rust add_index)\s+([0-9.]+)", text)
    if m:
        unit = "ms" if m.group(1) == "Rust add_index" else "us/call"
        times.setdefault((m.group(1), unit), {}).setdefault(side, []).append(float(m.group(2)))
worst = 0.0
for (what, unit), sides in times.items():
    if "base" in sides and "new" in sides:
        b, n = statistics.median(sides["base"]), statistics.median(sides["new"])
        worst = max(worst, n / b)
        print(f"{what:<70} {unit:>8}  base {b:9.4f}  new {n:9.4f}  new/base {n / b:6.3f}")
print(f"slowest ratio: {worst:.3f}")
EOF
