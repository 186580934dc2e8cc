#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The otlp receiver against the real OpenTelemetry Collector's (both:
# otlp receiver -> debug exporter at basic, output discarded), one process at
# a time, in one run, on the same SDK-sized request (the first SDK capture
# translated to OTLP by tests/tools/pg_pprof2otlp):
#   1. gRPC: h2load (Debian nghttp2-client) posting the 5-byte-prefixed message
#      for DURATION s over CONNS connections x STREAMS streams, two client
#      threads as wrk's (one h2load thread capped pprofgate near 18 k req/s
#      here while using a quarter of a core: every answer waited for it);
#   2. HTTP: wrk (2 threads) posting the protobuf body for DURATION s;
#   each: req/s, CPU (user+system of the server, /proc) per request, and the
#   requests the receiver accepted (its metrics / debug lines) so refusals
#   cannot pass for throughput;
#   3. one large request (the ~60 000-sample profile of
#      bench/translate_gen_large.py as OTLP) posted N_LARGE times over HTTP:
#      pprofgate's CPU per request against a bare protobuf-c unpack of the same
#      bytes (bench/otlp_unpack), peak RSS growth against the request size, and
#      RSS after against idle.
# Goals (issue 23): >= 5x the collector's req/s at <= 1/5 of its CPU per
# request; large: CPU <= 2x the bare unpack, growth <= 3x the request, RSS
# back within 10 % of idle. Figures only: nothing here fails on a ratio.
# Env: DURATION (s, default 15), CONNS (4), STREAMS (8), N_LARGE (10),
#      PG_BUILD_DIR (build), PPROFGATE_BIN, PG_OTELCOL, PG_LOOPS (the otlp
#      receiver's `loops`; unset = its default).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
COL=${PG_OTELCOL:-$BUILD/collector/pg-otelcol}
P2O=$BUILD/tests/pg_pprof2otlp
UNPACK=$BUILD/bench/otlp_unpack
DURATION=${DURATION:-15}
CONNS=${CONNS:-4}
STREAMS=${STREAMS:-8}
N_LARGE=${N_LARGE:-10}
BODY=
for c in tests/fixtures/sdk/push0.pprof.gz ../shared/fixtures/sdk/push0.pprof.gz; do
    [ -f "$c" ] && { BODY=$c; break; }
done
if [ ! -x "$COL" ]; then
    bash tests/interop/collector/build.sh "$COL" || { echo "otlp_in: no collector (needs Go at /usr/local/go)"; exit 2; }
fi
for f in "$BIN" "$P2O" "$UNPACK" "$BODY"; do
    [ -e "$f" ] || { echo "otlp_in: missing $f (build pprofgate, pg_pprof2otlp and otlp_unpack)"; exit 2; }
done
for t in wrk h2load; do
    command -v $t >/dev/null || { echo "otlp_in: $t not installed (make test's bootstrap adds it)"; exit 2; }
done

TMP=$(mktemp -d /tmp/pg-otlpin.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; rm -rf "$TMP"; }
trap cleanup EXIT

