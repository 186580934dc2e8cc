#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds pg-v19peer (this directory: a decoder on the pdata of Collector
# v0.147.0, OTLP v1.9) into $1 when its sources or the Go toolchain changed;
# otherwise does nothing (a stamp beside the binary, as
# tests/interop/collector/build.sh). Modules come from the Go module proxy
# into the default module cache, objects into the default build cache.
# Exit 0 built or up to date, 77 when Go is absent (the caller reports "not
# run"), 1 on any build failure.
set -euo pipefail
out=$(realpath -m "${1:?usage: build.sh OUTPUT_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
go=${PG_GO:-/usr/local/go/bin/go}
if [ ! -x "$go" ]; then
    echo "pg-v19peer: NOT BUILT: no Go toolchain at $go" >&2
    exit 77
fi
stamp=$( (cd "$here" && cat go.mod go.sum ./*.go && "$go" version) | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "pg-v19peer: up to date ($out)"
    exit 0
fi
mkdir -p "$(dirname "$out")"
start=$(date +%s)
echo "pg-v19peer: building with $("$go" version)"
(cd "$here" && nice -n 10 env GOFLAGS="-mod=readonly -p=2 -buildvcs=false" GOTOOLCHAIN=local \
    "$go" build -trimpath -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "$stamp" > "$out.stamp"
echo "pg-v19peer: built $out in $(( $(date +%s) - start ))s"
