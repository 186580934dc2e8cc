#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pprofgate side by side with the real OpenTelemetry Collector
# (tests/interop/collector, built by its build.sh), on this machine, in one
# run, one process at a time, the same pipeline shape: receiver -> debug
# exporter at basic, output discarded. Prints each figure and the ratio
# pprofgate/collector:
#   1. wrk POSTing the first SDK capture for DURATION s: req/s and CPU
#      (user+system of the server process, from /proc) per request;
#   2. the ~7 MB generated profile (bench/translate_gen_large.py) POSTed
#      N_LARGE times one after another: CPU per request and peak RSS growth
#      (VmHWM after minus VmRSS at idle);
#   3. RSS at idle, binary size, start-up time (exec to listening; median of 5).
# The contrib pprof receiver is not served by the Go module proxy, so the
# collector cannot take pprof: it gets the same profile already translated to
# OTLP (tests/tools/pg_pprof2otlp), gzip'd, with the same headers, on its otlp
# receiver's HTTP endpoint (POST /v1development/profiles). That spares it pprof
# parsing and translation, so its figures are a lower bound on what its pprof
# receiver would cost: every ratio here flatters the collector.
# Env: DURATION (s, default 20), CONNS (16), THREADS (2), N_LARGE (20),
#      PG_BUILD_DIR (build), PPROFGATE_BIN, PG_OTELCOL.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
COL=${PG_OTELCOL:-$BUILD/collector/pg-otelcol}
P2O=$BUILD/tests/pg_pprof2otlp
DURATION=${DURATION:-20}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
N_LARGE=${N_LARGE:-20}
BODY=
for c in tests/fixtures/sdk/push0.pprof.gz ../shared/fixtures/sdk/push0.pprof.gz; do
    [ -f "$c" ] && { BODY=$c; break; }
done
if [ ! -x "$COL" ]; then
    bash tests/interop/collector/build.sh "$COL" || { echo "vs_collector: no collector (needs Go at /usr/local/go)"; exit 2; }
fi
for f in "$BIN" "$P2O" "$BODY"; do
    [ -e "$f" ] || { echo "vs_collector: missing $f (build the pprofgate and pg_pprof2otlp targets)"; exit 2; }
done
command -v wrk >/dev/null || { echo "vs_collector: wrk not installed"; exit 2; }

TMP=$(mktemp -d /tmp/pg-vscol.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; rm -rf "$TMP"; }
trap cleanup EXIT

