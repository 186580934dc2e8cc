# SPDX-License-Identifier: Apache-2.0
"""The admin endpoints (extension pprof, health_check, and /metrics from
service.telemetry.metrics) with `auth:` on the real binary: no credentials,
a wrong token or another endpoint's token -> 401 with WWW-Authenticate and a
one-line reason, before any route is looked at; the right token -> 200; a
rotated token file takes effect without a restart; basic auth works too;
without `auth:` everything answers as before; and a missing token file or an
`auth` without `address` is refused by `validate`."""
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import BIN, Gateway, Results, post  # noqa: E402

TOKENS = {"pprof": "pprof-token-1", "health": "health-token-1", "metrics": "metrics-token-1"}

AUTH_CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
extensions:
  pprof:
    endpoint: "127.0.0.1:0"
    auth: {bearer_token_file: "{tmp}/pprof.token"}
  health_check:
    endpoint: "127.0.0.1:0"
    auth: {basic_auth_file: "{tmp}/htpasswd", realm: "health"}
service:
  extensions: [pprof, health_check]
  telemetry:
    metrics:
      address: "127.0.0.1:0"
      auth: {bearer_token_file: "{tmp}/metrics.token"}
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""

OPEN_CONFIG = """
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0"}
exporters:
  debug: {verbosity: basic, output_paths: ["{debug}"]}
extensions:
  pprof: {endpoint: "127.0.0.1:0"}
  health_check: {endpoint: "127.0.0.1:0"}
service:
  extensions: [pprof, health_check]
  telemetry:
    metrics: {address: "127.0.0.1:0"}
  pipelines:
    profiles: {receivers: [pprof], exporters: [debug]}
"""

# The path each endpoint serves, and the "serving <what> on" log word.
ENDPOINTS = {"pprof": ("/debug/pprof/", "/debug/pprof/"),
             "health": ("/", "health"),
             "metrics": ("/metrics", "/metrics")}


def admin_ports(gw, res):
    ports = {}
    for name, (_, what) in ENDPOINTS.items():
        m = gw.wait_log(r"serving " + re.escape(what) + r" on [0-9.]+:(\d+)")
        res.check(f"{name} endpoint announced", m is not None, gw.log()[-1500:])
        ports[name] = int(m.group(1)) if m else 0
    return ports


def get(port, path, headers=None):
    return post(port, path, b"", headers or {}, method="GET")


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def basic(user, pw):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}


