#!/usr/bin/env python3
"""Agents spread by rendezvous hashing, with real processes on loopback:
three nats-servers from deploy/nats/nats-server.conf
(tests/deploy/nats_config_test.py starts them), three real
fabricdiag-collectors joined through them, and one fabricdiag-sim running
300 virtual agents that rank the three collectors as fabricdiag-agent does,
with the weights the collectors send.

usage: placement_e2e_test.py SOURCE_DIR COLLECTOR SIM

1. Before any fault, every collector holds the agents the placement gives
   it (this file computes it independently: FNV-1a 64 and fmix64 over
   node + 0x00 + entry, weighted rendezvous with the analysis leader
   weighted 0.8).
2. A rolling restart: each collector in turn (one that does not lead, then
   the leader, then the last) is killed (SIGKILL) and restarted on the same
   port 10 s later; the restarts are 30 s apart. 10 s, not the 30 s the
   issue's operator waited: long enough for the members to see the
   collector gone (3 announcement periods, 6 s), and what happens after a
   restart does not depend on how long the collector was away.
3. The first kill (a collector that does not lead, the cluster settled):
   its agents move at once to their weighted second choices, split over
   both survivors as this file computes (+-4 agents, and as many more as
   were not on the victim though placed there or still reconnect when
   counted): about 44%
   the leader (weight 0.8) and 56% the other (1 / (w + 1)), neither above
   60%; not one agent of the survivors moves.
4. Within 60 s after the last restart each collector holds a third of the
   agents (+-10% of all agents), and within 120 s exactly what the
   placement gives it (+-3) under the leader of the moment, the survivors
   handing agents back at 1% of their streams per second.
5. No report is lost: the simulator's agents replay what a dead collector
   did not acknowledge, and at the end (the simulator stopped with SIGINT)
   every report sent was acknowledged.

The numbers measured are printed (agents per collector after each kill and
before the next, after the rolling restart, times to spread back). Exits 77
(skipped) without nats-server. Bounded: every wait has a deadline.
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
LEADER_WEIGHT = 0.8  # cluster/leader_handoff.h kLeaderWeight
# An upper bound: the test stops the simulator with SIGINT once it is done.
SIM_SECONDS = 420
KILL_TO_RESTART_S = 10
RESTARTS_APART_S = 30
# The bound for a third each (+-10%) after the last restart.
THIRDS_WITHIN_S = 60
# Exactly the placement (+-3): hand-backs go at 1% of a collector's streams
# per second, measured 43-57 s on a quiet machine and over 60 s while a
# build ran: twice the target, the time taken is printed.
PLACEMENT_WITHIN_S = 120
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


def first_choice(node, entries, live, leader):
    """The id of `node`'s weighted first choice among the `live` ids."""
    return max(live, key=lambda cid: score(
        node, entries[cid], LEADER_WEIGHT if cid == leader else 1.0))


def expected_counts(entries, live, leader):
    """Agents per collector id when each node streams to its weighted first
    choice among the `live` ids."""
    counts = {cid: 0 for cid in IDS}
    for i in range(AGENTS):
        counts[first_choice(f"{PREFIX}{i:05d}", entries, live, leader)] += 1
    return counts


def expected_moves(entries, victim, leader):
    """Where the victim's agents go when it dies: each to its weighted
    second choice (the agents rank with the leader's weight)."""
    moved = {cid: 0 for cid in IDS if cid != victim}
    for i in range(AGENTS):
        node = f"{PREFIX}{i:05d}"
        if first_choice(node, entries, IDS, leader) != victim:
            continue
        moved[first_choice(node, entries, moved.keys(), leader)] += 1
    return moved


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


def wait(what, predicate, deadline_s, last=None):
    """predicate()'s first true value within `deadline_s`; on timeout the
    failure says what `last()` (when given) reads then."""
    end = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            seen = f"; at the end: {last()}" if last is not None else ""
            raise AssertionError(f"not within {deadline_s} s: {what}{seen}")
        time.sleep(0.5)


