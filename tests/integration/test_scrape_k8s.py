# SPDX-License-Identifier: Apache-2.0
"""kubernetes_sd_configs against a fake Kubernetes API server written here
(HTTPS with a certificate made by openssl, bearer token from a file): the
Parca guide's relabel rules select only this node's Running pods on the
`pprof` port, which point at a real Go net/http/pprof target; the guide's
attribute set reaches the exporter exactly. The fake honours fieldSelector
and labelSelector, answers the first watch with 410 (relist), then streams
ADDED / MODIFIED (phase Succeeded drops the target) / DELETED / BOOKMARK,
an in-stream ERROR 410 (relist), a garbage line (counted, backoff, relist);
the token file is rotated and the old token gets 401. A second run uses the
in-cluster settings (KUBERNETES_SERVICE_HOST/PORT, service-account dir)."""
import http.server
import json
import os
import queue
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from pg_harness import Gateway, Results  # noqa: E402
from scrape_target import build_target, start_target  # noqa: E402

GUIDE_ATTRS = {"service.name", "service.namespace", "service.instance.id", "k8s.namespace.name",
               "k8s.pod.name", "k8s.pod.uid", "k8s.node.name", "k8s.container.name"}

CONFIG = """
receivers:
  pprof:
    scrape:
      scrape_configs:
        - job_name: my-go-service-memory
          scrape_interval: 1s
          kubernetes_sd_configs:
            - role: pod
{server}
              namespaces: {{names: [default]}}
              selectors:
                - role: pod
                  field: spec.nodeName=${{env:K8S_NODE_NAME}}
                  label: app.kubernetes.io/name=my-go-service
          profiling_config:
            pprof_config:
              memory:
                path: /debug/pprof/allocs
                keep_sample_type: [{{type: inuse_space, unit: bytes}}]
              block: {{enabled: false}}
              goroutine: {{enabled: false}}
              mutex: {{enabled: false}}
              process_cpu: {{enabled: false}}
          relabel_configs:
            - {{action: keep, source_labels: [__meta_kubernetes_pod_phase], regex: Running}}
            - {{action: keep, source_labels: [__meta_kubernetes_pod_container_port_name], regex: pprof}}
            - {{target_label: service.name, replacement: my-go-service}}
            - {{target_label: service.namespace, replacement: default}}
            - {{source_labels: [__meta_kubernetes_pod_uid, __meta_kubernetes_pod_container_name], separator: /, target_label: service.instance.id}}
            - {{source_labels: [__meta_kubernetes_namespace], target_label: k8s.namespace.name}}
            - {{source_labels: [__meta_kubernetes_pod_name], target_label: k8s.pod.name}}
            - {{source_labels: [__meta_kubernetes_pod_uid], target_label: k8s.pod.uid}}
            - {{source_labels: [__meta_kubernetes_pod_node_name], target_label: k8s.node.name}}
            - {{source_labels: [__meta_kubernetes_pod_container_name], target_label: k8s.container.name}}
exporters:
  debug: {{verbosity: detailed, output_paths: ["{{debug}}"]}}
service:
  pipelines:
    profiles: {{receivers: [pprof], exporters: [debug]}}
  telemetry:
    metrics: {{address: "127.0.0.1:0"}}
"""


def pod(name, node, port, phase="Running", app="my-go-service", rv="1"):
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": "uid-" + name,
                                        "resourceVersion": rv,
                                        "labels": {"app.kubernetes.io/name": app}},
            "spec": {"nodeName": node, "containers": [
                {"name": "app", "ports": [{"name": "pprof", "containerPort": port},
                                          {"name": "http", "containerPort": 1}]}]},
            "status": {"phase": phase, "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True"}]}}


class Fake:
    def __init__(self, tmp, port):
        self.token = "t0"
        self.pods = {}
        self.lists = 0
        self.watches = 0
        self.unauthorized = 0
        self.selectors = []
        self.events = queue.Queue()
        self.first_watch_410 = True
        self.force_status = None
        self.empty_watch = False
        self.stop = threading.Event()
        self.port = port
        for name, node, phase, app in (("a", "node-a", "Running", "my-go-service"),
                                       ("b", "node-b", "Running", "my-go-service"),
                                       ("p", "node-a", "Pending", "my-go-service"),
                                       ("o", "node-a", "Running", "other")):
            self.pods[name] = pod(name, node, port, phase, app)

    def matches(self, p, field, label):
        if field:
            k, v = field.split("=", 1)
            if k == "spec.nodeName" and p["spec"]["nodeName"] != v:
                return False
        if label:
            k, v = label.split("=", 1)
            if p["metadata"]["labels"].get(k) != v:
                return False
        return True


