#!/usr/bin/env python3
"""Every fault the simulator injects, found by the running system.

Real processes on loopback: fabricdiag-sim (6 GPU nodes x 4 mlx5 NICs, two
leaves), one fabricdiag-agent per node and leaf, a fabricdiag-collector, and
the fabricdiag CLI (layout and topology apply, `watch --json` recording every
finding event). Timeline, 0.5 s intervals everywhere:

  healthy, then wave A (hot_expert, link_errors, half_speed,
  retransmissions), healthy, wave B (pfc_storm, ecmp_polarization,
  link_flap, straggler), healthy, wave C (nic_gone; a TP group declared
  across nodes; an agent killed -9 and restarted; the collector killed -9
  and restarted while wave C's faults are on), healthy.

Asserts, per injected fault: a finding of the right kind on the right node
and device (or group, or switch) opens within 10 intervals of the fault's
start and resolves within 10 intervals of its end; no finding opens in a
healthy phase, and during a wave only findings the wave explains (the
fault's own, plus the listed secondary effects, e.g. a PFC storm's victims).
Prints detection and resolution latency per kind.

  sim_faults_e2e_test.py SIM AGENT COLLECTOR CLI
"""

import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

from loopback_cluster import System

INTERVAL = 0.5  # seconds: sim ticks, agent reads, analysis passes
BUDGET = 10 * INTERVAL  # detection and resolution budget (10 intervals)
NODES = [f"gpu-{i:03d}" for i in range(6)]
NICS = [f"mlx5_{n}" for n in range(4)]
LEAF_OF = {h: f"leaf-{i // 3}" for i, h in enumerate(NODES)}

# (start, end) of the waves, seconds from the simulator's start.
WAVE_A = (8.0, 16.0)
WAVE_B = (28.0, 36.0)
WAVE_C = (48.0, 58.0)
END = 70.0

# sim fault -> (finding kind, node, device) it must raise. device None: any.
FAULTS = [
    # wave A: four faults on four nodes, both leaves
    dict(sim={"kind": "hot_expert", "node": "gpu-001", "nic": "mlx5_2",
              "factor": 6}, wave=WAVE_A,
         expect=("hot_expert_incast", "gpu-001", "mlx5_2")),
    dict(sim={"kind": "link_errors", "node": "gpu-004", "nic": "mlx5_0"},
         wave=WAVE_A, expect=("link_errors", "gpu-004", "mlx5_0")),
    dict(sim={"kind": "half_speed", "node": "gpu-003", "nic": "mlx5_3"},
         wave=WAVE_A, expect=("link_degraded", "gpu-003", "mlx5_3")),
    dict(sim={"kind": "retransmissions", "node": "gpu-005", "nic": "mlx5_1"},
         wave=WAVE_A, expect=("retransmissions", "gpu-005", "mlx5_1")),
    # wave B: a storm behind leaf-0, polarization on leaf-1
    dict(sim={"kind": "pfc_storm", "node": "gpu-000", "nic": "mlx5_1",
              "priority": 3}, wave=WAVE_B,
         expect=("pfc_storm", "gpu-000", "mlx5_1")),
    dict(sim={"kind": "ecmp_polarization", "switch": "leaf-1"}, wave=WAVE_B,
         expect=("ecmp_imbalance", "leaf-1", None)),
    dict(sim={"kind": "link_flap", "node": "gpu-002", "nic": "mlx5_3",
              "period": 2}, wave=WAVE_B,
         expect=("link_flap", "gpu-002", "mlx5_3")),
    dict(sim={"kind": "straggler", "node": "gpu-004", "nic": "mlx5_2"},
         wave=WAVE_B, expect=("straggler_nic", "gpu-004", "mlx5_2")),
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
        # A storm's victims behind leaf-0 see pause, slow down and mark.
        ("congestion", None), ("straggler_nic", None), ("pfc_storm", None),
        # A flapping link flaps at both ends, is slow, and retransmits.
        ("link_flap", "leaf-0"), ("link_degraded", "gpu-002"),
        ("retransmissions", "gpu-002"), ("straggler_nic", "gpu-002"),
    ],
    # The NIC that disappears: its switch port goes down.
    WAVE_C: [("link_flap", "leaf-1")],
}


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
        for leaf in ("leaf-0", "leaf-1"):
            f.write(f"  - {{name: {leaf}, uplinks: [swp49, swp50, swp51, "
                    "swp52]}\n")
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
    # Shorter window and hysteresis in proportion to the 0.5 s interval:
    # a fault is seen after the window fills (3 intervals) and 3 passes;
    # it resolves after the window clears and 4 clean passes.
    with open(f"{work}/analysis.yaml", "w") as f:
        f.write("window_seconds: 1.5\n"
                "hysteresis: {open_after: 3, clear_after: 4}\n"
                # The agent is killed for 4 s (8 intervals).
                "agent_down: {missed_intervals: 4}\n")


