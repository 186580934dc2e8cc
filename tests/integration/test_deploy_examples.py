# SPDX-License-Identifier: Apache-2.0
"""The shipped deployment files, run as their platform runs them, without a
cluster or a Docker daemon (tests/integration/lib/pg_deploy.py does what the
kubelet and the image would): private network and mount namespaces, the
gateway in a chroot built from docker/Dockerfile, as its user, read-only.

1. docker/k8s-sidecar.yaml: the pod's env resolved by the kubelet's rules
   (fieldRefs, $(VAR) in order), the ConfigMap mounted where the manifest
   says, the emptyDir spool, the securityContext; the probes dial the pod IP;
   the app container's env, exactly as written, drives the real Node SDK in
   its default mode (OTLP gRPC to localhost:4317, the sidecar's otlp
   receiver), and the same env plus OTEL_PROFILES_EXPORTER=pprof pushes to
   localhost:4040; what reaches the node-local OTLP server
   (tests/node/grpc_server.mjs on the node IP) must carry the SDK's
   attributes and the kubelet-expanded pod facts either way. The node IP is
   127.0.0.1 here, in the pod's network namespace, where the sidecar holds
   4317 itself: the test moves the node collector to NODE_OTLP_PORT by
   substituting the port in OTLP_ENDPOINT ("$(NODE_IP):4317").
2. The image's built-in config (docker/pprofgate.yaml) with the image's user,
   env, entrypoint and cmd and --read-only: pushes to the container's port
   arrive decoded in its output, and so does the SDK's default OTLP/gRPC
   export to its port 4317.
3. docs/security.md's recipe: config/sidecar-otlp.yaml mounted over the
   built-in config, a named volume on /var/lib/pprofgate, --read-only: the
   spool is created in the volume, pushes reach the OTLP server decoded, the
   app's own k8s.* attributes are kept and none is set empty outside
   Kubernetes; without the volume, start fails with the documented reason.
4. docker/k8s-scrape-daemonset.yaml and k8s-scrape-sidecar.yaml as a cluster
   meets them: the namespace they use is created, the image is the examples'
   one with imagePullPolicy IfNotPresent, the securityContext (non-root,
   read-only root, no privilege escalation, ALL capabilities dropped) and
   resources are set, readiness and liveness probe health_check, the config
   validates; the sidecar's gateway answers both probes at the pod IP."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, SOURCE_DIR, Results  # noqa: E402

if os.environ.get("PG_DEPLOY_NS") != "1":
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        print("NOT RUN: needs root, unshare and ip (private network/mount namespaces, chroot, "
              "setuid) to run the image and the pod without Docker or a cluster", flush=True)
        sys.exit(77)
    # Temp trees are removed here, outside the namespaces: inside, host
    # directories are bound into them.
    top = tempfile.mkdtemp(prefix="pg-deploy-")
    r = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--fork",
                        sys.executable, os.path.abspath(__file__)],
                       env=dict(os.environ, PG_DEPLOY_NS="1", TMPDIR=top))
    shutil.rmtree(top, ignore_errors=True)
    sys.exit(r.returncode)

try:
    import yaml  # noqa: E402  (python3-yaml, installed by scripts/bootstrap.sh --test)
except ImportError:
    print("NOT RUN: python3 has no yaml module (python3-yaml) to read the manifests", flush=True)
    sys.exit(77)

import pg_deploy as dp  # noqa: E402

NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "node", "node_modules")
SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")
POD = {"name": "checkout-6b7d9c5f4-x2x9k", "namespace": "shop", "uid": "3f1c2a9e-0001",
       "node_name": "node-a", "pod_ip": "10.244.1.7", "host_ip": "127.0.0.1",
       "labels": {"app": "checkout"}, "annotations": {}}
DOCKER_IP = "172.17.0.2"
# The node collector's port in this test (the manifest's hostPort 4317 would
# clash with the sidecar's own otlp receiver: here the node IP is 127.0.0.1).
NODE_OTLP_PORT = 14317
SDK_NAME = "@coralogix/opentelemetry-profiling"

CLIENT = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgDeployBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
(async () => {
  const p = new ProfilingProvider({ collectionIntervalMs: 600 });
  await p.start();
  const t = setInterval(() => pgDeployBurn(30), 40);
  await new Promise(r => setTimeout(r, 900));
  clearInterval(t);
  await p.stop();
  console.log('client done');
})().catch(e => { console.error('client error', e); process.exit(2); });
"""

res = Results()


def run_app(env):
    """The app container: the real SDK with exactly the env it was given."""
    e = dict(env, NODE_PATH=NODE_MODULES, PATH=os.environ.get("PATH", dp.DEFAULT_PATH))
    try:
        r = subprocess.run(["node", "-e", CLIENT], env=e, capture_output=True, text=True,
                           timeout=60, cwd=os.path.join(SOURCE_DIR, "tests", "node"))
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as ex:
        return -1, ex.stdout or "", ex.stderr or ""


