#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pyroscope receiver against the pprof receiver, one gateway (both on one
# port, as the SDKs' default makes them), one run, the same profile: a Go CPU
# pprof of SDK size (tests/fixtures/pprof/go/cpu.pb.gz, gzip'd) pushed
#   a. to /v1/pprof as the body (Content-Encoding: gzip), and
#   b. to /ingest as pyroscope-go v1.5.0 sends it: a multipart form with the
#      `profile` part and the SDK's query (name with its labels, from/until
#      in ns, spyName, sampleRate, units, aggregationType);
# by wrk for DURATION s each, ROUNDS times alternating (the ratio of each
# pair, then the median and range: on a shared machine one pair can be off
# by half either way). Per run: req/s and
# the gateway's CPU (user+system, /proc/PID/stat) per request; requests
# answered other than 2xx are counted and printed, so refusals cannot pass
# for speed. Then, with valgrind, the repeatable figure: user-space
# instructions per request of each route under callgrind (workers 0, one
# loop, one connection, after a warm-up). Goal (issue 28): CPU per /ingest
# request <= 1.1x per /v1/pprof request, measured in the same run. Figures
# only: nothing fails on a ratio.
# A second, like-for-like comparison (informative; the goal's baseline stays
# the bare push above): a real SDK push to /v1/pprof names its resource in
# an Otel-Resource-Attributes header, which the default config's transform
# merges into the resource (include_metadata on the pprof receiver). Here
# that header carries what the /ingest name carries (service.name and the
# same seven labels) and a second gateway runs the default config's
# transform on the pprof route only; /ingest is measured again beside it.
# Env: DURATION (s, default 4), ROUNDS (6), CONNS (4), CG_DURATION (s under
#      callgrind, default 5; 0 = skip), PG_BUILD_DIR, PPROFGATE_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PG_BUILD_DIR:-build}
BIN=${PPROFGATE_BIN:-$BUILD/pprofgate}
DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-6}
CONNS=${CONNS:-4}
BODY=tests/fixtures/pprof/go/cpu.pb.gz
command -v wrk >/dev/null || { echo "pyroscope: wrk not installed"; exit 2; }
[ -x "$BIN" ] || { echo "pyroscope: missing $BIN"; exit 2; }

TMP=$(mktemp -d /tmp/pg-pyro.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }; rm -rf "$TMP"; }
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$TMP/pg.yaml" <<YAML
receivers:
  pprof:
    server: {endpoint: 127.0.0.1:$PORT}
  pyroscope:
    server: {endpoint: 127.0.0.1:$PORT}
exporters:
  debug: {verbosity: basic}
service:
  telemetry: {logs: {level: warn}}
  pipelines:
    profiles: {receivers: [pprof, pyroscope], exporters: [debug]}
YAML
# The like-for-like gateway: the pprof route with the default config's
# metadata and transform, the pyroscope route as above.
cat > "$TMP/pg-hdr.yaml" <<YAML
receivers:
  pprof:
    server: {endpoint: 127.0.0.1:$PORT, include_metadata: true}
  pyroscope:
    server: {endpoint: 127.0.0.1:$PORT}
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - merge_maps(resource.attributes, ParseResourceAttributes(metadata["otel-resource-attributes"]), "upsert")
exporters:
  debug: {verbosity: basic}
service:
  telemetry: {logs: {level: warn}}
  pipelines:
    profiles/pprof: {receivers: [pprof], processors: [transform], exporters: [debug]}
    profiles/pyroscope: {receivers: [pyroscope], exporters: [debug]}
YAML

# The SDK's multipart body and query, byte for byte in shape (Go's
# mime/multipart: CRLF, a 60-hex-digit boundary).
python3 - "$BODY" "$TMP" <<'PY'
import os, sys, time
prof = open(sys.argv[1], "rb").read()
tmp = sys.argv[2]
b = "a3f1" * 15
body = (f"--{b}\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n").encode() + prof + f"\r\n--{b}--\r\n".encode()
open(os.path.join(tmp, "ingest.body"), "wb").write(body)
now = time.time_ns()
name = ("pyro.checkout%7B__session_id__%3D77e425ea48b3919f%2Cenv%3Dprod%2Cotel.scope.name%3D"
        "com.grafana.pyroscope%2Fgo%2Cotel.scope.version%3Dv1.5.0%2Cprocess.runtime.name%3Dgo%2C"
        "process.runtime.version%3Dgo1.26.8%2Cregion%3Deu-1%7D")
q = (f"/ingest?aggregationType=sum&from={now - 10**9}&name={name}&sampleRate=100"
     f"&spyName=gospy&units=samples&until={now}")
with open(os.path.join(tmp, "ingest.lua"), "w") as f:
    f.write(f'''local f = assert(io.open("{tmp}/ingest.body", "rb"))
wrk.method = "POST"
wrk.path = "{q}"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "multipart/form-data; boundary={b}"
wrk.headers["User-Agent"] = "pyroscope-go/v1.5.0"
''')
def pprof_lua(fname, extra=""):
    """The profile pushed to /v1/pprof as the body, with @extra header lines."""
    with open(os.path.join(tmp, fname), "w") as f:
        f.write(f'''local f = assert(io.open("{os.path.abspath(sys.argv[1])}", "rb"))
wrk.method = "POST"
wrk.path = "/v1/pprof"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Content-Encoding"] = "gzip"
{extra}''')
pprof_lua("pprof.lua")
# The same push with the resource an SDK would send beside it: what the
# /ingest name says, as resource attributes.
attrs = ("service.name=pyro.checkout,__session_id__=77e425ea48b3919f,env=prod,"
         "otel.scope.name=com.grafana.pyroscope%2Fgo,otel.scope.version=v1.5.0,"
         "process.runtime.name=go,process.runtime.version=go1.26.8,region=eu-1")
