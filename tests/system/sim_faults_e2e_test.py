#!/usr/bin/env python3
"""Every fault the simulator injects, found by the running system.

Real processes on loopback: fabricdiag-sim (6 GPU nodes x 4 mlx5 NICs, two
leaves), one fabricdiag-agent per node and for leaf-0, leaf-1 served by the
simulator as a SONiC gNMI target (its counters refreshed once a second) and
read by fabricdiag-gnmi-bridge, a fabricdiag-collector with scoped tokens
(the CLI's admin, the bridge's read), and the fabricdiag CLI (layout and
topology apply, `watch --json` recording every finding event). Timeline,
0.5 s intervals everywhere:

  healthy, then wave A (hot_expert, link_errors, half_speed,
  retransmissions), healthy, wave B (pfc_storm behind leaf-1,
  ecmp_polarization of 2 of leaf-1's 4 uplinks, link_flap of a link to
  leaf-1, straggler), healthy, wave C (nic_gone;
  link_errors on a node whose agent is killed -9 and started again at once;
  ecmp_polarization of 4 of leaf-0's 8 uplinks; a TP group declared across
  nodes; another agent killed -9 for 4 s; the collector killed -9 and
  restarted while wave C's faults are on), healthy, busy (no fault, one CPU
  spinner per CPU), healthy.

Asserts, per injected fault: a finding of the right kind on the right node
and device (or group, or switch; for wave B also what only the gNMI-fed leaf
sees: the flapping link's switch end, the storm's victims among leaf-1's
ports, with what the switch's counter refresh costs beyond an agent's read:
none when it refreshes once per interval, as here) opens within 3 intervals
of the fault's
start if the fault is strong (at least twice past its threshold, or an
event), within 5 if it is weak, stays one finding (one id, never resolved)
while the fault is on, and resolves within 10 intervals of its end; no
finding opens in a healthy phase, nor while the machine is busy or in the
10 intervals after, and during a wave only findings the wave explains (the
fault's own, plus the listed secondary effects, e.g. a PFC storm's victims);
and every finding a wave opens, of any kind, secondary effects included,
opens once: its key (kind, job, node, device, group) never opens under a
second id until the wave's findings have resolved.
Prints detection and resolution latency per kind, in seconds and intervals,
counted from the fault's start and end on the simulator's clock.

  sim_faults_e2e_test.py SIM AGENT COLLECTOR CLI BRIDGE
"""

import datetime
import json
import math
import os
import random
import shutil
import signal
import sys
import tempfile
import time

from loopback_cluster import System

INTERVAL = 0.5  # seconds: agent reads, analysis passes
# The simulator advances its counters every 0.1 s, five times per read: a
# NIC's counters move continuously, so a fault shows in the very next read,
# as on hardware, instead of up to a whole interval later.
SIM_TICK = 0.1
# The budget, in intervals: a strong fault (at least twice past its
# threshold, or an event) opens within 3, every fault within 5, and every
# finding resolves within 10 of its fault's end.
STRONG_OPEN = 3
OPEN = 5
RESOLVE = 10
NODES = [f"gpu-{i:03d}" for i in range(6)]
NICS = [f"mlx5_{n}" for n in range(4)]
LEAF_OF = {h: f"leaf-{i // 3}" for i, h in enumerate(NODES)}
# leaf-0 has 8 uplinks so that 4 of them can be polarized.
UPLINKS = {"leaf-0": [f"swp{p}" for p in range(49, 57)],
           "leaf-1": [f"swp{p}" for p in range(49, 53)]}
# leaf-1 streams gNMI as SONiC does: flex counters poll the port statistics,
# PFC frame counters included, every second (orchagent's PORT_STAT group;
# only queue counters wait 10 s), and gNMI serves the last poll. Here the
# poll comes once per interval, as SONiC's 1 s poll does at the collector's
# default 1 s interval (gnmi_e2e runs a poll of two intervals).
GNMI_LEAF = "leaf-1"
GNMI_REFRESH = INTERVAL
# What a fault seen only in the gNMI-fed leaf's counters (the polarization
# of its uplinks, a storm's victims among its ports) is allowed beyond an
# agent-fed fault's budget, in intervals: a switch that refreshes every R
# shows a fault up to R - INTERVAL later than an agent's read would, and its
# rate spans R instead of INTERVAL, so 2 (R - INTERVAL): none here.
GNMI_ALLOWANCE = round(2 * (GNMI_REFRESH - INTERVAL) / INTERVAL)
GNMI_FLAGS = ["--gnmi_listen=127.0.0.1:0", "--gnmi_dialect=sonic",
              f"--gnmi_switches={GNMI_LEAF}",
              f"--gnmi_refresh={int(GNMI_REFRESH * 1000)}ms"]


