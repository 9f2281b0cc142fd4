#!/usr/bin/env python3
"""Our alert rules in a real Prometheus scraping a cluster of collectors.

Three nats-server processes from deploy/nats/nats-server.conf (addresses
moved to loopback), three fabricdiag-collector processes joined through
them (--nats, --collector_id col-a..c), the agents of a simulated fabric
spread over the collectors (each with the three as its failover list), and
Debian's `prometheus` scraping the agents and all three collectors with
deploy/prometheus/rules/ as shipped. fabricdiag-sim injects a PFC storm from
FAULT_START to FAULT_END. Through Prometheus's HTTP API, once a second:
  - the storm is exported by all three collectors (three
    fabricdiag_finding_active series), yet FabricdiagPfcStorm is ONE firing
    alert, without `instance`, naming the storm's node and NIC. (When the
    finding's severity changes, the followers mirror it a scrape after the
    leader, so the old and the new severity may both fire for a poll or
    two: counted, printed, and failed only beyond TRANSIENT polls);
  - after `kill -9` of the collector holding the analysis lease, the alert
    that fired then keeps firing at every poll (same labels, same activeAt:
    no new alert), its series now from two collectors, and its
    collector_url moves to a live collector's page;
  - every NATS server killed (kill -9) a few seconds after that, while the
    storm is open: each surviving collector says its findings are stale
    within STALE_BY seconds on gRPC (`fabricdiag findings`), its `watch`
    (a STALENESS event), /metrics (fabricdiag_cluster_findings_stale 1)
    and /api/v1/findings (the page's data), and Prometheus fires the
    shipped FabricdiagClusterFindingsStale for each; the NATS servers
    started again, all of these say current again within CURRENT_BY
    seconds (and the storm's alert stays the one alert throughout);
  - the alert resolves within RESOLVE seconds of the storm's end.
Prints the timeline.

  prometheus_cluster_e2e_test.py SOURCE_DIR SIM AGENT COLLECTOR CLI
Exits 77 (skipped) when prometheus or nats-server is not installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nats_config_test as nats_cluster  # noqa: E402
from prometheus_e2e_test import (  # noqa: E402
    STORM, Rig, firing_alerts, get_json)

FAULT_START, FAULT_END, END = 12.0, 80.0, 105.0
DETECT, RESOLVE = 25.0, 25.0
# NATS away: every surface stale within STALE_BY s of the kill (the 5 s
# limit, a scrape, the alert's `for: 10s` and an evaluation, on a loaded
# machine), current within CURRENT_BY s of the restart (JetStream elects
# its leaders again, a collector takes the lease).
STALE_BY, CURRENT_BY = 30.0, 40.0
STALE_ALERT = "FabricdiagClusterFindingsStale"
TRANSIENT = 3
IDS = ("col-a", "col-b", "col-c")
ALERT = "FabricdiagPfcStorm"


def storm_series(api):
    """How many fabricdiag_finding_active series of the storm Prometheus
    holds now (one per collector exporting it), or None."""
    q = urllib.parse.quote('count(fabricdiag_finding_active{kind="pfc_storm"})')
    try:
        result = get_json(f"{api}/query?query={q}")["data"]["result"]
    except (OSError, ValueError, KeyError):
        return None
    return int(float(result[0]["value"][1])) if result else 0


def analysis_leader(http_ports):
    """The --collector_id whose /metrics says it holds the lease, or None."""
    for cid, port in http_ports.items():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                        timeout=2) as r:
                text = r.read().decode()
        except OSError:
            continue
        if re.search(r"^fabricdiag_cluster_analysis_leader\{[^}]*\} 1$", text,
                     re.M):
            return cid
    return None


class Watch:
    """`fabricdiag watch --json` on one collector: its STALENESS events, as
    (seconds since `t0`, stale), read on a thread."""

    def __init__(self, cli, grpc_port, t0):
        self.t0 = t0
        self.events = []
        self.proc = subprocess.Popen(
            [cli, f"--collector=127.0.0.1:{grpc_port}", "watch", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "STALENESS":
                self.events.append((time.time() - self.t0, event["stale"]))

    def last(self):
        """The latest staleness the watch was told, None before any."""
        return self.events[-1][1] if self.events else None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def staleness_now(cli, grpc_port, http_port):
    """Whether the collector says its findings are stale, per surface:
    gRPC (the CLI's line), /metrics, /api/v1/findings; None where it did
    not answer."""
    out = {}
    try:
        r = subprocess.run([cli, f"--collector=127.0.0.1:{grpc_port}",
                            "findings"], capture_output=True, text=True,
                           timeout=15)
        out["grpc"] = r.stdout.startswith("findings stale: ") \
            if r.returncode == 0 else None
    except subprocess.TimeoutExpired:
        out["grpc"] = None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics",
                                    timeout=5) as r:
            m = re.search(r"^fabricdiag_cluster_findings_stale\{[^}]*\} (\S+)$",
                          r.read().decode(), re.M)
        out["metrics"] = float(m.group(1)) == 1 if m else None
    except OSError:
        out["metrics"] = None
    try:
        j = get_json(f"http://127.0.0.1:{http_port}/api/v1/findings",
                     timeout=5)
        out["json"] = j["staleness"]["stale"] if j["active"] else None
    except (OSError, ValueError, KeyError):
        out["json"] = None
    return out


def healthz(http_port):
    """The collector's /healthz text, or why it could not be read."""
    try:
        with urllib.request.urlopen(
                f"http://127.0.0.1:{http_port}/healthz", timeout=5) as r:
            return r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:  # 503 while unhealthy, with a body
        return e.read().decode(errors="replace")
    except OSError as e:
        return f"(not read: {e})"


def cli_output(cli, grpc_port, command):
    """`fabricdiag COMMAND` against the collector: its output, or why not."""
    try:
        r = subprocess.run([cli, f"--collector=127.0.0.1:{grpc_port}",
                            command], capture_output=True, text=True,
                           timeout=15)
        return f"$ fabricdiag {command}\n{r.stdout}{r.stderr}"
    except subprocess.TimeoutExpired:
        return f"$ fabricdiag {command}: no answer in 15s\n"


def nats_away(rig, nats, http, grpc, alive, cli, api, t0, failures):
    """Kills every NATS server, checks that the collectors `alive` say their
    findings are stale everywhere and that Prometheus fires STALE_ALERT for
    each, starts the servers again and checks that all say current again.
    Prints when each surface changed."""
    watches = {cid: Watch(cli, grpc[cid], t0) for cid in alive}
    try:
        # The watches start current: no STALENESS event before the kill.
        time.sleep(1)
        for name in nats_cluster.NAMES:
            rig.procs[name].kill()
            rig.procs[name].wait()
        killed = time.time() - t0
        print(f"killed every NATS server at {killed - FAULT_START:+.1f}s")
        seen = {}  # (collector, surface) -> seconds after the kill
        want = {(c, s) for c in alive
                for s in ("grpc", "metrics", "json", "watch", "alert")}
        while set(seen) != want and time.time() - t0 < killed + STALE_BY:
            t = time.time() - t0
            firing = {a["labels"].get("collector_id")
                      for a in firing_alerts(api)
                      if a["labels"].get("alertname") == STALE_ALERT}
            for cid in alive:
                now = staleness_now(cli, grpc[cid], http[cid])
                now["watch"] = watches[cid].last()
                now["alert"] = cid in firing
                for surface, stale in now.items():
                    if stale and (cid, surface) not in seen:
                        seen[(cid, surface)] = t - killed
            time.sleep(0.5)
        for cid, surface in sorted(want - set(seen)):
            failures.append(f"{cid} did not say its findings were stale on "
                            f"{surface} within {STALE_BY:.0f}s of the kill")
        print("stale after the kill: " + ", ".join(
            f"{c} {s} {v:.1f}s" for (c, s), v in sorted(seen.items())))

        # NATS back, on the same ports and stores.
        for name in nats_cluster.NAMES:
            log = open(f"{rig.work}/{name}.log", "a", encoding="utf-8")
            rig.procs[name] = subprocess.Popen(
                [nats, "-c", f"{rig.work}/{name}.conf"],
                env=dict(os.environ, NATS_SERVER_NAME=name), stdout=log,
                stderr=log)
        restarted = time.time() - t0
        print(f"started the NATS servers again {restarted - killed:.1f}s "
              f"after the kill")
        current = {}
        want = {(c, s) for c in alive
                for s in ("grpc", "metrics", "json", "watch")}
        while set(current) != want and \
                time.time() - t0 < restarted + CURRENT_BY:
            t = time.time() - t0
            for cid in alive:
                now = staleness_now(cli, grpc[cid], http[cid])
                now["watch"] = watches[cid].last()
                for surface, stale in now.items():
                    if stale is False and (cid, surface) not in current:
                        current[(cid, surface)] = t - restarted
            time.sleep(0.5)
        for cid, surface in sorted(want - set(current)):
            failures.append(f"{cid} still said its findings were stale on "
                            f"{surface} {CURRENT_BY:.0f}s after NATS was back")
        for cid in sorted({c for c, _ in want - set(current)}):
            failures.append(f"{cid}'s /healthz then:\n" + healthz(http[cid]))
        print("current after the restart: " + ", ".join(
            f"{c} {s} {v:.1f}s" for (c, s), v in sorted(current.items())))
        for cid in alive:
            flips = [stale for _, stale in watches[cid].events]
            if flips[:2] != [True, False]:
                failures.append(f"{cid}'s watch was told {flips}, not stale "
                                f"then current")
    finally:
        for w in watches.values():
            w.stop()


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    src, sim, agent, collector, cli = sys.argv[1:]
    nats = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if os.access("/usr/sbin/nats-server", os.X_OK)
        else None)
    if shutil.which("prometheus") is None or nats is None:
        print("SKIP: prometheus or nats-server not found (apt-get install "
              "prometheus nats-server)")
        return 77
    rig = Rig("fabricdiag-promcluster.")
    failures = []
    try:
        with open(f"{src}/deploy/nats/nats-server.conf", encoding="utf-8") as f:
            conf_text = f.read()
        servers = []
        nats_ports, nats_flags = nats_cluster.start_secured_servers(
            nats, conf_text, rig.work, servers)
        for name, p in zip(nats_cluster.NAMES, servers):
            rig.procs[name] = p
        if nats_cluster.wait_meta_leader(rig.work, nats_ports, servers) is None:
            raise AssertionError("; ".join(nats_cluster.FAILURES))
        urls = ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in nats_ports)

        grpc, http = {}, {}
        for cid in IDS:
            grpc[cid], http[cid] = rig.start_collector(f"collector-{cid}", [
                collector, f"--state_dir={rig.work}/state-{cid}",
                f"--nats={urls}", f"--collector_id={cid}",
                "--nats_replicas=3", *nats_flags])
        rig.write_inputs(FAULT_START, FAULT_END, hot=False)
        rig.apply_declared(cli, grpc["col-a"])

        # Node i streams to collector i mod 3 first, the others after it.
        def collectors_of(i):
            order = IDS[i % 3:] + IDS[:i % 3]
            return ",".join(f"127.0.0.1:{grpc[cid]}" for cid in order)

        t0, targets = rig.start_fabric(sim, agent, collectors_of)
        api = rig.start_prometheus(src, targets, list(http.values()))

        first = None        # (t, labels, activeAt) when the alert first fired
        overlaps = []       # (t, severities) of polls with several alerts
        at_kill = None      # (labels, activeAt) of the alert firing then
        with_instance = set()  # label sets of alerts that name a collector
        most_series = 0     # the most storm series before the kill
        killed = None       # (t, collector id)
        after_kill = []     # (t, alerts, series, collector_url) after it
        nats_phase = None   # (start, end) of NATS away and back
        resolved = None
        while time.time() - t0 < END:
            t = time.time() - t0
            storm = [a for a in firing_alerts(api)
                     if a["labels"].get("alertname") == ALERT]
            series = storm_series(api)
            if len(storm) > 1:
                overlaps.append((t, [a["labels"].get("severity")
                                     for a in storm]))
            for a in storm:
                if "instance" in a["labels"]:
                    with_instance.add(tuple(sorted(a["labels"].items())))
            if storm and first is None:
                first = (t, storm[0]["labels"], storm[0].get("activeAt"))
            if killed is None:
                most_series = max(most_series, series or 0)
                # Kill the leader once all three export the storm.
                if first and series == 3 and len(storm) == 1 and \
                        t > first[0] + 3:
                    leader = analysis_leader(http)
                    if leader:
                        p = rig.procs[f"collector-{leader}"]
                        p.kill()
                        p.wait()
                        killed = (t, leader)
                        at_kill = (storm[0]["labels"], storm[0].get("activeAt"))
            elif nats_phase is None and t > killed[0] + 8:
                alive = [c for c in IDS if c != killed[1]]
                nats_away(rig, nats, http, grpc, alive, cli, api, t0,
                          failures)
                nats_phase = (t, time.time() - t0)
            elif t < FAULT_END:
                same = [a for a in storm if a["labels"] == at_kill[0]]
                after_kill.append((t, same, series, same[0].get(
                    "annotations", {}).get("collector_url") if same else None))
            if first and not storm and t > FAULT_END and resolved is None:
                resolved = t
            time.sleep(1)
        if resolved is None:
            for cid in IDS:
                if killed is None or cid != killed[1]:
                    failures.append(f"{cid} at the end:\n" +
                                    healthz(http[cid]) +
                                    cli_output(cli, grpc[cid], "findings") +
                                    cli_output(cli, grpc[cid], "nodes"))

        # --- judgement ---------------------------------------------------
        if first is None:
            raise AssertionError(f"{ALERT} never fired")
        t, labels, _ = first
        print(f"storm {FAULT_START:.0f}s..{FAULT_END:.0f}s; {ALERT} fired "
              f"{t - FAULT_START:+.1f}s: {labels}")
        if t > FAULT_START + DETECT:
            failures.append(f"{ALERT} fired {t - FAULT_START:.0f}s after the "
                            f"fault (limit {DETECT:.0f}s)")
        if (labels.get("node"), labels.get("device")) != STORM:
            failures.append(f"{ALERT} names {labels}, not {STORM}")
        for labels_with in sorted(with_instance):
            failures.append(f"{ALERT} carries a collector's instance (one "
                            f"alert per collector): {dict(labels_with)}")
        if most_series != 3:
            failures.append(f"the storm was exported by {most_series} "
                            f"collectors at most, not 3: the test proves "
                            f"nothing of the aggregation")
        if overlaps:
            print(f"polls with several severities firing at once (a severity "
                  f"change mirrored a scrape late): {overlaps}")
        if len(overlaps) > TRANSIENT:
            failures.append(f"{len(overlaps)} polls with several {ALERT} "
                            f"alerts (limit {TRANSIENT}): {overlaps}")
        if killed is None:
            failures.append("no collector was killed (the storm never "
                            "reached all three, or no leader was found)")
        else:
            kt, leader = killed
            print(f"killed {leader} (the analysis leader) at "
                  f"{kt - FAULT_START:+.1f}s; {len(after_kill)} polls until "
                  f"the storm's end")
            dead_url = f"http://127.0.0.1:{http[leader]}/"
            live_urls = {f"http://127.0.0.1:{http[c]}/" for c in IDS
                         if c != leader}
            for pt, same, series, url in after_kill:
                if not same:
                    failures.append(f"{pt - FAULT_START:+.1f}s: the alert "
                                    f"firing at the kill ({at_kill[0]}) is "
                                    f"not firing")
                    continue
                if same[0].get("activeAt") != at_kill[1]:
                    failures.append(f"{pt - FAULT_START:+.1f}s: the alert is "
                                    f"active since {same[0].get('activeAt')}, "
                                    f"not {at_kill[1]}: a new alert")
                if pt > kt + 5 and url not in live_urls:
                    which = "the dead one" if url == dead_url else \
                        f"not one of {sorted(live_urls)}"
                    failures.append(f"{pt - FAULT_START:+.1f}s: collector_url "
                                    f"{url} is not a live collector ({which})")
                if pt > kt + 5 and series != 2:
                    failures.append(f"{pt - FAULT_START:+.1f}s: {series} storm "
                                    f"series, not the survivors' 2")
            if not after_kill:
                failures.append("no poll between the kill and the storm's end")
            if nats_phase is None:
                failures.append("the NATS servers were never killed")
            elif nats_phase[1] > FAULT_END:
                failures.append(f"NATS away and back took until "
                                f"{nats_phase[1]:.0f}s, after the storm's end")
        if resolved is None or resolved > FAULT_END + RESOLVE:
            failures.append(f"{ALERT} did not resolve within {RESOLVE:.0f}s of "
                            f"the storm's end ({resolved})")
        else:
            print(f"resolved {resolved - FAULT_END:+.1f}s after the storm's "
                  f"end")
    except AssertionError as e:
        failures.append(str(e))
    finally:
        rig.stop()
        if failures:
            for name in ("prometheus", "sim", "nats-1") + tuple(
                    f"collector-{c}" for c in IDS):
                print(f"--- {name} ---\n{rig.tail(name, 40)}",
                      file=sys.stderr)
        shutil.rmtree(rig.work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"PASS: one {ALERT} from three collectors, unchanged through "
              f"kill -9 of the analysis leader, resolved after the storm")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
