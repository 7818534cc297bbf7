#!/usr/bin/env bash
# The README's first kernel, as a user gets it: the files the README prints must be those of
# examples/kernel-template (and the cooperative kernel it shows, examples/kernels'
# transpose_tiled), and that crate must build outside this workspace, its dependencies
# on dlmd turned into paths to this checkout (the only change), with the workspace's lock file.
# On a machine without a GPU the program must stop with dlmd's `NoDriver` error; with
# --gpu it must run and print its result.
#
#   scripts/first-kernel.sh [--gpu] [OUT]     OUT: where the built program is copied
#
# Needs the nightly toolchain with rust-src (the kernels' PTX), as every kernel crate does.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
gpu=0
if [ "${1:-}" = "--gpu" ]; then gpu=1; shift; fi
out=${1:-}
template=examples/kernel-template

# 1. The README prints exactly the template's files: each block follows `<!-- file: PATH -->`.
python3 - "$template" <<'PY'
import pathlib, re, sys
template = pathlib.Path(sys.argv[1])
readme = pathlib.Path("README.md").read_text()
blocks = re.findall(r"<!-- file: (\S+) -->\n```[a-z]*\n(.*?)```\n", readme, re.S)
files = sorted(p.relative_to(template).as_posix() for p in template.rglob("*") if p.is_file())
shown = sorted(name for name, _ in blocks)
if shown != files:
    sys.exit(f"first-kernel: the README shows {shown}, the template holds {files}")
for name, text in blocks:
    if (template / name).read_text() != text:
        sys.exit(f"first-kernel: README.md's {name} differs from {template / name}")
print(f"first-kernel: README.md prints the template's {len(blocks)} files exactly")
# The cooperative kernel the README shows is examples/kernels' transpose_tiled, as it is there.
start = readme.index("### Cooperative kernels")
shown = re.findall(r"```rust\n(.*?)```", readme[start:], re.S)[0]
source = pathlib.Path("examples/kernels/src/lib.rs").read_text()
def kernel(text):
    at = text.index("#[dlmd::kernel]\npub fn transpose_tiled(")
    return text[at:text.index("\n}\n", at) + 3]
tile = "pub type TransposeTile = TileOf<f32, (Const<64>, Const<64>), RightPadded<1>>;\n"
if kernel(shown) != kernel(source) or tile not in shown or tile not in source:
    sys.exit("first-kernel: README.md's cooperative kernel differs from examples/kernels' transpose_tiled")
print("first-kernel: README.md's cooperative kernel is examples/kernels' transpose_tiled")
# The tensor-core kernel it shows is examples/tensor-kernels' matmul_bf16_two_stages.
start = readme.index("### Tensor cores")
shown = re.findall(r"```rust\n(.*?)```", readme[start:], re.S)[0]
source = pathlib.Path("examples/tensor-kernels/src/lib.rs").read_text()
def tensor_kernel(text):
    at = text.index("#[dlmd::kernel(min_blocks_per_sm = 2)]\npub fn matmul_bf16_two_stages(")
    return text[at:text.index("\n}\n", at) + 3]
steps = ["pub type Bf16Atom = M16N8K16<bf16>;\n", "pub type TwoSteps = ((StepA, StepB), (StepA, StepB));\n", "pub type StepA = TileOf<bf16, (Const<128>, Const<32>), RightSwizzled<Swizzle64>>;\n",
         "pub type StepB = TileOf<bf16, (Const<32>, Const<128>), RightSwizzled<Swizzle128>>;\n"]
if tensor_kernel(shown) != tensor_kernel(source) or not all(t in shown and t in source for t in steps):
    sys.exit("first-kernel: README.md's tensor-core kernel differs from examples/tensor-kernels' matmul_bf16_two_stages")
print("first-kernel: README.md's tensor-core kernel is examples/tensor-kernels' matmul_bf16_two_stages")
# The Hopper kernel it shows is examples/hopper-kernels' src/simple.rs, as it is there.
start = readme.index("#### Hopper: warpgroups, TMA and `wgmma`")
shown = re.findall(r"```rust\n(.*?)```", readme[start:], re.S)[0]
source = pathlib.Path("examples/hopper-kernels/src/simple.rs").read_text()
if not source.endswith(shown):
    sys.exit("first-kernel: README.md's Hopper kernel differs from examples/hopper-kernels/src/simple.rs")
print("first-kernel: README.md's Hopper kernel is examples/hopper-kernels' linear_bf16_simple")
PY

# 2. The template as a crate of its own, outside this workspace.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$template" "$work/first-kernel"
cp Cargo.lock "$work/first-kernel/"
sed -i \
    -e "s|^dlmd = { version = \"0.1.0\"|dlmd = { version = \"0.1.0\", path = \"$repo/dlmd\"|" \
    -e "s|^dlmd-build = \"0.1.0\"|dlmd-build = { version = \"0.1.0\", path = \"$repo/dlmd-build\" }|" \
    "$work/first-kernel/Cargo.toml"
