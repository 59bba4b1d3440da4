#!/usr/bin/env python3
"""End-to-end: svmrun -n 2 --stats on stats_loop, then svm-plot.

Checks the merged JSON's shape and plausibility, never timings: one record
per program thread, each thread's categories summing to its elapsed time
(loosely), barriers and remote acquires counted, phases reported, and that
svm-plot writes a PNG. Prints one line per check and a summary line.
"""
import argparse
import json
import os
import subprocess
import sys

import e2e
from e2e import check

args = e2e.parse_args("--plot", "--gather-program", "--rotate-program", "--claim-program", "--block-end-program")

THREADS = 4

png = os.path.join(args.workdir, "stats_e2e.png")
p, out = e2e.run_stats(args, "stats_e2e", ["-n", "2", "-t", "2"], [str(THREADS)])
if os.path.exists(png):
    os.remove(png)
sys.stderr.write(p.stderr)
if not check("svmrun exits 0 and the program says ok", p.returncode == 0 and p.stdout.startswith("ok"),
             "rc %d, stdout %r" % (p.returncode, p.stdout)):
    sys.exit(1)
check("summary printed", "protocol efficiency" in p.stderr and "barrier: wait" in p.stderr, p.stderr)
if not check("--stats file written", os.path.exists(out)):
    sys.exit(1)
with open(out) as f:
    stats = json.load(f)

app = [t for t in stats["threads"] if t["kind"] == "app"]
handlers = [t for t in stats["threads"] if t["kind"] == "handler"]
check("one record per program thread (main + %d)" % THREADS, len(app) == THREADS + 1, str(len(app)))
check("unique thread numbers", len({(t["node"], t["thread"]) for t in app}) == len(app))
check("threads on both nodes", {t["node"] for t in app} == {0, 1}, str({t["node"] for t in app}))
check("one handler per node", len(handlers) == 2, str(len(handlers)))
check("no missing nodes", stats["missing_nodes"] == [], str(stats["missing_nodes"]))
for t in app + handlers:
    total = sum(t["time_ns"].values())
    el = t["elapsed_ns"]
    check("n%d.%s%d: categories sum to elapsed" % (t["node"], t["kind"], t["thread"]),
          el > 0 and abs(total - el) <= 0.05 * el + 1e6, "sum %d elapsed %d" % (total, el))
    check("n%d.%s%d: within the job" % (t["node"], t["kind"], t["thread"]),
          el <= stats["elapsed_ns"], "%d > %d" % (el, stats["elapsed_ns"]))
workers = [t for t in app if t["thread"] != 0]
# main only creates and joins (the runtime's birth and death locks, remote
# for the workers of node 1): that is thread time, not lock time.
main = [t for t in app if t["thread"] == 0][0]
check("main: create/join charged to threads, no lock time",
      main["time_ns"].get("threads", 0) > 0 and
      main["time_ns"].get("lock_protocol", 0) + main["time_ns"].get("lock_wait", 0) == 0, str(main["time_ns"]))
# 20 locks of mu, the thread's birth lock and its death lock: no more (a
# thread started for another node named itself through the runtime's own
# mutex, which went to the DSM as a program lock: 23 on node 1).
check("workers counted their acquires",
      all(t["counters"]["acquires"] == 22 for t in workers), str([t["counters"] for t in workers]))
check("workers counted their barriers",
      all(t["counters"]["barriers"] == 40 for t in workers), str([t["counters"] for t in workers]))
check("workers spent time at barriers",
      all(t["time_ns"]["barrier_wait"] + t["time_ns"]["barrier_protocol"] > 0 for t in workers))
