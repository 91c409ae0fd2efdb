#!/usr/bin/env bash
# tests/fuzz/run.sh - run each libFuzzer target for SECONDS (make fuzz).
#
#   bash tests/fuzz/run.sh SECONDS fuzz_config fuzz_safetensors ...
#
# Target fuzz_X reads the seeds in tests/fuzz/corpus/X/ and the inputs in
# tests/fuzz/regress/X/ (read-only), keeps what it finds in build/fuzz/corpus/X/,
# uses the dictionary tests/fuzz/X.dict, and writes a crashing input to
# build/fuzz/crashes/X/. Prints one line per target with its exec count;
# exits 1 when any target crashed (libFuzzer stops at the first crash).
# FUZZ_JOBS targets (default: the number of cores) run side by side.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=$1
shift

# one input per target, one thread: the OpenMP pool and BLAS stay single-threaded
export OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
declare -A max_len=([config]=8192 [safetensors]=24576 [tokenizer_bin]=8192 [tokenizer_json]=20480 [encode]=4096 [ruler]=8192)

# One target: its line on stdout (and the crash's summary on stderr) into
# build/fuzz/<target>.result, so that targets run side by side print in order.
one() {
    local target=$1 name=${1#fuzz_}
    local corpus=build/fuzz/corpus/$name crashes=build/fuzz/crashes/$name log=build/fuzz/$1.log
    mkdir -p "$corpus" "$crashes" "tests/fuzz/regress/$name"
    build/fuzz/$target "$corpus" "tests/fuzz/corpus/$name" "tests/fuzz/regress/$name" \
        -dict="tests/fuzz/$name.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len="${max_len[$name]:-4096}" -artifact_prefix="$crashes/" -print_final_stats=1 \
        >"$log" 2>&1
    local rc=$?
    local execs cov
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "fuzz: $target: ${execs:-?} execs in ${seconds} s, ${cov:-cov: ?}, 0 crashes"
    else
        {
            echo "fuzz: $target: CRASH after ${execs:-?} execs (exit $rc); log $log"
            grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|lenx: assertion|.*Test unit written)' "$log" | head -8
            echo "  hint: copy the input from $crashes/ into tests/fuzz/regress/$name/ and fix it;" \
                 "tests/test_fuzz_regress.c replays that folder"
        } >&2
    fi
    return $rc
}

# Each target is one process on one core for SECONDS: FUZZ_JOBS of them
# (default: the cores) run at once, so the whole run takes about
# SECONDS x targets / FUZZ_JOBS and each target still gets its SECONDS.
jobs=${FUZZ_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}   # nproc itself obeys OMP_NUM_THREADS
mkdir -p build/fuzz
running=0
for target in "$@"; do
    if [ "$running" -ge "$jobs" ]; then     # a slot frees when any target ends
        wait -n
        running=$((running - 1))
    fi
    (one "$target" >"build/fuzz/$target.result" 2>&1; echo $? >"build/fuzz/$target.rc") &
    running=$((running + 1))
done
wait
failed=0
for target in "$@"; do
    if [ "$(cat "build/fuzz/$target.rc")" = 0 ]; then
        cat "build/fuzz/$target.result"
    else
        failed=1
        cat "build/fuzz/$target.result" >&2
    fi
done
exit $failed
