#!/usr/bin/env bash
# `cmake --install` as a packager runs it: the binary in bin/, the default
# config in etc/pprofgate/, every example config and the docs under share/;
# the installed binary runs and accepts every installed config; a hardened
# build (PG_HARDEN, the default) gives a PIE with full RELRO and stack
# protector / fortified calls. Run from / without --config, the installed
# binary finds, names, validates and runs its installed config.
set -uo pipefail
BUILD=${PG_BUILD_DIR:-build}
SRC=${PG_SOURCE_DIR:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/     /'; }

if ! out=$(cmake --install "$BUILD" --prefix "$tmp/p" 2>&1); then
    bad "cmake --install" "$out"; echo "$pass passed, $fail failed"; exit 1
fi
ok "cmake --install"
for f in bin/pprofgate etc/pprofgate/pprofgate.yaml share/doc/pprofgate/README.md \
         share/doc/pprofgate/ARCHITECTURE.md share/doc/pprofgate/security.md; do
    [ -f "$tmp/p/$f" ] && ok "installs $f" || bad "installs $f" "$(cd "$tmp/p" && find . -type f)"
done
[ -x "$tmp/p/bin/pprofgate" ] && ok "binary is executable" || bad "binary is executable"
for y in "$SRC"/config/*.yaml; do
    f="$tmp/p/share/pprofgate/examples/$(basename "$y")"
    cmp -s "$y" "$f" && ok "example $(basename "$y") installed as shipped" ||
        bad "example $(basename "$y") installed as shipped"
done
out=$("$tmp/p/bin/pprofgate" --version 2>&1) && [[ $out == pprofgate* ]] &&
    ok "installed binary runs" || bad "installed binary runs" "$out"
for y in "$tmp/p/etc/pprofgate/pprofgate.yaml" "$tmp/p/share/pprofgate/examples/"*.yaml; do
    # Examples may name files under /var/lib; validate checks the config, not the host.
    out=$(cd "$tmp" && "$tmp/p/bin/pprofgate" validate --config "$y" 2>&1) &&
        ok "installed $(basename "$y") validates" || bad "installed $(basename "$y") validates" "$out"
done

# Installed and run from / without --config: it finds its own
# etc/pprofgate/pprofgate.yaml (here a --prefix other than the configure-time
# one), says which file it read, validates it and starts with it.
out=$(cd / && "$tmp/p/bin/pprofgate" validate 2>&1) && grep -qF "reading $tmp/p/etc/pprofgate/pprofgate.yaml" <<<"$out" &&
    grep -qF "$tmp/p/etc/pprofgate/pprofgate.yaml: valid" <<<"$out" &&
    ok "installed binary from / without --config validates its etc/pprofgate/pprofgate.yaml" ||
    bad "installed binary from / without --config validates its etc/pprofgate/pprofgate.yaml" "$out"
(cd / && PPROFGATE_ENDPOINT=127.0.0.1:0 PPROFGATE_PPROF_ENDPOINT=127.0.0.1:0 \
    PPROFGATE_HEALTH_ENDPOINT=127.0.0.1:0 PPROFGATE_METRICS_ENDPOINT=127.0.0.1:0 \
    exec "$tmp/p/bin/pprofgate" >"$tmp/run.log" 2>&1) &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/run.log" && break; sleep 0.05; done
grep -q "listening on" "$tmp/run.log" && grep -qF "reading $tmp/p/etc/pprofgate/pprofgate.yaml" "$tmp/run.log" &&
    ok "installed binary from / without --config starts" ||
    bad "installed binary from / without --config starts" "$(cat "$tmp/run.log")"
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?
[ $rc -eq 0 ] && ok "and exits 0 on SIGTERM" || bad "and exits 0 on SIGTERM (rc=$rc)" "$(tail -5 "$tmp/run.log")"
# Nothing at ./config, next to the binary or at the configure-time prefix: said plainly.
mkdir -p "$tmp/bare/bin" && cp "$tmp/p/bin/pprofgate" "$tmp/bare/bin/"
baked=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
if [ ! -e "$baked/etc/pprofgate/pprofgate.yaml" ]; then
    out=$(cd / && "$tmp/bare/bin/pprofgate" validate 2>&1); rc=$?
    [ $rc -eq 1 ] && grep -q "no default config found (tried config/pprofgate.yaml, $tmp/bare/bin/../etc/pprofgate/pprofgate.yaml" <<<"$out" &&
        ok "no config anywhere: says where it looked" || bad "no config anywhere: says where it looked (rc=$rc)" "$out"
fi

if grep -q '^PG_HARDEN:BOOL=ON' "$BUILD/CMakeCache.txt" && command -v readelf >/dev/null &&
   ! grep -qE '^PG_(SANITIZE|TSAN|FUZZ):BOOL=ON' "$BUILD/CMakeCache.txt"; then
    bin="$tmp/p/bin/pprofgate"
    readelf -h "$bin" | grep -q 'Type: *DYN' && ok "hardened: PIE" || bad "hardened: PIE"
    readelf -lW "$bin" | grep -q GNU_RELRO && readelf -d "$bin" | grep -q 'BIND_NOW' &&
        ok "hardened: full RELRO (relro + now)" || bad "hardened: full RELRO (relro + now)"
    syms=$(readelf -sW --dyn-syms "$bin")
    grep -q '__stack_chk_fail' <<<"$syms" && ok "hardened: stack protector" ||
        bad "hardened: stack protector"
    if grep -q 'CMAKE_BUILD_TYPE:STRING=Debug' "$BUILD/CMakeCache.txt"; then
        echo "skip hardened: _FORTIFY_SOURCE (Debug build: glibc fortifies optimised code only)"
    else
        grep -q '_chk@' <<<"$syms" && ok "hardened: _FORTIFY_SOURCE (fortified *_chk calls)" ||
            bad "hardened: _FORTIFY_SOURCE (fortified *_chk calls)"
    fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
