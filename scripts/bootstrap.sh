#!/usr/bin/env bash
# Installs what pprofgate needs on Debian; quiet and quick when all is there.
#   scripts/bootstrap.sh          build and run the gateway (make run): compiler,
#                                 cmake, the libraries' -dev packages, protoc-c, curl
#   scripts/bootstrap.sh --test   that, plus the test peers (make test): clang and
#                                 its fuzzer runtime, wrk, openssl, python3-yaml, iproute2,
#                                 Node/npm and the npm packages in tests/node
# Go is not installed here (tests that use it look on PATH, then /usr/local/go,
# and report "NOT RUN" without it); Debian's golang-go is too old for them.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
case "${1:-}" in
    "") ;;
    --test) with_tests=1 ;;
    *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

runtime=(build-essential cmake pkg-config protobuf-c-compiler libprotobuf-c-dev
         libevent-dev libnghttp2-dev zlib1g-dev libdeflate-dev libzstd-dev libyaml-dev libpcre2-dev
         libssl-dev libunwind-dev libjson-c-dev curl)
testing=(clang libclang-rt-14-dev protobuf-compiler wrk openssl python3 python3-yaml procps iproute2
         nodejs npm nghttp2-client)

pkgs=("${runtime[@]}")
[ "$with_tests" -eq 1 ] && pkgs+=("${testing[@]}")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node may come from elsewhere (nodesource, nvm): only install Debian's when absent.
if [ "$with_tests" -eq 1 ] && command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    kept=()
    for p in "${missing[@]}"; do
        [ "$p" = nodejs ] || [ "$p" = npm ] || kept+=("$p")
    done
    missing=("${kept[@]}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$with_tests" -eq 1 ] || exit 0

# npm test peers (SDK client, gRPC server, protobufjs decoder), pinned in tests/node/package.json.
if [ -f tests/node/package.json ]; then
    if [ ! -d tests/node/node_modules ] || [ tests/node/package.json -nt tests/node/node_modules/.stamp ]; then
        echo "bootstrap: npm install in tests/node" >&2
        (cd tests/node && npm install --no-audit --no-fund --loglevel=error >/dev/null && touch node_modules/.stamp)
    fi
fi
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
    echo "bootstrap: no Go toolchain (PATH or /usr/local/go): the go tool pprof checks will be NOT RUN" >&2
fi
