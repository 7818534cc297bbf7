#!/usr/bin/env bash
# The guide's kernel crates, as a user gets them. The guide (dlmd/guide/*.md, rustdoc's
# `dlmd::guide`) runs its host code as doctests; a doctest cannot build a kernel crate, so the
# guide's kernels and the code that launches them are `rust,ignore` there and checked here:
# - the files the first kernel's chapter prints must be those of examples/kernel-template, and
#   that crate must build outside this workspace, its dependencies on dlmd turned into paths to
#   this checkout (the only change), with the workspace's lock file;
# - every other kernel the guide prints must be the example's it is taken from, and builds in a
#   crate of its own;
# - the guide's launches of them, hidden lines included, compile against those examples.
# On a machine without a GPU the first kernel's program must stop with dlmd's `NoDriver` error;
# with --gpu it must run and print its result.
#
#   scripts/first-kernel.sh [--gpu] [OUT]     OUT: where the built program is copied
#
# Needs the nightly toolchain with rust-src (the kernels' PTX), as every kernel crate does, and
# Python 3 (for pyo3, which the guide's Python extension module uses).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
gpu=0
if [ "${1:-}" = "--gpu" ]; then gpu=1; shift; fi
out=${1:-}
template=examples/kernel-template
# `block CHAPTER [HEADING] [N]`: the N-th Rust block of dlmd/guide/CHAPTER after the line
# HEADING, as the compiler reads it (hidden lines shown).
block() { python3 scripts/guide_blocks.py "$@"; }

# 1. The guide prints exactly the template's files (each block follows `<!-- file: PATH -->`),
# and the other kernels as the examples have them.
python3 - "$template" <<'PY'
import pathlib, re, sys
sys.path.insert(0, "scripts")
from guide_blocks import after, chapter, files, rust_blocks
template = pathlib.Path(sys.argv[1])
first = "dlmd/guide/05-first-kernel.md"
blocks = files(chapter("05-first-kernel.md"))
names = sorted(p.relative_to(template).as_posix() for p in template.rglob("*") if p.is_file())
shown = sorted(name for name, _ in blocks)
if shown != names:
    sys.exit(f"first-kernel: {first} shows {shown}, the template holds {names}")
for name, text in blocks:
    if (template / name).read_text() != text:
        sys.exit(f"first-kernel: {first}'s {name} differs from {template / name}")
print(f"first-kernel: {first} prints the template's {len(blocks)} files exactly")
def item(text, start):
    """The item of `text` from `start` to its `}` at the start of a line."""
    at = text.index(start)
    return text[at:text.index("\n}\n", at) + 3]
def tokens(text):
    """`text` without white space, nor the comma rustfmt leaves after a last parameter."""
    return re.sub(r",\)", ")", re.sub(r"\s+", "", text))
# The kernel crate "Kernels in Rust" prints is examples/kernels' transpose and build script,
# white space aside (it is built as printed below).
shown = rust_blocks(chapter("06-kernels-in-rust.md"))
source = pathlib.Path("examples/kernels/src/lib.rs").read_text()
build = pathlib.Path("examples/kernels/build.rs").read_text()
transpose = "#[dlmd::kernel]\npub fn transpose("
if tokens(item(shown[0], transpose)) != tokens(item(source, transpose)) or \
        tokens(item(shown[1], "fn main() {")) != tokens(item(build, "fn main() {")):
    sys.exit("first-kernel: the guide's Rust kernel crate differs from examples/kernels' transpose and build.rs")
print("first-kernel: the guide's Rust kernel crate is examples/kernels' transpose and build.rs")
# The cooperative kernel it shows is examples/kernels' transpose_tiled, as it is there.
shown = rust_blocks(chapter("07-cooperative-kernels.md"))[0]
tiled = "#[dlmd::kernel]\npub fn transpose_tiled("
tile = "pub type TransposeTile = TileOf<f32, (Const<64>, Const<64>), RightPadded<1>>;\n"
if item(shown, tiled) != item(source, tiled) or tile not in shown or tile not in source:
    sys.exit("first-kernel: the guide's cooperative kernel differs from examples/kernels' transpose_tiled")
