#!/usr/bin/env bash
# Runs dlmd's fuzz targets (fuzz/fuzz_targets) with cargo fuzz on the nightly toolchain.
#
#   scripts/fuzz.sh [--time SECONDS | --runs N] [--jobs J] [TARGET...]   fuzz each target
#   scripts/fuzz.sh --replay [TARGET...]                                 run the seed corpus once (dev build)
#   scripts/fuzz.sh --merge [TARGET...]                                  fold new finds into the seeds
#
# New inputs go to fuzz/corpus/TARGET (not committed); fuzz/seeds/TARGET is the committed seed
# corpus. An input holds one case or several (fuzz/src/lib.rs, `cases`): --merge splits the seeds
# and the new inputs into their cases, minimises them as cargo fuzz cmin does (libFuzzer's
# merge) by edges alone (no hit counters), so that each case adds a branch, and packs them into
# seed files of up to 4 KiB (scripts/fuzz_cases.py). A crash stops the script with the input
# under fuzz/artifacts/TARGET. The closing table gives the executions of each target, or for
# --replay and --merge the coverage of the seeds (libFuzzer's edges and features).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=fuzz time=600 runs= jobs=1 targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --replay) mode=replay ;;
        --merge) mode=merge ;;
        --time) time=$2; shift ;;
        --runs) runs=$2; shift ;;
        --jobs) jobs=$2; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1") ;;
    esac
    shift
done
all=0
[ ${#targets[@]} -gt 0 ] || all=1 targets=(import_dltensor import_managed view_index exchange_table ndarray_views oneapi_place
                                     nccl_buffers launch_args xla_frame)

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo fuzz needs the nightly toolchain (rustup toolchain install nightly)" >&2
    exit 1
fi
# Unoptimised: it only runs cargo, and builds in half the time.
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2 --debug

# A packed seed file holds up to this many bytes; a case needs far fewer, and fuzzing runs one
# case or a few per input (fast executions), starting from the seeds' cases one per input.
max_len=4096 case_len=512
# libFuzzer's coverage line once the inputs are loaded: edges (cov) and features (ft).
coverage() { grep -o 'INITED cov: [0-9]* ft: [0-9]*' "$1" | tail -1 | sed 's/INITED //'; }
summary=()
# A replay runs each seed once: the dev profile (still with AddressSanitizer, debug assertions
# and overflow checks) builds in about half the time of the optimised build that fuzzing needs,
# and the targets are built together, their links side by side.
if [ "$mode" = replay ] && [ "$all" = 1 ]; then
    (cd fuzz && cargo +nightly fuzz build --dev)
fi
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
    case "$mode" in
        replay)
            log=$(mktemp)
            if ! (cd fuzz && cargo +nightly fuzz run --dev "$t" "seeds/$t" -- -runs=0 -max_len=$max_len) >"$log" 2>&1; then
                tail -40 "$log"
                exit 1
            fi
            summary+=("$t: $(ls "fuzz/seeds/$t" | wc -l) seed inputs replayed, no crash; $(coverage "$log")")
            rm -f "$log"
            ;;
        merge)
            (cd fuzz && cargo +nightly fuzz build "$t")
            bin=fuzz/target/x86_64-unknown-linux-gnu/release/$t
            work=$(mktemp -d)
            python3 scripts/fuzz_cases.py unpack "$work/cases" "fuzz/seeds/$t" "fuzz/corpus/$t" >/dev/null
            before=$("$bin" -runs=0 -max_len=$max_len "fuzz/seeds/$t" 2>&1 | tee "$work/log" | grep -o 'INITED cov: [0-9]* ft: [0-9]*' | tail -1)
            mkdir "$work/min"
            "$bin" -merge=1 -use_counters=0 -max_len=$max_len "$work/min" "$work/cases" >"$work/log" 2>&1 ||
                { tail -40 "$work/log"; exit 1; }
            rm -rf "fuzz/seeds/$t"
            packed=$(python3 scripts/fuzz_cases.py pack "fuzz/seeds/$t" "$work/min")
            after=$("$bin" -runs=0 -max_len=$max_len "fuzz/seeds/$t" 2>&1 | grep -o 'INITED cov: [0-9]* ft: [0-9]*' | tail -1)
            summary+=("$t: ${before#INITED } before; $packed, ${after#INITED }")
            rm -rf "$work"
            ;;
        fuzz)
            python3 scripts/fuzz_cases.py unpack "fuzz/corpus/$t" "fuzz/seeds/$t" >/dev/null
            logs=$(mktemp -d)
            limit=(-max_total_time="$time")
            [ -n "$runs" ] && limit=(-runs="$runs")
            # With --jobs J, J processes fuzz the target at once, sharing the corpus; each logs
            # its final statistics.
            (cd fuzz && cargo +nightly fuzz run "$t" "corpus/$t" -- \
                "${limit[@]}" -max_len=$case_len -print_final_stats=1 \
                -jobs="$jobs" -workers="$jobs" $( [ "$jobs" -gt 1 ] && echo "-close_fd_mask=1" ) \
                ) >"$logs/main.log" 2>&1 || { cat "$logs/main.log" fuzz/fuzz-*.log 2>/dev/null | tail -60; exit 1; }
            # With several jobs libFuzzer copies each worker's log into its own output when the
            # worker ends, so the main log holds every worker's statistics exactly once.
            rm -f fuzz/fuzz-*.log
            execs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$logs/main.log" | awk '{s += $2} END {print s + 0}')
            crashes=$(grep -c 'ERROR: libFuzzer\|panicked at' "$logs/main.log" || true)
            summary+=("$t: $execs executions, $crashes crashes")
            rm -rf "$logs"
            ;;
    esac
done
printf '\n'
printf '%s\n' "${summary[@]}"