def make_handler(fake):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def chunk(self, data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def do_GET(self):
            u = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(u.query)
            if fake.force_status:
                return self.reply(fake.force_status, {"kind": "Status", "code": fake.force_status})
            if self.headers.get("Authorization") != "Bearer " + fake.token:
                fake.unauthorized += 1
                return self.reply(401, {"kind": "Status", "code": 401, "message": "Unauthorized"})
            if u.path != "/api/v1/namespaces/default/pods":
                return self.reply(404, {"kind": "Status", "code": 404})
            field = q.get("fieldSelector", [""])[0]
            label = q.get("labelSelector", [""])[0]
            fake.selectors.append((field, label))
            if q.get("watch") != ["true"]:
                fake.lists += 1
                items = [p for p in fake.pods.values() if fake.matches(p, field, label)]
                return self.reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "100"},
                                        "items": items})
            fake.watches += 1
            gen = fake.watches  # a newer watch retires this one
            if fake.empty_watch:  # a server that ends every watch at once
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if fake.first_watch_410:
                fake.first_watch_410 = False
                return self.reply(410, {"kind": "Status", "code": 410, "reason": "Expired"})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            deadline = time.time() + 30
            while time.time() < deadline and not fake.stop.is_set() and fake.watches == gen:
                try:
                    ev = fake.events.get(timeout=0.1)
                except queue.Empty:
                    continue
                if ev == "CLOSE":
                    break
                try:
                    self.chunk(ev if isinstance(ev, bytes) else (json.dumps(ev) + "\n").encode())
                except OSError:
                    return
            try:
                self.chunk(b"")
            except OSError:
                pass
    return H


def serve(fake, tmp):
    crt, key = os.path.join(tmp, "api.crt"), os.path.join(tmp, "api.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", crt, "-days", "1", "-subj", "/CN=fake-kube-apiserver",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(fake))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, crt


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()


def targets(mport):
    return json.loads(get(mport, "/targets"))["activeTargets"]


