#!/usr/bin/env bash
# Every test of the project: the Rust workspace (unit, integration, doc and compile-fail tests),
# then the Python example module against numpy and tvm-ffi, then against dpnp on a SYCL CPU
# device. Python packages are pinned in scripts/requirements-test.txt, installed into a virtual
# environment (.venv, or $DLMD_VENV), and in scripts/requirements-oneapi.txt, installed into a
# second one (.venv-oneapi, or $DLMD_ONEAPI_VENV; about 3 GB: dpnp and Intel's OpenCL CPU
# runtime).
#
# DLMD_TEST_TIDY=1 (set by .ci/run, for runners short of disk) removes each part's build outputs
# once no later part uses them: the compile-fail builds after their cases, and every build but
# the wheel before the oneAPI environment is installed. Without it, the target directory is
# kept for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each part's time, as it ends.
lap_start=$SECONDS
lap() { echo "--- test.sh: $1 in $((SECONDS - lap_start)) s"; lap_start=$SECONDS; }

# The kernel example (examples/kernels) builds its PTX with the nightly toolchain and rust-src.
rustup component add --toolchain nightly rust-src >/dev/null
cargo test --workspace
lap "the workspace's tests"
# The compile-fail cases of the Python bindings (dlmd's `python` feature, which needs Python).
cargo test -p dlmd-ui-tests --features python --test ui ui_python
lap "the Python compile-fail cases"
tidy() { [ "${DLMD_TEST_TIDY:-0}" = 1 ] && rm -rf "$@" || true; }
tidy target/tests target/tmp
# The core alone (no std, no allocator): the paths taken without `std` too.
cargo test -p dlmd --lib --no-default-features
lap "the core alone"

venv=${DLMD_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r scripts/requirements-test.txt
lap "the test environment"
# One wheel of the module (abi3), for both environments.
wheels=target/python-wheels
rm -rf "$wheels"
# (In the workspace's target directory: the kernels' PTX and the dependencies both share are
# built once. Unoptimised: the tests check behaviour, not speed, and the release profile's
# whole-program optimisation would take twice the build; benchmarks build their own wheel.)
CARGO_TARGET_DIR="$PWD/target" "$venv/bin/maturin" build -q -m examples/python-memarray/Cargo.toml -o "$wheels"
lap "the wheel"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheels"/*.whl
"$venv/bin/python" -m pytest -q examples/python-memarray/tests --ignore=examples/python-memarray/tests/test_oneapi.py
lap "the Python tests"
# (Miri, which .ci/run runs beside this script, keeps its own target/miri.)
tidy $(find target -mindepth 1 -maxdepth 1 ! -name python-wheels ! -name miri)

# oneAPI: dpnp carries dpctl's DLPack code; Intel's OpenCL runtime gives it a SYCL CPU device.
oneapi=${DLMD_ONEAPI_VENV:-.venv-oneapi}
[ -x "$oneapi/bin/python" ] || python3 -m venv "$oneapi"
"$oneapi/bin/python" -m pip install -q -r scripts/requirements-oneapi.txt
lap "the oneAPI environment"
"$oneapi/bin/python" -m pip install -q --force-reinstall --no-deps "$wheels"/*.whl
runtime="$(cd "$oneapi/lib" && pwd)/libintelocl.so"
[ -e "$runtime" ] || { echo "test.sh: $runtime is missing: no SYCL CPU device for the oneAPI tests" >&2; exit 1; }
OCL_ICD_FILENAMES="$runtime" "$oneapi/bin/python" -m pytest -q examples/python-memarray/tests/test_oneapi.py
lap "the oneAPI tests"