def main():
    binaries = sys.argv[1:5]
    if len(binaries) != 4:
        print(__doc__)
        return 2
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = tempfile.mkdtemp(prefix="fabricdiag-e2e.", dir=base)
    sysm = System(binaries, work, INTERVAL)
    failures = []
    events = []
    try:
        write_inputs(work)
        sysm.start_collector()
        sysm.cli_run("layout", "apply", f"{work}/layout.yaml")
        sysm.cli_run("topology", "apply", f"{work}/topology.yaml")
        sysm.t0 = time.time()
        sysm.start_sim("leaf-1")
        for node in NODES + ["leaf-0", "leaf-1"]:
            sysm.start_agent(node)
        sysm.start_watch()

        # Wave C's events on the running system.
        sysm.sleep_until(WAVE_C[0] + 1)
        sysm.cli_run("layout", "apply", f"{work}/tp-cross.yaml")
        tp_applied = sysm.now()
        sysm.kill("agent-gpu-002")  # kill -9
        agent_killed = sysm.now()
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
        sysm.cli_run("layout", "delete", "tp-cross")
        tp_deleted = sysm.now()
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
                    return t
            return None

        rows = []
        for fl in FAULTS:
            kind, node, device = fl["expect"]
            start, end = fl["wave"]
            opened = first(kind, node, device, ("OPENED",), start - 1)
            resolved = first(kind, node, device, ("RESOLVED",), end - 1)
            name = fl["sim"]["kind"]
            if opened is None or opened > start + BUDGET:
                failures.append(f"{name}: no {kind} on {node} {device} within "
                                f"10 intervals of {start}s (opened at "
                                f"{opened})")
            if resolved is None or resolved > end + BUDGET:
                failures.append(f"{name}: {kind} on {node} did not resolve "
                                f"within 10 intervals of {end}s (at "
                                f"{resolved})")
            rows.append((name, kind, opened and opened - start,
                         resolved and resolved - end))
        tp_open = first("tp_cross_node", "gpu-000", None, ("OPENED",),
                        tp_applied - 1)
        tp_res = first("tp_cross_node", "gpu-000", None, ("RESOLVED",),
                       tp_deleted - 1)
        if tp_open is None or tp_open > tp_applied + BUDGET:
            failures.append(f"tp_cross_node: not opened after the apply "
                            f"({tp_open})")
        if tp_res is None or tp_res > tp_deleted + BUDGET:
            failures.append(f"tp_cross_node: not resolved after the delete "
                            f"({tp_res})")
        rows.append(("tp layout", "tp_cross_node",
                     tp_open and tp_open - tp_applied,
                     tp_res and tp_res - tp_deleted))
        down = first("agent_down", "gpu-002", None, ("OPENED",), agent_killed)
        up = first("agent_down", "gpu-002", None, ("RESOLVED",), agent_back)
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
        if down is None or up is None:
            failures.append(f"agent kill -9: agent_down opened at {down}, "
                            f"resolved at {up}")
        rows.append(("agent kill -9", "agent_down", down and down - agent_killed,
                     up and up - agent_back))

        # Every OPENED must be explained by a fault active around it.
        waves = [WAVE_A, WAVE_B, WAVE_C]
        expected = {(fl["expect"][0], fl["expect"][1]) for fl in FAULTS}
        for t, e in events:
            if e.get("event") != "OPENED":
                continue
            kind, node = e.get("kind"), e.get("node")
            if kind == "tp_cross_node" and tp_applied - 1 <= t <= tp_deleted:
                continue
            if kind == "agent_down" and node == "gpu-002" and (
                    agent_killed <= t <= agent_back + BUDGET):
                continue
            wave = next((w for w in waves
                         if w[0] <= t <= w[1] + BUDGET), None)
            ok = False
            if wave is not None:
                ok = any((kind, node) == (fl["expect"][0], fl["expect"][1])
                         for fl in FAULTS if fl["wave"] == wave)
                for k, n in SECONDARY[wave]:
                    ok = ok or (k == kind and (n is None or n == node))
                if wave == WAVE_C:
                    # The NIC that disappeared (whatever the system calls it).
                    ok = ok or (node == "gpu-005" and
                                e.get("device") in ("mlx5_3", ""))
            if not ok:
                failures.append(f"unexplained finding at {t:.1f}s "
                                f"({'healthy phase' if wave is None else 'wave'}"
                                f"): {kind} {node} {e.get('device')}: "
                                f"{e.get('summary', '')[:160]}")
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

        print(f"{'fault':<18}{'finding':<20}{'detected after':>16}"
              f"{'resolved after':>16}")
        for name, kind, det, res in rows:
            fmt = lambda v: ("-" if v is None else
                             f"{v:5.1f}s {v / INTERVAL:4.1f}i")
            print(f"{name:<18}{kind:<20}{fmt(det):>16}{fmt(res):>16}")
        print(f"(interval {INTERVAL}s; budget 10 intervals = {BUDGET}s; "
              f"collector down {collector_down:.1f}s..{collector_back:.1f}s)")
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
