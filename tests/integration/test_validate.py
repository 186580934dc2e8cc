# SPDX-License-Identifier: Apache-2.0
"""`pprofgate validate` as an operator relies on it: one run lists every
problem of a file (a duplicate key does not stop it), in line order, each
with its full path and, for a misspelling, the closest valid choice; an
unused component and ParseKeyValue on the SDK header under error_mode:
propagate are warnings (exit 0), as the real collector loads such configs."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from pg_harness import BIN, Results  # noqa: E402

# A duplicate key plus 7 other problems, none of which hides another.
BROKEN = """\
receivers:
  pprof:
    server:
      endpont: localhost:4040
processors:
  transfrom:
    error_mode: ignore
  transform:
    error_mode: ignore
    error_mode: propagate
exporters:
  debug:
    verbosity: detialed
  otlp:
    endpoint: "not a host"
service:
  pipelines:
    profiles:
      receivers: [pprof]
      processors: [transform]
      exporters: [debug, otlp, otpl]
  telemetry:
    metrics: {address: "127.0.0.1:0", readers: []}
servce: {}
"""
# (line, the message's text after "file:line:col: ")
WANT = [
    (4, 'receivers::pprof::server: unknown key "endpont" (did you mean "endpoint"?); valid keys: endpoint'),
    (6, 'processors::transfrom: unknown processor type "transfrom" (did you mean "transform"?)'),
    (10, 'processors::transform::error_mode: duplicate key "error_mode" (first at line 9)'),
    (13, 'exporters::debug::verbosity: "detialed" is not one of: basic, normal, detailed '
         '(did you mean "detailed"?)'),
    (15, 'exporters::otlp::endpoint: "not a host": expected host:port'),
    (21, 'service::pipelines::profiles::exporters: exporter "otpl" is not defined under exporters: '
         '(did you mean "otlp"?)'),
    (23, "service::telemetry::metrics: address and readers both set"),
    (24, 'unknown key "servce" (did you mean "service"?)'),
]

SPARE = """\
receivers:
  pprof:
    server: {endpoint: "127.0.0.1:0", include_metadata: true}
processors:
  transform:
    profile_statements:
      - merge_maps(resource.attributes, ParseKeyValue(metadata["otel-resource-attributes"]), "upsert")
exporters:
  debug:
  debug/spare:
    verbosity: detailed
extensions:
  health_check:
service:
  pipelines:
    profiles: {receivers: [pprof], processors: [transform], exporters: [debug]}
"""


def validate(text, name):
    d = tempfile.mkdtemp(prefix="pg-validate-")
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([BIN, "validate", "--config", path], capture_output=True, text=True,
                       timeout=30)
    return r.returncode, r.stdout, r.stderr, path


def main():
    res = Results()
    rc, out, err, path = validate(BROKEN, "broken.yaml")
    msgs = [ln for ln in err.splitlines() if re.match(re.escape(path) + r":\d+:\d+: ", ln)]
    res.check("broken: exit 1", rc == 1, rc)
    res.check("broken: 8 problems reported, the duplicate key among them",
              len(msgs) == 8 and f"{path}: 8 problems" in err, err)
    lines = [int(m[len(path) + 1:].split(":")[0]) for m in msgs]
    res.check("broken: in line order", lines == sorted(lines), lines)
    for line, text in WANT:
        hit = [m for m in msgs if re.match(re.escape(path) + rf":{line}:\d+: " + re.escape(text), m)]
        res.check(f"broken: line {line}: {text[:70]}", len(hit) == 1, msgs)
    res.check("broken: every message names its path",
              all(re.match(re.escape(path) + r":\d+:\d+: [a-z_]+(::[\w/.-]+)*: ", m)
                  or ': unknown key "servce"' in m for m in msgs), msgs)

    rc, out, err, path = validate(SPARE, "spare.yaml")
    res.check("spare components: exit 0 (the collector loads this config too)", rc == 0, (rc, err))
    res.check("spare components: valid, with the warnings counted",
              out.strip() == f"{path}: valid, 3 warnings", out)
    warns = [ln for ln in err.splitlines() if ": warning: " in ln]
    res.check("spare exporter: a warning at its line",
              any(w.startswith(f"{path}:10:3: exporters::debug/spare: warning: exporter "
                               '"debug/spare" is defined but not used, so it is not started')
                  for w in warns), warns)
    res.check("spare extension: a warning saying where to list it",
              any(w.startswith(f"{path}:13:3: extensions::health_check: warning: ")
                  and "service::extensions" in w for w in warns), warns)
    res.check("ParseKeyValue on the SDK header under propagate: a warning naming "
              "ParseResourceAttributes",
              any(w.startswith(f"{path}:7:9: processors::transform: warning: ParseKeyValue(")
                  and "ParseResourceAttributes" in w for w in warns), warns)
    lines = [int(w[len(path) + 1:].split(":")[0]) for w in warns]
    res.check("warnings in line order", lines == sorted(lines), lines)
    res.finish()


if __name__ == "__main__":
    main()