# Bodies: pprofgate gets the pprof as the SDK sends it, the collector the same
# profile as gzip'd OTLP.
python3 bench/translate_gen_large.py "$TMP/large.pprof" --gzip "$TMP/large.pprof.gz" >/dev/null
"$P2O" "$BODY" | gzip -c > "$TMP/sdk.otlp.gz"
"$P2O" "$TMP/large.pprof.gz" | gzip -c > "$TMP/large.otlp.gz"
cp "$BODY" "$TMP/sdk.pprof.gz"
ATTRS="telemetry.sdk.language=javascript,service.name=bench,profiler.type=wall"
post_lua() { # body content-type out
    cat > "$3" <<LUA
local f = assert(io.open("$1", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "$2"
wrk.headers["Content-Encoding"] = "gzip"
wrk.headers["Otel-Resource-Attributes"] = "$ATTRS"
LUA
}
post_lua "$TMP/sdk.pprof.gz" application/octet-stream "$TMP/pg.lua"
post_lua "$TMP/sdk.otlp.gz" application/x-protobuf "$TMP/col.lua"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

write_configs() { # port
    write_gw_config "$TMP/pg.yaml" "127.0.0.1:$1"
    cat > "$TMP/col.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$1
exporters:
  debug:
    verbosity: basic
    use_internal_logger: false
service:
  telemetry:
    logs: {level: info}
    metrics: {level: none}
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug]
YAML
}

start() { # which port -> starts $PID, waits until it accepts connections
    local port=$2 t0
    t0=$(date +%s%N)
    if [ "$1" = pg ]; then
        "$BIN" --config "$TMP/pg.yaml" > /dev/null 2> "$TMP/run.log" &
    else
        "$COL" --config "$TMP/col.yaml" --feature-gates=service.profilesSupport > /dev/null 2> "$TMP/run.log" &
    fi
    PID=$!
    for _ in $(seq 1 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo $(( ($(date +%s%N) - t0) / 1000000 )) > "$TMP/startup"
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || { echo "vs_collector: $1 exited:"; cat "$TMP/run.log"; exit 1; }
        sleep 0.01
    done
    echo "vs_collector: $1 did not listen on $port in 6 s"; cat "$TMP/run.log"; exit 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=; }
ticks() { awk '{print $14 + $15}' /proc/"$PID"/stat; }
status_kb() { awk -v f="$1:" '$1 == f {print $2}' /proc/"$PID"/status; }
hz=$(getconf CLK_TCK)

declare -A R
measure() { # which path lua large-body content-type
    local which=$1 path=$2 lua=$3 large=$4 ctype=$5 port ms=() t0 t1 rss0 n_ok=0
    # start-up: median of 5 cold starts
    for _ in 1 2 3 4 5; do
        port=$(free_port); write_configs "$port"; start "$which" "$port"; ms+=("$(cat "$TMP/startup")"); stop
    done
    R[$which.startup]=$(printf '%s\n' "${ms[@]}" | sort -n | sed -n 3p)
    port=$(free_port); write_configs "$port"; start "$which" "$port"
    sleep 2
    R[$which.idle]=$(status_kb VmRSS)
    # 1. wrk, the SDK capture
    t0=$(ticks)
    wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -s "$lua" "http://127.0.0.1:$port$path" > "$TMP/wrk.$which" 2>&1
    t1=$(ticks)
    R[$which.rps]=$(awk '/^Requests\/sec/{print $2}' "$TMP/wrk.$which")
    R[$which.non2xx]=$(awk '/Non-2xx/{print $NF}' "$TMP/wrk.$which")
    R[$which.us]=$(awk -v a="$t0" -v b="$t1" -v r="${R[$which.rps]}" -v d="$DURATION" -v hz="$hz" \
        'BEGIN { printf "%.0f", (b - a) / hz * 1e6 / (r * d) }')
    stop
    # 2. the large profile, sequentially, on a fresh process
    port=$(free_port); write_configs "$port"; start "$which" "$port"
    sleep 1
    rss0=$(status_kb VmRSS)
    t0=$(ticks)
    for _ in $(seq 1 "$N_LARGE"); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -X POST \
            -H "Content-Type: $ctype" -H "Content-Encoding: gzip" \
            -H "Otel-Resource-Attributes: $ATTRS" --data-binary @"$large" \
            "http://127.0.0.1:$port$path")
        case $code in 2??) n_ok=$((n_ok + 1)) ;; esac
    done
    sleep 0.5 # the debug exporter prints after the response
    t1=$(ticks)
    R[$which.large_ok]=$n_ok
    R[$which.large_ms]=$(awk -v a="$t0" -v b="$t1" -v n="$N_LARGE" -v hz="$hz" \
        'BEGIN { printf "%.1f", (b - a) / hz * 1e3 / n }')
    R[$which.hwm]=$(( $(status_kb VmHWM) - rss0 ))
    stop
}

echo "vs_collector: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); SDK body $BODY;" \
     "large $(stat -c %s "$TMP/large.pprof") bytes raw ($(stat -c %s "$TMP/large.pprof.gz") gzip'd pprof," \
     "$(stat -c %s "$TMP/large.otlp.gz") gzip'd OTLP); wrk ${DURATION}s x $CONNS connections; $N_LARGE large posts"
measure pg /v1/pprof "$TMP/pg.lua" "$TMP/large.pprof.gz" application/octet-stream
measure col /v1development/profiles "$TMP/col.lua" "$TMP/large.otlp.gz" application/x-protobuf
R[pg.size]=$(stat -c %s "$BIN")
R[col.size]=$(stat -c %s "$COL")

row() { # label key unit better(higher|lower)
    awk -v l="$1" -v p="${R[pg.$2]}" -v c="${R[col.$2]}" -v u="$3" 'BEGIN {
        printf "%-34s %12s %12s   %s\n", l " (" u ")", p, c, (c > 0 ? sprintf("%.3f", p / c) : "?") }'
}
printf "%-34s %12s %12s   %s\n" "" pprofgate collector "pprofgate/collector"
row "SDK push req/s" rps "req/s"
row "SDK push CPU per request" us "us"
row "large profile CPU per request" large_ms "ms"
row "large profile peak RSS growth" hwm "KiB"
row "RSS at idle" idle "KiB"
row "binary size" size "bytes"
row "start-up to listening" startup "ms"
echo "non-2xx under wrk: pprofgate ${R[pg.non2xx]:-0}, collector ${R[col.non2xx]:-0};" \
     "large posts accepted: pprofgate ${R[pg.large_ok]}/$N_LARGE, collector ${R[col.large_ok]}/$N_LARGE"
