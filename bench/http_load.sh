#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# http load: wrk POSTs a real SDK push (gzip'd pprof + its headers) to
#   1. bench/discard_server (libevent, reads and drops the body, 204): the baseline;
#   2. bench/discard_server inflate (also gunzips each body): the ceiling;
#   3. pprofgate (receiver -> debug exporter at basic, output to /dev/null);
# in the same run, and prints both req/s, their ratio (target >= 0.70),
# each server's CPU time per request (user + system, from /proc: robust when
# the machine is shared, unlike req/s), pprofgate's CPU per request divided by
# inflate-only's (target <= 1.5) and pprofgate's RSS sampled over its run
# (target: flat within +-10%).
# Env: DURATION (s, default 60), CONNS (16), THREADS (2), PG_BUILD_DIR (build),
#      PPROFGATE_BIN, BODY (a .pprof.gz; default the first SDK capture),
#      WORKERS (receiver server.workers; unset = the receiver's default),
#      LOOPS (receiver server.loops; unset = the receiver's default, one per CPU),
#      OTLP=1 (opt-in: the pipeline also has an otlp exporter, gzip, merging
#      pushes into requests of 5000+ samples (sending_queue.batch), to a local
#      sink, tests/node/grpc_server.mjs not storing requests; the sink's CPU
#      is not pprofgate's but shares the machine, so req/s drops with it).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
DISCARD=$BUILD/bench/discard_server
DURATION=${DURATION:-60}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
BODY=${BODY:-}
WORKERS=${WORKERS:-}
LOOPS=${LOOPS:-}
OTLP=${OTLP:-}
if [ -z "$BODY" ]; then
    for c in tests/fixtures/sdk/push0.pprof.gz ../shared/fixtures/sdk/push0.pprof.gz; do
        [ -f "$c" ] && { BODY=$c; break; }
    done
fi
for f in "$BIN" "$DISCARD" "$BODY"; do
    [ -e "$f" ] || { echo "http_load: missing $f (build the pprofgate and discard_server targets)"; exit 2; }
done
command -v wrk >/dev/null || { echo "http_load: wrk not installed"; exit 2; }