"$P2O" "$BODY" > "$TMP/sdk.pb"
python3 bench/translate_gen_large.py "$TMP/large.pprof" --gzip "$TMP/large.pprof.gz" >/dev/null
"$P2O" "$TMP/large.pprof.gz" > "$TMP/large.pb"
python3 - "$TMP/sdk.pb" "$TMP/sdk.grpc" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b"\0" + struct.pack(">I", len(b)) + b)
PY
cat > "$TMP/http.lua" <<LUA
local f = assert(io.open("$TMP/sdk.pb", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/x-protobuf"
LUA
EXPORT=/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

write_configs() { # grpc-port http-port metrics-port
    cat > "$TMP/pg.yaml" <<YAML
receivers:
  otlp:
    ${PG_LOOPS:+loops: $PG_LOOPS}
    protocols:
      grpc: {endpoint: 127.0.0.1:$1, max_recv_msg_size_mib: 16}
      http: {endpoint: 127.0.0.1:$2}
exporters:
  debug: {verbosity: basic}
service:
  telemetry:
    metrics: {address: 127.0.0.1:$3}
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
YAML
    cat > "$TMP/col.yaml" <<YAML
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 127.0.0.1:$1, max_recv_msg_size_mib: 16}
      http: {endpoint: 127.0.0.1:$2}
exporters:
  debug:
    verbosity: basic
    use_internal_logger: false
service:
  telemetry:
    logs: {level: info}
    metrics: {level: none}
  pipelines:
    profiles: {receivers: [otlp], exporters: [debug]}
YAML
}

start() { # which grpc-port http-port
    if [ "$1" = pg ]; then
        "$BIN" --config "$TMP/pg.yaml" > "$TMP/out.$1" 2> "$TMP/run.log" &
    else
        "$COL" --config "$TMP/col.yaml" --feature-gates=service.profilesSupport > "$TMP/out.$1" 2> "$TMP/run.log" &
    fi
    PID=$!
    for _ in $(seq 1 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$3") 2>/dev/null; then
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || { echo "otlp_in: $1 exited:"; cat "$TMP/run.log"; exit 1; }
        sleep 0.01
    done
    echo "otlp_in: $1 did not listen in 6 s"; cat "$TMP/run.log"; exit 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=; }
ticks() { awk '{print $14 + $15}' /proc/"$PID"/stat; }
status_kb() { awk -v f="$1:" '$1 == f {print $2}' /proc/"$PID"/status; }
hz=$(getconf CLK_TCK)
# Requests the receiver accepted: pprofgate's sample counter / samples per
# request; the collector's debug exporter at basic prints one line per batch.
accepted() { # which metrics-port samples-per-request
    if [ "$1" = pg ]; then
        curl -s "http://127.0.0.1:$2/metrics" |
            awk -v s="$3" '/^otelcol_receiver_accepted_profile_samples\{.*receiver="otlp"/ {n += $NF}
                           END {printf "%.0f", n / s}'
    else
        grep -c 'sample records' "$TMP/out.col" || true
    fi
}
SAMPLES=$(python3 - "$TMP/sdk.pb" <<'PY'
import sys
def fields(b):
    i = 0
    while i < len(b):
        k = 0; s = 0
        while True:
            c = b[i]; i += 1; k |= (c & 0x7F) << s; s += 7
            if c < 0x80: break
        f, wt = k >> 3, k & 7
        if wt == 0:
            while b[i] & 0x80: i += 1
            i += 1; yield f, None
        elif wt == 1: i += 8; yield f, None
        elif wt == 5: i += 4; yield f, None
        elif wt == 2:
            n = 0; s = 0
            while True:
                c = b[i]; i += 1; n |= (c & 0x7F) << s; s += 7
                if c < 0x80: break
            yield f, b[i:i + n]; i += n
        else: raise SystemExit("bad wire type")
def sub(b, num):
    return [v for f, v in fields(b) if f == num and v is not None]
req = open(sys.argv[1], "rb").read()
# request.resource_profiles(1).scope_profiles(2).profiles(2).samples(2)
print(sum(len(sub(p, 2)) for rp in sub(req, 1) for sp in sub(rp, 2) for p in sub(sp, 2)))
PY
) || SAMPLES=0

declare -A R
measure() { # which
    local which=$1 g h m t0 t1 rss0 n_ok=0 a0
    # 1. gRPC
    g=$(free_port); h=$(free_port); m=$(free_port); write_configs "$g" "$h" "$m"; start "$which" "$g" "$h"
    sleep 1
    R[$which.idle]=$(status_kb VmRSS)
    t0=$(ticks)
    h2load -t 2 -D "$DURATION" -c "$CONNS" -m "$STREAMS" -d "$TMP/sdk.grpc" \
        -H 'content-type: application/grpc' -H 'te: trailers' \
        "http://127.0.0.1:$g$EXPORT" > "$TMP/h2load.$which" 2>&1 || true
    t1=$(ticks)
    R[$which.grpc_n]=$(awk '/^requests:/ {print $8}' "$TMP/h2load.$which")
    R[$which.grpc_rps]=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' "$TMP/h2load.$which")
    R[$which.grpc_us]=$(awk -v a="$t0" -v b="$t1" -v n="${R[$which.grpc_n]:-0}" -v hz="$hz" \
        'BEGIN { printf "%.1f", (n > 0 ? (b - a) / hz * 1e6 / n : 0) }')
    sleep 0.5
    R[$which.grpc_acc]=$(accepted "$which" "$m" "$SAMPLES")
    a0=${R[$which.grpc_acc]:-0}
    # 2. HTTP protobuf
    t0=$(ticks)
    wrk -t2 -c"$((CONNS * STREAMS))" -d"${DURATION}s" -s "$TMP/http.lua" \
        "http://127.0.0.1:$h/v1development/profiles" > "$TMP/wrk.$which" 2>&1 || true
    t1=$(ticks)
    R[$which.http_rps]=$(awk '/^Requests\/sec/{print $2}' "$TMP/wrk.$which")
    R[$which.http_n]=$(awk '/requests in/ {print $1}' "$TMP/wrk.$which")
    R[$which.http_us]=$(awk -v a="$t0" -v b="$t1" -v n="${R[$which.http_n]:-0}" -v hz="$hz" \
        'BEGIN { printf "%.1f", (n > 0 ? (b - a) / hz * 1e6 / n : 0) }')
    sleep 0.5
    R[$which.http_acc]=$(( $(accepted "$which" "$m" "$SAMPLES") - a0 ))
    stop
    # 3. the large request, sequentially, on a fresh process
    g=$(free_port); h=$(free_port); m=$(free_port); write_configs "$g" "$h" "$m"; start "$which" "$g" "$h"
    sleep 1
    rss0=$(status_kb VmRSS)
    t0=$(ticks)
    for _ in $(seq 1 "$N_LARGE"); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -X POST \
            -H "Content-Type: application/x-protobuf" --data-binary @"$TMP/large.pb" \
            "http://127.0.0.1:$h/v1development/profiles")
        case $code in 2??) n_ok=$((n_ok + 1)) ;; esac
    done
    sleep 0.5
    t1=$(ticks)
    sleep 2
    R[$which.large_ok]=$n_ok
    R[$which.large_ms]=$(awk -v a="$t0" -v b="$t1" -v n="$N_LARGE" -v hz="$hz" \
        'BEGIN { printf "%.1f", (b - a) / hz * 1e3 / n }')
    R[$which.hwm]=$(( $(status_kb VmHWM) - rss0 ))
    R[$which.rss_after_pct]=$(awk -v a="$(status_kb VmRSS)" -v b="$rss0" 'BEGIN { printf "%+.1f", (a - b) * 100 / b }')
    # core/bufpool keeps large blocks for its decay (5 s) after the last large
    # request, then gives them back: RSS again past it.
    sleep 6
    R[$which.rss_decay_pct]=$(awk -v a="$(status_kb VmRSS)" -v b="$rss0" 'BEGIN { printf "%+.1f", (a - b) * 100 / b }')
    stop
}

