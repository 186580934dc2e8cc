#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per SDK push, repeatable on a shared machine (CPU time is not):
# pprofgate and the inflate-only server (bench/discard_server inflate) each run
# under callgrind while wrk POSTs the first SDK capture over one connection;
# instrumentation starts after a warm-up, so start-up is not counted. Prints
# user-space instructions per request for both, their ratio, and pprofgate's
# top functions by self cost, to show where the rest goes. Threads are summed
# (WORKERS=2 shows what the hand-off costs in user space).
# Env: DURATION (s of load, default 10), WORKERS (default 0: inline, so the
#      loop's work and the pipeline's are one thread), PG_BUILD_DIR (build), TOP (25).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
DISCARD=$BUILD/bench/discard_server
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-0}
TOP=${TOP:-25}
BODY=${BODY:-tests/fixtures/sdk/push0.pprof.gz}
for t in valgrind callgrind_control callgrind_annotate wrk; do
    command -v "$t" >/dev/null || { echo "callgrind_push: $t not installed"; exit 2; }
done
for f in "$BIN" "$DISCARD" "$BODY"; do
    [ -e "$f" ] || { echo "callgrind_push: missing $f"; exit 2; }
done
TMP=$(mktemp -d /tmp/pg-cg.XXXXXX)
VPID=
cleanup() { [ -n "$VPID" ] && { kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; }; rm -rf "$TMP"; }
trap cleanup EXIT
write_post_lua "$BODY" "$TMP/post.lua"

# measure NAME REGEX CMD...: runs CMD under callgrind, prints "instructions requests"
measure() {
    local name=$1 re=$2; shift 2
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$name.%p" --dump-instr=no --instr-atstart=no \
        "$@" > "$TMP/$name.log" 2>&1 &
    VPID=$!
    local port
    for _ in $(seq 1 600); do # valgrind starts slowly: up to 60 s
        port=$(grep -oE "$re" "$TMP/$name.log" 2>/dev/null | grep -oE '[0-9]+$' | head -1 || true)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "callgrind_push: $name did not start" >&2; cat "$TMP/$name.log" >&2; return 1; }
    wrk -t1 -c1 -d2s -s "$TMP/post.lua" "http://127.0.0.1:$port/v1/pprof" > /dev/null 2>&1
    callgrind_control -i on "$VPID" > /dev/null 2>&1
    wrk -t1 -c1 -d"${DURATION}s" -s "$TMP/post.lua" "http://127.0.0.1:$port/v1/pprof" > "$TMP/wrk.$name"
    callgrind_control -d "$VPID" > /dev/null 2>&1
    local n
    n=$(awk '/requests in/ {print $1}' "$TMP/wrk.$name")
    # callgrind_control -d wrote part 1: everything since instrumentation began.
    local f="$TMP/cg.$name.$VPID.1"
    kill "$VPID"; wait "$VPID" 2>/dev/null || true; VPID=
    [ -f "$f" ] || { echo "callgrind_push: no dump for $name" >&2; return 1; }
    cp "$f" "$TMP/$name.out"; [ -n "${CG_KEEP:-}" ] && cp "$f" "$CG_KEEP.$name"
    local ir
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    echo "$ir $n"
}

write_gw_config "$TMP/gw.yaml" 127.0.0.1:0 "$WORKERS"

read -r I_IR I_N < <(measure inflate 'listening on [0-9]+' "$DISCARD" 0 inflate)
read -r G_IR G_N < <(measure gw 'listening on [0-9.]+:[0-9]+' "$BIN" --config "$TMP/gw.yaml")
echo "callgrind_push: body $BODY, ${DURATION}s of wrk -c1 per server, workers: $WORKERS"
awk -v ir="$I_IR" -v n="$I_N" 'BEGIN { printf "inflate-only: %d requests, %.0f instructions per request\n", n, ir / n }'
awk -v ir="$G_IR" -v n="$G_N" 'BEGIN { printf "pprofgate:    %d requests, %.0f instructions per request\n", n, ir / n }'
awk -v g="$G_IR" -v gn="$G_N" -v i="$I_IR" -v in_="$I_N" \
    'BEGIN { printf "instructions per request pprofgate/inflate-only: %.2f\n", (g / gn) / (i / in_) }'
echo "pprofgate, self instructions per request by function (top $TOP):"
callgrind_annotate --auto=no --inclusive=no --show-percs=no "$TMP/gw.out" 2>/dev/null |
    awk -v n="$G_N" -v top="$TOP" '/^-+$/ { sep++; next } sep >= 3 && $1 ~ /^[0-9,]+$/ && c < top {
        ir = $1; gsub(",", "", ir); $1 = ""; sub(/^ +/, ""); printf "  %8.0f  %s\n", ir / n, $0; c++ }'