c = stats["counters"]
check("barriers > 0", c["barriers"] > 0, str(c["barriers"]))
check("remote acquires > 0", c["remote_acquires"] > 0, str(c["remote_acquires"]))
check("faults > 0", c["read_faults"] + c["write_faults"] > 0)
check("messages by type", c["messages_sent"] > 0 and "lock-request" in c["messages"], str(c["messages"]))
check("diffs sent", c["diffs"] > 0 and c["diff_bytes"] > 0 and c["diff_runs"] > 0)
check("masked diffs counted", 0 <= c.get("masked_diffs", -1) <= c["diffs"], str(c.get("masked_diffs")))
# main waits in pthread_join, outside the workers' barriers: no barrier has
# every live thread, so none may drop notices (modes_e2e sees the opposite).
check("no notices collected", c["notices_collected"] == 0, str(c["notices_collected"]))
# Node 1's two workers meet at 40 barrier episodes: one arrival each alone in
# the first, then one a node (Node::kGather: 41). A waiting sibling that the
# runtime reports without (it waits for the lock, or ran 5 ms past) adds one:
# allow some, but not an arrival a thread (80).
arrive = stats["per_node"][1]["counters"]["messages"].get("barrier-arrive", {}).get("count", 0)
check("node 1 gathers its threads' barrier arrivals", 41 <= arrive <= 60, str(arrive))
check("per-node counters", len(stats["per_node"]) == 2)
check("per node: how its threads waited", all(isinstance(n.get("waiting_threads_spin"), bool) and
                                              isinstance(n.get("host_wake_ns"), int) for n in stats["per_node"]),
      str([{k: v for k, v in n.items() if k != "counters"} for n in stats["per_node"]]))
eff = stats["summary"]["efficiency"]
check("efficiency in [0, 1]", 0 <= eff <= 1, str(eff))
check("phases work and locked", set(stats["phases"]) == {"work", "locked"}, str(list(stats["phases"])))
check("every worker has both phases", all(len(t["phases"]) == 2 and all(p["count"] == 20 for p in t["phases"])
                                          for t in workers), str([t["phases"] for t in workers]))

# The job's configuration travels with the numbers.
job = stats.get("job", {})
check("job: program and arguments", job.get("program") == args.program and job.get("args") == [str(THREADS)],
      str(job))
check("job: path resolved", job.get("path") == os.path.realpath(args.program), str(job.get("path")))
check("job: nodes x threads", job.get("nodes") == 2 and job.get("threads_per_node") == 2, str(job))
check("job: mode, fault backend, transport",
      (job.get("mode"), job.get("fault"), job.get("transport")) == ("base", "uffd", "shm"), str(job))
check("job: local (no hosts)", job.get("hosts") == [], str(job.get("hosts")))
check("job: svm version and git commit", bool(job.get("svm_version")) and bool(job.get("git_commit")), str(job))
check("summary names the job", "job: %s %d | 2 nodes x 2 threads | base, uffd, shm" %
      (os.path.basename(args.program), THREADS) in p.stderr, p.stderr)


# A barrier participant of node 0 waits in a condition while the others meet
# (gather_elsewhere.c): the runtime tells the Node (WaitingElsewhere), so no
# episode waits out kGatherNs for it (without: 182 of 200 rounds did). A
# round may still give up when w1 runs late on a loaded machine.
ROUNDS = 200
g_args = argparse.Namespace(**{**vars(args), "program": args.gather_program})
pg, outg = e2e.run_stats(g_args, "stats_e2e_gather", ["-n", "2", "-t", "2"], [str(ROUNDS)])
check("gather: svmrun exits 0 and the program says ok", pg.returncode == 0 and pg.stdout.startswith("ok"),
      "rc %d, stdout %r, stderr %r" % (pg.returncode, pg.stdout, pg.stderr))
if os.path.exists(outg):
    with open(outg) as f:
        given_up = json.load(f)["per_node"][0]["counters"]["gathers_given_up"]
    check("gather: a participant waiting in a condition is not waited for", given_up <= ROUNDS // 10,
          "%d of %d rounds gave up" % (given_up, ROUNDS))
else:
    check("gather: --stats file written", False, outg)