print("first-kernel: the guide's cooperative kernel is examples/kernels' transpose_tiled")
# The tensor-core kernel it shows is examples/tensor-kernels' matmul_bf16_two_stages.
shown = rust_blocks(chapter("08-tensor-cores.md"))[0]
source = pathlib.Path("examples/tensor-kernels/src/lib.rs").read_text()
two_stages = "#[dlmd::kernel(min_blocks_per_sm = 2)]\npub fn matmul_bf16_two_stages("
steps = ["pub type Bf16Atom = M16N8K16<bf16>;\n", "pub type TwoSteps = ((StepA, StepB), (StepA, StepB));\n", "pub type StepA = TileOf<bf16, (Const<128>, Const<32>), RightSwizzled<Swizzle64>>;\n",
         "pub type StepB = TileOf<bf16, (Const<32>, Const<128>), RightSwizzled<Swizzle128>>;\n"]
if item(shown, two_stages) != item(source, two_stages) or not all(t in shown and t in source for t in steps):
    sys.exit("first-kernel: the guide's tensor-core kernel differs from examples/tensor-kernels' matmul_bf16_two_stages")
print("first-kernel: the guide's tensor-core kernel is examples/tensor-kernels' matmul_bf16_two_stages")
# The Hopper kernel it shows is examples/hopper-kernels' src/simple.rs, as it is there.
shown = rust_blocks(after(chapter("08-tensor-cores.md"), "## Hopper: warpgroups, TMA and `wgmma`"))[0]
source = pathlib.Path("examples/hopper-kernels/src/simple.rs").read_text()
if not source.endswith(shown):
    sys.exit("first-kernel: the guide's Hopper kernel differs from examples/hopper-kernels/src/simple.rs")
print("first-kernel: the guide's Hopper kernel is examples/hopper-kernels' linear_bf16_simple")
# The XLA FFI handler it shows is examples/python-memarray's AddIndexCuda, as it is there.
shown = after(chapter("09-from-a-framework.md"), "Inside `jax.jit` there is no DLPack: JAX calls custom kernels through XLA's FFI")
handler = "impl Handler for AddIndexCuda {"
source = pathlib.Path("examples/python-memarray/src/jax.rs").read_text()
if item(rust_blocks(shown)[0], handler) != item(source, handler):
    sys.exit("first-kernel: the guide's XLA FFI handler differs from examples/python-memarray's AddIndexCuda")
print("first-kernel: the guide's XLA FFI handler is examples/python-memarray's AddIndexCuda")
# The torch operator it shows is examples/python-memarray's Attention, as it is there.
shown = after(chapter("09-from-a-framework.md"), "torch's dispatcher reaches these kernels with no Python in the call: `dlmd::torch` (feature")
op = "impl Op for Attention {"
source = pathlib.Path("examples/python-memarray/src/torch_native.rs").read_text()
if item(rust_blocks(shown)[0], op) != item(source, op):
    sys.exit("first-kernel: the guide's torch operator differs from examples/python-memarray's Attention")
print("first-kernel: the guide's torch operator is examples/python-memarray's Attention")
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
# The kernel body type-checked on the host, as the guide has a user ask for it.
(cd "$work/first-kernel" && RUSTFLAGS="--cfg dlmd_kernel_check" \
    cargo check --quiet --target-dir "$repo/target/kernel-check")
echo "first-kernel: its kernel body type-checks on the host (--cfg dlmd_kernel_check)"

# The guide's other kernels, each in a crate of its own as a user writes it: `kernel_crate NAME
# BUILD` makes $work/NAME with the template's manifest under that name, the build script BUILD
# (a file) and src/lib.rs from standard input. Their `core` for nvptx64 is the one built above.
kernel_crate() {
    mkdir -p "$work/$1/src"
    sed -e "s/^name = \"first-kernel\"/name = \"$1\"/" "$work/first-kernel/Cargo.toml" > "$work/$1/Cargo.toml"
    printf '[lib]\npath = "src/lib.rs"\n' >> "$work/$1/Cargo.toml"
    cp Cargo.lock "$work/$1/"
    cp "$2" "$work/$1/build.rs"
    cat > "$work/$1/src/lib.rs"
}
# The PTX of the crate NAME, as its last build made it.
ptx() { ls -t "$repo"/target/release/build/"$1"-*/out/kernels.ptx | head -1; }
# Build scripts for sm_80 and sm_90a.
for arch in sm_80 sm_90a; do
    printf 'fn main() {\n    dlmd_build::PtxBuild::from_env().arch("%s").build_or_exit();\n}\n' "$arch" > "$work/build-$arch.rs"
done
# What a crate of kernels over blocks and tensor cores starts with, before the items the guide
# prints of it.
header='#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx, asm_experimental_arch, stdarch_nvptx,
    core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem), allow(internal_features))]
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = dlmd::kernels_ptx!();
'