def write_atomic(path, text):
    """As a Kubernetes secret update does: a new file renamed over the old."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def check_401(res, label, st, hdrs, body, challenge):
    res.check(f"{label} -> 401", st == 401, (st, body))
    res.check(f"{label}: WWW-Authenticate {challenge}",
              hdrs.get("www-authenticate") == challenge, hdrs)
    text = body.decode(errors="replace")
    res.check(f"{label}: one-line reason", text.count("\n") == 1 and text.startswith("unauthorized"),
              text)


def credentials_for(name, good=True):
    if name == "health":
        return basic("probe", "s3cret" if good else "nope")
    return bearer(TOKENS[name] if good else TOKENS[name] + "x")


def challenge_for(name):
    return ('Basic realm="health", charset="UTF-8"' if name == "health"
            else 'Bearer realm="pprofgate"')


def test_with_auth(res):
    with with_credentials(AUTH_CONFIG) as gw:
        ports = admin_ports(gw, res)
        res.check("start log says auth is required",
                  gw.log().count("(auth required)") == 3, gw.log()[-2000:])
        for name, (path, _) in ENDPOINTS.items():
            port = ports[name]
            ch = challenge_for(name)
            st, h, b = get(port, path)
            check_401(res, f"{name}: no credentials", st, h, b, ch)
            st, h, b = get(port, path, credentials_for(name, good=False))
            check_401(res, f"{name}: wrong credentials", st, h, b, ch)
            st, h, b = get(port, path, {"Authorization": "Bearer"})
            check_401(res, f"{name}: empty bearer", st, h, b, ch)
            other = "metrics" if name != "metrics" else "pprof"
            st, h, b = get(port, path, bearer(TOKENS[other]))
            check_401(res, f"{name}: another endpoint's token", st, h, b, ch)
            # The gate runs before routing: an unknown path is 401, not 404.
            st, h, b = get(port, "/no/such/path")
            res.check(f"{name}: unknown path without credentials -> 401", st == 401, (st, b))
            st, h, b = get(port, path, credentials_for(name))
            res.check(f"{name}: right credentials -> 200", st == 200, (st, b[:300]))
            res.check(f"{name}: no challenge on success", "www-authenticate" not in h, h)
            st, h, b = get(port, "/no/such/path", credentials_for(name))
            res.check(f"{name}: unknown path with credentials -> 404", st == 404, (st, b))

        # Content behind the gate is the real thing.
        st, _, b = get(ports["health"], "/", credentials_for("health"))
        res.check("health body is the collector's JSON", b"Server available" in b, b)
        st, _, b = get(ports["metrics"], "/metrics", credentials_for("metrics"))
        text = b.decode(errors="replace")
        res.check("401s are counted per extension",
                  re.search(r'pprofgate_admin_http_requests\{extension="pprof",code="401"\} [1-9]',
                            text) is not None, text[:2000])
        st, _, b = get(ports["pprof"], "/debug/pprof/heap", credentials_for("pprof"))
        res.check("heap profile with the token -> 200", st == 200, (st, b[:200]))
        res.check("heap profile is gzip", b[:2] == b"\x1f\x8b", b[:16])
        res.check("refusals are logged", "401 for /debug/pprof/" in gw.log(), gw.log()[-2000:])

        # Rotation: a new token is accepted and the old one refused, no restart.
        pid = gw.proc.pid
        write_atomic(gw.path("pprof.token"), "pprof-token-2\n")
        deadline = time.time() + 6
        st = None
        while time.time() < deadline:
            st, _, _ = get(ports["pprof"], "/debug/pprof/", bearer("pprof-token-2"))
            if st == 200:
                break
            time.sleep(0.2)
        res.check("rotated pprof token accepted without a restart", st == 200, st)
        res.check("same process", gw.proc.poll() is None and gw.proc.pid == pid)
        st, h, b = get(ports["pprof"], "/debug/pprof/", bearer(TOKENS["pprof"]))
        check_401(res, "pprof: token from before the rotation", st, h, b, challenge_for("pprof"))
        res.check("reload logged", gw.wait_log(r"reloaded credentials from .*pprof\.token"), "")

        # An unusable rotation (empty file) keeps the previous token.
        write_atomic(gw.path("metrics.token"), "\n")
        time.sleep(1.3)
        st, _, _ = get(ports["metrics"], "/metrics", credentials_for("metrics"))
        res.check("empty token file keeps the previous token", st == 200, st)

        # The receiver is unaffected: its own (absent) auth still rules /v1/pprof.
        st, _, _ = post(gw.port, "/v1/pprof", b"", {})
        res.check("receiver does not require the admin token", st != 401, st)
        res.check("clean exit", gw.stop() == 0)


def test_without_auth(res):
    with Gateway(OPEN_CONFIG) as gw:
        ports = admin_ports(gw, res)
        res.check("no auth in the start log", "(auth required)" not in gw.log(), gw.log()[-1500:])
        for name, (path, _) in ENDPOINTS.items():
            st, h, b = get(ports[name], path)
            res.check(f"{name}: no auth configured -> 200 without credentials", st == 200,
                      (st, b[:200]))
            res.check(f"{name}: no challenge", "www-authenticate" not in h, h)
            st, _, _ = get(ports[name], path, bearer("anything"))
            res.check(f"{name}: an Authorization header is ignored", st == 200, st)
        res.check("clean exit", gw.stop() == 0)


def validate(text):
    with tempfile.TemporaryDirectory(prefix="pg-it-") as d:
        p = os.path.join(d, "c.yaml")
        with open(p, "w") as f:
            f.write(text.replace("{tmp}", d))
        r = subprocess.run([BIN, "validate", "--config", p], capture_output=True, text=True,
                           timeout=30)
        return r.returncode, r.stdout + r.stderr


def test_config_errors(res):
    rc, out = validate(AUTH_CONFIG.replace("{debug}", "/dev/null"))
    res.check("missing token files -> validate fails", rc != 0, out)
    res.check("the message names the pprof token file",
              re.search(r"extensions::pprof.*auth: cannot open .*pprof\.token", out) is not None,
              out)
    res.check("the message names the metrics token file",
              re.search(r"service::telemetry::metrics.*metrics\.token", out) is not None, out)
    both = OPEN_CONFIG.replace('pprof: {endpoint: "127.0.0.1:0"}',
                               'pprof: {endpoint: "127.0.0.1:0", auth: {bearer_token_file: a, '
                               'basic_auth_file: b}}').replace("{debug}", "/dev/null")
    rc, out = validate(both)
    res.check("both auth kinds -> validate fails", rc != 0 and "exactly one" in out, out)
    no_addr = OPEN_CONFIG.replace('metrics: {address: "127.0.0.1:0"}',
                                  'metrics: {auth: {bearer_token_file: /x}}').replace(
                                      "{debug}", "/dev/null")
    rc, out = validate(no_addr)
    res.check("metrics auth without address -> validate fails",
              rc != 0 and "auth has no effect without address" in out, out)
    typo = OPEN_CONFIG.replace('metrics: {address: "127.0.0.1:0"}',
                               'metrics: {address: "127.0.0.1:0", auht: {}}').replace(
                                   "{debug}", "/dev/null")
    rc, out = validate(typo)
    res.check("unknown metrics key lists auth as valid", rc != 0 and "auth" in out, out)


def with_credentials(config):
    """A Gateway whose temp dir holds the files AUTH_CONFIG names, written
    before the gateway starts (health: a hashed basic-auth entry)."""
    gw = Gateway(config)
    for name in ("pprof", "metrics"):
        with open(gw.path(f"{name}.token"), "w") as f:
            f.write(TOKENS[name] + "\n")
    digest = hashlib.sha256(b"s3cret").hexdigest()
    with open(gw.path("htpasswd"), "w") as f:
        f.write(f"# probes\nprobe:{{SHA256}}{digest}\n")
    return gw


def main():
    res = Results()
    test_with_auth(res)
    test_without_auth(res)
    test_config_errors(res)
    res.finish()


if __name__ == "__main__":
    main()
