#!/usr/bin/env bash
# The Python boundary under valgrind's memcheck: examples/python-memarray/stress.py makes
# ROUNDS (default 100 000) round trips of every kind (numpy → dlmd, dlmd → numpy, capsules
# consumed, unconsumed and consumed twice, exceptions half-way, releases on other threads,
# exports alive at shutdown) and must end with no invalid access, no double free and nothing
# definitely lost.
#
# CPython and numpy report a few leaks and uninitialised reads of their own while starting up;
# they are suppressed by rules generated here from a run that imports the same modules and makes
# no exchange, and by scripts/valgrind-python.supp (CPython rules that no baseline
# catches), so everything reported after that comes from the exchanges.
#
#   scripts/valgrind-python.sh [ROUNDS]      needs valgrind (Debian: apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-100000}
venv=${DLMD_VENV:-.venv}
python="$venv/bin/python"
command -v valgrind >/dev/null || { echo "valgrind-python.sh: valgrind is not installed" >&2; exit 1; }
[ -x "$python" ] || { echo "valgrind-python.sh: run scripts/test.sh first (it makes $venv)" >&2; exit 1; }
"$python" -c "import dlmd_memarray" 2>/dev/null ||
    PATH="$PWD/$venv/bin:$PATH" "$python" -m pip install -q --no-build-isolation ./examples/python-memarray

out=${VALGRIND_OUT:-target/valgrind}
mkdir -p "$out"
export PYTHONMALLOC=malloc
memcheck=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite
          --errors-for-leak-kinds=definite --num-callers=40)

# Suppressions for what the interpreter and numpy do without any exchange.
# The baseline loads stress.py as a module (not __main__): its imports and classes, no exchange.
"${memcheck[@]}" --gen-suppressions=all --log-file="$out/baseline.log" \
    "$python" -c "import runpy, numpy.testing; runpy.run_path('examples/python-memarray/stress.py')" || true
awk '/^\{/{keep=1} keep{print} /^\}/{keep=0}' "$out/baseline.log" > "$out/startup.supp"

status=0
"${memcheck[@]}" --suppressions="$out/startup.supp" --suppressions=scripts/valgrind-python.supp --log-file="$out/stress.log" --error-exitcode=3 \
    "$python" examples/python-memarray/stress.py --rounds "$rounds" || status=$?
grep -E "ERROR SUMMARY|definitely lost:|indirectly lost:|Invalid (read|write|free)|Mismatched free" "$out/stress.log" \
    | sed 's/^==[0-9]*== *//' | sort | uniq -c
exit $status
