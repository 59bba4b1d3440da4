#!/usr/bin/env python3
"""End-to-end: the counters prove each mode's row (DESIGN.md, "Modes").

Runs stats_loop (barriers, a lock, shared writes: fetches, diffs and lock
hand-offs across nodes) under svmrun -n 2 -t 2 --stats in each mode, checks
the program's answer, and checks from the merged JSON's handler invocations
by kind that the kinds a mode offloads to the NIC are exactly zero, and that
base does have them (so zero is not the counter's default); and from the
one-sided counters that each mode did use its NIC operations. main works as
thread 0, so every barrier holds every live thread and write notices are
collected in every mode.

Locks in nil: every lock's home is a word at the home's NIC (doc/locks.md),
the runtime's own (a thread's birth and death locks, which order
pthread_create and pthread_join) included, so no home forwards a request:
each NIC swap sends one request, straight to the holder, and each request
gets one grant. The program starts threads on the other node (spawn
requests), so those locks are exercised.

The NIC's own counters (shm only; zero on other transports): every
message is at least one SEND, the rings gave out no more than was sent,
and one-sided operations ran on peers' memory in every mode (the lock
nudges from base on).
"""
import json
import os
import sys

import e2e
from e2e import check

args = e2e.parse_args(modes="base,dw,rf,dd,nil", transport="auto")

THREADS = 4
# Handler kinds each mode must never run (cumulative, as the modes are).
# First touch (svmrun's default) claims homes by CAS from rf on: no
# directory handler.
OFFLOADED = {"base": [], "dw": [], "rf": ["fetch", "directory"], "dd": ["fetch", "diff", "directory"],
             "nil": ["fetch", "diff", "directory"]}


def run(mode):
    """The merged counters and the transport the job used, or None."""
    flags = ["-n", "2", "-t", "2", "--mode", mode, "--transport", args.transport]
    p, out = e2e.run_stats(args, "modes_e2e_%s_%s" % (args.transport, mode), flags, [str(THREADS), "main-works"])
    if not check("%s: svmrun exits 0 and the program says ok" % mode,
                 p.returncode == 0 and p.stdout.startswith("ok"),
                 "rc %d, stdout %r, stderr tail %r" % (p.returncode, p.stdout, p.stderr[-2000:])):
        return None
    if not check("%s: --stats file written" % mode, os.path.exists(out)):
        return None
    with open(out) as f:
        stats = json.load(f)
    check("%s: no missing nodes" % mode, stats["missing_nodes"] == [], str(stats["missing_nodes"]))
    return stats["counters"], stats["job"]["transport"]


# One-sided counters each mode must (True) or must not (False) use.
USES = {"remote_reads": "rf", "direct_diffs": "dd", "notices_deposited": "dw", "nic_locks": "nil",
        "home_claims": "rf", "nic_lock_claims": "nil", "nic_tail_swaps": "nil"}
ORDER = ["base", "dw", "rf", "dd", "nil"]

modes = args.modes.split(",")
runs = {m: run(m) for m in modes}
counters = {m: r[0] for m, r in runs.items() if r}
transport = {m: r[1] for m, r in runs.items() if r}
base = counters.get("base")
if base is not None:
    for kind in ("fetch", "diff", "lock", "directory"):
        check("base: handler ran for %s" % kind, base["handler"].get(kind, 0) > 0, str(base["handler"]))
for m in counters:
    c, net = counters[m], transport[m]
    h = c["handler"]
    # Over tcp a remote CAS is a message to the NIC thread, so first touch
    # claims homes by message there (NodeConfig::claim_by_cas).
    by_cas = net != "tcp"
    for kind in OFFLOADED[m]:
        if kind == "directory" and not by_cas:
            continue
        check("%s: no handler invocation for %s" % (m, kind), h.get(kind, -1) == 0, str(h))
    if not by_cas and ORDER.index(m) >= ORDER.index("rf"):
        check("%s: tcp: homes claimed by message" % m, h.get("directory", 0) > 0, str(h))
    if m == "nil":
        spawns = c["messages"].get("spawn-request", {}).get("count", 0)
        check("nil: threads started on the other node", spawns > 0, str(spawns))
        requests = c["messages"].get("lock-request", {}).get("count", 0)
        grants = c["messages"].get("lock-grant", {}).get("count", 0)
        check("nil: one request per NIC swap, no forwards", requests == c.get("nic_locks", -1),
              "%d requests, %s swaps" % (requests, c.get("nic_locks")))
        check("nil: one grant per request", grants == requests, "%d grants, %d requests" % (grants, requests))
        swaps, retries = c.get("nic_tail_swaps", -1), c.get("nic_tail_retries", -1)
        check("nil: a swap per NIC lock request, retries among them",
              swaps == requests + retries and 0 <= retries <= swaps, "%d swaps, %d retries" % (swaps, retries))
    nic = {k: c.get(k, -1) for k in ("nic_sends", "nic_drained", "nic_remote_ops", "nic_wakeups")}
    if net == "shm":
        check("%s: shm: a SEND per message at least" % m, nic["nic_sends"] >= c["messages_sent"] > 0,
              "%s, %d messages" % (nic, c["messages_sent"]))
        check("%s: shm: the rings gave out what was sent, no more" % m,
              0 < nic["nic_drained"] <= nic["nic_sends"], str(nic))
        check("%s: shm: one-sided operations on peers' memory" % m, nic["nic_remote_ops"] > 0, str(nic))
        check("%s: shm: wake-ups reported" % m, "nic_wakeups" in c, str(nic))
    else:
        check("%s: %s: the NIC's counters are shm's only" % (m, net),
              all(v == 0 for v in nic.values()), str(nic))
    # main works too, so every live thread is in every barrier: they collect.
    check("%s: notices collected" % m, c.get("notices_collected", 0) > 0, str(c.get("notices_collected")))
    for counter, first in USES.items():
        want = ORDER.index(m) >= ORDER.index(first) and (counter != "home_claims" or by_cas)
        got = c.get(counter, 0)
        check("%s: %s %s" % (m, counter, "counted" if want else "zero"), (got > 0) == want, str(got))

print("modes_e2e: %d failed" % len(e2e.failures))
sys.exit(1 if e2e.failures else 0)
