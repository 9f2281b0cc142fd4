#!/usr/bin/env python3
"""Switches reached only over gNMI: their faults found by the running system.

Real processes on loopback: fabricdiag-sim (4 GPU nodes x 4 mlx5 NICs, two
leaves with four uplinks each) writes the hosts' sysfs trees and serves the
two leaves as gNMI targets of one dialect (`--gnmi_listen`) whose counters
change once a second (`--gnmi_refresh=1s`, as SONiC's flex counters poll port
statistics) while they are sampled every interval, one
fabricdiag-agent per host, fabricdiag-gnmi-bridge subscribed to both leaves
(the only way their counters reach the collector), a fabricdiag-collector
and the fabricdiag CLI. Timeline, 0.5 s intervals:

  healthy; wave (a PFC storm from gpu-000 mlx5_1 behind leaf-0, ECMP
  polarization on leaf-1's uplinks, gpu-002 mlx5_3's link to leaf-1
  flapping); healthy; leaf-0's gNMI server goes away for 3 s and comes
  back; healthy.

Asserts: ecmp_imbalance on leaf-1 (a switch whose only telemetry is gNMI),
pfc_storm on gpu-000 mlx5_1 naming leaf-0's ports among its victims, and
link_flap on leaf-1's end of the flapping link open within the detection
budget of sim_faults_e2e (3 intervals for a strong fault, 5 for any; plus,
for a fault seen only in a switch's counters, what its 1 s poll costs
beyond an agent's read: 2 intervals), stay
one finding while the wave lasts and resolve after it; leaf-1's uplink rates
stay steady while the polarization does (no zero and no spike from the
1 s refresh sampled every 0.5 s); nothing opens in a healthy phase
or while leaf-0 is away (no false rate when it returns, no agent_down for a
3 s gap); leaf-1's reports keep coming while leaf-0 is away (one switch
never stalls another); the bridge's metrics show both subscriptions up at
the end and leaf-0's reconnect.

With DIALECT+tls (e.g. sonic+tls) the targets serve TLS with a certificate
made for the run and require a user name and password, which the bridge
reads from the credentials file the topology names. With DIALECT+overlap the
targets answer overlapping subscriptions (`--gnmi_overlap`: every counter
arrives through several of the bridge's subscriptions, each copy sampled at
its own moment), and the same assertions hold: no false finding, steady
rates, the budget.

  gnmi_e2e_test.py SIM AGENT COLLECTOR CLI BRIDGE DIALECT[+overlap][+tls]
"""

import json
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

from loopback_cluster import System

INTERVAL = 0.5
# The simulator advances its counters every 0.1 s, as in sim_faults_e2e (a
# host's fault shows in the agent's next read); the targets sample every
# interval and poll their counters every second.
SIM_TICK = 0.1
NODES = [f"gpu-{i:03d}" for i in range(4)]
NICS = [f"mlx5_{n}" for n in range(4)]
LEAF_OF = {h: f"leaf-{i // 2}" for i, h in enumerate(NODES)}
UPLINKS = ["Ethernet48", "Ethernet49", "Ethernet50", "Ethernet51"]

WAVE = (8.0, 18.0)
OUTAGE = (30.0, 33.0)
END = 44.0
# The detection budget of sim_faults_e2e, in intervals: a strong fault (an
# event, or at least twice past its threshold) opens within 3, every fault
# within 5. A finding of the wave must be gone this long after its end.
STRONG_OPEN = 3
OPEN = 5
# The switches poll their counters every second, on whole seconds since the
# Unix epoch (--gnmi_refresh): a counter's fault shows at the next poll, up
# to REFRESH - INTERVAL later than at an agent's next read, and the poll's
# rate spans REFRESH instead of INTERVAL: 2 (REFRESH - INTERVAL) more, in
# intervals. An event (a port going down) is no polled counter.
REFRESH = 1.0
REFRESH_INTERVALS = round(2 * (REFRESH - INTERVAL) / INTERVAL)
RESOLVE_WITHIN = 7.0
# While the polarization is steady (from this long after the wave's start
# to its end), each of leaf-1's uplinks' window rates stays within this
# factor of its median: the rate of a counter refreshed once a second and
# sampled twice a second would swing between 0 and 2x.
STEADY_FROM = 4.0
STEADY_FACTOR = 1.3


