#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per SDK push, repeatable on a shared machine (CPU time is not):
# pprofgate and the inflate-only server (bench/discard_server inflate) each run
# under callgrind while wrk POSTs the first SDK capture over one connection;
# instrumentation starts after a warm-up, so start-up is not counted. Prints
# user-space instructions per request for both, their ratio, and pprofgate's
# top functions by self cost, to show where the rest goes, after a per-stage
# breakdown (inclusive cost of each stage's entry function, malloc/free's self
# cost, system calls). Threads are summed (WORKERS=2 shows what the hand-off
# costs in user space).
# Env: DURATION (s of load, default 10), WORKERS (default 0: inline, so the
#      loop's work and the pipeline's are one thread), PG_BUILD_DIR (build), TOP (25),
#      SHAPES (gateway configs, default "bare sdk": bare = receiver -> debug;
#      sdk = include_metadata + transform ParseKeyValue of the resource header,
#      what SDK users run; see write_gw_config in lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
DISCARD=$BUILD/bench/discard_server
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-0}
TOP=${TOP:-25}
SHAPES=${SHAPES:-bare sdk}
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
    valgrind --tool=callgrind --collect-systime=yes --callgrind-out-file="$TMP/cg.$name.%p" --dump-instr=no --instr-atstart=no \
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

# callgrind_annotate run from /: in the source tree it lists a function under
# both its relative and its absolute file name, which would count it twice.
cga() { (cd / && callgrind_annotate "$@"); }

# cost yes|no FILE N FUNC...: instructions per request in FUNC, inclusive
# (yes) or self (no), summed over its rows: inlined code of FUNC from other
# files has rows of its own; a function nested in another one listed would
# be counted twice when inclusive, so list disjoint entry points.
cost() {
    local inclusive=$1 file=$2 n=$3; shift 3
    local re
    re=$(printf '%s|' "$@"); re=${re%|}
    cga --auto=no --inclusive="$inclusive" --threshold=100 --show=Ir --show-percs=no "$file" 2>/dev/null |
        awk -v n="$n" -v re="^($re)\$" '/file:function/ { table = 1; next }
            table && NF == 0 { exit } # the function table ends; source annotations may follow
            table && $1 ~ /^[0-9,]+$/ { fn = $2; sub(/^.*:/, "", fn)
                if (fn ~ re) { ir = $1; gsub(",", "", ir); t += ir } }
            END { printf "%.0f", t / n }'
}
incl() { cost yes "$@"; }
self() { cost no "$@"; } # malloc and friends are leaves: their self cost is their cost
MALLOC_FNS="malloc _int_malloc free _int_free calloc realloc _int_realloc malloc_consolidate \
unlink_chunk.constprop.0 unlink_chunk tcache_get tcache_put _int_free_merge_chunk \
_int_free_create_chunk _int_free_maybe_consolidate posix_memalign _mid_memalign _int_memalign \
sysmalloc systrim malloc_trim mtrim __libc_malloc __libc_free __libc_calloc __libc_realloc \
cfree arena_get2 tcache_init"

# breakdown FILE N TOTAL: where one push's instructions go, by stage.
breakdown() {
    local f=$1 n=$2 total=$3
    local inflate translate pipeline procs exps writer mallocs sys rest
    local head meta reply
    head=$(incl "$f" "$n" pg_http_parse_head pg_http_parse_head_in)
    meta=$(incl "$f" "$n" pg_http_metadata_from_headers)
    reply=$(incl "$f" "$n" pg_httpd_reply_body)
    inflate=$(incl "$f" "$n" pg_http_decode_body)
    translate=$(incl "$f" "$n" pg_pprof_translate_owned)
    pipeline=$(incl "$f" "$n" fanout_consume)
    procs=$(incl "$f" "$n" tf_process pg_service_name_missing pg_service_name_ensure)
    exps=$(incl "$f" "$n" dbg_consume)
    writer=$(incl "$f" "$n" writer_main)
    # shellcheck disable=SC2086
    mallocs=$(self "$f" "$n" $MALLOC_FNS)
    sys=$(awk -v n="$n" '/^(summary|totals):/ { printf "%.1f", $3 / n; exit }' "$f")
    rest=$((total - inflate - translate - pipeline - writer))
    printf '  %-50s %8s\n' "stage" "instr/request"
    printf '  %-50s %8d\n' "HTTP parse + IO + loop + receiver (the rest)" "$rest"
    printf '  %-50s %8d\n' "  of which HTTP head parse (pg_http_parse_head)" "$head"
    printf '  %-50s %8d\n' "  of which metadata copy (include_metadata)" "$meta"
    printf '  %-50s %8d\n' "  of which the 204 (pg_httpd_reply_body)" "$reply"
    printf '  %-50s %8d\n' "inflate (pg_http_decode_body)" "$inflate"
    printf '  %-50s %8d\n' "decode + translate (pg_pprof_translate_owned)" "$translate"
    printf '  %-50s %8d\n' "pipeline: fan-out, processors, exporters" "$pipeline"
    printf '  %-50s %8d\n' "  of which processors (transform, service.name)" "$procs"
    printf '  %-50s %8d\n' "  of which exporter consume (debug)" "$exps"
    printf '  %-50s %8d\n' "debug exporter's writer thread" "$writer"
    printf '  %-50s %8d\n' "malloc/free self cost, all stages" "$mallocs"
    printf '  %-50s %8s\n' "system calls per request" "$sys"
}

# top FILE N: pprofgate's top functions by self cost per request.
top() {
    cga --auto=no --inclusive=no --show=Ir --show-percs=no "$1" 2>/dev/null |
        awk -v n="$2" -v top="$TOP" '/^-+$/ { sep++; next } sep >= 3 && $1 ~ /^[0-9,]+$/ && c < top {
            ir = $1; gsub(",", "", ir); $1 = ""; sub(/^ +/, ""); printf "  %8.0f  %s\n", ir / n, $0; c++ }'
}

read -r I_IR I_N < <(measure inflate 'listening on [0-9]+' "$DISCARD" 0 inflate)
echo "callgrind_push: body $BODY, ${DURATION}s of wrk -c1 per server, workers: $WORKERS"
awk -v ir="$I_IR" -v n="$I_N" 'BEGIN { printf "inflate-only: %d requests, %.0f instructions per request\n", n, ir / n }'
for shape in $SHAPES; do
    write_gw_config "$TMP/gw.$shape.yaml" 127.0.0.1:0 "$WORKERS" "$shape"
    read -r G_IR G_N < <(measure "gw.$shape" 'listening on [0-9.]+:[0-9]+' "$BIN" --config "$TMP/gw.$shape.yaml")
    echo
    echo "== pprofgate, config $shape"
    awk -v ir="$G_IR" -v n="$G_N" 'BEGIN { printf "pprofgate:    %d requests, %.0f instructions per request\n", n, ir / n }'
    awk -v g="$G_IR" -v gn="$G_N" -v i="$I_IR" -v in_="$I_N" \
        'BEGIN { printf "instructions per request pprofgate/inflate-only: %.2f\n", (g / gn) / (i / in_) }'
    echo "per stage (inclusive):"
    breakdown "$TMP/gw.$shape.out" "$G_N" "$((G_IR / G_N))"
    echo "self instructions per request by function (top $TOP):"
    top "$TMP/gw.$shape.out" "$G_N"
done