class OtlpServer:
    def __init__(self, port):
        self.proc = subprocess.Popen(["node", SERVER, "--port", str(port)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.control = json.loads(self.proc.stdout.readline())["control_port"]

    def resources(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.control}/requests", timeout=10) as r:
            reqs = json.loads(r.read())
        out = []
        for req in reqs:
            strings = req.get("dictionary", {}).get("stringTable", [""])
            for rp in req.get("resourceProfiles", []):
                attrs = {}
                for kv in (rp.get("resource") or {}).get("attributes", []):
                    v = kv.get("value") or {}
                    if "stringValueStrindex" in v:
                        attrs[kv["key"]] = strings[int(v["stringValueStrindex"])]
                    else:
                        attrs[kv["key"]] = next(iter(v.values()), "") if v else ""
                out.append(attrs)
        return out

    def wait(self, pred, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            got = [a for a in self.resources() if pred(a)]
            if got:
                return got
            time.sleep(0.2)
        return []

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def wait_text(path, needle, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if needle in read(path):
            return True
        time.sleep(0.1)
    return False


def new_image(tmp, notes):
    return dp.Image(os.path.join(SOURCE_DIR, "docker", "Dockerfile"), SOURCE_DIR,
                    {"/build/pprofgate": BIN}, notes)


def build_steps(rootfs, image):
    """The exec-form RUN steps (the build-time validate), in the image."""
    for argv, user in image.run_exec:
        p = rootfs.popen(argv, dict(image.env), dp.image_user(image, user),
                         stdout=subprocess.PIPE)
        out = p.communicate(timeout=30)[0].decode(errors="replace")
        res.check(f"image build step RUN {' '.join(argv)[:60]}", p.returncode == 0, out[-800:])


# ---- the kubelet's rules, on their own -----------------------------------------

def kubelet_rules():
    table = [  # (env list, name, expected)
        ([{"name": "A", "value": "x-$(B)"}, {"name": "B", "value": "b"}], "A", "x-$(B)"),
        ([{"name": "B", "value": "b"}, {"name": "A", "value": "x-$(B)"}], "A", "x-b"),
        ([{"name": "A", "value": "$$(B)"}, {"name": "B", "value": "b"}], "A", "$(B)"),
        ([{"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
          {"name": "E", "value": "$(P):13133"}], "E", "10.244.1.7:13133"),
    ]
    ok = all(dp.container_env({"env": env}, POD, {})[name] == want for env, name, want in table)
    res.check("kubelet rules: $(VAR) expands only after VAR is defined; $$ escapes; fieldRef",
              ok, [dp.container_env({"env": e}, POD, {})[n] for e, n, _ in table])


# ---- 1. Kubernetes sidecar ---------------------------------------------------------

def pod_containers(spec):
    """The pod's long-running containers: its containers and its native
    sidecars (initContainers with restartPolicy: Always)."""
    return spec["containers"] + [c for c in spec.get("initContainers", [])
                                 if c.get("restartPolicy") == "Always"]


def duration_s(text, default):
    """A config duration ("5s", "1m", "250ms") in seconds."""
    if text is None:
        return default
    for unit, f in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)):
        if str(text).endswith(unit) and str(text)[:-len(unit)].replace(".", "").isdigit():
            return float(str(text)[:-len(unit)]) * f
    raise ValueError(f"duration {text!r} not understood")


# What the app container gets for its own stop (the SDK's final push) in the
# grace period: the manifest's comment says 10s.
APP_STOP_S = 10


def sidecar_config(gw, cms):
    """The gateway's config, read from the ConfigMap its --config names."""
    name = os.path.basename(gw["args"][gw["args"].index("--config") + 1])
    for cm in cms.values():
        if name in cm.get("data", {}):
            return yaml.safe_load(cm["data"][name])
    raise ValueError(f"no ConfigMap holds {name}")


def k8s_native_sidecar(spec, gw, cms):
    """The manifest's shutdown story: pprofgate is a native sidecar (so the
    kubelet stops it after the app), has a shutdown delay, and the grace
    period covers the app's stop, the delay and the exporters' drain; its
    probes are the health_check (startup, readiness) and the receiver
    (liveness)."""
    natives = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]
    res.check("k8s: pprofgate is a native sidecar (initContainers, restartPolicy: Always)",
              gw in natives and gw not in spec["containers"], [c["name"] for c in natives])
    res.check("k8s: the app is an ordinary container (stopped before the sidecar)",
              any("pprofgate" not in c["image"] for c in spec["containers"]))
    cfg = sidecar_config(gw, cms)
    delay = duration_s((cfg.get("service") or {}).get("shutdown_delay"), 0)
    drain = max(duration_s(e.get("shutdown_timeout"), 10)
                for e in (cfg.get("exporters") or {}).values())
    grace = spec.get("terminationGracePeriodSeconds", 30)
    res.check("k8s: the config sets service::shutdown_delay", delay > 0, delay)
    res.check("k8s: terminationGracePeriodSeconds covers the app's stop + delay + drain",
              grace >= APP_STOP_S + delay + drain, (grace, APP_STOP_S, delay, drain))
    ports = {p["name"]: p["containerPort"] for p in gw.get("ports", []) if "name" in p}
    hc = (cfg.get("extensions") or {}).get("health_check") or {}
    hc_port = int(str(hc.get("endpoint", "localhost:13133")).rsplit(":", 1)[1])
    rx = ((cfg.get("receivers") or {}).get("pprof") or {}).get("server") or {}
    rx_port = int(str(rx.get("endpoint", "localhost:4040")).rsplit(":", 1)[1])

    def port_of(probe):
        p = (probe.get("httpGet") or probe.get("tcpSocket") or {}).get("port")
        return ports.get(p, p)

    for kind in ("startupProbe", "readinessProbe"):
        pr = gw.get(kind) or {}
        res.check(f"k8s: {kind} asks health_check (GET {hc.get('path', '/')} on {hc_port})",
                  "httpGet" in pr and port_of(pr) == hc_port
                  and pr["httpGet"].get("path", "/") == hc.get("path", "/"), pr)
    lv = gw.get("livenessProbe") or {}
    res.check("k8s: livenessProbe asks the receiver (GET / answers 200 during the delay too)",
              "httpGet" in lv and port_of(lv) == rx_port and lv["httpGet"].get("path") == "/", lv)
    res.check("k8s: readiness is probed at least once during the delay "
              "(periodSeconds <= shutdown_delay)",
              (gw.get("readinessProbe") or {}).get("periodSeconds", 10) <= delay,
              (gw.get("readinessProbe"), delay))


APP_DAEMON = r"""
const { ProfilingProvider } = require('@coralogix/opentelemetry-profiling');
function pgDeployBurn(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) { x += Math.sqrt(x + 1); } return x; }
(async () => {
  const p = new ProfilingProvider({ collectionIntervalMs: 600000 });
  await p.start();
  const t = setInterval(() => pgDeployBurn(20), 30);
  process.on('SIGTERM', async () => { clearInterval(t); await p.stop(); console.log('app flushed'); process.exit(0); });
  console.log('app running');
})().catch(e => { console.error('app error', e); process.exit(2); });
"""


def k8s_termination(spec, gw, proc, ports, app_env, server, log):
    """Pod deletion as the kubelet runs it for a native sidecar: SIGTERM to
    the app (an SDK whose only push is the final one, on SIGTERM), and once it
    has exited, SIGTERM to pprofgate. The final push reaches the node's
    collector; during the delay readiness fails and liveness holds; the
    gateway exits within the grace period."""
    grace = spec.get("terminationGracePeriodSeconds", 30)
    before = len([a for a in server.resources() if a.get("service.name") == "checkout"])
    e = dict(app_env, NODE_PATH=NODE_MODULES, PATH=os.environ.get("PATH", dp.DEFAULT_PATH))
    app = subprocess.Popen(["node", "-e", APP_DAEMON], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           cwd=os.path.join(SOURCE_DIR, "tests", "node"))
    first = app.stdout.readline()
    res.check("k8s termination: the app runs", first.strip() == "app running", first)
    time.sleep(1.0)
    t0 = time.time()
    app.send_signal(signal.SIGTERM)
    try:
        out, err = app.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        app.kill()
        out, err = app.communicate()
    res.check("k8s termination: the app flushed on SIGTERM, no failed export",
              app.returncode == 0 and "app flushed" in out and "export failed" not in err,
              (app.returncode, err[-600:]))
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    ready = dp.probe_ok(gw["readinessProbe"], POD["pod_ip"], ports)
    alive = dp.probe_ok(gw["livenessProbe"], POD["pod_ip"], ports)
    res.check("k8s termination: during the delay readiness fails, liveness holds",
              not ready and alive and proc.poll() is None, (ready, alive, read(log)[-800:]))
    got = server.wait(lambda a: a.get("service.name") == "checkout"
                      and len([b for b in server.resources()
                               if b.get("service.name") == "checkout"]) > before)
    res.check("k8s termination: the app's final push reaches the node's collector", len(got) > 0,
              read(log)[-1500:])
    try:
        code = proc.wait(grace)
    except subprocess.TimeoutExpired:
        code = None
    res.check("k8s termination: the gateway exits 0 within the grace period",
              code == 0 and time.time() - t0 <= grace, (code, round(time.time() - t0, 1)))
    res.check("k8s termination: the delay and the drain are logged",
              "shutdown delay over" in read(log) and 'msg="stopped"' in read(log),
              read(log)[-1500:])


def k8s_sidecar():
    path = os.path.join(SOURCE_DIR, "docker", "k8s-sidecar.yaml")
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    deps = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Pod")]
    res.check("k8s manifest: one workload", len(deps) == 1, [d["kind"] for d in docs])
    spec = deps[0]["spec"]["template"]["spec"] if deps[0]["kind"] != "Pod" else deps[0]["spec"]
    gw = [c for c in pod_containers(spec) if "pprofgate" in c["image"]]
    apps = [c for c in spec["containers"] if "pprofgate" not in c["image"]]
    res.check("k8s manifest: a pprofgate container and an app container", gw and apps)
    gw, app = gw[0], apps[0]
    check_image_policy("k8s-sidecar.yaml", docs)
    k8s_native_sidecar(spec, gw, cms)
    k8s_otlp_in(gw, app, cms)
    # The node collector moves off 4317 (see NODE_OTLP_PORT): the one
    # substitution the test makes in the manifest.
    moved = [dict(e, value=e["value"].replace(":4317", f":{NODE_OTLP_PORT}"))
             if e.get("name") == "OTLP_ENDPOINT" else e for e in gw.get("env", [])]
    res.check("k8s: OTLP_ENDPOINT is $(NODE_IP):4317 as the comment says",
              any(e.get("name") == "OTLP_ENDPOINT" and e.get("value") == "$(NODE_IP):4317"
                  for e in gw.get("env", [])), gw.get("env"))
    gw = dict(gw, env=moved)
    tmp = tempfile.mkdtemp(prefix="pg-k8s-")
    notes = []
    image = new_image(tmp, notes)
    rootfs = dp.Rootfs(tmp, image)
    # volumes
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    pod_sc = spec.get("securityContext", {}) or {}
    fs_group = pod_sc.get("fsGroup")
    spool_dirs = []
    for vm in gw.get("volumeMounts", []):
        v = vols[vm["name"]]
        host = os.path.join(tmp, "vol-" + vm["name"])
        os.makedirs(host)
        if "configMap" in v:
            for k, text in cms[v["configMap"]["name"]]["data"].items():
                with open(os.path.join(host, k), "w") as f:
                    f.write(text)
            os.chmod(host, 0o755)
        elif "emptyDir" in v:
            os.chmod(host, 0o777)  # the kubelet's emptyDir mode
            if fs_group is not None:
                os.chown(host, 0, fs_group)
                os.chmod(host, 0o2777)
            spool_dirs.append(host)
        else:
            raise ValueError(f"volume {vm['name']}: kind not emulated")
        rootfs.bind(host, vm["mountPath"], ro=bool(vm.get("readOnly")))
    sc = gw.get("securityContext", {}) or {}
    uid_s, gid_s = dp.image_user(image, image.user).split(":")
    uid = sc.get("runAsUser", pod_sc.get("runAsUser", int(uid_s)))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup", int(gid_s)))
    res.check("k8s: runAsNonRoot holds for the image's/pod's user",
              not sc.get("runAsNonRoot") or uid != 0, uid)
    dp.net_setup([POD["pod_ip"], POD["host_ip"]])
    rootfs.mount(read_only_root=bool(sc.get("readOnlyRootFilesystem")))

    env = dict(image.env)
    env.update(dp.container_env(gw, POD, cms))
    argv = [dp.expand(a, env) for a in (gw.get("command") or image.entrypoint)]
    argv += [dp.expand(a, env) for a in (gw.get("args") if "args" in gw else image.cmd)]
    app_env = dp.container_env(app, POD, cms)
    res.check("k8s: the app's OTEL_RESOURCE_ATTRIBUTES is fully expanded",
              "$(" not in app_env.get("OTEL_RESOURCE_ATTRIBUTES", "$(")
              and f"k8s.pod.name={POD['name']}" in app_env["OTEL_RESOURCE_ATTRIBUTES"],
              app_env.get("OTEL_RESOURCE_ATTRIBUTES"))
    otlp = env.get("OTLP_ENDPOINT", "")
    res.check("k8s: the OTLP endpoint is the node's (status.hostIP)",
              otlp.startswith(POD["host_ip"] + ":"), otlp)
    port = int(otlp.rsplit(":", 1)[1]) if otlp[-1:].isdigit() else 4317
    server = OtlpServer(port)
    log = os.path.join(tmp, "pprofgate.log")
    groups = [fs_group] if fs_group is not None else []
    with open(log, "wb") as lf:
        proc = rootfs.popen(argv, env, f"{uid}:{gid}", groups=groups,
                            workdir=gw.get("workingDir", image.workdir), stdout=lf)
    try:
        ports = {p["name"]: p["containerPort"] for p in gw.get("ports", []) if "name" in p}
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            if kind in gw:
                res.check(f"k8s: {kind} at the pod IP succeeds",
                          dp.wait_probe(gw[kind], POD["pod_ip"], ports, 10), read(log)[-1500:])
        # The manifest's env as written: the SDK's default OTLP gRPC export;
        # then the documented pprof push alternative, under its own name.
        push_env = dict(app_env, OTEL_PROFILES_EXPORTER="pprof", OTEL_SERVICE_NAME="checkout-push",
                        OTEL_EXPORTER_PPROF_ENDPOINT="http://localhost:4040/v1/pprof")
        for mode, env_run, svc in (("default OTLP", app_env, "checkout"),
                                   ("pprof push", push_env, "checkout-push")):
            rc, out, err = run_app(env_run)
            res.check(f"k8s {mode}: the app (real SDK, the manifest's env) exported", rc == 0
                      and "client done" in out and "export failed" not in err, (rc, err[-600:]))
            got = server.wait(lambda a: a.get("service.name") == svc)
            res.check(f"k8s {mode}: profiles reach the node-local OTLP server through the "
                      "sidecar", len(got) > 0, (server.resources()[:2], read(log)[-1500:]))
            if got:
                a = got[0]
                want = {"k8s.pod.name": POD["name"], "k8s.namespace.name": POD["namespace"],
                        "k8s.node.name": POD["node_name"], "k8s.container.name": "app",
                        "deployment.environment.name": "prod", "telemetry.sdk.name": SDK_NAME}
                res.check(f"k8s {mode}: resource attributes decoded and expanded as the "
                          "kubelet does", all(a.get(k) == v for k, v in want.items()),
                          {k: a.get(k) for k in want})
                res.check(f"k8s {mode}: no attribute left encoded or unexpanded",
                          not [v for v in a.values()
                               if isinstance(v, str) and ("$(" in v or "%2" in v or "%40" in v)], a)
        k8s_termination(spec, gw, proc, ports, app_env, server, log)
        spools = [os.path.join(d, "file_storage") for d in spool_dirs]
        res.check("k8s: the spool lives on the emptyDir",
                  any(os.path.isdir(s) and os.listdir(s) for s in spools), spools)
        res.check("k8s: SIGTERM exits 0", stop(proc) == 0, read(log)[-1000:])
        res.check("k8s: no warning or error logged",
                  "level=warn" not in read(log) and "level=error" not in read(log),
                  [ln for ln in read(log).splitlines() if "level=warn" in ln
                   or "level=error" in ln][:5])
    finally:
        stop(proc)
        server.close()


def k8s_otlp_in(gw, app, cms):
    """The SDK's defaults work in the pod: the sidecar's config has the otlp
    receiver on localhost:4317 (gRPC) and :4318 (HTTP) in the pipeline, and the
    app's env leaves the SDK in its default mode (OTLP gRPC to
    http://localhost:4317)."""
    cfg = sidecar_config(gw, cms)
    protos = (((cfg.get("receivers") or {}).get("otlp") or {}).get("protocols") or {})
    eps = {k: (v or {}).get("endpoint") for k, v in protos.items()}
    res.check("k8s: the sidecar's otlp receiver takes gRPC on localhost:4317 and HTTP on :4318",
              eps == {"grpc": "localhost:4317", "http": "localhost:4318"}, eps)
    pipes = ((cfg.get("service") or {}).get("pipelines") or {}).values()
    res.check("k8s: a pipeline takes the otlp receiver beside pprof",
              any({"otlp", "pprof"} <= set(p.get("receivers", [])) for p in pipes), list(pipes))
    env = dp.container_env(app, POD, cms)
    ep = env.get("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    res.check("k8s: the app's SDK stays in its default mode (OTLP gRPC to localhost:4317)",
              env.get("OTEL_PROFILES_EXPORTER", "otlp") in ("otlp", "otlp_grpc")
              and ep in (None, "http://localhost:4317"), env)


# ---- 2. the image's built-in config; 3. the security.md volume recipe --------------

def docker_runs():
    tmp = tempfile.mkdtemp(prefix="pg-docker-")
    notes = []
    image = new_image(tmp, notes)
    builtin = [dst for _, dst, _ in image.files if dst.endswith(".yaml")]
    res.check("image: a built-in config is copied in", len(builtin) == 1, image.files)
    res.check("image: runs as a non-root user", dp.image_user(image, image.user)[:2] != "0:",
              image.user)
    user = dp.image_user(image, image.user)
    # a second root with the volume recipe: the named volume takes the image
    # directory's owner, as Docker fills a new named volume from the image.
    rootfs = dp.Rootfs(tmp, image)
    vol = os.path.join(tmp, "pprofgate-spool")
    os.makedirs(vol)
    spool_dir = "/var/lib/pprofgate"
    if spool_dir in image.dirs:
        o_uid, o_gid, o_mode = image.dirs[spool_dir]
        os.chown(vol, o_uid, o_gid)
        os.chmod(vol, o_mode)
    res.check("image: creates /var/lib/pprofgate for the user", image.dirs.get(spool_dir, (0,))[0]
              == int(user.split(":")[0]), image.dirs)
    tmp2 = os.path.join(tmp, "recipe")
    os.makedirs(tmp2)
    recipe = dp.Rootfs(tmp2, image)
    recipe.bind(vol, spool_dir, ro=False)
    recipe.bind(os.path.join(SOURCE_DIR, "config", "sidecar-otlp.yaml"), builtin[0], ro=True)
    tmp3 = os.path.join(tmp, "novolume")
    os.makedirs(tmp3)
    novol = dp.Rootfs(tmp3, image)
    novol.bind(os.path.join(SOURCE_DIR, "config", "sidecar-otlp.yaml"), builtin[0], ro=True)
    dp.net_setup([DOCKER_IP])
    rootfs.mount(read_only_root=True)
    recipe.mount(read_only_root=True)
    novol.mount(read_only_root=True)
    build_steps(rootfs, image)
    argv = image.entrypoint + image.cmd

    # 2. built-in config, docker run --read-only -p 4040:4040 pprofgate
    log = os.path.join(tmp, "builtin.log")
    with open(log, "wb") as lf:
        proc = rootfs.popen(argv, dict(image.env), user, workdir=image.workdir, stdout=lf)
    try:
        res.check("image: listens on the published port", wait_text(log, ":4040"), read(log)[-800:])
        rc, out, err = run_app({"OTEL_PROFILES_EXPORTER": "pprof", "OTEL_SERVICE_NAME": "docker-svc",
                                "OTEL_EXPORTER_PPROF_ENDPOINT": f"http://{DOCKER_IP}:4040/v1/pprof",
                                "OTEL_RESOURCE_ATTRIBUTES": "team=a%2Cb,deployment.environment.name=prod"})
        res.check("image: the SDK pushed to the container", rc == 0 and "client done" in out,
                  (rc, err[-600:]))
        ok = wait_text(log, "service.name=docker-svc")
        text = read(log)
        res.check("image: pushes arrive with the SDK's resource, decoded",
                  ok and "team=a,b" in text and f"telemetry.sdk.name={SDK_NAME}" in text
                  and "unknown_service" not in text, text[-1500:])
        # docker run -p 4317:4317: the SDK's default OTLP/gRPC export, only
        # its endpoint set (the published port on another host).
        rc, out, err = run_app({"OTEL_SERVICE_NAME": "docker-otlp",
                                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{DOCKER_IP}:4317"})
        res.check("image: the SDK's default OTLP export reached the container",
                  rc == 0 and "client done" in out and "export failed" not in err,
                  (rc, err[-600:]))
        res.check("image: OTLP exports arrive with the SDK's resource",
                  wait_text(log, "service.name=docker-otlp"), read(log)[-1500:])
        res.check("image: SIGTERM exits 0", stop(proc) == 0, read(log)[-800:])
    finally:
        stop(proc)

    # 3. security.md: a named volume on /var/lib/pprofgate, sidecar-otlp.yaml mounted
    # The collector elsewhere: not on 4317, which the container's own otlp
    # receiver takes in this shared network namespace.
    server = OtlpServer(NODE_OTLP_PORT)
    env = dict(image.env, OTLP_ENDPOINT=f"127.0.0.1:{NODE_OTLP_PORT}")
    log = os.path.join(tmp, "recipe.log")
    with open(log, "wb") as lf:
        proc = recipe.popen(argv, env, user, workdir=image.workdir, stdout=lf)
    try:
        res.check("volume recipe: starts read-only with the spool on the volume",
                  wait_text(log, "running with"), read(log)[-1500:])
        rc, out, err = run_app({"OTEL_PROFILES_EXPORTER": "pprof", "OTEL_SERVICE_NAME": "spool-svc",
                                "OTEL_EXPORTER_PPROF_ENDPOINT": f"http://{DOCKER_IP}:4040/v1/pprof",
                                "OTEL_RESOURCE_ATTRIBUTES": "k8s.namespace.name=own-ns,owner=o'brien"})
        res.check("volume recipe: the SDK pushed", rc == 0 and "client done" in out, (rc, err[-600:]))
        got = server.wait(lambda a: a.get("service.name") == "spool-svc")
        res.check("sidecar-otlp.yaml: pushes reach the OTLP server", len(got) > 0, read(log)[-1500:])
        if got:
            a = got[0]
            res.check("sidecar-otlp.yaml: decoded, the app's own k8s.namespace.name kept",
                      a.get("k8s.namespace.name") == "own-ns" and a.get("owner") == "o'brien"
                      and a.get("telemetry.sdk.name") == SDK_NAME, a)
            res.check("sidecar-otlp.yaml: outside Kubernetes no k8s.* is set empty",
                      "k8s.pod.name" not in a and all(v != "" for k, v in a.items()
                                                      if k.startswith("k8s.")), a)
        res.check("volume recipe: the spool is in the volume",
                  os.path.isdir(os.path.join(vol, "file_storage", "exporter_otlp")),
                  os.listdir(vol))
        res.check("volume recipe: SIGTERM exits 0", stop(proc) == 0, read(log)[-800:])
    finally:
        stop(proc)
        server.close()

    # Without the volume, the read-only root refuses the spool, with the reason.
    log = os.path.join(tmp, "novol.log")
    with open(log, "wb") as lf:
        proc = novol.popen(argv, dict(image.env, OTLP_ENDPOINT=f"127.0.0.1:{NODE_OTLP_PORT}"), user,
                           workdir=image.workdir, stdout=lf)
    rc = proc.wait(20)
    text = read(log)
    res.check("no volume: start fails with the documented reason",
              rc == 1 and "cannot create directory /var/lib/pprofgate/file_storage: "
              "Read-only file system" in text, (rc, text[-800:]))
    with open(os.path.join(SOURCE_DIR, "docs", "security.md")) as f:
        doc = f.read()
    line = next((ln for ln in text.splitlines() if "cannot create directory" in ln), "")
    res.check("security.md quotes that log line as it is",
              bool(line) and line.split(" ", 1)[-1] in doc, line)


# ---- 4. the pull-mode manifests: what the cluster checks before it runs them ------

IMAGE = "registry.example.com/pprofgate:0.1.0"  # the one name every example uses
SCRAPE_MANIFESTS = ("k8s-scrape-daemonset.yaml", "k8s-scrape-sidecar.yaml")
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
SCRAPE_POD_IP = "10.244.2.9"


def load_manifest(name):
    with open(os.path.join(SOURCE_DIR, "docker", name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def gateway_containers(docs):
    """(workload, pod spec, container) for every pprofgate container."""
    out = []
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Pod"):
            spec = d["spec"]["template"]["spec"] if d["kind"] != "Pod" else d["spec"]
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                if "pprofgate" in c.get("image", ""):
                    out.append((d, spec, c))
    return out


def check_namespaces(name, docs):
    """Every namespace a document names is created in the same file: an apply
    into a fresh cluster must not fail on a missing namespace."""
    created = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    used = {d["metadata"].get("namespace") for d in docs if d["kind"] not in CLUSTER_SCOPED}
    for d in docs:
        for subj in d.get("subjects", []) or []:
            used.add(subj.get("namespace"))
    used.discard(None)
    res.check(f"{name}: its namespace is created in the file", used and used <= created,
              {"used": sorted(used), "created": sorted(created)})


def check_image_policy(name, docs):
    gws = gateway_containers(docs)
    res.check(f"{name}: image {IMAGE} with imagePullPolicy IfNotPresent",
              gws and all(c["image"] == IMAGE and c.get("imagePullPolicy") == "IfNotPresent"
                          for _, _, c in gws),
              [(c.get("image"), c.get("imagePullPolicy")) for _, _, c in gws])


def check_security(name, docs):
    for _, spec, c in gateway_containers(docs):
        sc = dict(spec.get("securityContext", {}) or {})
        sc.update(c.get("securityContext", {}) or {})
        drop = ((sc.get("capabilities") or {}).get("drop") or [])
        res.check(f"{name}: securityContext non-root, read-only root fs, no privilege "
                  "escalation, drops ALL",
                  sc.get("runAsNonRoot") is True and sc.get("runAsUser", 1) != 0
                  and sc.get("readOnlyRootFilesystem") is True
                  and sc.get("allowPrivilegeEscalation") is False and "ALL" in drop, sc)
        r = c.get("resources", {}) or {}
        res.check(f"{name}: cpu and memory requests and limits",
                  all(k in (r.get(w) or {}) for w in ("requests", "limits")
                      for k in ("cpu", "memory")), r)


def config_env(text, env):
    """${env:VAR:-default} and ${env:VAR} as the gateway expands them."""
    return re.sub(r"\$\{(?:env:)?(\w+)(?::-([^}]*))?\}",
                  lambda m: env.get(m[1]) or (m[2] or ""), text)


def embedded_config(docs, container):
    """The config the container reads: its --config file from a ConfigMap volume."""
    args = container.get("args", [])
    path = args[args.index("--config") + 1] if "--config" in args else "/etc/pprofgate/pprofgate.yaml"
    spec_vols = {}
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Pod"):
            spec = d["spec"]["template"]["spec"] if d["kind"] != "Pod" else d["spec"]
            spec_vols.update({v["name"]: v for v in spec.get("volumes", [])})
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    for vm in container.get("volumeMounts", []):
        v = spec_vols.get(vm["name"], {})
        if "configMap" in v and path.startswith(vm["mountPath"].rstrip("/") + "/"):
            return cms[v["configMap"]["name"]]["data"][path[len(vm["mountPath"].rstrip("/")) + 1:]]
    return None


def check_probes(name, docs, run):
    """Readiness and liveness probe health_check's port and path; the config
    validates without warnings, keeps metrics off 8888 and, when @run, the
    gateway started with the manifest's env answers both probes at the pod IP."""
    for _, _, c in gateway_containers(docs):
        text = embedded_config(docs, c)
        res.check(f"{name}: the container's config comes from the file's ConfigMap",
                  text is not None, c.get("volumeMounts"))
        if text is None:
            continue
        tmp = tempfile.mkdtemp(prefix="pg-scrape-k8s-")
        cfg_path = os.path.join(tmp, "pprofgate.yaml")
        with open(cfg_path, "w") as f:
            f.write(text)
        env = dict(os.environ)
        env.update(dp.container_env(c, POD, {}))
        v = subprocess.run([BIN, "validate", "--config", cfg_path], env=env, capture_output=True,
                           text=True, timeout=30)
        res.check(f"{name}: its config validates without a warning",
                  v.returncode == 0 and "warning" not in v.stderr, v.stderr[-800:])
        # What the config serves, as the gateway expands it.
        cfg = yaml.safe_load(text)
        exts = cfg.get("extensions", {}) or {}
        hc = exts.get("health_check")
        res.check(f"{name}: health_check is enabled",
                  hc is not None and "health_check" in cfg["service"].get("extensions", []), exts)
        hc_ep = config_env(str((hc or {}).get("endpoint", "0.0.0.0:13133")), env)
        hc_port = int(hc_ep.rsplit(":", 1)[1])
        hc_path = (hc or {}).get("path", "/")
        maddr = config_env(str(((cfg["service"].get("telemetry") or {}).get("metrics") or {})
                               .get("address", "")), env)
        res.check(f"{name}: metrics not on 8888 (the collector's own telemetry port)",
                  maddr and not maddr.endswith(":8888"), maddr)
        ports = {p["name"]: p["containerPort"] for p in c.get("ports", []) if "name" in p}
        for kind in ("readinessProbe", "livenessProbe"):
            pr = c.get(kind) or {}
            hg = pr.get("httpGet") or {}
            port = ports.get(hg.get("port"), hg.get("port"))
            res.check(f"{name}: {kind} is an HTTP GET on health_check ({hc_path} on {hc_port})",
                      port == hc_port and hg.get("path") == hc_path, pr)
        if not run:
            continue
        env["PPROFGATE_METRICS_ENDPOINT"] = "127.0.0.1:0"
        log = os.path.join(tmp, "gateway.log")
        with open(log, "wb") as lf:
            proc = subprocess.Popen([BIN, "--config", cfg_path], env=env, stdout=lf,
                                    stderr=subprocess.STDOUT)
        try:
            for kind in ("readinessProbe", "livenessProbe"):
                res.check(f"{name}: {kind} at the pod IP succeeds",
                          dp.wait_probe(c[kind], SCRAPE_POD_IP, ports, 10), read(log)[-1200:])
        finally:
            res.check(f"{name}: SIGTERM exits 0", stop(proc) == 0, read(log)[-800:])
        shutil.rmtree(tmp, ignore_errors=True)


def scrape_manifests():
    dp.sh("ip", "link", "set", "lo", "up")
    dp.sh("ip", "addr", "add", SCRAPE_POD_IP + "/32", "dev", "lo")
    for name in SCRAPE_MANIFESTS:
        docs = load_manifest(name)
        check_namespaces(name, docs)
        check_image_policy(name, docs)
        check_security(name, docs)
        # The DaemonSet discovers pods through the API server, which is not
        # here: its config is validated, not run.
        check_probes(name, docs, run="daemonset" not in name)


def main():
    if not os.path.isdir(NODE_MODULES):
        res.check("SDK installed in tests/node (run scripts/bootstrap.sh --test)", False)
        res.finish()
    kubelet_rules()
    k8s_sidecar()
    docker_runs()
    scrape_manifests()
    res.finish()


if __name__ == "__main__":
    main()