def wait(pred, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if pred():
                return True
        except Exception:
            pass
        time.sleep(0.2)
    return False


def live_watch(fake, after):
    """Waits for a watch newer than @after; older handlers retire within 0.1 s."""
    ok = wait(lambda: fake.watches > after)
    time.sleep(0.3)
    return ok


def resource_attrs(block):
    out = {}
    part = block.split("Resource attributes:")[1].split("ScopeProfiles")[0]
    for line in part.splitlines():
        line = line.strip()
        if line.startswith("-> "):
            k, v = line[3:].split(": ", 1)
            out[k] = v
    return out


def run(res, exe_port, in_cluster):
    tmp = tempfile.mkdtemp(prefix="pg-k8s-")
    fake = Fake(tmp, exe_port)
    srv, crt = serve(fake, tmp)
    api = srv.server_address[1]
    tokf = os.path.join(tmp, "token")
    with open(tokf, "w") as f:
        f.write("t0\n")
    env = {"K8S_NODE_NAME": "node-a"}
    tag = "in-cluster" if in_cluster else "api_server"
    if in_cluster:
        sa = os.path.join(tmp, "sa")
        os.makedirs(sa)
        os.rename(tokf, os.path.join(sa, "token"))
        tokf = os.path.join(sa, "token")
        with open(os.path.join(sa, "ca.crt"), "w") as f:
            f.write(open(crt).read())
        env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(api),
                   PPROFGATE_K8S_SERVICEACCOUNT_DIR=sa)
        server = ""
    else:
        server = (f"              api_server: https://127.0.0.1:{api}\n"
                  f"              tls_config: {{ca_file: {crt}}}\n"
                  f"              authorization: {{credentials_file: {tokf}}}")
    try:
        with Gateway(CONFIG.format(server=server), env=env,
                     ready_pattern=r"serving /metrics on [0-9.]+:\d+") as gw:
            mport = int(gw.wait_log(r"serving /metrics on [0-9.]+:(\d+)").group(1))
            ok = wait(lambda: len(targets(mport)) == 1 and fake.lists >= 2)
            t = targets(mport)
            res.check(f"{tag}: 410 on the first watch forces a relist", fake.lists >= 2, fake.lists)
            res.check(f"{tag}: only this node's Running pod on the pprof port is a target",
                      ok and len(t) == 1 and t[0]["labels"].get("k8s.pod.name") == "a", t)
            dropped = json.loads(get(mport, "/targets"))["droppedTargets"]
            res.check(f"{tag}: relabeling dropped the http port and the Pending pod's ports",
                      dropped == 3, dropped)
            res.check(f"{tag}: selectors sent on list and watch",
                      ("spec.nodeName=node-a", "app.kubernetes.io/name=my-go-service")
                      in fake.selectors, fake.selectors[:3])
            got = wait(lambda: "k8s.pod.name: Str(a)" in open(gw.debug_path).read())
            res.check(f"{tag}: pod a scraped into the exporter", got, gw.log()[-1500:])
            blocks = [b for b in open(gw.debug_path).read().split("ResourceProfiles #")[1:]
                      if "k8s.pod.name: Str(a)" in b]
            if blocks:
                attrs = resource_attrs(blocks[0])
                res.check(f"{tag}: exactly the guide's attribute set", set(attrs) == GUIDE_ATTRS,
                          sorted(attrs))
                res.check(f"{tag}: service.instance.id is <pod uid>/<container>",
                          attrs.get("service.instance.id") == "Str(uid-a/app)", attrs)
                res.check(f"{tag}: k8s.node.name", attrs.get("k8s.node.name") == "Str(node-a)")
            # Watch events.
            res.check(f"{tag}: watch running", live_watch(fake, 1))
            fake.events.put({"type": "ADDED", "object": pod("c", "node-a", exe_port, rv="101")})
            res.check(f"{tag}: ADDED pod c becomes a target",
                      wait(lambda: {x["labels"]["k8s.pod.name"] for x in targets(mport)} == {"a", "c"}))
            fake.events.put({"type": "MODIFIED",
                             "object": pod("a", "node-a", exe_port, phase="Succeeded", rv="102")})
            res.check(f"{tag}: MODIFIED phase Succeeded drops pod a",
                      wait(lambda: {x["labels"]["k8s.pod.name"] for x in targets(mport)} == {"c"}))
            fake.events.put({"type": "BOOKMARK", "object": {"kind": "Pod",
                                                            "metadata": {"resourceVersion": "103"}}})
            fake.events.put({"type": "DELETED", "object": pod("c", "node-a", exe_port, rv="104")})
            res.check(f"{tag}: DELETED pod c removes it", wait(lambda: targets(mport) == []))
            series = [ln for ln in get(mport, "/metrics").splitlines()
                      if ln.startswith(("pprofgate_scrape_target_up", "pprofgate_scrape_requests_total"))]
            res.check(f"{tag}: and the per-target series of the deleted pods", series == [], series)
            fake.pods["a"] = pod("a", "node-a", exe_port)  # back to Running for the relist
            lists, watches = fake.lists, fake.watches
            fake.events.put({"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                         "message": "too old resource version"}})
            res.check(f"{tag}: in-stream ERROR 410 relists",
                      wait(lambda: fake.lists > lists and len(targets(mport)) == 1))
            # Token rotation: the old token is refused from now on.
            with open(tokf + ".new", "w") as f:
                f.write("t1\n")
            os.rename(tokf + ".new", tokf)
            fake.token = "t1"
            live_watch(fake, watches)
            lists, watches = fake.lists, fake.watches
            fake.events.put(b'{"type": "ADDED", "object": {garbage\n')
            res.check(f"{tag}: garbage watch line counted as a discovery failure",
                      wait(lambda: "pprofgate_scrape_k8s_failures_total" in get(mport, "/metrics")
                           and 'reason="parse"' in get(mport, "/metrics")), gw.log()[-1000:])
            res.check(f"{tag}: after backoff, relist with the rotated token",
                      wait(lambda: fake.lists > lists, timeout=8), (fake.lists, fake.unauthorized))
            res.check(f"{tag}: targets intact after the relist", len(targets(mport)) == 1)
            # A watch line that never ends: capped at 16 MiB, counted, relisted.
            live_watch(fake, watches)
            lists, watches = fake.lists, fake.watches
            fake.events.put(b"x" * (17 << 20))
            res.check(f"{tag}: a never-ending watch line is counted (too_long)",
                      wait(lambda: 'reason="too_long"' in get(mport, "/metrics"), timeout=15),
                      gw.log()[-2500:])
            res.check(f"{tag}: ... and discovery recovers", wait(lambda: fake.lists > lists))
            # API server errors: 500 then 401; targets stay while it fails.
            live_watch(fake, watches)
            fake.force_status = 500
            fake.events.put("CLOSE")
            res.check(f"{tag}: API server 500 counted",
                      wait(lambda: 'reason="http_5xx"' in get(mport, "/metrics")))
            fake.force_status = None
            fake.token = "t-other"
            res.check(f"{tag}: API server 401 counted",
                      wait(lambda: 'reason="http_401"' in get(mport, "/metrics")))
            res.check(f"{tag}: targets kept while discovery fails", len(targets(mport)) == 1)
            fake.token = "t1"
            lists = fake.lists
            res.check(f"{tag}: discovery recovers after the errors",
                      wait(lambda: fake.lists > lists, timeout=12))
            res.check(f"{tag}: scraping never stopped (target up)",
                      targets(mport)[0]["health"] == "up")
            # Watches that end at once are resumed at most once a second.
            fake.empty_watch = True
            fake.events.put("CLOSE")
            time.sleep(0.5)
            w0 = fake.watches
            time.sleep(3)
            res.check(f"{tag}: an instantly ending watch does not spin",
                      1 <= fake.watches - w0 <= 5, fake.watches - w0)
            fake.empty_watch = False
            fake.stop.set()
            res.check(f"{tag}: clean exit", gw.stop() == 0, gw.log()[-1500:])
    finally:
        fake.stop.set()
        srv.shutdown()


def main():
    res = Results()
    exe = build_target(res)
    tp, port = start_target(exe)
    try:
        if os.environ.get("K8S_ONLY") != "in-cluster":
            run(res, port, in_cluster=False)
        run(res, port, in_cluster=True)
    finally:
        tp.kill()
        tp.wait()
    res.finish()


if __name__ == "__main__":
    main()
