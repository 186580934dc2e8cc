#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Heap sampler cost: wrk POSTs a real SDK push to pprofgate with the sampler
# off (heap_sample_rate 0) and on at Go's 512 KiB, alternating the two ROUNDS
# times in the same run (so machine noise hits both), and prints the median
# req/s of each, their ratio (target >= 0.98), and the sampler's samples and
# table memory at steady state (from /metrics).
# Env: DURATION (s per run, default 20), ROUNDS (3), CONNS (16), THREADS (2),
#      RATE (524288), PG_BUILD_DIR (build), PPROFGATE_BIN, BODY (a .pprof.gz).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
RATE=${RATE:-524288}
BODY=${BODY:-}
if [ -z "$BODY" ]; then
    for c in tests/fixtures/sdk/push0.pprof.gz ../shared/fixtures/sdk/push0.pprof.gz; do
        [ -f "$c" ] && { BODY=$c; break; }
    done
fi
for f in "$BIN" "$BODY"; do
    [ -e "$f" ] || { echo "selfprof_cost: missing $f (build the pprofgate target)"; exit 2; }
done
command -v wrk >/dev/null || { echo "selfprof_cost: wrk not installed"; exit 2; }

TMP=$(mktemp -d /tmp/pg-selfprof.XXXXXX)
GPID=
cleanup() { [ -n "$GPID" ] && { kill "$GPID" 2>/dev/null || true; wait "$GPID" 2>/dev/null || true; }; rm -rf "$TMP"; }
trap cleanup EXIT

write_post_lua "$BODY" "$TMP/post.lua"

# run <rate> <tag>: one gateway, one wrk run; prints req/s, keeps /metrics in $TMP/metrics.<tag>
run() {
    cat > "$TMP/gw.yaml" <<YAML
receivers:
  pprof:
    server: {endpoint: 127.0.0.1:0}
exporters:
  debug: {verbosity: basic, output_paths: [/dev/null]}
extensions:
  pprof: {endpoint: 127.0.0.1:0, heap_sample_rate: $1}
service:
  extensions: [pprof]
  telemetry:
    metrics: {address: 127.0.0.1:0}
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
YAML
    "$BIN" --config "$TMP/gw.yaml" > "$TMP/gw.log" 2>&1 &
    GPID=$!
    local port mport
    port=$(wait_port "$TMP/gw.log" 'listening on [0-9.]+:[0-9]+')
    mport=$(wait_port "$TMP/gw.log" 'serving /metrics on [0-9.]+:[0-9]+')
    wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -s "$TMP/post.lua" \
        "http://127.0.0.1:$port/v1/pprof" > "$TMP/wrk.$2" 2>&1
    curl -s "http://127.0.0.1:$mport/metrics" > "$TMP/metrics.$2" || true
    kill "$GPID"; wait "$GPID" 2>/dev/null || true
    GPID=
    grep -E '^Requests/sec' "$TMP/wrk.$2" | awk '{print $2}'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "selfprof_cost: body $BODY ($(stat -c %s "$BODY") bytes), $ROUNDS x ${DURATION}s per mode, $CONNS connections"
: > "$TMP/off"; : > "$TMP/on"
for r in $(seq 1 "$ROUNDS"); do
    off=$(run 0 "off$r"); on=$(run "$RATE" "on$r")
    echo "  round $r: sampler off $off req/s, sampler at $RATE B $on req/s"
    echo "$off" >> "$TMP/off"; echo "$on" >> "$TMP/on"
done
OFF=$(median < "$TMP/off"); ON=$(median < "$TMP/on")
echo "median: off $OFF req/s, on $ON req/s"
awk -v a="$ON" -v b="$OFF" 'BEGIN { printf "ratio on/off: %.3f (target >= 0.98)\n", a / b }'
M="$TMP/metrics.on$ROUNDS"
val() { awk -v n="$1" '$1 == n { print $2 }' "$M"; }
echo "sampler at steady state (last 'on' run, after $(awk '/^Requests\/sec/{print $2}' "$TMP/wrk.on$ROUNDS") req/s for ${DURATION}s):"
echo "  samples $(val pprofgate_heap_sampler_samples), dropped $(val pprofgate_heap_sampler_dropped_samples), stacks $(val pprofgate_heap_sampler_stacks), live $(val pprofgate_heap_sampler_live_samples)/$(val pprofgate_heap_sampler_live_capacity) slots"
awk '$1 == "pprofgate_heap_sampler_table_bytes" { printf "  table memory %.0f KiB\n", $2 / 1024 }' "$M"
awk '$1 == "otelcol_process_memory_rss" { printf "  process RSS %.1f MiB\n", $2 / 1048576 }' "$M"