def health(port):
    """The cluster lines of a collector's /healthz ("" when it does not
    answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz",
                                    timeout=5) as r:
            text = r.read().decode(errors="replace")
    except OSError as e:
        return f"(no answer: {e})"
    return "\n".join(line for line in text.splitlines()
                     if line.startswith("cluster:"))


class Collectors:
    def __init__(self, work, urls, nats_flags):
        self.work, self.urls, self.nats_flags = work, urls, nats_flags
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
             f"--collector_id={cid}", "--nats_replicas=3", *self.nats_flags],
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
        nats_ports, nats_flags = nats_cluster.start_secured_servers(
            nats, conf_text, work, procs)
        if nats_cluster.wait_meta_leader(work, nats_ports, procs) is None:
            raise AssertionError("; ".join(nats_cluster.FAILURES))
        urls = ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in nats_ports)
        collectors = Collectors(work, urls, nats_flags)
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
        print(f"t={time.monotonic() - start:.0f}s before the kills: {counts}")

        order = [c for c in IDS if c != leader][:1] + [leader] + [
            c for c in IDS if c != leader][1:]
        held = 0  # agents the victims held when killed
        for i, victim in enumerate(order):
            survivors = [c for c in IDS if c != victim]
            before = collectors.counts(IDS)
            held += before[victim]
            collectors.kill(victim)
            killed_at = time.monotonic()
            # The survivors' first count that holds every agent (each moved
            # agent reconnects at its next tick).
            after = wait(f"the survivors of {victim} hold every agent",
                         lambda: (lambda c: c if None not in c.values()
                                  and sum(c.values()) >= AGENTS - 2
                                  else None)(collectors.counts(survivors)),
                         30)
            moved = {c: after[c] - before[c] for c in survivors}
            share = {c: f"{100 * moved[c] / max(before[victim], 1):.0f}%"
                     for c in survivors}
            print(f"{time.monotonic() - killed_at:.1f}s after killing "
                  f"{victim}{' (the leader)' if victim == leader else ''} "
                  f"({before[victim]:.0f} agents): {after}, moved {moved} "
                  f"= {share}")
            if i == 0:
                # The agents rank with the leader's weight: each goes to its
                # weighted second choice, as computed here (the defect this
                # replaces sent those the leader's weight had placed to
                # their third choice: 40/60 became 30/70).
                want_moves = expected_moves(entries, victim, leader)
                # Counts say nothing of the agents that were not on the
                # victim though placed there (the placement settles within
                # 3), nor of those still reconnecting (up to 2): each may
                # be missing from either survivor's count.
                slack = 4 + max(0, want[victim] - before[victim]) + \
                    max(0, AGENTS - sum(after.values()))
                print(f"  computed: {want_moves} (+-{slack:.0f})")
                for c in survivors:
                    assert abs(moved[c] - want_moves[c]) <= slack, (
                        f"{c} took {moved[c]:.0f} of {victim}'s agents, "
                        f"computed {want_moves[c]} (+-{slack:.0f})")
            time.sleep(max(0.0, killed_at + KILL_TO_RESTART_S
                           - time.monotonic()))
            collectors.start(victim)
            restarted_at = time.monotonic()
            if i + 1 < len(order):
                time.sleep(max(0.0, killed_at + RESTARTS_APART_S
                               - time.monotonic()))
                print(f"{time.monotonic() - restarted_at:.0f}s after "
                      f"restarting {victim}: {collectors.counts(IDS)}")

        counts = wait("a third of the agents on each collector (+-10%)",
                      lambda: (lambda c: c if all(
                          c[x] is not None and abs(c[x] / AGENTS - 1 / 3)
                          <= 0.10 for x in IDS) else None)(
                              collectors.counts(IDS)), THIRDS_WITHIN_S)
        thirds = time.monotonic() - restarted_at
        print(f"{thirds:.0f}s after the last restart ({victim}): a third "
              f"each: {counts}")

        def placed():
            now_leader = collectors.leader()
            if now_leader is None:
                return None
            return settled(collectors, IDS,
                           expected_counts(entries, IDS, now_leader), 3)
        def placement_now():
            # What each collector holds and sees, and the placement under
            # each possible leader: which view the agents settled on.
            under = {c: expected_counts(entries, IDS, c) for c in IDS}
            views = "".join(f"\n  {c}: {health(collectors.http[c])}"
                            for c in IDS)
            return (f"{collectors.counts(IDS)}, leader "
                    f"{collectors.leader()}; placement by leader "
                    f"{under}{views}")
        counts = wait("every collector holds its placement again", placed,
                      PLACEMENT_WITHIN_S, placement_now)
        spread_back = time.monotonic() - restarted_at
        final_leader = collectors.leader()
        print(f"{spread_back:.0f}s after the last restart: {counts} "
              f"(leader {final_leader}, placement "
              f"{expected_counts(entries, IDS, final_leader)})")
        handed_back = sum(metrics(collectors.http[c]).get(
            "fabricdiag_ingest_handed_back_streams_total", 0) for c in IDS)
        print(f"handed back since the last restarts: {handed_back:.0f}; "
              f"test {time.monotonic() - start:.0f}s")

        sim.send_signal(signal.SIGINT)
        rc = sim.wait(timeout=60)
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
        assert int(m.group(7)) >= held - 6, (
            f"fewer agents failed over than the dead collectors held ({held})")
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
