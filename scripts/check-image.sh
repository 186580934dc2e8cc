#!/usr/bin/env bash
# Builds docker/Dockerfile for real and runs the image, without a Docker
# daemon or a registry: buildah with chroot isolation, the debian:bookworm
# base made by debootstrap from the Debian mirror. Slow (minutes, downloads
# ~300 MB) and needs root, so it is not part of `make test`; the fast
# stand-in that is, tests/integration/test_deploy_examples.py, reproduces the
# image from the same Dockerfile.
#   scripts/check-image.sh [--no-build] [WORKDIR]   (default /var/tmp/pprofgate-image)
#   --no-build runs the image built last time again.
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
[ "${1:-}" = --no-build ] && { build=0; shift; }
work=${1:-/var/tmp/pprofgate-image}
[ "$(id -u)" -eq 0 ] || { echo "check-image: needs root (debootstrap, buildah chroot)" >&2; exit 2; }
need=()
for p in buildah debootstrap curl; do command -v "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ "${#need[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
mkdir -p "$work"
B=(buildah --storage-driver vfs --root "$work/storage" --runroot "$work/run")

# The base image: a minimal bookworm, tagged as both names the Dockerfile uses.
if ! "${B[@]}" images -q localhost/debian:bookworm >/dev/null 2>&1 ||
   [ -z "$("${B[@]}" images -q localhost/debian:bookworm 2>/dev/null)" ]; then
    [ -x "$work/bookworm/bin/sh" ] ||
        debootstrap --variant=minbase bookworm "$work/bookworm" http://deb.debian.org/debian >"$work/debootstrap.log"
    ctr=$("${B[@]}" from scratch)
    "${B[@]}" copy "$ctr" "$work/bookworm" / >/dev/null
    "${B[@]}" commit -q "$ctr" localhost/debian:bookworm >/dev/null
    "${B[@]}" tag localhost/debian:bookworm localhost/debian:bookworm-slim
    "${B[@]}" rm "$ctr" >/dev/null
fi

if [ "$build" -eq 1 ]; then
    echo "check-image: building (log: $work/build.log)"
    sed -e 's|^FROM debian:|FROM localhost/debian:|' docker/Dockerfile >"$work/Dockerfile"
    "${B[@]}" bud --isolation chroot --pull-never -f "$work/Dockerfile" -t localhost/pprofgate . \
        >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
fi

# Run it as the image says (its user, entrypoint, cmd, env), read-only where
# buildah allows (chroot isolation shares the host network: port 4040 must be free).
ctr=$("${B[@]}" from localhost/pprofgate)
trap '"${B[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
"${B[@]}" inspect --type image localhost/pprofgate >"$work/inspect.json"
user=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["OCIv1"]["config"]["User"])' "$work/inspect.json")
mapfile -t argv < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["OCIv1"]["config"]; [print(a) for a in c.get("Entrypoint", []) + c.get("Cmd", [])]' "$work/inspect.json")
mapfile -t envs < <(python3 -c 'import json,sys; [print("--env=" + e) for e in json.load(open(sys.argv[1]))["OCIv1"]["config"].get("Env", [])]' "$work/inspect.json")
echo "check-image: running ${argv[*]} as $user"
"${B[@]}" run --isolation chroot --user "$user" "${envs[@]}" "$ctr" -- "${argv[@]}" >"$work/run.log" 2>&1 &
runpid=$!
for _ in $(seq 100); do grep -q "running with" "$work/run.log" && break; sleep 0.1; done
code=$(curl -sS -o /dev/null -w '%{http_code}' --data-binary @tests/fixtures/pprof/go/cpu.pb.gz \
    -H 'Otel-Resource-Attributes: service.name=image-check,team=a%2Cb' http://127.0.0.1:4040/v1/pprof || true)
sleep 0.5
kill -TERM "$runpid" 2>/dev/null || true
wait "$runpid" || true
fail=0
owner=$("${B[@]}" run --isolation chroot "$ctr" -- stat -c '%u:%g' /var/lib/pprofgate 2>&1 || true)
[ "$owner" = "$user" ] && echo "ok   /var/lib/pprofgate belongs to $user" ||
    { echo "FAIL /var/lib/pprofgate owner: $owner"; fail=1; }
[ "$code" = 204 ] && echo "ok   push -> 204" || { echo "FAIL push -> $code"; fail=1; }
grep -q "service.name=image-check" "$work/run.log" && grep -q "team=a,b" "$work/run.log" &&
    echo "ok   the image's config decodes the header" || { echo "FAIL decoded attributes"; fail=1; }
grep -q "level=error" "$work/run.log" && { echo "FAIL errors in the log"; fail=1; }
echo "check-image: log in $work/run.log"
exit $fail
