#!/usr/bin/env bash
# Runs every test suite and ends with one summary line "N passed, N failed".
set -uo pipefail
build=$1 asan=$2 fuzz=$3 tsan=${4:-}
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp}
passed=0 failed=0 skipped=0
run_suite() { # name, dir, ctest args...
    local name=$1 dir=$2; shift 2
    echo "== $name"
    local out rc
    out=$(cd "$dir" && ctest --output-on-failure -j 2 "$@" 2>&1); rc=$?
    echo "$out"
    local p f
    p=$(echo "$out" | sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' | tail -1)
    # ctest counts a skipped test (e.g. the collector tests without Go) as passed
    local s
    s=$(echo "$out" | grep -c '^[[:space:]]*[0-9]* - .*(Skipped)$' || true)
    if [ -n "$p" ]; then
        set -- $p
        passed=$((passed + $1 - $2 - s)); failed=$((failed + $2)); skipped=$((skipped + s))
    elif [ $rc -ne 0 ]; then
        failed=$((failed + 1))
    fi
}
run_suite "unit + integration (release)" "$build"
run_suite "unit + component (ASan+UBSan)" "$asan" -L 'unit|component'
if [ -n "$tsan" ] && [ "${PG_SKIP_TSAN:-0}" != 1 ]; then
    if cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPG_TSAN=ON >/dev/null &&
       cmake --build "$tsan" -j 2 --target pg_threaded_tests >/dev/null; then
        run_suite "threads (ThreadSanitizer)" "$tsan" -L threads
    else
        echo "== threads (ThreadSanitizer)"; echo "tsan build failed"; failed=$((failed + 1))
    fi
fi
if [ "${PG_SKIP_FUZZ:-0}" != 1 ]; then
    echo "== fuzz smoke"
    if CC=clang cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=Debug -DPG_FUZZ=ON -DPG_TESTS=OFF >/dev/null &&
       cmake --build "$fuzz" -j 2 >/dev/null; then
        if bash scripts/fuzz.sh "$fuzz" "${FUZZ_SECONDS:-10}"; then
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