# "Kernels in Rust": its crate's src/lib.rs and build.rs, both as printed.
block 06-kernels-in-rust.md "" 2 > "$work/build-kernels.rs"
block 06-kernels-in-rust.md | kernel_crate rust-kernel "$work/build-kernels.rs"
(cd "$work/rust-kernel" && cargo build --release --quiet)
grep -q "^\.visible \.entry transpose(" "$(ptx rust-kernel)"
echo "first-kernel: the guide's Rust kernel crate builds as printed, with transpose in its PTX"
# The cooperative kernel.
{ printf '%s' "$header"; block 07-cooperative-kernels.md; } | kernel_crate cooperative-kernel "$template/build.rs"
(cd "$work/cooperative-kernel" && cargo build --release --quiet)
grep -q "^\.visible \.entry transpose_tiled(" "$(ptx cooperative-kernel)"
echo "first-kernel: the guide's cooperative kernel builds in a crate of its own, with transpose_tiled in its PTX"
# The tensor-core kernel, for sm_80.
{ printf '%s' "$header"; block 08-tensor-cores.md; } | kernel_crate tensor-kernel "$work/build-sm_80.rs"
(cd "$work/tensor-kernel" && cargo build --release --quiet)
grep -q "mma.sync.aligned.m16n8k16" "$(ptx tensor-kernel)"
echo "first-kernel: the guide's tensor-core kernel builds in a crate of its own, for sm_80, with mma.sync in its PTX"
# The Hopper kernel likewise, for sm_90a.
{ printf '%s' "$header"; block 08-tensor-cores.md "## Hopper: warpgroups, TMA and \`wgmma\`"; } |
    kernel_crate hopper-kernel "$work/build-sm_90a.rs"
(cd "$work/hopper-kernel" && cargo build --release --quiet)
grep -q "wgmma.mma_async.sync.aligned.m64n256k16" "$(ptx hopper-kernel)"
echo "first-kernel: the guide's Hopper kernel builds in a crate of its own, for sm_90a, with wgmma in its PTX"
# "From a framework's tensor to a Rust kernel": the kernel crate `my_kernels`, as printed, with
# the first kernel's manifest and build script.
block 09-from-a-framework.md | kernel_crate my_kernels "$template/build.rs"
(cd "$work/my_kernels" && cargo build --release --quiet)
grep -q "^\.visible \.entry add_one(" "$(ptx my_kernels)"
echo "first-kernel: the guide's my_kernels builds as printed, with add_one in its PTX"

# The guide's host code over those kernels, hidden lines included: launches of examples/kernels
# and examples/hopper-kernels (as examples of a crate) and the Python extension module over
# my_kernels (its library), type-checked. They compile the launchers alone: DLMD_PTX=skip
# builds no PTX for the example crates, whose kernels the workspace's own checks build.
launches=$work/guide-launches
mkdir -p "$launches/src" "$launches/examples"
cat > "$launches/Cargo.toml" <<TOML
[package]
name = "guide-launches"
version = "0.1.0"
edition = "2024"

[dependencies]
dlmd = { version = "0.1.0", path = "$repo/dlmd", features = ["cuda", "python"] }
dlmd-example-kernels = { path = "$repo/examples/kernels" }
dlmd-example-hopper-kernels = { path = "$repo/examples/hopper-kernels" }
my_kernels = { path = "../my_kernels" }
pyo3 = { version = "0.30", default-features = false, features = ["macros"] }
TOML
cp Cargo.lock "$launches/"
denied() { printf '#![deny(warnings)]\n'; block "$@"; }
denied 06-kernels-in-rust.md "" 3 > "$launches/examples/kernels_in_rust.rs"
denied 07-cooperative-kernels.md "" 2 > "$launches/examples/cooperative_kernels.rs"
denied 08-tensor-cores.md "## Hopper: warpgroups, TMA and \`wgmma\`" 2 > "$launches/examples/tensor_cores.rs"
denied 09-from-a-framework.md "" 2 > "$launches/src/lib.rs"
(cd "$launches" && DLMD_PTX=skip cargo check --quiet --lib --examples)
echo "first-kernel: the guide's launches and its Python extension module compile against the kernel crates"

# A kernel that reaches for an atomic in its uniform code, as a user might to let one thread of
# a block skip a barrier: it must not build, and the error must say why. (The kernels' target
# has no atomic types; the host build, which runs no kernel, has them.)
kernel_crate atomic-kernel "$template/build.rs" <<'RS'
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