# --barrier-fanout reaches the nodes: with 1 (a chain 3 -> 2 -> 1 -> 0)
# nodes 1 and 2 relay every release of stats_loop's barriers (every thread
# in each); with the default (8: flat up to 9 nodes) only node 0 sends them.
TREE_THREADS = 3
t_args = argparse.Namespace(**{**vars(args), "program": args.program})
for fanout, relays in (("1", True), (None, False)):
    flags = ["-n", "4", "-t", "1"] + (["--barrier-fanout", fanout] if fanout else [])
    pt, outt = e2e.run_stats(t_args, "stats_e2e_tree_%s" % (fanout or "default"), flags, [str(TREE_THREADS)])
    name = "fanout %s" % (fanout or "default")
    if not check(name + ": svmrun exits 0 and the program says ok", pt.returncode == 0 and pt.stdout.startswith("ok"),
                 "rc %d, stdout %r, stderr %r" % (pt.returncode, pt.stdout, pt.stderr[-2000:])):
        continue
    with open(outt) as f:
        sent = {n["node"]: n["counters"]["messages"].get("barrier-release", {}).get("count", 0)
                for n in json.load(f)["per_node"]}
    check(name + ": releases sent by " + ("nodes 0-2" if relays else "node 0 only"),
          sent[0] > 0 and (sent[1] > 0 and sent[2] > 0 if relays else sent[1] == sent[2] == sent[3] == 0), str(sent))

# A barrier whose partners change (barrier_rotate.c: main meets the worker
# of node 1, 2, 3 in turn and each checks what the other wrote). The
# workers wait for their round on a condition, or read it from a file
# between sleeps (a wait the runtime cannot see). Flat (the default on 4
# nodes): correct, and no gather waits out kGatherNs (node 0 gathers only
# main, the others report their worker when it comes). As a chain
# (--barrier-fanout 1: 3 -> 2 -> 1 -> 0): correct too, with no release
# refused (a worker that learnt its round from the file before its node had
# the last release was once woken by it, a barrier early); a node holds its
# child's arrival for its own worker of the last episode unless the runtime
# sees that worker wait elsewhere, so with the file it waits until the
# handler thread gives up (no thread of that node is in the barrier: without
# the handler's give-up the job hangs). Holds for a child that took part
# last time are given up in both: per three rounds 2 give-ups with
# conditions, up to 4 with the file (34-37 in 30 rounds here against 18;
# doc/locks.md, "Barriers: a tree of nodes").
ROT_ROUNDS = 30
r_args = argparse.Namespace(**{**vars(args), "program": args.rotate_program})
turn_file = os.path.join(args.workdir, "barrier_rotate.turn")
given_up = {}
for fanout in (None, "1"):
    for how in ("cond", "file"):
        if os.path.exists(turn_file):
            os.remove(turn_file)
        name = "rotate %s%s" % (how, ", fanout " + fanout if fanout else "")
        flags = ["-n", "4", "-t", "1"] + (["--barrier-fanout", fanout] if fanout else [])
        pr, outr = e2e.run_stats(r_args, "stats_e2e_rotate_%s_%s" % (how, fanout or "default"), flags,
                                 [str(ROT_ROUNDS), how, turn_file])
        if not check(name + ": svmrun exits 0 and the program says ok",
                     pr.returncode == 0 and pr.stdout.startswith("ok"),
                     "rc %d, stdout %r, stderr %r" % (pr.returncode, pr.stdout, pr.stderr[-2000:])):
            continue
        check(name + ": no message refused", "refused" not in pr.stderr, pr.stderr[-2000:])
        with open(outr) as f:
            given_up[fanout, how] = sum(n["counters"]["gathers_given_up"] for n in json.load(f)["per_node"])
        if not fanout:
            check(name + ": no gather given up", given_up[fanout, how] <= ROT_ROUNDS // 10,
                  "%d give-ups in %d rounds" % (given_up[fanout, how], ROT_ROUNDS))
