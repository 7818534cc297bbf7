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
(cd "$work/first-kernel" && cargo build --release --quiet)
program="$work/first-kernel/target/release/first-kernel"
echo "first-kernel: built; src/main.rs is $(wc -l < "$template/src/main.rs") lines, with no cudarc in the manifest and no unsafe"
! grep -q cudarc "$template/Cargo.toml" && ! grep -rq unsafe "$template/src"
if [ -n "$out" ]; then mkdir -p "$out" && cp "$program" "$out/"; fi
# The kernel body type-checked on the host, as the README has a user ask for it.
(cd "$work/first-kernel" && RUSTFLAGS="--cfg dlmd_kernel_check" \
    cargo check --quiet --target-dir target/kernel-check)
echo "first-kernel: its kernel body type-checks on the host (--cfg dlmd_kernel_check)"

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
