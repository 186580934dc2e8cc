# SPDX-License-Identifier: Apache-2.0
"""server.transport on the real binary (confighttp's key): unix sockets
(push over the socket file; the file is removed at a clean exit, a stale one
left by a killed gateway is replaced, a live one or a non-socket file is
refused with a reason), tcp6 on ::1, and transport/address mismatches
rejected by validate."""

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, Gateway, Results, fixture, post, read  # noqa: E402

res = Results()
SDK = read(fixture("sdk/push0.pprof.gz"))
HDRS = {"Content-Encoding": "gzip", "Otel-Resource-Attributes": "service.name=over-unix"}


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def post_unix(path, body, headers):
    c = UnixHTTPConnection(path)
    try:
        c.request("POST", "/v1/pprof", body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def config(endpoint, transport, debug="{debug}"):
    return f"""
receivers:
  pprof:
    server: {{endpoint: "{endpoint}", transport: {transport}, include_metadata: true}}
exporters:
  debug: {{verbosity: basic, output_paths: ["{debug}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [debug]}}
"""


UNIX_READY = r"listening on unix:"

# 1. unix: push, then a clean exit removes the socket file.
gw = Gateway(config("{tmp}/pg.sock", "unix"), ready_pattern=UNIX_READY)
sock = gw.path("pg.sock")
with gw:
    st, body = post_unix(sock, SDK, HDRS)
    res.check("unix: push answered 204", st == 204, (st, body))
    res.check("unix: the batch reached the exporter",
              gw.wait_debug(r"sample_records=348") is not None, gw.debug()[-300:])
    st, body = post_unix(sock, b"not a profile", {})
    res.check("unix: a bad body is 400 with a reason", st == 400 and body, (st, body))
    # A second gateway on the same live socket is refused, and says why.
    r = subprocess.run([BIN, "--config", gw.config_path], capture_output=True, text=True,
                       timeout=20)
    res.check("unix: a live socket is not taken over",
              r.returncode != 0 and "in use by a running process" in r.stderr + r.stdout,
              (r.returncode, (r.stderr + r.stdout)[-300:]))
    st, _ = post_unix(sock, SDK, HDRS)
    res.check("unix: the first gateway still answers", st == 204, st)
    rc = gw.stop()
    res.check("unix: clean exit", rc == 0, rc)
    res.check("unix: socket file removed at exit", not os.path.exists(sock))

# 2. A gateway killed with SIGKILL leaves its socket file; the next one replaces it.
gw = Gateway(config("{tmp}/pg.sock", "unix"), ready_pattern=UNIX_READY)
sock = gw.path("pg.sock")
with gw:
    gw.proc.send_signal(signal.SIGKILL)
    gw.proc.wait()
res.check("unix: a killed gateway leaves its socket file", os.path.exists(sock))
gw2 = Gateway(config(sock, "unix"), ready_pattern=UNIX_READY)
with gw2:
    st, _ = post_unix(sock, SDK, HDRS)
    res.check("unix: stale socket file replaced; push 204", st == 204, gw2.log()[-400:])
    gw2.stop()

# 3. A path that is not a socket is never removed.
d = tempfile.mkdtemp(prefix="pg-transport-")
plain = os.path.join(d, "not-a-socket")
with open(plain, "w") as f:
    f.write("keep me\n")
r = subprocess.run([BIN, "--config", "/dev/stdin"], input=config(plain, "unix", "/dev/null"),
                   capture_output=True, text=True, timeout=20)
res.check("unix: a regular file is refused with a reason",
          r.returncode != 0 and "exists and is not a socket" in r.stderr + r.stdout,
          (r.returncode, (r.stderr + r.stdout)[-300:]))
res.check("unix: and left as it was", open(plain).read() == "keep me\n")

# 4. tcp6 on ::1.
if socket.has_ipv6:
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
        have_v6 = True
    except OSError:
        have_v6 = False
    if have_v6:
        with Gateway(config("[::1]:0", "tcp6")) as gw:
            st, _, _ = post(gw.port, "/v1/pprof", SDK, HDRS, host="::1")
            res.check("tcp6: push over ::1 answered 204", st == 204, st)
            res.check("tcp6: log shows [::1]:port", "listening on [::1]:" in gw.log(),
                      gw.log()[-300:])

# 5. validate: transport and address must agree.
for endpoint, transport, want in [
    ("127.0.0.1:4040", "tcp6", "is not an address of transport tcp6"),
    ("[::1]:4040", "tcp4", "is not an address of transport tcp4"),
    ("", "unix", "with transport unix, a socket file path"),
    ("localhost:4040", "udp", "\"udp\""),
]:
    r = subprocess.run([BIN, "validate", "--config", "/dev/stdin"],
                       input=config(endpoint, transport, "/dev/null"), capture_output=True,
                       text=True, timeout=20)
    res.check(f"validate: {transport} with '{endpoint}' refused", r.returncode == 1 and
              want in r.stdout + r.stderr, (r.returncode, (r.stdout + r.stderr)[-300:]))

res.finish()
