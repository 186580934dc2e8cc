#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per SDK push through a gateway that also exports over OTLP, what every real
# deployment runs (config/pprofgate.yaml, config/sidecar-otlp.yaml) and
# bench/callgrind_push.sh's configs do not: receiver -> debug (basic, /dev/null) + otlp
# (insecure, compression as COMPRESSION, default none) to the Node gRPC server
# (tests/node/grpc_server.mjs, not storing). Each binary runs under callgrind while wrk -c1
# POSTs BODY for DURATION s (after a 2 s warm-up, not counted); prints instructions per push
# over all threads, the inclusive share of translation and of the OTLP encoder, and the
# encoder's calls (about one per push; more when exports lag behind the pushes), the share of
# pg_gzip_compress, and the mean export request the server got (uncompressed and on the wire).
# Figures only. usage: bench/translate_push_otlp.sh [BIN...]   (default: build/pprofgate)
# Env: DURATION (8), BODY (tests/fixtures/sdk/push0.pprof.gz), COMPRESSION (none), WORKERS (0),
#      LEVEL (unset: compression_params.level for every binary; binaries before it reject it),
#      TPO_KEEP (a path prefix: each callgrind file is kept as PREFIX.N).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${DURATION:-8}
BODY=${BODY:-tests/fixtures/sdk/push0.pprof.gz}
COMPRESSION=${COMPRESSION:-none}
WORKERS=${WORKERS:-0}
[ $# -gt 0 ] || set -- build/pprofgate
for t in valgrind callgrind_control callgrind_annotate wrk node; do
    command -v "$t" >/dev/null || { echo "translate_push_otlp: $t not installed"; exit 2; }
done
TMP=$(mktemp -d /tmp/pg-tpo.XXXXXX)
SRV= VPID=
cleanup() {
    [ -n "$VPID" ] && { kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; }
    [ -n "$SRV" ] && { kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; }
    rm -rf "$TMP"
}
trap cleanup EXIT
write_post_lua "$BODY" "$TMP/post.lua"
PG_GRPC_STORE=0 node tests/node/grpc_server.mjs > "$TMP/grpc.out" 2>&1 &
SRV=$!
for _ in $(seq 1 100); do [ -s "$TMP/grpc.out" ] && break; sleep 0.1; done
gport=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$TMP/grpc.out")
cport=$(sed -n 's/.*"control_port":\([0-9]*\).*/\1/p' "$TMP/grpc.out")
[ -n "$gport" ] || { echo "translate_push_otlp: gRPC server did not start" >&2; cat "$TMP/grpc.out" >&2; exit 1; }
cat > "$TMP/gw.yaml" <<YAML
receivers:
  pprof:
    server:
      endpoint: 127.0.0.1:0
      workers: $WORKERS
exporters:
  debug:
    verbosity: basic
    output_paths: [/dev/null]
  otlp:
    endpoint: 127.0.0.1:$gport
    tls:
      insecure: true
    compression: $COMPRESSION${LEVEL:+
    compression_params: {level: $LEVEL\}}
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug, otlp]
  telemetry:
    logs: {level: info}
YAML
# incl FILE FUNC: inclusive instructions of FUNC over the run: its own row only (the one
# naming its object file). The rows of code inlined into it from headers are already inside
# that row's inclusive cost; adding them would count them twice.
incl() {
    (cd / && callgrind_annotate --auto=no --inclusive=yes --threshold=100 --show=Ir \
        --show-percs=no "$1" 2>/dev/null) |
        awk -v re="^$2\$" '/file:function/ { t = 1; next } t && NF == 0 { exit }
            t && $1 ~ /^[0-9,]+$/ && $NF ~ /^\[.*\]$/ { fn = $2; sub(/^.*:/, "", fn)
                if (fn ~ re) { ir = $1; gsub(",", "", ir); s += ir } } END { printf "%.0f", s }'
}
# calls FILE FUNC: how many times FUNC was called (its callers' counts summed)
calls() {
    (cd / && callgrind_annotate --tree=caller --inclusive=yes --threshold=100 "$1" 2>/dev/null) |
        awk -v re=":$2 " 'NF == 0 { c = 0; next }
            $0 ~ /^ *[0-9,]+ .*< / { if (match($0, /\(([0-9,]+)x\)/)) {
                x = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", x); c += x } next }
            $0 ~ /^ *[0-9,]+ .*\* / && $0 ~ re { s += c } END { printf "%d", s }'
}
# stat KEY: a counter of the gRPC server's since the last /reset
stat() { curl -s "http://127.0.0.1:$cport/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
echo "translate_push_otlp: body $BODY, ${DURATION}s of wrk -c1, workers $WORKERS, otlp compression $COMPRESSION${LEVEL:+ level $LEVEL}"
printf '%-34s %8s %11s %10s %10s %8s %10s %10s %9s %9s\n' binary requests instr/push translate encode \
    encodes encode/call gzip/push raw_B/exp wire_B/exp
i=0
for bin in "$@"; do
    i=$((i + 1))
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$i.%p" --dump-instr=no \
        --instr-atstart=no "$bin" --config "$TMP/gw.yaml" > "$TMP/gw.$i.log" 2>&1 &
    VPID=$!
    port=
    for _ in $(seq 1 600); do
        port=$(grep -oE 'listening on [0-9.]+:[0-9]+' "$TMP/gw.$i.log" 2>/dev/null |
            grep -oE '[0-9]+$' | head -1 || true)
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "translate_push_otlp: $bin did not start" >&2; cat "$TMP/gw.$i.log" >&2; exit 1; }
    wrk -t1 -c1 -d2s -s "$TMP/post.lua" "http://127.0.0.1:$port/v1/pprof" > /dev/null 2>&1
    sleep 4 # the warm-up's exports (slow under callgrind) finish before counting starts
    curl -s -X POST "http://127.0.0.1:$cport/reset" > /dev/null
    callgrind_control -i on "$VPID" > /dev/null 2>&1
    wrk -t1 -c1 -d"${DURATION}s" -s "$TMP/post.lua" "http://127.0.0.1:$port/v1/pprof" > "$TMP/wrk.$i"
    sleep 1 # the last exports leave
    callgrind_control -d "$VPID" > /dev/null 2>&1
    n=$(awk '/requests in/ {print $1}' "$TMP/wrk.$i")
    f="$TMP/cg.$i.$VPID.1"
    kill "$VPID"; wait "$VPID" 2>/dev/null || true; VPID=
    [ -f "$f" ] || { echo "translate_push_otlp: no dump for $bin" >&2; exit 1; }
    [ -n "${TPO_KEEP:-}" ] && cp "$f" "$TPO_KEEP.$i"
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    tr=$(incl "$f" pg_pprof_translate_owned)
    en=$(incl "$f" pg_otlp_request_encode)
    ec=$(calls "$f" pg_otlp_request_encode)
    gz=$(incl "$f" pg_gzip_compress)
    sreq=$(stat requests) sraw=$(stat bytes) swire=$(stat wire_bytes)
    awk -v b="$bin" -v n="$n" -v ir="$ir" -v tr="$tr" -v en="$en" -v ec="$ec" -v gz="$gz" \
        -v sreq="$sreq" -v sraw="$sraw" -v swire="$swire" 'BEGIN {
        printf "%-34s %8d %11.0f %10.0f %10.0f %8d %10.0f %10.0f %9.0f %9.0f\n", b, n, ir / n,
            tr / n, en / n, ec, ec ? en / ec : 0, gz / n, sreq ? sraw / sreq : 0,
            sreq ? swire / sreq : 0 }'
done