TMP=$(mktemp -d /tmp/pg-httpload.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

write_post_lua "$BODY" "$TMP/post.lua"

run_wrk() { # port -> prints req/s; full output in $TMP/wrk.$1, wrk's own CPU seconds in $TMP/wrkcpu.$1
    ( wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$TMP/post.lua" \
        "http://127.0.0.1:$1/v1/pprof" > "$TMP/wrk.$1" 2>&1
      times > "$TMP/times.$1" ) # not in a pipeline: a pipe's subshell has no children
    tail -1 "$TMP/times.$1" | awk '{ for (i = 1; i <= 2; i++) { split($i, t, "m"); s += t[1] * 60 + t[2] } print s }' \
        > "$TMP/wrkcpu.$1"
    grep -E '^Requests/sec' "$TMP/wrk.$1" | awk '{print $2}'
}
stat_ticks() { awk '{print $14 + $15}' "$1"; } # utime + stime from a /proc stat file
cpu_ticks() { stat_ticks /proc/"$1"/stat; } # a whole process
# The event loops: the main thread (tid = pid, loop 0) and the threads
# named pg-loop-N (the others, with server.loops > 1).
loop_tids() { echo "$1"; { grep -l '^pg-loop-' /proc/"$1"/task/*/comm 2>/dev/null || true; } | awk -F/ '{print $5}'; }
loop_ticks() { local t s=0; for t in $(loop_tids "$1"); do s=$(( s + $(stat_ticks /proc/"$1"/task/"$t"/stat) )); done; echo "$s"; }
# CPU microseconds per request: ticks before, ticks after, req/s
us_per_req() { awk -v a="$1" -v b="$2" -v r="$3" -v hz="$(getconf CLK_TCK)" -v d="$DURATION" \
    'BEGIN { if (r > 0) printf "%.0f", (b - a) / hz * 1e6 / (r * d); else print "?" }'; }

echo "http_load: body $BODY ($(stat -c %s "$BODY") bytes), ${DURATION}s, $CONNS connections, $THREADS wrk threads"

# 1. baseline
"$DISCARD" 0 > "$TMP/discard.log" 2>&1 &
PIDS+=($!)
DPORT=$(wait_port "$TMP/discard.log" 'listening on [0-9]+')
DT0=$(cpu_ticks "${PIDS[0]}")
DRPS=$(run_wrk "$DPORT")
DT1=$(cpu_ticks "${PIDS[0]}")
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true

# 2. the ceiling: the same server also gunzipping every body (pg_inflate)
"$DISCARD" 0 inflate > "$TMP/inflate.log" 2>&1 &
IPID=$!
PIDS+=($IPID)
IPORT=$(wait_port "$TMP/inflate.log" 'listening on [0-9]+')
IT0=$(cpu_ticks "$IPID")
IRPS=$(run_wrk "$IPORT")
IT1=$(cpu_ticks "$IPID")
kill "$IPID"; wait "$IPID" 2>/dev/null || true

# 3. pprofgate
write_gw_config "$TMP/gw.yaml" 127.0.0.1:0 "$WORKERS"
[ -n "$LOOPS" ] && sed -i "s/^\( *\)endpoint: .*/&\n\1loops: $LOOPS/" "$TMP/gw.yaml"
if [ "$OTLP" = 1 ]; then
    PG_GRPC_STORE=0 node tests/node/grpc_server.mjs > "$TMP/sink.log" 2>/dev/null &
    PIDS+=($!)
    for _ in $(seq 50); do [ -s "$TMP/sink.log" ] && break; sleep 0.1; done
    SINK_PORT=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$TMP/sink.log")
    [ -n "$SINK_PORT" ] || { echo "http_load: the OTLP sink did not start (bash scripts/bootstrap.sh --test)"; exit 2; }
    sed -i "s/^exporters:\$/exporters:\n  otlp:\n    endpoint: 127.0.0.1:$SINK_PORT\n    tls: {insecure: true}\n    sending_queue: {queue_size: 20, batch: {flush_timeout: 100ms, min_size: 5000, max_size: 20000}}/; s/exporters: \[debug\]/exporters: [debug, otlp]/" "$TMP/gw.yaml"
fi
"$BIN" --config "$TMP/gw.yaml" > "$TMP/gw.log" 2>&1 &
GPID=$!
PIDS+=($GPID)
GPORT=$(wait_port "$TMP/gw.log" 'listening on [0-9.]+:[0-9]+')
rss() { awk '/^VmRSS/{print $2}' /proc/"$GPID"/status; }
RSS0=$(rss)
STEP=$(( DURATION >= 12 ? DURATION / 12 : 1 ))
( for _ in $(seq 1 $(( DURATION / STEP ))); do sleep "$STEP"; rss; done ) > "$TMP/rss" &
SAMPLER=$!
NLOOPS=$(loop_tids "$GPID" | wc -l)
GT0=$(cpu_ticks "$GPID"); GL0=$(loop_ticks "$GPID")
GRPS=$(run_wrk "$GPORT")
GT1=$(cpu_ticks "$GPID"); GL1=$(loop_ticks "$GPID")
wait "$SAMPLER" 2>/dev/null || true
NON2XX=$(grep -E 'Non-2xx' "$TMP/wrk.$GPORT" | awk '{print $NF}' || true)
kill "$GPID"; wait "$GPID" 2>/dev/null || true

echo "discard_server: $DRPS req/s"
grep -E 'Latency|99%' "$TMP/wrk.$DPORT" | sed 's/^/    /'
echo "pprofgate:      $GRPS req/s${NON2XX:+ (non-2xx: $NON2XX)}, $NLOOPS event loop(s)${OTLP:+, debug + otlp exporters}"
grep -E 'Latency|99%' "$TMP/wrk.$GPORT" | sed 's/^/    /'
echo "inflate-only:   $IRPS req/s (discard_server + pg_inflate of each body)"
awk -v g="$GRPS" -v d="$DRPS" 'BEGIN { printf "ratio pprofgate/discard: %.2f (target >= 0.70)\n", g / d }'
# With OTLP=1 a full sending queue answers 503: what was accepted is what
# the export path (the main loop's consumers and the sink) kept up with.
[ -n "$OTLP" ] && awk -v g="$GRPS" -v n="${NON2XX:-0}" -v d="$DURATION" \
    'BEGIN { printf "pprofgate accepted (2xx): %.0f req/s; the rest 503 from the full sending queue\n", g - n / d }'
awk -v g="$IRPS" -v d="$DRPS" 'BEGIN { printf "inflate-only/discard: %.2f (one thread)\n", g / d }'
# Ceiling for any gateway that must at least gunzip: every core busy with
# inflate-only's work plus wrk's own per-request CPU (the load generator
# shares the machine), as a fraction of the baseline's req/s.
DUS=$(us_per_req "$DT0" "$DT1" "$DRPS"); IUS=$(us_per_req "$IT0" "$IT1" "$IRPS")
GUS=$(us_per_req "$GT0" "$GT1" "$GRPS"); LUS=$(us_per_req "$GL0" "$GL1" "$GRPS")
WRK_US=$(awk -v c="$(cat "$TMP/wrkcpu.$IPORT")" -v r="$IRPS" -v d="$DURATION" 'BEGIN { printf "%.0f", c * 1e6 / (r * d) }')
awk -v n="$(nproc)" -v i="$IUS" -v w="$WRK_US" -v d="$DRPS" 'BEGIN {
    printf "ceiling if inflate-only used all %d cores: %.0f req/s = %.2f of discard (inflate %d us + wrk %d us per request)\n", n, n * 1e6 / (i + w), n * 1e6 / (i + w) / d, i, w }'
echo "CPU per request: discard_server $DUS us, inflate-only $IUS us, pprofgate $GUS us (user+system)"
awk -v g="$GUS" -v i="$IUS" 'BEGIN { if (i > 0 && g > 0) printf "CPU per request pprofgate/inflate-only: %.2f (target <= 1.5)\n", g / i }'
# With workers, only the loop thread's share is serial: on a machine with
# cores to spare for the workers, req/s is bounded by 1 / (loop CPU per
# request), as the one-threaded discard server's is by its own.
echo "pprofgate event-loop threads ($NLOOPS): $LUS us per request together (the rest ran on workers and the main thread's other work); discard_server/loops = $(awk -v d="$DUS" -v l="$LUS" 'BEGIN { if (l > 0) printf "%.2f", d / l; else print "?" }') (with one loop: the ratio's bound when workers have cores of their own)"
echo "pprofgate RSS (KiB): start $RSS0, every ${STEP}s: $(tr '\n' ' ' < "$TMP/rss")"
sort -n "$TMP/rss" | awk -v first="$(head -1 "$TMP/rss")" '
    { v[NR] = $1 } END {
        if (NR == 0) exit;
        printf "RSS over the run: min %d max %d KiB, spread %.1f%% of the first sample (target within +-10%%)\n",
               v[1], v[NR], 100 * (v[NR] - v[1]) / first }'