if ("1", "cond") in given_up and ("1", "file") in given_up:
    check("rotate, fanout 1: a worker waiting on a condition is not held for",
          given_up["1", "cond"] <= ROT_ROUNDS * 3 // 4, "%d give-ups in %d rounds" % (given_up["1", "cond"], ROT_ROUNDS))
    check("rotate, fanout 1: a worker the runtime cannot see is held for",
          given_up["1", "file"] >= given_up["1", "cond"] + ROT_ROUNDS // 6,
          "%d give-ups in %d rounds (cond: %d)" % (given_up["1", "file"], ROT_ROUNDS, given_up["1", "cond"]))

# First touch by CAS (rf and up over shm): a sweep's claims take pages
# ahead only when they win, and only up to a page another node holds
# (claim_ahead.c). Taking them whatever the claim's fate gave node 0 23 of
# node 1's pages, which node 1 then diffed every round (1,173 diffs).
CLAIM_ROUNDS = 50
c_args = argparse.Namespace(**{**vars(args), "program": args.claim_program})
pc, outc = e2e.run_stats(c_args, "stats_e2e_claim", ["-n", "2", "-t", "1", "--mode", "rf", "--transport", "shm"],
                         [str(CLAIM_ROUNDS)])
check("claim: svmrun exits 0 and the program says ok", pc.returncode == 0 and pc.stdout.startswith("ok"),
      "rc %d, stdout %r, stderr %r" % (pc.returncode, pc.stdout, pc.stderr))
if os.path.exists(outc):
    with open(outc) as f:
        per_node = {n["node"]: n["counters"] for n in json.load(f)["per_node"]}
    check("claim: the claims were CASes", per_node[0]["home_claims"] > 0, str(per_node[0]))
    check("claim: node 1 is home of every page it writes (no diff)", per_node[1]["diffs"] == 0,
          "%d diffs" % per_node[1]["diffs"])
else:
    check("claim: --stats file written", False, outc)

# A sweep through a fresh large block claims ahead up to the first page with
# a home; the heap homes the page after the block at its allocator
# (HeapOptions::mark_block_ends), so the sweep stops at the block's end and
# the next block is its allocator's (block_end.c). Without, node 0 diffed 24
# pages of its block to node 1 every round (base and rf).
e_args = argparse.Namespace(**{**vars(args), "program": args.block_end_program})
for mode in ("base", "rf"):
    pe, oute = e2e.run_stats(e_args, "stats_e2e_block_end_" + mode,
                             ["-n", "2", "-t", "1", "--mode", mode, "--transport", "shm"], [str(CLAIM_ROUNDS)])
    check("block end, %s: svmrun exits 0 and the program says ok" % mode,
          pe.returncode == 0 and pe.stdout.startswith("ok"),
          "rc %d, stdout %r, stderr %r" % (pe.returncode, pe.stdout, pe.stderr))
    if os.path.exists(oute):
        with open(oute) as f:
            per_node = {n["node"]: n["counters"] for n in json.load(f)["per_node"]}
        check("block end, %s: each node is home of the block it writes" % mode,
              per_node[0]["diffs"] == 0 and per_node[1]["diffs"] == 0,
              "diffs %d / %d" % (per_node[0]["diffs"], per_node[1]["diffs"]))
    else:
        check("block end, %s: --stats file written" % mode, False, oute)

# A job of one node synchronises through glibc (libsvm/sync.h NativeSync):
# the program's locks and barriers are no protocol events, but their waits
# are still charged and counted per thread.
p1, out1 = e2e.run_stats(args, "stats_e2e_one_node", ["-n", "1", "-t", "4"], [str(THREADS)])
check("one node: svmrun exits 0 and the program says ok", p1.returncode == 0 and p1.stdout.startswith("ok"),
      "rc %d, stdout %r, stderr %r" % (p1.returncode, p1.stdout, p1.stderr))
if os.path.exists(out1):
    with open(out1) as f:
        one = json.load(f)
    w1 = [t for t in one["threads"] if t["kind"] == "app" and t["thread"] != 0]
    c1 = one["counters"]
    check("one node: no protocol barrier", c1["barriers"] == 0, str(c1["barriers"]))
    check("one node: no protocol acquire of the program's mutex (only the runtime's own)",
          c1["local_acquires"] < 20 * THREADS, str(c1["local_acquires"]))
    check("one node: workers counted their acquires and barriers",
          len(w1) == THREADS and all(t["counters"]["acquires"] == 22 and t["counters"]["barriers"] == 40
                                     for t in w1), str([t["counters"] for t in w1]))
    check("one node: barrier waits charged", all(t["time_ns"]["barrier_wait"] > 0 for t in w1),
          str([t["time_ns"] for t in w1]))
else:
    check("one node: --stats file written", False, out1)


def charged_without_work(stats):
    """Threads charged twin or diff time on a node that made no twin or diff."""
    bad = []
    per_node = {n["node"]: n["counters"] for n in stats["per_node"]}
    for t in stats["threads"]:
        node = per_node[t["node"]]
        for cat, counter in (("twin", "twins"), ("diff", "diffs")):
            if node.get(counter, 0) == 0 and t["time_ns"].get(cat, 0) > 0:
                bad.append("n%d.%s%d: %s %d ns with 0 %s" % (t["node"], t["kind"], t["thread"], cat,
                                                            t["time_ns"][cat], counter))
    return bad


check("twin/diff time only where twins/diffs were made", not charged_without_work(stats),
      "; ".join(charged_without_work(stats)))

# --home block: node 0 is home of every page the program writes, so its
# intervals close over home pages only and make no diff; none of that may
# be charged to diff (it was, as "overhead: diff" with 0 diffs).
blk = os.path.join(args.workdir, "stats_e2e_block.json")
r = subprocess.run([args.svmrun, "-n", "2", "-t", "2", "--home", "block", "--timeout", "60", "--stats", blk,
                    "--preload", args.preload, "--", args.program, str(THREADS)], capture_output=True, text=True,
                   timeout=90)
if check("--home block job runs", r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-2000:]):
    with open(blk) as f:
        block = json.load(f)
    n0 = [n["counters"] for n in block["per_node"] if n["node"] == 0][0]
    check("block: node 0 closed intervals without a diff", n0["intervals"] > 0 and n0["diffs"] == 0,
          "intervals %d diffs %d" % (n0["intervals"], n0["diffs"]))
    check("block: no diff time without diffs", not charged_without_work(block),
          "; ".join(charged_without_work(block)))

