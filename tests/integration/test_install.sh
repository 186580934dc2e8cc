#!/usr/bin/env bash
# `cmake --install` as a packager runs it: the binary in bin/, the default
# config in etc/pprofgate/, every example config and the docs under share/;
# the installed binary runs and accepts every installed config; a hardened
# build (PG_HARDEN, the default) gives a PIE with full RELRO and stack
# protector / fortified calls.
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
