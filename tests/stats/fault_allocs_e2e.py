#!/usr/bin/env python3
"""End-to-end: the fault path's heap allocations stay few (issue 14).

Runs bench/programs/remote_fault under svmrun -n 2 --stats (node 0 first
touches PAGES pages, node 1 reads each cold: a remote fault per page or per
run) in base and rf over shm, and checks each node's application thread's
`runtime_allocs` per page. Counts, never timings. Before VectorTime kept its
entries inline (and the home its reply body, the directory its pages, the
receiver its best-fitting buffer) these were 1.1-2.6 a page; now about 0.1
(what is left is amortised: page-table blocks, twin slabs, queue chunks,
the statistics report). The bound leaves room for timing to move work
between threads, not for an allocation per fault.
"""
import argparse
import json
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--svmrun", required=True)
ap.add_argument("--preload", required=True)
ap.add_argument("--program", required=True)
ap.add_argument("--workdir", required=True)
args = ap.parse_args()

PAGES = 2000
BOUND = 0.4  # runtime allocations per page, each node's application thread
failures = []

os.makedirs(args.workdir, exist_ok=True)
for mode in ("base", "rf"):
    out = os.path.join(args.workdir, "fault_allocs_%s.json" % mode)
    if os.path.exists(out):
        os.remove(out)
    cmd = [args.svmrun, "-n", "2", "--transport", "shm", "--mode", mode, "--timeout", "60", "--stats", out,
           "--preload", args.preload, "--", args.program, str(PAGES), "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    if p.returncode != 0 or not os.path.exists(out):
        print("%-6s svmrun failed: rc %d\n%s" % (mode, p.returncode, p.stderr))
        failures.append(mode)
        continue
    with open(out) as f:
        stats = json.load(f)
    for t in sorted((t for t in stats["threads"] if t["kind"] == "app"), key=lambda t: t["node"]):
        c = t["counters"]
        per_page = c.get("runtime_allocs", 0) / PAGES
        ok = per_page <= BOUND
        print("%-6s node %d: %5d runtime allocations, %4d read faults, %.3f a page (at most %.1f) %s" %
              (mode, t["node"], c.get("runtime_allocs", 0), c.get("read_faults", 0), per_page, BOUND,
               "ok" if ok else "FAILED"))
        if not ok:
            failures.append("%s/node%d" % (mode, t["node"]))

print("fault_allocs_e2e: %s" % ("ok" if not failures else "FAILED: " + ", ".join(failures)))
sys.exit(1 if failures else 0)
