#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds pg-otelcol (this directory's collector) into $1 when its sources or
# the Go toolchain changed; otherwise does nothing. Modules come from the Go
# module proxy into the default module cache, objects into the default build
# cache, so only the first build is slow.
# Exit 0 built or up to date, 77 when Go is absent (the caller reports "not
# run"), 1 on any build failure.
set -euo pipefail
out=$(realpath -m "${1:?usage: build.sh OUTPUT_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
# Only the toolchain at /usr/local/go (PG_GO overrides): a distribution's
# older go would try to download the toolchain go.mod asks for.
go=${PG_GO:-/usr/local/go/bin/go}
if [ ! -x "$go" ]; then
    echo "pg-otelcol: NOT BUILT: no Go toolchain at $go" >&2
    exit 77
fi
stamp=$( (cd "$here" && cat go.mod go.sum ./*.go && "$go" version) | sha256sum | cut -d' ' -f1)
# PG_OTELCOL names a collector built elsewhere (a cache, another tree): the
# tests use it, so building another here would be minutes of CPU for nothing.
# Its stamp must match these sources, or the tests would run an older build.
if [ -n "${PG_OTELCOL:-}" ] && [ "$(realpath -m "$PG_OTELCOL")" != "$out" ]; then
    if [ ! -x "$PG_OTELCOL" ]; then
        echo "pg-otelcol: PG_OTELCOL=$PG_OTELCOL is not an executable file" >&2
        exit 1
    fi
    if [ -f "$PG_OTELCOL.stamp" ] && [ "$(cat "$PG_OTELCOL.stamp")" != "$stamp" ]; then
        echo "pg-otelcol: PG_OTELCOL=$PG_OTELCOL was built from other sources or another Go" \
             "(its .stamp differs): unset PG_OTELCOL to build this tree's" >&2
        exit 1
    fi
    echo "pg-otelcol: using PG_OTELCOL=$PG_OTELCOL (not building $out)"
    exit 0
fi
if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "pg-otelcol: up to date ($out)"
    exit 0
fi
mkdir -p "$(dirname "$out")"
start=$(date +%s)
echo "pg-otelcol: building with $("$go" version) (the first build downloads modules and compiles for minutes)"
# -mod=readonly: go.mod/go.sum are the pins, never rewritten by a build;
# -p 2 and nice: the machine is shared.
(cd "$here" && nice -n 10 env GOFLAGS="-mod=readonly -p=2 -buildvcs=false" GOTOOLCHAIN=local \
    "$go" build -trimpath -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "$stamp" > "$out.stamp"
echo "pg-otelcol: built $out in $(( $(date +%s) - start ))s"
