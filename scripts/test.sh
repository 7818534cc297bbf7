#!/usr/bin/env bash
# Every test of the project: the Rust workspace (unit, integration, doc and compile-fail tests),
# then the Python example module against numpy. Python packages are pinned in
# scripts/requirements-test.txt and installed into a virtual environment (.venv, or $DLMD_VENV).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace
# The core alone (no std, no allocator): the paths taken without `std` too.
cargo test -p dlmd --lib --no-default-features

venv=${DLMD_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r scripts/requirements-test.txt
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install -q --no-build-isolation --force-reinstall --no-deps \
    ./examples/python-memarray
"$venv/bin/python" -m pytest -q examples/python-memarray/tests