grep -c "path = \"$repo" "$work/first-kernel/Cargo.toml" | grep -qx 3 ||
    { echo "first-kernel: expected three dlmd dependencies to point here" >&2; exit 1; }
# Built into this repository's target directory: the crate is the user's, outside the workspace,
# and the compiled `core` for nvptx64 and the dependencies it shares with the other checks are
# built once.
export CARGO_TARGET_DIR="$repo/target"
(cd "$work/first-kernel" && cargo build --release --quiet)
program="$repo/target/release/first-kernel"
echo "first-kernel: built; src/main.rs is $(wc -l < "$template/src/main.rs") lines, with no cudarc in the manifest and no unsafe"
! grep -q cudarc "$template/Cargo.toml" && ! grep -rq unsafe "$template/src"
if [ -n "$out" ]; then mkdir -p "$out" && cp "$program" "$out/"; fi
# The kernel body type-checked on the host, as the README has a user ask for it.
(cd "$work/first-kernel" && RUSTFLAGS="--cfg dlmd_kernel_check" \
    cargo check --quiet --target-dir "$repo/target/kernel-check")
echo "first-kernel: its kernel body type-checks on the host (--cfg dlmd_kernel_check)"

# The README's tensor-core kernel in a crate of its own, as a user writes it: the template's
# manifest, a build script for sm_80, and the kernel as the README prints it (its `core` for
# nvptx64 shared with the build above).
mkdir -p "$work/tensor-kernel/src"
sed -e 's/^name = "first-kernel"/name = "tensor-kernel"/' -e '/^\[\[bin\]\]/,$d' \
    "$work/first-kernel/Cargo.toml" > "$work/tensor-kernel/Cargo.toml"
printf '[lib]\npath = "src/lib.rs"\n' >> "$work/tensor-kernel/Cargo.toml"
cp Cargo.lock "$work/tensor-kernel/"
cat > "$work/tensor-kernel/build.rs" <<'RS'
fn main() {
    dlmd_build::PtxBuild::from_env().arch("sm_80").build_or_exit();
}
RS
python3 - "$work/tensor-kernel/src/lib.rs" <<'PY'
import pathlib, re, sys
readme = pathlib.Path("README.md").read_text()
start = readme.index("### Tensor cores")
shown = re.findall(r"```rust\n(.*?)```", readme[start:], re.S)[0]
header = (
    '#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx, asm_experimental_arch, stdarch_nvptx,\n'
    '    core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem), allow(internal_features))]\n'
    '#[cfg(not(target_arch = "nvptx64"))]\npub const PTX: &str = dlmd::kernels_ptx!();\n'
)
pathlib.Path(sys.argv[1]).write_text(header + shown)
PY
(cd "$work/tensor-kernel" && cargo build --release --quiet)
grep -q "mma.sync.aligned.m16n8k16" "$(ls -t "$repo"/target/release/build/tensor-kernel-*/out/kernels.ptx | head -1)"
echo "first-kernel: the README's tensor-core kernel builds in a crate of its own, for sm_80, with mma.sync in its PTX"
# The README's Hopper kernel likewise, for sm_90a.
mkdir -p "$work/hopper-kernel/src"
sed -e 's/^name = "tensor-kernel"/name = "hopper-kernel"/' "$work/tensor-kernel/Cargo.toml" > "$work/hopper-kernel/Cargo.toml"
cp Cargo.lock "$work/hopper-kernel/"
sed -e 's/"sm_80"/"sm_90a"/' "$work/tensor-kernel/build.rs" > "$work/hopper-kernel/build.rs"
python3 - "$work/hopper-kernel/src/lib.rs" <<'PY'
import pathlib, re, sys
readme = pathlib.Path("README.md").read_text()
start = readme.index("#### Hopper: warpgroups, TMA and `wgmma`")
shown = re.findall(r"```rust\n(.*?)```", readme[start:], re.S)[0]
header = (
    '#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx, asm_experimental_arch, stdarch_nvptx,\n'
    '    core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem), allow(internal_features))]\n'
    '#[cfg(not(target_arch = "nvptx64"))]\npub const PTX: &str = dlmd::kernels_ptx!();\n'
)
pathlib.Path(sys.argv[1]).write_text(header + shown)
PY
(cd "$work/hopper-kernel" && cargo build --release --quiet)
grep -q "wgmma.mma_async.sync.aligned.m64n256k16" "$(ls -t "$repo"/target/release/build/hopper-kernel-*/out/kernels.ptx | head -1)"
echo "first-kernel: the README's Hopper kernel builds in a crate of its own, for sm_90a, with wgmma in its PTX"

