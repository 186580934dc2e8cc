#!/usr/bin/env bash
# Installs what pprofgate needs to build and test on Debian: quiet and quick when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libevent-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
      zlib1g-dev libdeflate-dev libyaml-dev libpcre2-dev libssl-dev libunwind-dev
      golang-go wrk openssl curl python3 procps libjson-c-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: installing nodejs/npm" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# npm test peers (SDK client, gRPC server, protobufjs decoder), pinned in tests/node/package.json.
if [ -f tests/node/package.json ]; then
    if [ ! -d tests/node/node_modules ] || [ tests/node/package.json -nt tests/node/node_modules/.stamp ]; then
        echo "bootstrap: npm install in tests/node" >&2
        (cd tests/node && npm install --no-audit --no-fund --loglevel=error >/dev/null && touch node_modules/.stamp)
    fi
fi
