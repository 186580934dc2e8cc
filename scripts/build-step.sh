#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One step of `make run` / `make test`: says what it does, appends the
# command's whole output to LOG, shows only cmake's progress every 10 % while
# it runs, and on failure the log's tail. Exit status: the command's.
#   build-step.sh [--may-skip] LOG "what this step does" command args...
# --may-skip: exit 77 from the command (a missing optional toolchain) is
# reported as skipped and returns 0.
set -uo pipefail
may_skip=0
if [ "${1:-}" = --may-skip ]; then may_skip=1; shift; fi
log=$1 what=$2; shift 2
echo "$what"
start=$(date +%s)
# cmake's "[ 45%] Building C object ..." lines become "    45%": a few short
# lines instead of hundreds, and still a sign of life on a slow first build.
"$@" 2>&1 | tee -a "$log" | awk '
    /^\[ *[0-9]+%\]/ {
        s = substr($0, 2, index($0, "%") - 2); gsub(/ /, "", s); n = s + 0
        if (n >= next_pct) { printf "    %d%%\n", n; fflush(); next_pct = n - n % 10 + 10 }
    }'
rc=${PIPESTATUS[0]}
secs=$(( $(date +%s) - start ))
if [ "$rc" -eq 77 ] && [ "$may_skip" -eq 1 ]; then
    echo "    skipped: $(tail -n 1 "$log")"
    exit 0
fi
if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log" | sed 's/^/    | /' >&2
    echo "    failed (exit $rc) after ${secs}s; full log: $log" >&2
    exit "$rc"
fi
[ "$secs" -ge 5 ] && echo "    done in ${secs}s"
exit 0
