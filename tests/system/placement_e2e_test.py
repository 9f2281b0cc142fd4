#!/usr/bin/env python3
"""Agents spread by rendezvous hashing, with real processes on loopback:
three nats-servers from deploy/nats/nats-server.conf
(tests/deploy/nats_config_test.py starts them), three real
fabricdiag-collectors joined through them, and one fabricdiag-sim running
300 virtual agents that rank the three collectors as fabricdiag-agent does.

usage: placement_e2e_test.py SOURCE_DIR COLLECTOR SIM

1. Before any fault, every collector holds the agents the placement gives
   it (this file computes it independently: FNV-1a 64 and fmix64 over
   node + 0x00 + entry, the analysis leader weighted 2/3).
2. A collector that does not lead is killed (SIGKILL): its agents move to
   both survivors, each taking 25-75% of them (about 40% the leader, which
   is weighted 2/3, and 60% the other).
3. 30 s later it is restarted on the same port: within 120 s (the target is
   60 s; the time is printed) every collector
   holds a third of the agents (+-10% of all agents) and exactly what the
   placement gives it (+-3), the survivors handing agents back at 1% of
   their streams per second.
4. No report is lost: the simulator's agents replay what a dead collector
   did not acknowledge, and at the end every report sent was acknowledged.

The numbers measured are printed (agents per collector after the kill and
after the restart, time to spread back). Exits 77 (skipped) without
nats-server. Bounded: every wait has a deadline.
"""
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SOURCE_DIR, COLLECTOR, SIM = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "deploy"))
import nats_config_test as nats_cluster  # noqa: E402

IDS = ["col-a", "col-b", "col-c"]
AGENTS = 300
PREFIX = "pl-"
LEADER_WEIGHT = 2.0 / 3.0  # cluster/leader_handoff.h kLeaderWeight
SIM_SECONDS = 210
# The target is 60 s; measured 43-57 s on a quiet machine and over
# 60 s while a build ran, since hand-backs go at 1% of a collector's streams
# per second: the bound is twice the target, the time taken is printed.
SPREAD_BACK_S = 120
MASK = (1 << 64) - 1


def fnv1a64(data):
    h = 14695981039346656037
    for byte in data:
        h ^= byte
        h = (h * 1099511628211) & MASK
    return h


def fmix64(h):
    h ^= h >> 33
    h = (h * 0xff51afd7ed558ccd) & MASK
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) & MASK
    h ^= h >> 33
    return h


def score(node, entry, weight):
    h = fmix64(fnv1a64(node.encode() + b"\0" + entry.encode()))
    u = ((h >> 11) + 0.5) / float(1 << 53)
    return -weight / math.log(u)


def expected_counts(entries, live, leader):
    """Agents per collector id when each node streams to its weighted first
    choice among the `live` ids."""
    counts = {cid: 0 for cid in IDS}
    for i in range(AGENTS):
        node = f"{PREFIX}{i:05d}"
        best = max(live, key=lambda cid: score(
            node, entries[cid], LEADER_WEIGHT if cid == leader else 1.0))
        counts[best] += 1
    return counts


def metrics(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(fabricdiag_[a-z_]+)(\{[^}]*\})? (\S+)$", line)
        if m and m.group(1) not in out:
            out[m.group(1)] = float(m.group(3))
    return out


def wait(what, predicate, deadline_s):
    end = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.5)


class Collectors:
    def __init__(self, work, urls):
        self.work, self.urls = work, urls
        self.grpc = {cid: nats_cluster.free_port() for cid in IDS}
        self.http = {cid: nats_cluster.free_port() for cid in IDS}
        self.procs = {}

    def entry(self, cid):
        return f"127.0.0.1:{self.grpc[cid]}"

    def start(self, cid):
        log = open(os.path.join(self.work, f"{cid}.log"), "ab")
        self.procs[cid] = subprocess.Popen(
            [COLLECTOR, f"--listen=127.0.0.1:{self.grpc[cid]}",
             f"--http_listen=127.0.0.1:{self.http[cid]}",
             f"--state_dir={self.work}/state-{cid}", f"--nats={self.urls}",
             f"--collector_id={cid}", "--nats_replicas=3"],
            stdout=log, stderr=subprocess.STDOUT)

    def kill(self, cid):
        p = self.procs.pop(cid)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=15)

    def streams(self, cid):
        return metrics(self.http[cid]).get(
            "fabricdiag_ingest_connected_streams")

    def counts(self, ids):
        return {cid: self.streams(cid) for cid in ids}

    def leader(self):
        for cid in self.procs:
            if metrics(self.http[cid]).get(
                    "fabricdiag_cluster_analysis_leader") == 1:
                return cid
        return None

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def settled(collectors, ids, want, slack):
    """The counts when each is within `slack` of `want`, else None."""
    counts = collectors.counts(ids)
    if all(counts[c] is not None and abs(counts[c] - want[c]) <= slack
           for c in ids):
        return counts
    return None