pprof_lua("pprof-hdr.lua", f'wrk.headers["Otel-Resource-Attributes"] = "{attrs}"\n')
PY

start_gw() { # config
    "$BIN" --config "$1" > /dev/null 2> "$TMP/run.log" &
    PID=$!
    for _ in $(seq 1 500); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
        kill -0 "$PID" 2>/dev/null || { echo "pyroscope: gateway exited:"; cat "$TMP/run.log"; exit 1; }
        sleep 0.01
    done
}
stop_gw() {
    kill -0 "$PID" 2>/dev/null || { echo "pyroscope: the gateway died"; exit 1; }
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)

run() { # name lua -> "req/s us_per_req non2xx"
    local t0 t1 out reqs non
    t0=$(cpu_ticks)
    out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" -s "$2" "http://127.0.0.1:$PORT" 2>&1)
    t1=$(cpu_ticks)
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    non=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
    python3 -c "import sys; r=int('$reqs'); print(f'{r/$DURATION:.0f} {($t1-$t0)/$HZ*1e6/max(r,1):.1f} ${non:-0}')"
}

echo "pyroscope: $CONNS connections, ${DURATION}s per run, body $(stat -c %s "$BODY") B gzip'd pprof" \
     "(multipart $(stat -c %s "$TMP/ingest.body") B)"
rounds() { # config base_lua base_label goal_text
    local ratios=() r ps pc pn is ic in_
    start_gw "$1"
    printf '%-6s %-16s %10s %14s %8s\n' round route req/s "CPU us/req" non-2xx
    for r in $(seq 1 "$ROUNDS"); do
        read -r ps pc pn <<<"$(run pprof "$2")"
        printf '%-6s %-16s %10s %14s %8s\n' "$r" "$3" "$ps" "$pc" "$pn"
        read -r is ic in_ <<<"$(run ingest "$TMP/ingest.lua")"
        printf '%-6s %-16s %10s %14s %8s\n' "$r" /ingest "$is" "$ic" "$in_"
        ratios+=("$(python3 -c "print(f'{$ic/$pc:.2f}')")")
    done
    python3 -c "
import statistics, sys
r = sorted(float(x) for x in sys.argv[2:])
print(f'CPU per request /ingest / {sys.argv[1]}: median {statistics.median(r):.2f}, '
      f'range {r[0]:.2f}-{r[-1]:.2f} over {len(r)} pairs ($4)')" "$3" "${ratios[@]}"
    stop_gw
}
rounds "$TMP/pg.yaml" "$TMP/pprof.lua" /v1/pprof "goal <= 1.10"
echo "like for like: /v1/pprof with Otel-Resource-Attributes (service.name + the 7 labels) and the transform"
rounds "$TMP/pg-hdr.yaml" "$TMP/pprof-hdr.lua" "/v1/pprof+header" informative

CG_DURATION=${CG_DURATION:-5}
if [ "$CG_DURATION" = 0 ] || ! command -v callgrind_control >/dev/null; then
    exit 0
fi
for c in pg pg-hdr; do
    sed -e 's/server: {endpoint: \([^,}]*\)/server: {endpoint: \1, workers: 0, loops: 1/' \
        "$TMP/$c.yaml" > "$TMP/cg-$c.yaml"
done
cg_run() { # lua [config] -> "instructions requests"
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" --dump-instr=no --instr-atstart=no \
        "$BIN" --config "$TMP/cg-${2:-pg}.yaml" > "$TMP/cg.log" 2>&1 &
    PID=$!
    for _ in $(seq 1 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
        sleep 0.1
    done
    wrk -t1 -c1 -d2s -s "$1" "http://127.0.0.1:$PORT" > /dev/null 2>&1
    callgrind_control -i on "$PID" > /dev/null 2>&1
    local out n
    out=$(wrk -t1 -c1 -d"${CG_DURATION}s" -s "$1" "http://127.0.0.1:$PORT" 2>&1)
    callgrind_control -d "$PID" > /dev/null 2>&1
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    kill "$PID"; wait "$PID" 2>/dev/null || true
    echo "$(awk '/^(summary|totals):/ {print $2; exit}' "$TMP/cg.$PID.1") $n"
    PID=
}
read -r pi pn <<<"$(cg_run "$TMP/pprof.lua")"
read -r ii in_ <<<"$(cg_run "$TMP/ingest.lua")"
read -r hi hn <<<"$(cg_run "$TMP/pprof-hdr.lua" pg-hdr)"
python3 -c "
p, i, h = $pi / $pn, $ii / $in_, $hi / $hn
print(f'instructions per request (callgrind, {$pn}, {$in_} and {$hn} requests): /v1/pprof {p:.0f}, '
      f'/ingest {i:.0f}, ratio {i / p:.3f} (goal <= 1.10)')
print(f'like for like: /v1/pprof+header (transform) {h:.0f}, /ingest / it {i / h:.3f} (informative)')"
