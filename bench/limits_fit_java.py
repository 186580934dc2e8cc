#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Java's figures for the pprof receiver's `limits` (issue 25 item 2), beside what
bench/limits_fit.py prints for Go and Node: a small Java 17 program (a recursive
parser-like workload, collections, string building, a few threads) runs under JDK Flight
Recorder (`-XX:StartFlightRecording`, settings=profile, stack depth 2048) for SECONDS
(default 8); `jfr print --json --events jdk.ExecutionSample` gives its execution samples.
Counted as a JFR -> pprof conversion (Pyroscope's, one sample per JFR event) makes them:
samples = events, a location per distinct (method, line), a function per distinct method,
strings = distinct names (method, class, file) plus the sample type strings, stack depth
the deepest stack. Prints one row in limits_fit.py's columns (the ones JFR gives).

  python3 bench/limits_fit_java.py [SECONDS]"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from limits_fit import DEFAULTS  # noqa: E402

PROGRAM = r"""
import java.util.*;
import java.util.concurrent.*;

public class Work {
    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    static int depth(int n, Map<String, Integer> m) {
        if (n == 0) { m.merge("k" + (m.size() % 1000), 1, Integer::sum); return m.size(); }
        return depth(n - 1, m) + 1;
    }

    static String build(int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) { b.append(Integer.toHexString(i * 31)).append(','); }
        return b.toString();
    }

    static long sortWork(Random r) {
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < 20000; i++) { l.add(r.nextInt()); }
        Collections.sort(l);
        return l.stream().mapToLong(Integer::longValue).filter(x -> x % 3 == 0).sum();
    }

    public static void main(String[] a) throws Exception {
        long end = System.nanoTime() + Long.parseLong(a[0]) * 1_000_000_000L;
        ExecutorService ex = Executors.newFixedThreadPool(4);
        List<Future<Long>> fs = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            final int k = t;
            fs.add(ex.submit(() -> {
                Random r = new Random(k);
                long s = 0;
                Map<String, Integer> m = new HashMap<>();
                while (System.nanoTime() < end) {
                    switch (k) {
                        case 0: s += fib(25); break;
                        case 1: s += depth(200 + r.nextInt(300), m); break;
                        case 2: s += build(5000).length(); break;
                        default: s += sortWork(r); break;
                    }
                }
                return s;
            }));
        }
        long s = 0;
        for (Future<Long> f : fs) { s += f.get(); }
        ex.shutdown();
        System.out.println(s);
    }
}
"""


def main():
    seconds = sys.argv[1] if len(sys.argv) > 1 else "8"
    with tempfile.TemporaryDirectory(prefix="pg-jfr-") as tmp:
        with open(os.path.join(tmp, "Work.java"), "w") as f:
            f.write(PROGRAM)
        subprocess.run(["javac", "Work.java"], cwd=tmp, check=True)
        rec = os.path.join(tmp, "rec.jfr")
        subprocess.run(["java", "-XX:FlightRecorderOptions:stackdepth=2048",
                        f"-XX:StartFlightRecording=settings=profile,filename={rec}",
                        "-cp", tmp, "Work", seconds], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "2048", "--events",
                              "jdk.ExecutionSample", rec],
                             check=True, capture_output=True, text=True).stdout
    events = json.loads(out)["recording"]["events"]
    locs, funcs, strings = set(), set(), {"", "cpu", "nanoseconds", "samples", "count"}
    depth = 0
    for e in events:
        frames = e["values"]["stackTrace"]["frames"]
        depth = max(depth, len(frames))
        for fr in frames:
            m = fr["method"]
            cls = m["type"]["name"]
            name = f"{cls}.{m['name']}"
            funcs.add((name, m["descriptor"]))
            locs.add((name, m["descriptor"], fr.get("lineNumber", 0)))
            strings.update((name, cls.rsplit(".", 1)[-1] + ".java"))
    m = {"samples": len(events), "locations": len(locs), "functions": len(funcs),
         "strings": len(strings), "stack_depth": depth}
    keys = list(m)
    print(f"Java 17 JFR execution samples, {seconds} s, 4 busy threads (settings=profile, "
          f"stackdepth 2048)")
    print("| profile | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    print("| Java JFR (jdk.ExecutionSample) | " + " | ".join(str(m[k]) for k in keys) + " |")
    print("| default | " + " | ".join(str(DEFAULTS[k]) for k in keys) + " |")
    print("| headroom | " + " | ".join(f"{DEFAULTS[k] / max(m[k], 1):.0f}x" for k in keys) + " |")


if __name__ == "__main__":
    main()
