#!/usr/bin/env bash
# Checks the PTX of the Rust kernels (examples/kernels and examples/python-memarray/kernels, built
# by dlmd-build with the nightly toolchain): each must be self-contained (no `.extern` but the
# launch's dynamic shared memory: the CUDA driver could not load it), and ptxas from NVIDIA's
# `nvidia-cuda-nvcc` wheel (pinned in scripts/requirements-ptx.txt, installed into .venv-ptx or
# $DLMD_PTX_VENV) must assemble it for sm_80 and sm_90. Needs no GPU and no CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."

ptxas=$(scripts/cuda-wheel.sh)/ptxas
"$ptxas" --version | tail -1

# A kernel crate's build script writes the PTX and hands its path to the crate's compilation
# (DLMD_KERNELS_PTX, which dlmd::kernels_ptx!() reads). `cargo check` runs the build script as
# `cargo build` does, without generating the host crates' code.
# A build that fails prints cargo's errors and gives no path, which `check` refuses.
ptx_of() {
    local package=$1; shift
    local messages errors
    messages=$(mktemp) errors=$(mktemp)
    if ! cargo check "$@" -p "$package" --message-format=json >"$messages" 2>"$errors"; then
        echo "ptx-check: cargo check of $package failed:" >&2
        # A nested PTX build's log comes as one `cargo::error=` line each: from the first error.
        sed -n '/error/,$p' "$errors" | head -80 >&2
        python3 -c 'import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-message" and m["message"]["level"] == "error":
        print(m["message"]["rendered"], file=sys.stderr)' "$messages"
        rm -f "$messages" "$errors"
        return 1
    fi
    PACKAGE=$package python3 -c 'import json, os, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and os.environ["PACKAGE"] in m["package_id"]:
        print(dict(m["env"])["DLMD_KERNELS_PTX"])' "$messages" | grep . ||
        echo "ptx-check: $package built, but its build script handed no DLMD_KERNELS_PTX" >&2
    rm -f "$messages" "$errors"
}

# Self-contained: nothing declared `.extern` but the launch's dynamic shared memory (an
# `.extern .shared` array of no length, which the launch provides). The check itself is checked
# on a PTX file with an `.extern` function, and on one with only dynamic shared memory.
externs() { grep '^[[:space:]]*\.extern' "$1" | grep -Ev '^[[:space:]]*\.extern[[:space:]]+\.shared[[:space:]].*\[\];$'; }
self_contained() { ! externs "$1" >/dev/null; }
bad=$(mktemp --suffix=.ptx)
printf '.version 7.0\n.target sm_70\n.address_size 64\n.extern .func missing();\n' >"$bad"
if self_contained "$bad"; then
    echo "the .extern check accepts a PTX file with an .extern function" >&2
    exit 1
fi
printf '.version 7.0\n.target sm_70\n.address_size 64\n.extern .shared .align 16 .b8 tiles[];\n' >"$bad"
if ! self_contained "$bad"; then
    echo "the .extern check refuses a PTX file whose only .extern is dynamic shared memory" >&2
    exit 1
fi
rm -f "$bad"

check() {
    local ptx=$1 each=$2 arches=${3:-sm_80 sm_90}
    if [ -z "$ptx" ] || [ ! -f "$ptx" ]; then
        echo "ptx-check: no PTX file from the kernel crate's build (why is said above)" >&2
        exit 1
    fi
    if ! self_contained "$ptx"; then
        echo "$ptx is not self-contained:" >&2
        externs "$ptx" >&2
        exit 1
    fi
    echo "$(grep -c '^\.visible \.entry' "$ptx") kernels in $(basename "$(dirname "$(dirname "$ptx")")") ($(grep -m1 '^\.target' "$ptx")), self-contained"
    for arch in $arches; do
        local info
        info=$("$ptxas" -arch="$arch" -v "$ptx" -o /dev/null 2>&1)
        # The last assembly's notes and architecture, read again below for the Hopper kernels.
        last_info=$info last_arch=$arch
        if [ "$each" = each ]; then
            sed -n "s/^ptxas info    : Function properties for /$arch: /p; s/^ptxas info    : Used/    used/p" <<<"$info"
        else
            echo "$arch: $(grep -c 'Compiling entry function' <<<"$info") assembled, at most $(grep -o 'Used [0-9]* registers' <<<"$info" | awk '{print $2}' | sort -n | tail -1) registers"
        fi
    done
}

check "$(ptx_of dlmd-example-kernels)" each
# The MemArray's kernels: every element type and rank, and a kernel of two arguments.
# (In the workspace's target directory, which the module's other builds share: one nested build.)
check "$(ptx_of dlmd-memarray-kernels --release --manifest-path examples/python-memarray/Cargo.toml --target-dir target)" summary
# The tensor-core kernels (sm_80: mma.sync, ldmatrix, cp.async) and the Hopper ones (sm_90a:
# wgmma, TMA), each for the architectures its PTX targets.
check "$(ptx_of dlmd-example-tensor-kernels)" summary "sm_80 sm_90"
check "$(ptx_of dlmd-example-hopper-kernels)" summary sm_90a
[ "$last_arch" = sm_90a ] || { echo "ptx-check: the Hopper notes would be $last_arch's" >&2; exit 1; }
notes=$last_info
# The safe Hopper kernels (`dlmd::kernel::warpgroup`) keep their products asynchronous: ptxas
# serialises `wgmma` (its C7510/C7515 notes) where running accumulators are touched before
# their wait or a call splits the pipeline, which would be correct but slow. The raw variants
# that measure such layouts on purpose are left out. And the register split of
# `Block::specialise` stays: ptxas drops every `setmaxnreg` of a function (C7507, C7508, notes
# that name no function) where it cannot size the code between them.
# (The notes of the assembly just above: sm_90a, the last architecture it assembled for.)
serialised=$(echo "$notes" | grep -E 'C75[0-9]+' | grep -E "'(linear|gemm|matmul|attention)_[a-z0-9_]*'" || true)
if [ -n "$serialised" ]; then
    echo "ptxas serialises wgmma in a safe Hopper kernel:" >&2
    echo "$serialised" >&2
    exit 1
fi
dropped=$(echo "$notes" | grep -E "'setmaxnreg' ignored" || true)
if [ -n "$dropped" ]; then
    echo "ptxas drops the register split of a Hopper kernel:" >&2
    echo "$dropped" >&2
    exit 1
fi
echo "sm_90a: no safe Hopper kernel has its wgmma serialised or its register split dropped"
