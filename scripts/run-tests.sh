#!/usr/bin/env bash
# Runs every test suite and ends with one summary line "N passed, N failed".
set -uo pipefail
build=$1 asan=$2 fuzz=$3 tsan=${4:-}
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp}
# Builds that tests start (layering probes, the TSan and fuzz trees) must not
# print "gmake[N]: Entering directory" pairs.
export MAKEFLAGS="${MAKEFLAGS:-} --no-print-directory"
passed=0 failed=0 skipped=0
run_suite() { # name, jobs, dir, ctest args...
    local name=$1 jobs=$2 dir=$3; shift 3
    echo "== running $name (ctest${*:+ $*} in $dir)"
    local out rc
    # Streamed as ctest prints it; the copy in a file is parsed for the counts.
    out=$(mktemp)
    (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$out"; rc=${PIPESTATUS[0]}
    local p f
    p=$(sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' "$out" | tail -1)
    # ctest counts a skipped test (e.g. the collector tests without Go) as passed
    local s
    s=$(grep -c '^[[:space:]]*[0-9]* - .*(Skipped)$' "$out" || true)
    if [ -n "$p" ]; then
        set -- $p
        passed=$((passed + $1 - $2 - s)); failed=$((failed + $2)); skipped=$((skipped + s))
    elif [ $rc -ne 0 ]; then
        failed=$((failed + 1))
    fi
    rm -f "$out"
}
# The release suite runs three at a time on two cores: most of its time is
# integration tests waiting on sockets, timers and slow test peers (a replay to
# a destination that answers after 400 ms, hostile destinations), not CPU.
run_suite "unit + integration (release)" "${PG_TEST_JOBS:-3}" "$build"
run_suite "unit + component (ASan+UBSan)" 2 "$asan" -L 'unit|component'
step() { mkdir -p "$1"; local log=$1/make-test.log; shift; bash scripts/build-step.sh "$log" "$@"; }
if [ -n "$tsan" ] && [ "${PG_SKIP_TSAN:-0}" != 1 ]; then
    if step "$tsan" "building the ThreadSanitizer tree in $tsan (log: $tsan/make-test.log)" sh -c \
           "cmake -S . -B '$tsan' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_TSAN=ON && cmake --build '$tsan' -j 2 --target pg_threaded_tests"; then
        run_suite "threads (ThreadSanitizer)" 2 "$tsan" -L threads
    else
        echo "== threads (ThreadSanitizer)"; echo "tsan build failed"; failed=$((failed + 1))
    fi
fi
if [ "${PG_SKIP_FUZZ:-0}" != 1 ]; then
    if step "$fuzz" "building the fuzz targets in $fuzz (clang; log: $fuzz/make-test.log)" sh -c \
           "CC=clang cmake -S . -B '$fuzz' -DCMAKE_BUILD_TYPE=Debug -DPG_FUZZ=ON -DPG_TESTS=OFF && cmake --build '$fuzz' -j 2"; then
        echo "== running fuzz smoke (${FUZZ_SECONDS:-6}s per target)"
        if bash scripts/fuzz.sh "$fuzz" "${FUZZ_SECONDS:-6}"; then
            n=$(ls "$fuzz"/tests/fuzz/fuzz_* 2>/dev/null | grep -vc '\.' || true)
            passed=$((passed + n))
        else
            failed=$((failed + 1))
        fi
    else
        echo "fuzz build failed"; failed=$((failed + 1))
    fi
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