# A kernel that reaches for an atomic in its uniform code, as a user might to let one thread of
# a block skip a barrier: it must not build, and the error must say why. (The kernels' target
# has no atomic types; the host build, which runs no kernel, has them.)
mkdir -p "$work/atomic-kernel/src"
sed -e 's/^name = "tensor-kernel"/name = "atomic-kernel"/' "$work/tensor-kernel/Cargo.toml" > "$work/atomic-kernel/Cargo.toml"
cp Cargo.lock "$work/atomic-kernel/"
cp "$template/build.rs" "$work/atomic-kernel/"
cat > "$work/atomic-kernel/src/lib.rs" <<'RS'
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]
use core::sync::atomic::{AtomicBool, Ordering};
use dlmd::kernel::Block;
use dlmd::kernel::block::{RightPadded, TileOf};
use dlmd::{Const, DeviceMdspan, DeviceMdspanMut, Dims};

#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();

pub type Tile32 = TileOf<f32, (Const<32>, Const<32>), RightPadded<1>>;

static FIRST: AtomicBool = AtomicBool::new(true);

#[dlmd::kernel]
pub fn transpose_skipping(
    block: Block<'_, 256, Tile32, (Const<32>, Const<32>)>,
    src: DeviceMdspan<'_, f32, Dims<2>>,
    dst: DeviceMdspanMut<'_, f32, Dims<2>>,
) {
    let (mut block, tile) = block.split();
    for chunk in block.chunks(dst) {
        let [i0, j0] = chunk.origin();
        let written = block.write(tile, |[a, b]| src.get_or([j0 + a, i0 + b], 0.0));
        // The first thread to get here sees `true`, every other `false`.
        if FIRST.swap(false, Ordering::Relaxed) {
            let readable = block.sync(written);
            block.store(chunk, |[i, j]| readable[[j - j0, i - i0]]);
        }
        return;
    }
}
RS
# Its body is otherwise a kernel: it type-checks on the host, where atomics exist.
(cd "$work/atomic-kernel" && RUSTFLAGS="--cfg dlmd_kernel_check" \
    cargo check --quiet --target-dir "$repo/target/kernel-check")
if refused=$(cd "$work/atomic-kernel" && cargo build --release --quiet 2>&1); then
    echo "first-kernel: a kernel that branches on an atomic built; it must not" >&2
    exit 1
fi
grep -q "has no atomic types" <<<"$refused" && grep -q "AtomicBool" <<<"$refused" ||
    { echo "$refused" >&2; echo "first-kernel: the atomic kernel failed without saying why" >&2; exit 1; }
echo "first-kernel: a kernel that branches on an atomic does not build, and the error says why:"
grep -m1 "has no atomic types" <<<"$refused" | sed 's/^/    /'

# The same kernel with a thread-local `Cell` (nightly's `thread_local`) in the atomic's place,
# which a per-thread closure could set and the body read: the feature is refused.
python3 - "$work/atomic-kernel/src/lib.rs" <<'PY'
import pathlib, sys
path = pathlib.Path(sys.argv[1])
text = path.read_text()
text = text.replace("feature(abi_ptx)", "feature(abi_ptx, thread_local)")
text = text.replace("use core::sync::atomic::{AtomicBool, Ordering};\n", "use core::cell::Cell;\n")
text = text.replace("static FIRST: AtomicBool = AtomicBool::new(true);",
                    "#[cfg(target_arch = \"nvptx64\")]\n#[thread_local]\nstatic FIRST: Cell<bool> = Cell::new(true);")
text = text.replace("if FIRST.swap(false, Ordering::Relaxed) {", "if FIRST.replace(false) {")
assert text.count("Cell") == 3 and "thread_local]" in text
path.write_text(text)
PY
if refused=$(cd "$work/atomic-kernel" && cargo build --release --quiet 2>&1); then
    echo "first-kernel: a kernel with a thread-local static built; it must not" >&2
    exit 1
fi
grep -q "may turn on only these nightly features" <<<"$refused" && grep -q "not \`thread_local\`" <<<"$refused" ||
    { echo "$refused" >&2; echo "first-kernel: the thread-local kernel failed without saying why" >&2; exit 1; }
echo "first-kernel: a kernel with a thread-local static does not build either:"
grep -m1 "may turn on only these nightly features" <<<"$refused" | sed 's/^/    /'

# 3. Its run.
status=0
output=$("$program" 2>&1) || status=$?
echo "$output"
if [ "$gpu" = 1 ]; then
    [ "$status" = 0 ] && grep -q "all 1000000 elements right" <<<"$output"
else
    [ "$status" != 0 ] && grep -q "NoDriver" <<<"$output"
    echo "first-kernel: without a GPU it stops with dlmd's error, as it should"
fi