# libsvm reads --net-latency under svmrun's name (SVM_NET_LATENCY): with
# 20 ms injected per message a remote fetch waits >= 40 ms (none does
# without it).
lat = os.path.join(args.workdir, "stats_e2e_latency.json")
r = subprocess.run([args.svmrun, "-n", "2", "--timeout", "100", "--net-latency", "20ms", "--stats", lat,
                    "--preload", args.preload, "--", args.program, "2"], capture_output=True, text=True,
                   timeout=120)
if check("job with --net-latency 20ms runs", r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-2000:]):
    with open(lat) as f:
        slow = json.load(f)
    waits = [t["time_ns"].get("data_wait", 0) for t in slow["threads"] if t["kind"] == "app"]
    check("the nodes injected the latency (a data wait >= 40 ms)",
          slow["counters"]["fetches"] > 0 and max(waits) >= 40e6,
          "fetches %d, data waits %s" % (slow["counters"]["fetches"], waits))
    check("job records the latency", slow["job"]["net_latency_ns"] == 20000000, str(slow["job"]))

q = subprocess.run([args.plot, out, "-o", png], capture_output=True, text=True, timeout=120)
if q.returncode == 3:  # svm-plot: no matplotlib
    print("%-50s skipped [python3-matplotlib not installed]" % "svm-plot writes a PNG")
else:
    ok = q.returncode == 0 and os.path.exists(png)
    if ok:
        with open(png, "rb") as f:
            ok = f.read(8) == b"\x89PNG\r\n\x1a\n"
    check("svm-plot writes a PNG", ok, q.stderr)
    e = subprocess.run([args.plot, out, "-o", png, "--explain"], capture_output=True, text=True, timeout=120)
    lines = e.stdout.splitlines()
    check("plot title: program and configuration",
          "title: %s %d | 2 nodes x 2 threads | base, uffd, shm" % (os.path.basename(args.program), THREADS)
          in lines, e.stdout)
    split = [l for l in lines if l.startswith("time split: ")]
    parts = [int(w) for w in split[0].replace(",", " ").split() if w.isdigit()] if split else []
    check("plot splits elapsed into start-up, threads, teardown",
          len(parts) == 3 and sum(parts) == stats["elapsed_ns"] and parts[1] > 0, e.stdout)
    panel = lines.index([l for l in lines if l.startswith("panel: time per thread")][0]) if e.returncode == 0 else 0
    cats = lines[panel + 1] if e.returncode == 0 else ""
    check("plot draws no idle time", "idle" not in cats and "handler" in cats, cats)
    check("plot groups bars by node, handler (busy) last",
          e.returncode == 0 and lines[panel + 2].startswith("  node 0: t0 (main)")
          and lines[panel + 2].endswith("handler (busy)") and lines[panel + 3].startswith("  node 1: "),
          e.stdout)

print("stats_e2e: %d failed" % len(e2e.failures))
sys.exit(1 if e2e.failures else 0)
