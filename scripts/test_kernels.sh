#!/bin/sh
# scripts/test_kernels.sh - the whole test suite again under other OpenBLAS
# kernel sets (make test-kernels; docs/numerics.md#fast-numerics-tests-on-every-kernel-set).
#
# A fast-numerics value depends on the kernels' summation order; a test that
# asserts one machine's order passes at home and fails on a user's CPU. This
# runs build/lenx-tests (and, through LENX_BIN, the lenx it drives) once per
# core type in $KERNELS with OPENBLAS_CORETYPE set to it, skipping a core type
# whose instructions this CPU lacks, and fails when any run fails. The set
# `unknown-cpu` is a CPU that OpenBLAS does not know, as lenx sees it:
# OPENBLAS_CORETYPE unset (the suite's own products run OpenBLAS's pick) and
# LENX_TEST_OPENBLAS_CORE=Prescott, so every lenx the suite starts takes
# Prescott for OpenBLAS's pick, re-runs itself with better kernels and says so
# on stderr (docs/numerics.md#a-cpu-that-openblas-does-not-know).
# usage: KERNELS="Prescott unknown-cpu" scripts/test_kernels.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KERNELS=${KERNELS:-Prescott unknown-cpu}
flags=" $(grep -m1 '^flags' /proc/cpuinfo | sed 's/^[^:]*://') "
has() { for f in "$@"; do case $flags in *" $f "*) ;; *) return 1 ;; esac; done; }
runs() {    # the CPU can run core type $1
    case $1 in
        Prescott|unknown-cpu) has sse3 || has pni ;;
        Haswell|Zen) has avx2 fma ;;
        SkylakeX) has avx512f avx512bw avx512vl avx512dq avx512cd ;;
        Cooperlake) has avx512f avx512bw avx512vl avx512dq avx512cd avx512_bf16 ;;
        *) echo "test-kernels: unknown core type '$1' (Prescott, Haswell, Zen, SkylakeX, Cooperlake, unknown-cpu)" >&2; return 2 ;;
    esac
}
rc=0
for k in $KERNELS; do
    runs "$k"; r=$?
    [ $r -eq 2 ] && exit 2
    if [ $r -ne 0 ]; then
        echo "test-kernels: OPENBLAS_CORETYPE=$k skipped: this CPU lacks its instructions"
        continue
    fi
    if [ "$k" = unknown-cpu ]; then
        echo "test-kernels: the suite with OPENBLAS_CORETYPE unset and lenx seeing an unknown CPU"
        set -- env -u OPENBLAS_CORETYPE LENX_TEST_OPENBLAS_CORE=Prescott
    else
        echo "test-kernels: the suite with OPENBLAS_CORETYPE=$k"
        set -- env OPENBLAS_CORETYPE="$k"
    fi
    "$@" OMP_NUM_THREADS=1 LENX_BIN="$ROOT/lenx" LENX_ROOT="$ROOT" \
        "$ROOT/build/lenx-tests" --jobs 2 > "$ROOT/build/test-kernels-$k.log" 2>&1
    r=$?
    grep -a -E '^\[FAIL\]|Synthesis:' "$ROOT/build/test-kernels-$k.log" | sed "s/^/test-kernels $k: /"
    [ $r -eq 0 ] || { rc=1; echo "test-kernels: OPENBLAS_CORETYPE=$k failed (log: build/test-kernels-$k.log)" >&2; }
done
exit $rc