def port_of(node, nic):
    """The leaf port a NIC is cabled to (write_inputs' topology)."""
    return f"swp{(NODES.index(node) % 3) * 4 + NICS.index(nic) + 1}"


# (start, end) of the waves, seconds from the simulator's start.
WAVE_A = (8.0, 16.0)
WAVE_B = (28.0, 36.0)
WAVE_C = (48.0, 58.0)
# No fault; the machine busy with CPU spinners. Nothing may open during it
# or in the RESOLVE intervals after.
BUSY = (64.0, 80.0)
# When, after wave C's start, gpu-003's agent is killed -9 and started again
# at once (its fault on): a package upgrade, not an outage.
AGENT_RESTART = 2.5
END = BUSY[1] + RESOLVE * INTERVAL + 1

# sim fault -> (finding kind, node, device) it must raise. device None: any.
# strong: whether the injected signature (docs/simulator.md) is at least
# twice past the threshold that opens the finding (docs/findings.md,
# deploy/analysis.yaml), and why.
FAULTS = [
    # wave A: four faults on four nodes, both leaves
    dict(sim={"kind": "hot_expert", "node": "gpu-001", "nic": "mlx5_2",
              "factor": 6}, wave=WAVE_A,
         expect=("hot_expert_incast", "gpu-001", "mlx5_2"), strong=False,
         why="RX 6x its peers' mean, capped at 95% of the link, against "
             "4x their median: under 1.5x"),
    dict(sim={"kind": "link_errors", "node": "gpu-004", "nic": "mlx5_0"},
         wave=WAVE_A, expect=("link_errors", "gpu-004", "mlx5_0"),
         strong=True, why="~50 symbol errors/s against 1/s, BER 1e-4 "
                          "against 1e-6: 50x"),
    dict(sim={"kind": "half_speed", "node": "gpu-003", "nic": "mlx5_3"},
         wave=WAVE_A, expect=("link_degraded", "gpu-003", "mlx5_3"),
         strong=False, why="link at 0.5 of its expected rate against a "
                           "0.9 floor: 1.8x"),
    dict(sim={"kind": "retransmissions", "node": "gpu-005", "nic": "mlx5_1"},
         wave=WAVE_A, expect=("retransmissions", "gpu-005", "mlx5_1"),
         strong=True, why="200-2,000 events/s each against 10/s: 20x+"),
    # wave B: on the gNMI-fed leaf-1, a storm behind it, polarization of
    # its uplinks, a flapping link to it; a straggler behind leaf-0.
    dict(sim={"kind": "pfc_storm", "node": "gpu-003", "nic": "mlx5_1",
              "priority": 3}, wave=WAVE_B,
         expect=("pfc_storm", "gpu-003", "mlx5_1"), strong=True,
         why="pause 94-97% of the time against 0.2: 4.7x, and watchdog "
             "events (immediate); its victims among leaf-1's ports (gNMI) "
             "too: the port facing it receives that pause all the time"),
    # The hottest of the polarized uplinks changes every second: one
    # finding for the switch's uplink group all the same.
    dict(sim={"kind": "ecmp_polarization", "switch": "leaf-1",
              "uplinks": 2}, wave=WAVE_B,
         expect=("ecmp_imbalance", "leaf-1", "uplinks"), strong=False,
         why="2 of 4 uplinks carry 88%, the hottest 2.2x the mean and the "
             "other 1.3x, alternating every second, against 1.5: 1.5x"),
    dict(sim={"kind": "link_flap", "node": "gpu-005", "nic": "mlx5_3",
              "period": 2}, wave=WAVE_B,
         expect=("link_flap", "gpu-005", "mlx5_3"), strong=True,
         also=[("link_flap", GNMI_LEAF, port_of("gpu-005", "mlx5_3"))],
         why="an event (the link goes down): opens on the first pass, at "
             "both ends (leaf-1's over gNMI, its oper status on change)"),
    # wave C: a fault whose node's agent restarts (a package upgrade) and
    # then the collector restarts, while it is on: one finding, one id.
    dict(sim={"kind": "link_errors", "node": "gpu-003", "nic": "mlx5_1"},
         wave=WAVE_C, expect=("link_errors", "gpu-003", "mlx5_1"),
         strong=True, why="as in wave A; through an agent restart at "
                          f"{WAVE_C[0] + AGENT_RESTART:.1f}s and a collector "
                          f"restart at {WAVE_C[0] + 5:.1f}s"),
    dict(sim={"kind": "ecmp_polarization", "switch": "leaf-0",
              "uplinks": 4}, wave=WAVE_C,
         expect=("ecmp_imbalance", "leaf-0", "uplinks"), strong=False,
         why="4 of 8 uplinks carry 94%, the hottest 2.4x the mean and the "
             "others 1.7x, alternating every second, against 1.5: 1.6x; "
             "through the collector restart"),
    dict(sim={"kind": "straggler", "node": "gpu-001", "nic": "mlx5_2"},
         wave=WAVE_B, expect=("straggler_nic", "gpu-001", "mlx5_2"),
         strong=False, why="30% of its peers' mean against a 0.5 floor: "
                           "1.7x"),
]
# What a wave's faults legitimately cause besides their own findings:
# (kind, node or None for any node of the leaf/wave).
SECONDARY = {
    WAVE_A: [
        # The other end of the half-speed cable trained slow too.
        ("link_degraded", "leaf-1"),
        # The hot expert's group waits for it; its CNPs are congestion.
        ("congestion", "gpu-001"),
        # A link at half speed moves less than its group.
        ("straggler_nic", "gpu-003"),
        # Errors make the link retransmit.
        ("retransmissions", "gpu-004"),
    ],
    WAVE_B: [
        # A storm's victims behind leaf-1 see pause, slow down and mark.
        ("congestion", None), ("straggler_nic", None), ("pfc_storm", None),
        # A flapping link is slow, and retransmits.
        ("link_degraded", "gpu-005"), ("retransmissions", "gpu-005"),
        ("straggler_nic", "gpu-005"),
    ],
    # The NIC that disappears: its switch port goes down. Errors make the
    # link retransmit.
    WAVE_C: [("link_flap", "leaf-1"), ("retransmissions", "gpu-003")],
}


def cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # idle, iowait


def write_inputs(work):
    hosts = ", ".join(NODES)
    with open(f"{work}/layout.yaml", "w") as f:
        f.write("job: moe-e2e\ngpus_per_node: 4\n"
                "parallelism: {tp: 4, pp: 1, dp: 6, ep: 6}\n"
                f"hosts: [{hosts}]\n"
                f"rails: [{', '.join(NICS)}]\n"
                # Busy enough that the NICs carry a meaningful share of
                # their links (the analyzers ignore idle groups).
                "model: {params: 1.6e10, hidden: 4096, layers: 32, "
                "seq_len: 4096, micro_batch: 1, micro_batches: 4, "
                "dtype_bytes: 2, experts: 24, top_k: 2}\n")
    with open(f"{work}/topology.yaml", "w") as f:
        f.write("switches:\n")
        for leaf, uplinks in UPLINKS.items():
            f.write(f"  - {{name: {leaf}, uplinks: [{', '.join(uplinks)}]}}\n")
        f.write("links:\n")
        for i, h in enumerate(NODES):
            for n, nic in enumerate(NICS):
                f.write(f"  - {{host: {h}, nic: {nic}, switch: {LEAF_OF[h]}, "
                        f"port: swp{(i % 3) * 4 + n + 1}}}\n")
    with open(f"{work}/tp-cross.yaml", "w") as f:
        f.write("job: tp-cross\ngpus_per_node: 4\n"
                "parallelism: {tp: 8, pp: 1, dp: 1}\n"
                "hosts: [gpu-000, gpu-001]\n"
                f"rails: [{', '.join(NICS)}]\n")
    faults = [dict(fl["sim"], start=fl["wave"][0], end=fl["wave"][1])
              for fl in FAULTS]
    faults.append({"kind": "nic_gone", "node": "gpu-005", "nic": "mlx5_3",
                   "start": WAVE_C[0], "end": WAVE_C[1]})
    with open(f"{work}/scenario.json", "w") as f:
        json.dump({"step_seconds": 1.0, "faults": faults}, f)
    # Window and newest samples in proportion to the 0.5 s interval: a
    # 3-sample window and the newest sample (the defaults are 5 and 1 at
    # the agent's 1 s). A strong fault opens on the newest 2 samples, a
    # weak one on 3 of the newest 4 once the window mean has it
    # (analysis/analysis_config.h has the budget); a finding resolves
    # after the window clears and 4 clean passes.
    with open(f"{work}/analysis.yaml", "w") as f:
        f.write("window_seconds: 1.5\n"
                "hysteresis: {open_after: 3, open_within: 4, clear_after: 4, "
                "recent_seconds: 0.5}\n"
                # The agent is killed for 4 s (8 intervals).
                "agent_down: {missed_intervals: 4}\n")


