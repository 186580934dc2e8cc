# SPDX-License-Identifier: Apache-2.0
"""Every README command that talks to a running gateway, run as written
against the gateway started with config/pprofgate.yaml on its own default
ports (what `make run` starts): the wait loop, the push, health_check,
/metrics, `go tool pprof` on the pprof extension, and the Node SDK's three
lines with the README's environment. The commands are read from README.md's
```sh blocks (a line continued with a backslash is one command), so the
README cannot promise a port or a path the default config does not serve.
Exit 77 when one of the default ports is taken on this host."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, SOURCE_DIR, Results  # noqa: E402

# The default config's ports: receiver, pprof extension, health_check, metrics.
DEFAULT_PORTS = (4040, 4318, 1777, 13133, 8988)
GATEWAY_URL = re.compile(r"http://localhost:(\d+)")
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "node", "node_modules")


def blocks(text, lang):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", text, re.S | re.M)


def commands(block):
    """Logical command lines of a sh block: continuations joined, comments and
    blank lines dropped."""
    out, cur = [], ""
    for line in block.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def port_taken(port):
    for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
        except OSError as e:
            if e.errno != 99:  # EADDRNOTAVAIL: no ::1 here, not a clash
                return True
        finally:
            s.close()
    return False


def go_binary():
    found = shutil.which("go")
    if found:
        return found
    return "/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None


def main():
    res = Results()
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        readme = f.read()
    taken = [p for p in DEFAULT_PORTS + (4317,) if port_taken(p)]
    if taken:
        print(f"NOT RUN: default port(s) {taken} in use on this host (make run still going?)",
              flush=True)
        sys.exit(77)
    sh = [c for b in blocks(readme, "sh") for c in commands(b)]
    live = [c for c in sh if GATEWAY_URL.search(c)]
    node_cmds = [c for c in live if re.search(r"\bnode\s+\S+\.js\b", c)]
    live = [c for c in live if c not in node_cmds]
    asked = {int(p) for c in live + node_cmds for p in GATEWAY_URL.findall(c)}
    res.check("the README's commands reach every default port (push, pprof, health, metrics)",
              asked == set(DEFAULT_PORTS), sorted(asked))

    tmp = tempfile.mkdtemp(prefix="pg-readme-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPROFGATE_")}
    # go tool pprof keeps fetched profiles in $PPROF_TMPDIR ($HOME/pprof); Go
    # 1.26 builds the tool on first use into the user's build cache (~40 s).
    env["PPROF_TMPDIR"] = tmp
    go = go_binary()
    if go:
        env["PATH"] = os.path.dirname(go) + ":" + env.get("PATH", "/usr/bin:/bin")
    log_path = os.path.join(tmp, "gateway.log")
    with open(log_path, "wb") as lf:
        gw = subprocess.Popen([BIN, "--config", "config/pprofgate.yaml"], cwd=SOURCE_DIR,
                              env=env, stdout=lf, stderr=subprocess.STDOUT)

    def log():
        with open(log_path, errors="replace") as f:
            return f.read()

    # The README's own wait loop decides when the gateway is up; it waits
    # on `$!` (make run in the README), here a sleep that bounds it.
    waiter = [c for c in live if c.startswith("while ")]
    try:
        res.check("the README has a wait loop", bool(waiter), live)
        for c in waiter:
            t0 = time.time()
            r = subprocess.run(["bash", "-c", f"sleep 20 & {c}; kill $! 2>/dev/null; exit 0"],
                               cwd=SOURCE_DIR, env=env, capture_output=True, text=True, timeout=40)
            res.check(f"wait loop returns once the gateway is up: {c[:70]}",
                      time.time() - t0 < 15 and "listening on" in log(), (r.stderr, log()[-800:]))
        # Files the README makes before it posts them (request.pb): made in
        # the test's own directory with this build's tool, not in the tree.
        build_dir = os.path.join(SOURCE_DIR, os.environ.get("PG_BUILD_DIR", "build"))
        for c in sh:
            if "pg_pprof2otlp" in c and " -o " in c and not c.startswith("cmake"):
                run = c.replace("build/tests/", os.path.join(build_dir, "tests") + "/")
                run = run.replace("tests/fixtures/", os.path.join(SOURCE_DIR, "tests", "fixtures") + "/")
                r = subprocess.run(["bash", "-c", run], cwd=tmp, env=env, capture_output=True,
                                   text=True, timeout=60)
                out = os.path.join(tmp, c.split(" -o ")[1].split()[0])
                res.check(f"README command makes its file: {c[:80]}",
                          r.returncode == 0 and os.path.getsize(out) > 100
                          if os.path.exists(out) else False, (r.returncode, r.stderr[-400:]))
        for c in live:
            if c in waiter:
                continue
            want = re.search(r"#\s*(\d{3})\s*$", c)  # "... # 204": the status it prints
            run = c
            cwd = tmp if "@request.pb" in c else SOURCE_DIR
            if c.startswith("go tool pprof") and not go:
                # Without Go, what go tool pprof would fetch: the heap profile.
                url = re.search(r"http://localhost:\d+\S*", c).group(0)
                run = f"curl -sf {url} | gzip -t && echo fetched"
            r = subprocess.run(["bash", "-c", run], cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=240 if run.startswith("go ") else 60)
            ok = r.returncode == 0 and r.stdout.strip() != ""
            if want:
                ok = ok and want.group(1) in r.stdout.split()
            if c.startswith("go tool pprof"):
                ok = ok and ("flat" in r.stdout or "fetched" in r.stdout)
            res.check(f"README command answers: {c[:80]}", ok,
                      (r.returncode, r.stdout[-400:], r.stderr[-400:]))
        # The Node line: the README's js block as app.js, run with the
        # README's environment; a stop after a few collection windows so the
        # test ends (the README leaves that to the app's SIGTERM handler).
        js = [b for b in blocks(readme, "js") if "ProfilingProvider" in b]
        res.check("the README shows the SDK's three lines", js and len(
            [ln for ln in js[0].splitlines() if ln.strip() and not ln.strip().startswith("//")]) == 3,
            js)
        node = shutil.which("node")
        if not (js and node_cmds and node and os.path.isdir(NODE_MODULES)):
            res.check("Node SDK and the README's node command present", False,
                      (bool(js), node_cmds, node, os.path.isdir(NODE_MODULES)))
        else:
            app = os.path.join(tmp, "app.js")
            with open(app, "w") as f:
                f.write(js[0] + "\nsetTimeout(() => provider.stop().then(() => process.exit(0)), 1500);\n")
            before = log().count("service.name=checkout")
            nenv = dict(env, NODE_PATH=NODE_MODULES, OTEL_PROFILING_COLLECTION_INTERVAL_MS="500")
            r = subprocess.run(["bash", "-c", node_cmds[0]], cwd=tmp, env=nenv, capture_output=True,
                               text=True, timeout=60)
            deadline = time.time() + 5
            while time.time() < deadline and log().count("service.name=checkout") <= before:
                time.sleep(0.1)
            res.check("the README's Node lines push profiles that arrive as service.name=checkout",
                      r.returncode == 0 and log().count("service.name=checkout") > before,
                      (r.returncode, r.stderr[-600:], log()[-800:]))
    finally:
        gw.terminate()
        try:
            rc = gw.wait(20)
        except subprocess.TimeoutExpired:
            gw.kill()
            rc = gw.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    res.check("the gateway exits 0 on SIGTERM", rc == 0, rc)
    res.finish()


if __name__ == "__main__":
    main()
