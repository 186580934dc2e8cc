# SPDX-License-Identifier: Apache-2.0
# Shared by the wrk-driven benchmarks (http_load.sh, selfprof_cost.sh); sourced.

# write_post_lua BODY OUT: a wrk script POSTing BODY (a .pprof.gz) with the
# headers the Node SDK sends.
write_post_lua() {
    cat > "$2" <<LUA
local f = assert(io.open("$(realpath "$1")", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Content-Encoding"] = "gzip"
wrk.headers["Otel-Resource-Attributes"] = "telemetry.sdk.language=javascript,service.name=bench,profiler.type=wall"
LUA
}

# wait_port LOG REGEX: the port at the end of the first REGEX match in LOG,
# polled for 5 s; on timeout prints LOG to stderr and fails.
wait_port() {
    for _ in $(seq 1 100); do
        p=$(grep -oE "$2" "$1" 2>/dev/null | grep -oE '[0-9]+$' | head -1 || true)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.05
    done
    echo "$(basename "$0"): server did not start:" >&2; cat "$1" >&2; return 1
}

# write_gw_config OUT ENDPOINT [WORKERS] [SHAPE]: the gateway the wrk
# benchmarks measure: the pprof receiver on ENDPOINT (server.workers WORKERS
# when given and not empty) into the debug exporter at basic, written to
# /dev/null. SHAPE "bare" (the default) has nothing in between; "sdk" is what
# SDK users run: include_metadata and a transform that turns the
# Otel-Resource-Attributes header into resource attributes.
write_gw_config() {
    local shape=${4:-bare} meta= procs= plist=
    case $shape in
    bare) ;;
    sdk)
        meta="      include_metadata: true"
        procs=$(cat <<'PROC'
processors:
  transform:
    error_mode: ignore
    profile_statements:
      - set(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"], "=", ","))
PROC
)
        plist="      processors: [transform]" ;;
    *) echo "write_gw_config: unknown shape $shape (bare, sdk)" >&2; return 2 ;;
    esac
    cat > "$1" <<YAML
receivers:
  pprof:
    server:
      endpoint: $2
${3:+      workers: $3}
$meta
$procs
exporters:
  debug:
    verbosity: basic
    output_paths: [/dev/null]
service:
  pipelines:
    profiles:
      receivers: [pprof]
$plist
      exporters: [debug]
  telemetry:
    logs: {level: info}
YAML
}
