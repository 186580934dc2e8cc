# SPDX-License-Identifier: Apache-2.0
"""tests/node/grpc_server.mjs, the real OTLP profiles gRPC server the
integration tests export to, as a context manager: its gRPC port, its
control port's /stats, and a wait for a condition on them."""
import json
import os
import subprocess
import time
import urllib.request

from pg_harness import SOURCE_DIR

SERVER = os.path.join(SOURCE_DIR, "tests", "node", "grpc_server.mjs")


class GrpcServer:
    def __init__(self, *args):
        self.proc = subprocess.Popen(["node", SERVER, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.port = info["grpc_port"]
        self.control = info["control_port"]

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.control}{path}", timeout=10) as r:
            return json.loads(r.read())

    def stats(self):
        return self.get("/stats")

    def wait(self, cond, timeout=20):
        """Polls /stats until @cond holds or @timeout seconds pass; the last stats."""
        end = time.time() + timeout
        while time.time() < end:
            s = self.stats()
            if cond(s):
                return s
            time.sleep(0.1)
        return self.stats()

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
