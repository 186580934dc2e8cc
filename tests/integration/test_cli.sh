#!/usr/bin/env bash
# The command line as an operator meets it: --version, components, validate
# (valid, broken with positions, missing file), unknown arguments, and a clean
# start + SIGTERM exit 0 with the default config.
set -uo pipefail
BIN=${PPROFGATE_BIN:-build/pprofgate}
# The default config's admin ports on ephemeral ones (tests run in parallel).
export PPROFGATE_PPROF_ENDPOINT=127.0.0.1:0 PPROFGATE_HEALTH_ENDPOINT=127.0.0.1:0 \
       PPROFGATE_METRICS_ENDPOINT=127.0.0.1:0
SRC=${PG_SOURCE_DIR:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"; [ -n "${pid:-}" ] && kill -9 $pid 2>/dev/null' EXIT
pass=0 fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/     /'; }

out=$("$BIN" --version); [[ $out == *"pprofgate "*"OTLP profiles v1.11.0"* ]] && ok version || bad version "$out"

out=$("$BIN" components)
for c in "receivers:" "  pprof" "processors:" "exporters:" "extensions:"; do
    grep -q "^$c" <<<"$out" && ok "components lists '$c'" || bad "components lists '$c'" "$out"
done

# The reference documents every key, pull mode and service::telemetry
# included, with real defaults rather than "0 = default" or "(any)".
for want in "      scrape: (mapping)" "        scrape_configs: (list of mappings)" \
            "          kubernetes_sd_configs: (list of mappings)" "            regex: (string, default (.*))" \
            "      remote: (mapping)" "        collection_interval: (duration, default 10s)" \
            "        max_samples: (int, default 2097152)" "        max_string_bytes: (bytes, default 64MiB)" \
            "service:" "  telemetry: (mapping)" "      level: (enum, default info" \
            "      address: (string)"; do
    grep -qF -- "$want" <<<"$out" && ok "components shows '${want# *}'" || bad "components shows '$want'" "$out"
done
! grep -q "0 = default$" <<<"$out" && ok "components: no '0 = default' without the value" ||
    bad "components: no '0 = default'" "$(grep '0 = default$' <<<"$out")"
! grep -qE "^ {6}(scrape|remote): \(any\)" <<<"$out" && ok "components: scrape and remote documented" ||
    bad "components: scrape/remote (any)" "$(grep -E '(scrape|remote): ' <<<"$out")"

"$BIN" validate --config "$SRC/config/pprofgate.yaml" >"$tmp/o" 2>&1 && ok "default config valid" || bad "default config valid" "$(cat "$tmp/o")"

cat >"$tmp/broken.yaml" <<'YAML'
receivers:
  pprof:
    server:
      endpont: localhost:4040
      max_request_body_size: lots
  pprfo: {}
exporters:
  debug:
    verbosity: chatty
service:
  pipelines:
    profiles:
      receivers: [pprof]
      exporters: [debug, otlp]
YAML
"$BIN" validate --config "$tmp/broken.yaml" >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "broken config exits 1" || bad "broken config exits 1 (got $rc)"
for want in "broken.yaml:4:7: receivers::pprof::server: unknown key \"endpont\" (did you mean \"endpoint\"?); valid keys: endpoint" \
            "broken.yaml:5:30: receivers::pprof::server::max_request_body_size: expected a size" \
            "broken.yaml:6:3: receivers::pprfo: unknown receiver type \"pprfo\" (did you mean \"pprof\"?)" \
            "broken.yaml:9:16: exporters::debug::verbosity: \"chatty\" is not one of: basic, normal, detailed" \
            "broken.yaml:14:26: service::pipelines::profiles::exporters: exporter \"otlp\" is not defined"; do
    grep -qF "$want" "$tmp/o" && ok "reports: ${want:0:60}" || bad "reports: $want" "$(cat "$tmp/o")"
done

"$BIN" validate --config "$tmp/nope.yaml" >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "cannot open config" "$tmp/o" && ok "missing file" || bad "missing file" "$(cat "$tmp/o")"

# The collector's command line, as k8s manifests pass it, works unchanged.
"$BIN" validate --config="file:$SRC/config/pprofgate.yaml" --feature-gates=+service.profilesSupport >"$tmp/o" 2>&1 \
    && ok "collector flags: --config=file:PATH --feature-gates=..." || bad "collector flags" "$(cat "$tmp/o")"
"$BIN" validate --feature-gates +service.profilesSupport -c "$SRC/config/pprofgate.yaml" >"$tmp/o" 2>&1 \
    && ok "collector flags: --feature-gates VALUE" || bad "--feature-gates VALUE" "$(cat "$tmp/o")"
"$BIN" validate --config=env:PG_CFG >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "only file paths" "$tmp/o" && ok "--config=env:... refused by name" || bad "env: URI" "$(cat "$tmp/o")"
"$BIN" validate --config a.yaml --config b.yaml >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "one --config only" "$tmp/o" && ok "two --config refused" || bad "two --config" "$(cat "$tmp/o")"

"$BIN" --frobnicate >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q usage "$tmp/o" && ok "unknown argument" || bad "unknown argument"

# Statements that read request headers behind a receiver that drops them:
# valid (the collector accepts it too) but warned about, by validate and at start.
meta_cfg() { # include_metadata, processors block, processor list
    cat <<YAML
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0", include_metadata: $1}
processors:
$2
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    profiles/in: {receivers: [pprof], processors: [$3], exporters: [debug]}
YAML
}
tf_meta='  transform:
    profile_statements:
      - merge_maps(resource.attributes, ParseResourceAttributes(metadata["otel-resource-attributes"]), "upsert")'
tf_cond='  transform:
    profile_statements:
      - context: resource
        conditions:
          - Len(otelcol.client.metadata["x-team"]) > 0
        statements:
          - set(attributes["team"], "x")'
tf_plain='  transform:
    profile_statements:
      - set(resource.attributes["metadata"], "metadata[x]")'
res_ctx='  resource:
    attributes: [{key: team, from_context: metadata.x-team, action: upsert}]'
warn_re='meta.yaml:[0-9]+:[0-9]+: processors::PROC: warning: pipeline profiles/in: processor/PROC reads request headers .* but receiver pprof drops them'
check_meta() { # name, want (warn|none), include_metadata, block, proc
    meta_cfg "$3" "$4" "$5" >"$tmp/meta.yaml"
    "$BIN" validate --config "$tmp/meta.yaml" >"$tmp/o" 2>&1; rc=$?
    if [ "$2" = warn ]; then
        [ $rc -eq 0 ] && grep -qE "${warn_re//PROC/$5}" "$tmp/o" && ok "validate warns: $1" || bad "validate warns: $1 (rc=$rc)" "$(cat "$tmp/o")"
    else
        [ $rc -eq 0 ] && ! grep -q "warn" "$tmp/o" && ok "no warning: $1" || bad "no warning: $1 (rc=$rc)" "$(cat "$tmp/o")"
    fi
}
check_meta "metadata[...] without include_metadata" warn false "$tf_meta" transform
check_meta "otelcol.client.metadata in a condition" warn false "$tf_cond" transform
check_meta "resource from_context metadata.*" warn false "$res_ctx" resource
check_meta "include_metadata: true" none true "$tf_meta" transform
check_meta "\"metadata\" only as a key and a string" none false "$tf_plain" transform
meta_cfg false "$tf_meta" transform >"$tmp/meta.yaml"
"$BIN" --config "$tmp/meta.yaml" >"$tmp/meta.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "running with" "$tmp/meta.log" && break; sleep 0.05; done
kill -TERM $pid; wait $pid; pid=
grep -qE "level=warn comp=config msg=\".*${warn_re//PROC/transform}" "$tmp/meta.log" && ok "the start log says it too" || bad "start log warns" "$(cat "$tmp/meta.log")"

# Start with the default config on a free port, then SIGTERM: exit 0.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PPROFGATE_ENDPOINT=127.0.0.1:$port "$BIN" --config "$SRC/config/pprofgate.yaml" >"$tmp/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then ok "listens on \$PPROFGATE_ENDPOINT"; else bad "listens" "$(cat "$tmp/run.log")"; fi
kill -TERM $pid; wait $pid; rc=$?; pid=
[ $rc -eq 0 ] && ok "SIGTERM exits 0" || bad "SIGTERM exits 0 (rc=$rc)" "$(cat "$tmp/run.log")"
grep -q 'level=info comp=main msg="exited cleanly"' "$tmp/run.log" && ok "logs are key=value lines" || bad "log format" "$(cat "$tmp/run.log")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