def write_inputs(work):
    hosts = ", ".join(NODES)
    with open(f"{work}/layout.yaml", "w") as f:
        f.write("job: moe-gnmi\ngpus_per_node: 4\n"
                "parallelism: {tp: 4, pp: 1, dp: 4, ep: 4}\n"
                f"hosts: [{hosts}]\n"
                f"rails: [{', '.join(NICS)}]\n"
                "model: {params: 1.6e10, hidden: 4096, layers: 32, "
                "seq_len: 4096, micro_batch: 1, micro_batches: 4, "
                "dtype_bytes: 2, experts: 16, top_k: 2}\n")
    with open(f"{work}/topology.yaml", "w") as f:
        f.write("switches:\n")
        for leaf in ("leaf-0", "leaf-1"):
            f.write(f"  - {{name: {leaf}, uplinks: [{', '.join(UPLINKS)}]}}\n")
        f.write("links:\n")
        for i, h in enumerate(NODES):
            for n, nic in enumerate(NICS):
                f.write(f"  - {{host: {h}, nic: {nic}, switch: {LEAF_OF[h]}, "
                        f"port: Ethernet{(i % 2) * 4 + n}}}\n")
    faults = [
        {"kind": "pfc_storm", "node": "gpu-000", "nic": "mlx5_1",
         "priority": 3, "start": WAVE[0], "end": WAVE[1]},
        {"kind": "ecmp_polarization", "switch": "leaf-1", "start": WAVE[0],
         "end": WAVE[1]},
        # Flaps both ends: the leaf's end is seen only through gNMI.
        {"kind": "link_flap", "node": "gpu-002", "nic": "mlx5_3", "period": 2,
         "start": WAVE[0], "end": WAVE[1]},
        {"kind": "gnmi_outage", "switch": "leaf-0", "start": OUTAGE[0],
         "end": OUTAGE[1]},
    ]
    with open(f"{work}/scenario.json", "w") as f:
        json.dump({"step_seconds": 1.0, "faults": faults}, f)
    with open(f"{work}/analysis.yaml", "w") as f:
        # As sim_faults_e2e's, whose budget this test holds.
        f.write("window_seconds: 1.5\n"
                "hysteresis: {open_after: 3, open_within: 4, clear_after: 4, "
                "recent_seconds: 0.5}\n"
                # A switch silent for 3 s is not down yet (12 intervals).
                "agent_down: {missed_intervals: 12}\n")


def make_tls(work):
    """A self-signed certificate for 127.0.0.1 and a credentials file, both
    readable by this user only; returns the sim's TLS flags."""
    key, cert, cred = (f"{work}/target.key", f"{work}/target.pem",
                       f"{work}/switch.cred")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "1", "-subj", "/CN=gnmi-target",
                    "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True,
                   capture_output=True, timeout=60)
    with open(cred, "w") as f:
        f.write("fabricdiag-ro\nnot-a-real-secret-42\n")
    for path in (key, cred):
        os.chmod(path, 0o600)
    return [f"--gnmi_tls_cert={cert}", f"--gnmi_tls_key={key}",
            f"--gnmi_credentials_file={cred}"]


def wait_for(path, what, timeout, sysm, log):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise AssertionError(f"{what}:\n" + sysm.log_tail(log))
        time.sleep(0.05)


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=5) as r:
        return r.read().decode()


def uplink_rates(http):
    """leaf-1's uplinks' window TX rates from the collector's page."""
    with urllib.request.urlopen(f"http://127.0.0.1:{http}/api/v1/fabric",
                                timeout=5) as r:
        fabric = json.load(r)
    for sw in fabric.get("switches", []):
        if sw.get("switch") == "leaf-1":
            return {u["port"]: u.get("tx_bytes") for u in sw["uplinks"]}
    return {}