def main():
    binaries = sys.argv[1:5]
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    # A SIGTERM (ctest's timeout, a CI cancel) unwinds through the finally
    # below, so no process of the test, spinners included, outlives it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = tempfile.mkdtemp(prefix="fabricdiag-e2e.", dir=base)
    sysm = System(binaries, work, INTERVAL, bridge=sys.argv[5])
    failures = []
    events = []
    try:
        write_inputs(work)
        sysm.use_tokens()
        sysm.start_collector()
        sysm.cli_run("layout", "apply", f"{work}/layout.yaml")
        # Agents read and the collector's passes run on the wall clock's
        # grid of the interval; where the simulator ticks against that grid
        # (as where a fault begins against the reads on a real machine)
        # decides up to an interval of every latency: let it fall anywhere
        # rather than where this script's timing would put it every run.
        time.sleep(random.uniform(0, INTERVAL))
        # Latencies count from the simulator's clock (its phase lines and
        # the faults' start and end are on it), placed on the wall clock by
        # the simulator itself.
        sysm.t0 = sysm.start_sim("leaf-0", tick=SIM_TICK, extra=[
            *GNMI_FLAGS, f"--gnmi_topology_out={work}/topology-gnmi.json"])
        sim_ready = sysm.now()
        # The topology with leaf-1's gnmi block, written before t=0.
        sysm.cli_run("topology", "apply", f"{work}/topology-gnmi.json")
        sysm.start_bridge()
        agents_phase = random.uniform(0, INTERVAL)
        time.sleep(agents_phase)
        for node in NODES + ["leaf-0"]:
            sysm.start_agent(node)
        sysm.start_watch()

        # Wave C's events on the running system.
        sysm.sleep_until(WAVE_C[0] + 1)
        sysm.cli_run("layout", "apply", f"{work}/tp-cross.yaml")
        tp_applied = sysm.now()
        sysm.kill("agent-gpu-002")  # kill -9
        agent_killed = sysm.now()
        sysm.sleep_until(WAVE_C[0] + AGENT_RESTART)
        sysm.kill("agent-gpu-003")
        sysm.start_agent("gpu-003")
        sysm.sleep_until(WAVE_C[0] + 5)
        sysm.start_agent("gpu-002")
        agent_back = sysm.now()
        grpc = sysm.grpc
        sysm.kill("collector")  # kill -9, faults of wave C still on
        sysm.kill("watch", signal.SIGTERM)
        collector_down = sysm.now()
        time.sleep(1)
        sysm.start_collector(grpc)
        sysm.start_watch()
        collector_back = sysm.now()
        sysm.sleep_until(WAVE_C[1])
        tp_deleted = sysm.now()
        sysm.cli_run("layout", "delete", "tp-cross")

        # The busy phase: one spinner per CPU this test may use, each ending
        # itself a little after the phase should the test die first.
        sysm.sleep_until(BUSY[0])
        spinners = len(os.sched_getaffinity(0))
        sysm.start_spinners(spinners, BUSY[1] - BUSY[0] + 10)
        busy_from = sysm.now()
        cpu_from = cpu_times()
        sysm.sleep_until(BUSY[1])
        cpu_to = cpu_times()
        spun = sysm.stop_spinners()
        busy_to = sysm.now()
        sysm.sleep_until(END)
        final = sysm.active()
        with sysm.events_lock:
            events = list(sysm.events)

        # --- judgement ---------------------------------------------------
        def matches(e, kind, node, device):
            return (e.get("kind") == kind and e.get("node") == node and
                    (device is None or e.get("device") == device))

        def first(kind, node, device, what, after):
            for t, e in events:
                if (t >= after and e.get("event") in what and
                        matches(e, kind, node, device)):
                    return t, e
            return None, None

        # (name, finding, strength, budget, opened, resolved, e, the wait
        # for the gNMI-fed switch's poll)
        rows = []

        def polled(t):
            """When the gNMI-fed switch's counters first show what began at
            `t`: its next poll, on whole multiples of the refresh since the
            Unix epoch (as the simulator's targets poll)."""
            wall = sysm.t0 + t
            return math.ceil(wall / GNMI_REFRESH) * GNMI_REFRESH - sysm.t0

        def judge(name, kind, node, device, strong, budget, began, ended,
                  poll=0):
            """Checks one fault that began and ended at those times (None:
            not ended by the test) against its budget; `poll`: the wait for
            the gNMI-fed switch's poll, printed."""
            opened, e = first(kind, node, device, ("OPENED",), began - 1)
            det = None if opened is None else (opened - began) / INTERVAL
            if det is None or det > budget:
                failures.append(
                    f"{name}: no {kind} on {node} {device} within {budget} "
                    f"intervals of {began:.1f}s (opened at "
                    f"{'-' if det is None else f'{opened:.2f}s'})")
            # While the fault is on, its finding stays open under one id:
            # it neither resolves nor reopens (restarts included; a watch
            # restarted with the collector sees it in its SNAPSHOT).
            if opened is not None and ended is not None:
                ids, flaps = set(), []
                for t, ev in events:
                    if not (opened <= t < ended and
                            matches(ev, kind, node, device)):
                        continue
                    if ev.get("event") == "RESOLVED":
                        flaps.append(f"resolved at {t:.1f}s")
                    else:
                        ids.add(ev.get("id"))
                if flaps or len(ids) > 1:
                    failures.append(
                        f"{name}: {kind} on {node} {device} did not stay "
                        f"one finding while the fault was on "
                        f"({opened:.1f}s..{ended:.1f}s): ids "
                        f"{sorted(ids)}, {', '.join(flaps) or 'no resolve'}")
            res = None
            if ended is not None:
                resolved, _ = first(kind, node, device, ("RESOLVED",),
                                    ended - 1)
                res = None if resolved is None else (
                    (resolved - ended) / INTERVAL)
                if res is None or res > RESOLVE:
                    failures.append(
                        f"{name}: {kind} on {node} did not resolve within "
                        f"{RESOLVE} intervals of {ended:.1f}s (at "
                        f"{'-' if res is None else f'{resolved:.1f}s'})")
            rows.append((name, kind, "strong" if strong else "weak", budget,
                         det, res, e, poll))

        for fl in FAULTS:
            budget = STRONG_OPEN if fl["strong"] else OPEN
            gnmi = fl["expect"][1] == GNMI_LEAF
            judge(fl["sim"]["kind"] + (" (gNMI)" if gnmi else ""),
                  *fl["expect"], fl["strong"],
                  budget + (GNMI_ALLOWANCE if gnmi else 0), *fl["wave"],
                  poll=polled(fl["wave"][0]) - fl["wave"][0] if gnmi else 0)
            for kind, node, device in fl.get("also", []):
                judge(f"  at {node} (gNMI)", kind, node, device,
                      fl["strong"], budget, *fl["wave"])
        # The storm's victims among the gNMI-fed leaf's ports: named by its
        # finding (an UPDATED once the leaf's counters show the pause)
        # within the storm's budget (and GNMI_ALLOWANCE: seen only in its
        # counters), under the finding's one id.
        storm = next(fl for fl in FAULTS if fl["sim"]["kind"] == "pfc_storm")
        began = storm["wave"][0]
        named = next((t for t, e in events
                      if t >= began - 1 and matches(e, *storm["expect"]) and
                      e.get("event") in ("OPENED", "UPDATED", "SNAPSHOT") and
                      GNMI_LEAF in e.get("nodes", []) and
                      GNMI_LEAF in str(e.get("evidence", {}).get(
                          "victim_ports", ""))), None)
        det = None if named is None else (named - began) / INTERVAL
        budget = STRONG_OPEN + GNMI_ALLOWANCE
        if det is None or det > budget:
            failures.append(
                f"pfc_storm: no {GNMI_LEAF} port among its victims within "
                f"{budget} intervals of {began:.1f}s (named at "
                f"{'-' if named is None else f'{named:.2f}s'})")
        rows.append((f"  {GNMI_LEAF} victims (gNMI)", "pfc_storm", "strong",
                     budget, det, None, None, polled(began) - began))
        # A declared fact, judged in the next pass: strong.
        judge("tp layout", "tp_cross_node", "gpu-000", None, True,
              STRONG_OPEN, tp_applied, tp_deleted)
        # agent_down waits for agent_down.missed_intervals (4) by design,
        # after the agent's last report, which comes up to an interval
        # before the kill: it opens 3 to 4 intervals after the kill, plus
        # the pass's settling time and delivery. The budget of any fault.
        down, down_e = first("agent_down", "gpu-002", None, ("OPENED",),
                             agent_killed)
        up, _ = first("agent_down", "gpu-002", None, ("RESOLVED",),
                      agent_back)
        if up is None:
            # It may have resolved while the collector restarted and the
            # watch was reconnecting: the history says when.
            r = sysm.cli_run("findings", "--all", "--json",
                             "--kind=agent_down", check=False)
            for f in (json.loads(r.stdout) if r.returncode == 0 else []):
                if (f.get("node") == "gpu-002" and f.get("state") == "resolved"
                        and f.get("resolved_at")):
                    resolved = datetime.datetime.strptime(
                        f["resolved_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
                            tzinfo=datetime.timezone.utc).timestamp()
                    # RFC 3339 seconds: up to 1 s early.
                    up = max(agent_back, resolved - sysm.t0)
        det = None if down is None else (down - agent_killed) / INTERVAL
        res = None if up is None else (up - agent_back) / INTERVAL
        if det is None or det > OPEN or res is None or res > RESOLVE:
            failures.append(f"agent kill -9 at {agent_killed:.1f}s: "
                            f"agent_down opened at {down}, resolved at {up} "
                            f"(restarted at {agent_back:.1f}s); budget "
                            f"{OPEN} and {RESOLVE} intervals")
        rows.append(("agent kill -9", "agent_down", "-", OPEN, det, res,
                     down_e, 0))

        # One fault, one finding, for every kind a wave raises (secondary
        # effects too): a key opens once per wave, never again under a new
        # id while the wave's faults are on or its findings resolve.
        waves = [WAVE_A, WAVE_B, WAVE_C]
        for wave in waves:
            opened_ids = {}
            for t, e in events:
                if (e.get("event") != "OPENED" or
                        not wave[0] <= t <= wave[1] + RESOLVE * INTERVAL):
                    continue
                key = tuple(e.get(k) for k in
                            ("kind", "job", "node", "device", "group"))
                opened_ids.setdefault(key, []).append((t, e.get("id")))
            for key, opens in opened_ids.items():
                if len(opens) > 1:
                    failures.append(
                        f"wave {wave[0]:.0f}s: {' '.join(map(str, key))} "
                        "opened more than once: " + ", ".join(
                            f"{i} at {t:.1f}s" for t, i in opens))

        # Every OPENED must be explained by a fault active around it.
        for t, e in events:
            if e.get("event") != "OPENED":
                continue
            kind, node = e.get("kind"), e.get("node")
            if kind == "tp_cross_node" and tp_applied - 1 <= t <= tp_deleted:
                continue
            if kind == "agent_down" and node == "gpu-002" and (
                    agent_killed <= t <= agent_back + RESOLVE * INTERVAL):
                continue
            wave = next((w for w in waves
                         if w[0] <= t <= w[1] + RESOLVE * INTERVAL), None)
            ok = False
            if wave is not None:
                ok = any((kind, node) == (k, n)
                         for fl in FAULTS if fl["wave"] == wave
                         for k, n, _ in [fl["expect"], *fl.get("also", [])])
                for k, n in SECONDARY[wave]:
                    ok = ok or (k == kind and (n is None or n == node))
                if wave == WAVE_C:
                    # The NIC that disappeared (whatever the system calls it).
                    ok = ok or (node == "gpu-005" and
                                e.get("device") in ("mlx5_3", ""))
            if not ok:
                busy = busy_from <= t <= busy_to + RESOLVE * INTERVAL
                phase = ("wave" if wave is not None else
                         "busy phase" if busy else "healthy phase")
                failures.append(f"unexplained finding at {t:.1f}s "
                                f"({phase}): {kind} {node} {e.get('device')}: "
                                f"{e.get('summary', '')[:160]}")
        # The busy phase proves nothing unless the spinners ran: each must
        # have had a quarter of a CPU at least (another load may take the
        # rest, which only makes the machine busier).
        spin_share = spun / (spinners * (busy_to - busy_from))
        if spin_share < 0.25:
            failures.append(f"busy phase: {spinners} spinners used "
                            f"{spun:.1f} CPU s in {busy_to - busy_from:.1f}s "
                            f"({spin_share:.0%}); the machine was not busy")
        if final is None:
            failures.append("the CLI cannot list findings at the end")
        elif final:
            failures.append("findings still active in the final healthy "
                            "phase: " + "; ".join(
                                f"{f['kind']} {f['node']} {f['device']}"
                                for f in final))
        # The collector restart: layouts survived; nodes still report.
        r = sysm.cli_run("layout", "list", "--json", check=False)
        if r.returncode != 0 or "moe-e2e" not in r.stdout:
            failures.append("layout moe-e2e lost across the collector "
                            "restart")
        r = sysm.cli_run("nodes", "--json", check=False)
        nodes = json.loads(r.stdout) if r.returncode == 0 else []
        down_nodes = [n.get("node") for n in nodes if not n.get("up", True)]
        if len(nodes) < len(NODES) + 2 or down_nodes:
            failures.append(f"after the restarts: nodes {len(nodes)}, down "
                            f"{down_nodes}")

        def fmt(v):
            return "-" if v is None else f"{v * INTERVAL:5.1f}s {v:4.1f}i"

        def over(e):
            v = (e or {}).get("evidence", {}).get("over_threshold")
            return "-" if v is None else f"{v:.1f}x"

        print(f"{'fault':<25}{'finding':<19}{'strength':<9}{'over':>6}"
              f"{'budget':>7}{'opened after':>14}{'resolved after':>16}"
              f"{'poll':>7}")
        for name, kind, strength, budget, det, res, e, poll in rows:
            print(f"{name:<25}{kind:<19}{strength:<9}{over(e):>6}"
                  f"{budget:>6}i{fmt(det):>14}{fmt(res):>16}"
                  f"{f'{poll:.2f}s' if poll else '':>7}")
        print(f"(interval {INTERVAL}s; opened within {STRONG_OPEN} intervals "
              f"if strong, {OPEN} if weak, resolved within {RESOLVE}; 'over':"
              " the finding's over_threshold when it opened; 'poll': for a "
              f"counter fault on the gNMI-fed {GNMI_LEAF}, the wait from the "
              "fault's start to the switch's next counter poll; what only "
              f"its counters show has {GNMI_ALLOWANCE} intervals more)")
        for fl in FAULTS:
            print(f"  {fl['sim']['kind']}: "
                  f"{'strong' if fl['strong'] else 'weak'}: {fl['why']}")
        print("  agent_down: waits for 4 missed intervals by design; "
              f"budget {OPEN}")
        print(f"(latencies count from the simulator's clock, on which the "
              f"faults start and end; its first tree was ready at "
              f"{sim_ready:.2f}s, agents started {agents_phase:.2f}s later; it "
              f"ticks every {SIM_TICK}s, its t=0 "
              f"{(sysm.t0 % INTERVAL) / INTERVAL:.2f} of an interval after "
              f"the agents' reads)")
        cpu_busy = (cpu_to[0] - cpu_from[0]) / max(1, cpu_to[1] - cpu_from[1])
        print(f"collector down {collector_down:.1f}s..{collector_back:.1f}s; "
              f"busy {busy_from:.1f}s..{busy_to:.1f}s: {spinners} spinners "
              f"used {spun:.1f} CPU s ({spin_share:.0%} of their CPUs), all "
              f"CPUs {cpu_busy:.0%} busy")
    finally:
        sysm.stop_all()
        if failures:
            for name in ("collector", "sim"):
                print(f"--- {name} log ---\n{sysm.log_tail(name)}",
                      file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("--- finding events ---", file=sys.stderr)
        for t, e in events:
            print(f"{t:6.1f}s {e.get('event')} {e.get('severity')} "
                  f"{e.get('kind')} {e.get('node')} {e.get('device')} "
                  f"{e.get('group')}", file=sys.stderr)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