LARGE_BYTES=$(stat -c %s "$TMP/large.pb")
R[unpack_ms]=$("$UNPACK" "$TMP/large.pb" 10 | awk '{print $2}')
echo "otlp_in: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); SDK request $(stat -c %s "$TMP/sdk.pb") bytes" \
     "($SAMPLES samples); large $LARGE_BYTES bytes; ${DURATION}s x $CONNS conns x $STREAMS streams; $N_LARGE large posts"
measure pg
measure col

row() { # label key unit
    awk -v l="$1" -v p="${R[pg.$2]:-0}" -v c="${R[col.$2]:-0}" -v u="$3" 'BEGIN {
        printf "%-34s %12s %12s   %s\n", l " (" u ")", p, c, (c > 0 ? sprintf("%.3f", p / c) : "?") }'
}
printf "%-34s %12s %12s   %s\n" "" pprofgate collector "pprofgate/collector"
row "gRPC req/s" grpc_rps "req/s"
row "gRPC CPU per request" grpc_us "us"
row "HTTP req/s" http_rps "req/s"
row "HTTP CPU per request" http_us "us"
row "large request CPU" large_ms "ms"
row "large request peak RSS growth" hwm "KiB"
row "RSS at idle" idle "KiB"
echo "requests accepted (sent): gRPC pprofgate ${R[pg.grpc_acc]:-?} (${R[pg.grpc_n]:-?})," \
     "collector ${R[col.grpc_acc]:-?} (${R[col.grpc_n]:-?}); HTTP pprofgate ${R[pg.http_acc]:-?} (${R[pg.http_n]:-?})," \
     "collector counted with gRPC; large accepted pprofgate ${R[pg.large_ok]}/$N_LARGE, collector ${R[col.large_ok]}/$N_LARGE"
awk -v ms="${R[pg.large_ms]}" -v u="${R[unpack_ms]}" -v h="${R[pg.hwm]}" -v b="$LARGE_BYTES" -v r="${R[pg.rss_after_pct]}" -v d="${R[pg.rss_decay_pct]}" 'BEGIN {
    printf "large request, pprofgate: CPU %.1f ms = %.2fx a bare protobuf-c unpack (%.1f ms; goal <= 2x);" \
           " peak RSS growth %.2fx the request (goal <= 3x); RSS %s%% of idle 2 s after, %s%% 8 s after" \
           " (past the buffer pool'"'"'s 5 s decay; goal within 10%%)\n",
           ms, (u > 0 ? ms / u : 0), u, h * 1024 / b, r, d }'