def main():
    nats = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if os.access("/usr/sbin/nats-server", os.X_OK)
        else None)
    if nats is None:
        print("SKIP: nats-server not found (apt-get install nats-server)")
        return 77
    work = tempfile.mkdtemp(prefix="placement-e2e-")
    procs = []
    collectors = None
    sim = None
    try:
        with open(f"{SOURCE_DIR}/deploy/nats/nats-server.conf",
                  encoding="utf-8") as f:
            conf_text = f.read()
        nats_ports = nats_cluster.start_servers(nats, conf_text, work, procs)
        if nats_cluster.wait_meta_leader(work, nats_ports, procs) is None:
            raise AssertionError("; ".join(nats_cluster.FAILURES))
        urls = ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in nats_ports)
        collectors = Collectors(work, urls)
        for cid in IDS:
            collectors.start(cid)
        wait("three members everywhere, one leader", lambda: all(
            metrics(collectors.http[c]).get("fabricdiag_cluster_members") == 3
            for c in IDS) and collectors.leader(), 90)
        leader = collectors.leader()
        entries = {cid: collectors.entry(cid) for cid in IDS}
        sim_log = open(os.path.join(work, "sim.log"), "wb")
        sim = subprocess.Popen(
            [SIM, f"--virtual_agents={AGENTS}",
             f"--virtual_agent_prefix={PREFIX}",
             f"--duration={SIM_SECONDS}s",
             "--collector=" + ",".join(entries[c] for c in IDS)],
            stdout=sim_log, stderr=subprocess.STDOUT)
        start = time.monotonic()

        want = expected_counts(entries, IDS, leader)
        print(f"leader {leader}; placement of {AGENTS} agents: {want}")
        counts = wait("every collector holds its placement",
                      lambda: settled(collectors, IDS, want, 3), 60)
        print(f"t={time.monotonic() - start:.0f}s before the kill: {counts}")

        victim = next(c for c in IDS if c != leader)
        survivors = [c for c in IDS if c != victim]
        before = collectors.counts(IDS)
        collectors.kill(victim)
        killed_at = time.monotonic()
        # The failover share: the survivors' first count that holds them
        # all (each moved agent reconnects at its next tick).
        after = wait("the survivors hold every agent", lambda: (
            lambda c: c if None not in c.values()
            and sum(c.values()) >= AGENTS - 2 else None)(
                collectors.counts(survivors)), 30)
        moved = {c: after[c] - before[c] for c in survivors}
        print(f"{time.monotonic() - killed_at:.1f}s after killing {victim} "
              f"({before[victim]:.0f} agents): {after}, moved {moved}")
        # Both survivors take a share. Not an even one: the leader, weighted
        # 2/3, is the first choice of 40% of the victim's agents against
        # 60% for the other survivor (w / (w + 1)), and the agents the
        # leader had handed to the victim fail over to their third choice,
        # the other survivor. The "neither above 60%" holds only
        # when the leader is the one that dies.
        for c in survivors:
            assert 0.25 * before[victim] <= moved[c] <= 0.75 * before[victim], (
                f"{c} took {moved[c]:.0f} of {victim}'s "
                f"{before[victim]:.0f} agents: outside 25-75%")

        want_two = expected_counts(entries, survivors, leader)
        counts = wait("the survivors hold their placement",
                      lambda: settled(collectors, survivors, want_two, 3), 60)
        print(f"settled on the survivors: {counts} (placement {want_two})")

        time.sleep(max(0.0, killed_at + 30 - time.monotonic()))
        collectors.start(victim)
        restarted_at = time.monotonic()
        counts = wait("every collector holds its placement again",
                      lambda: settled(collectors, IDS, want, 3),
                      SPREAD_BACK_S)
        spread_back = time.monotonic() - restarted_at
        print(f"{spread_back:.0f}s after restarting {victim}: {counts} "
              f"(placement {want})")
        for c in IDS:
            assert abs(counts[c] / AGENTS - 1 / 3) <= 0.10, (
                f"{c} holds {counts[c]:.0f} of {AGENTS}")
        handed_back = sum(metrics(collectors.http[c]).get(
            "fabricdiag_ingest_handed_back_streams_total", 0) for c in IDS)
        print(f"handed back in all: {handed_back:.0f}")

        rc = sim.wait(timeout=SIM_SECONDS + 60)
        sim_log.close()
        with open(os.path.join(work, "sim.log"), errors="replace") as f:
            out = f.read()
        m = re.search(r"reports acked (\d+) of (\d+) \(dropped (\d+)\); "
                      r"streams rejected (\d+) failed (\d+) handed off (\d+) "
                      r"failed over (\d+)", out)
        assert rc == 0 and m, f"simulator rc {rc}:\n{out[-2000:]}"
        acked, sent, dropped, rejected, failed = (int(m.group(i))
                                                  for i in range(1, 6))
        print(f"simulator: {m.group(0)}")
        assert acked == sent and dropped == 0, "reports were lost"
        assert rejected == 0 and failed == 0, m.group(0)
        assert int(m.group(7)) >= before[victim] - 2, (
            "fewer agents failed over than the dead collector held")
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}")
        for name in IDS + ["sim"]:
            path = os.path.join(work, f"{name}.log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    print(f"--- {name}\n" + f.read()[-2000:])
        return 1
    finally:
        if sim is not None and sim.poll() is None:
            sim.kill()
            sim.wait()
        if collectors is not None:
            collectors.stop_all()
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