def metric(text, name, switch):
    m = re.search(rf'^{name}{{[^}}]*switch="{switch}"[^}}]*}} (\S+)$', text,
                  re.M)
    return None if m is None else float(m.group(1))


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    sim, agent, collector, cli, bridge, dialect = sys.argv[1:7]
    tls = dialect.endswith("+tls")
    dialect = dialect.removesuffix("+tls")
    overlap = dialect.endswith("+overlap")
    dialect = dialect.removesuffix("+overlap")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = tempfile.mkdtemp(prefix=f"fabricdiag-gnmi-{dialect}.", dir=base)
    sysm = System((sim, agent, collector, cli), work, INTERVAL, bridge=bridge)
    failures = []
    try:
        write_inputs(work)
        tls_flags = make_tls(work) if tls else []
        sysm.start_collector()
        sysm.cli_run("layout", "apply", f"{work}/layout.yaml")
        sysm.t0 = time.time()
        sysm.spawn("sim", [
            sim, f"--layout={work}/layout.yaml",
            f"--topology={work}/topology.yaml",
            f"--scenario={work}/scenario.json", f"--out={work}/fabric",
            f"--interval={int(SIM_TICK * 1000)}ms",
            "--gnmi_listen=127.0.0.1:0", f"--gnmi_dialect={dialect}",
            f"--gnmi_refresh={int(REFRESH * 1000)}ms",
            *(["--gnmi_overlap"] if overlap else []),
            f"--gnmi_topology_out={work}/topology-gnmi.yaml", *tls_flags])
        wait_for(f"{work}/topology-gnmi.yaml", "sim wrote no gNMI topology",
                 20, sysm, "sim")
        wait_for(f"{work}/fabric/{NODES[-1]}/sys/class/net",
                 "sim wrote no tree", 20, sysm, "sim")
        # Times count from the simulator's t=0, where its faults are
        # timed, not from its launch (the line may follow the first tree).
        deadline = time.time() + 20
        m = None
        while m is None:
            with open(f"{work}/sim.log", "rb") as f:
                m = re.search(rb"t=0 at \S+ \(unix ([0-9.]+)\)", f.read())
            if m is None and time.time() > deadline:
                raise AssertionError("sim printed no t=0:\n" +
                                     sysm.log_tail("sim"))
            if m is None:
                time.sleep(0.05)
        sysm.t0 = float(m.group(1))
        if os.path.exists(f"{work}/fabric/leaf-0"):
            failures.append("the sim wrote a tree for leaf-0: the leaves "
                            "must be reached only over gNMI")
        with open(f"{work}/topology-gnmi.yaml") as f:
            blocks = [sw.get("gnmi", {}) for sw in
                      json.load(f).get("switches", [])]
        for b in blocks:
            want_tls = bool(b.get("tls_ca")) and bool(
                b.get("credentials_file")) and not b.get("insecure")
            if want_tls != tls:
                failures.append(f"the sim's gnmi block {b} does not match "
                                f"tls={tls}")
        sysm.cli_run("topology", "apply", f"{work}/topology-gnmi.yaml")
        for node in NODES:
            sysm.start_agent(node)
        # Started just before a grid point, the bridge subscribes just
        # after one: its samples would wait most of an interval for the
        # report if it did not move them (checked at the end).
        time.sleep(INTERVAL - (time.time() + 0.05) % INTERVAL)
        bridge_http = sysm.start_bridge()
        sysm.start_watch()

        # Steady polarization: steady window rates on leaf-1's uplinks.
        steady = {}
        t = WAVE[0] + STEADY_FROM
        while t < WAVE[1]:
            sysm.sleep_until(t)
            for port, rate in uplink_rates(sysm.http).items():
                steady.setdefault(port, []).append(rate)
            t += INTERVAL
        for port, rates in sorted(steady.items()):
            known = sorted(r for r in rates if r is not None)
            median = known[len(known) // 2] if known else 0
            print(f"{dialect}: leaf-1 {port} TX while polarized: " +
                  " ".join("-" if r is None else f"{r / 1e9:.2f}"
                           for r in rates) + " GB/s")
            if (len(known) < len(rates) or median <= 0 or
                    any(r > median * STEADY_FACTOR or
                        r < median / STEADY_FACTOR for r in known)):
                failures.append(f"leaf-1 {port}: TX not steady while "
                                f"polarized (median {median:.3g}): {rates}")

        # While leaf-0 is away, leaf-1's reports keep coming.
        sysm.sleep_until(OUTAGE[0] + 1.5)
        during = scrape(bridge_http)
        age1 = metric(during, "fabricdiag_gnmi_last_update_age_seconds",
                      "leaf-1")
        up0 = metric(during, "fabricdiag_gnmi_subscription_up", "leaf-0")
        if age1 is None or age1 > 2 * INTERVAL + 0.5:
            failures.append(f"leaf-1's last update {age1} s old while "
                            "leaf-0 was away: one switch stalled another")
        if up0 != 0:
            failures.append(f"leaf-0 subscription_up {up0} while its server "
                            "was away")
        sysm.sleep_until(END)
        after = scrape(bridge_http)
        for leaf in ("leaf-0", "leaf-1"):
            if metric(after, "fabricdiag_gnmi_subscription_up", leaf) != 1:
                failures.append(f"{leaf}: subscription not up at the end")
        reconnects = metric(after, "fabricdiag_gnmi_reconnects_total",
                            "leaf-0")
        if not reconnects:
            failures.append(f"leaf-0: reconnects_total {reconnects} after "
                            "its server came back")
        # The bridge moves each group's samples before the report grid's
        # points (the simulator's targets time samples from the Subscribe):
        # a sample waits less than half an interval to be reported.
        wait1 = metric(after, "fabricdiag_gnmi_sample_wait_seconds", "leaf-1")
        realigns1 = metric(after, "fabricdiag_gnmi_sample_realigns_total",
                           "leaf-1")
        print(f"{dialect}: leaf-1's samples wait {wait1} s for the report "
              f"(interval {INTERVAL} s), {realigns1} groups subscribed again "
              "to get there")
        if wait1 is None or wait1 > INTERVAL / 2:
            failures.append(f"leaf-1: samples wait {wait1} s for the report, "
                            f"over half the interval ({realigns1} realigns)")
        with sysm.events_lock:
            events = list(sysm.events)
        if tls:
            with open(f"{work}/bridge.log") as f:
                if "not-a-real-secret-42" in f.read():
                    failures.append("the bridge logged the password")

        def first(kind, node, what, after, device=None):
            for t, e in events:
                if (t >= after and e.get("event") in what and
                        e.get("kind") == kind and e.get("node") == node and
                        (device is None or e.get("device") == device)):
                    return t, e
            return None, None

        # The switches' first poll after the wave began, on the
        # simulator's clock: printed, to tell the switch's share of a
        # latency from the rest.
        polled = (math.ceil((sysm.t0 + WAVE[0]) / REFRESH) * REFRESH -
                  sysm.t0)
        # (kind, node, device, budget in intervals): strength as in
        # sim_faults_e2e (the polarization is weak, a storm and a flap
        # strong); the polarization is seen only in the leaf's counters.
        expected = [("ecmp_imbalance", "leaf-1", None,
                     OPEN + REFRESH_INTERVALS),
                    ("pfc_storm", "gpu-000", "mlx5_1", STRONG_OPEN),
                    ("link_flap", "leaf-1", "Ethernet3", STRONG_OPEN)]
        for kind, node, device, budget in expected:
            t, e = first(kind, node, ("OPENED",), WAVE[0] - 1, device)
            if t is None or t > WAVE[0] + budget * INTERVAL:
                failures.append(f"{kind} on {node}: opened at {t} s, wave "
                                f"at {WAVE[0]} s (within {budget} "
                                "intervals)")
                continue
            print(f"{dialect}: {kind} on {node} opened "
                  f"{(t - WAVE[0]) / INTERVAL:.1f} intervals after the fault "
                  f"began, {(t - polled) / INTERVAL:.1f} after the switches' "
                  f"next poll (budget {budget}): {e.get('summary', '')}")
            ids = {ev.get("id") for u, ev in events
                   if t <= u < WAVE[1] and ev.get("kind") == kind and
                   ev.get("node") == node and
                   (device is None or ev.get("device") == device)}
            flaps = [u for u, ev in events
                     if t <= u < WAVE[1] and ev.get("event") == "RESOLVED"
                     and ev.get("kind") == kind and ev.get("node") == node
                     and (device is None or ev.get("device") == device)]
            if len(ids) > 1 or flaps:
                failures.append(f"{kind} on {node}: not one finding while "
                                f"the wave lasted: ids {sorted(ids)}, "
                                f"resolved at {flaps}")
            if kind == "pfc_storm":
                # The host's pause opens it; the leaf's ports join its
                # victims with the leaf's next counter poll (an UPDATED).
                seen = [(ev.get("nodes", []),
                         ev.get("evidence", {}).get("victim_ports", ""))
                        for u, ev in events
                        if t <= u < WAVE[1] and ev.get("kind") == kind and
                        ev.get("node") == node and
                        ev.get("device") == device]
                if not any("leaf-0" in nodes and "leaf-0" in str(victims)
                           for nodes, victims in seen):
                    failures.append("pfc_storm named no leaf-0 port among "
                                    f"its victims during the wave: {seen}")
            r, _ = first(kind, node, ("RESOLVED",), t, device)
            if r is None or r > WAVE[1] + RESOLVE_WITHIN:
                failures.append(f"{kind} on {node}: resolved at {r} s, wave "
                                f"ended at {WAVE[1]} s (within "
                                f"{RESOLVE_WITHIN} s)")
        # Nothing opens outside the wave (its secondary effects included:
        # a storm's victims see pause and congestion).
        quiet = [(0, WAVE[0]), (WAVE[1] + RESOLVE_WITHIN, END)]
        for t, e in events:
            if e.get("event") != "OPENED":
                continue
            if any(a <= t < b for a, b in quiet):
                failures.append(f"{e.get('kind')} on {e.get('node')} "
                                f"{e.get('device')} opened at {t:.1f} s, "
                                "outside the wave")
    except AssertionError as err:
        failures.append(str(err))
    finally:
        sysm.stop_all()
    if failures:
        print(f"FAIL ({dialect}): work dir {work}")
        for f in failures:
            print("  " + f)
        for name in ("bridge", "sim", "collector"):
            print(f"--- {name} log tail ---\n" + sysm.log_tail(name, 30))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"PASS ({dialect})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
