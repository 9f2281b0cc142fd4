#!/usr/bin/env python3
"""Our alert rules in a real Prometheus, on a simulated cluster.

Debian's `prometheus` scrapes, on loopback, one fabricdiag-agent per
simulated node and leaf and the fabricdiag-collector, loads
deploy/prometheus/rules/, and fabricdiag-sim injects a PFC storm and a hot
expert from FAULT_START to FAULT_END. Through Prometheus's HTTP API:
  - no fabricdiag alert fires before the faults;
  - FabricdiagPfcStorm and FabricdiagHotExpertIncast fire, naming the right
    node and NIC, within DETECT seconds of the start (the collector's
    window and hysteresis, a scrape and an evaluation);
  - FabricdiagPauseStormEvent (raw counters, no collector involved) fires;
  - the two finding alerts resolve within RESOLVE seconds of the end;
  - the finding alerts carry no `instance` (aggregated away, so that a
    cluster of collectors gives one alert) and their collector_url, which
    Prometheus fills by querying for the collectors serving the finding,
    is the collector's page;
  - once FabricdiagPfcStorm fired, the storm is silenced
    (`fabricdiag silence --matcher=kind=pfc_storm,node=...`): its alert
    stops firing within SILENCED seconds while the finding stays open,
    marked silenced, and the hot expert's alert fires on.
Prints when each alert fired and resolved.

  prometheus_e2e_test.py SOURCE_DIR SIM AGENT COLLECTOR CLI
Exits 77 (skipped) when prometheus is not installed.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from ports import free_port  # noqa: E402

FAULT_START, FAULT_END, END = 12.0, 40.0, 58.0
DETECT, RESOLVE, SILENCED = 15.0, 18.0, 6.0
NODES = [f"gpu-{i:03d}" for i in range(4)]
NICS = [f"mlx5_{n}" for n in range(4)]
HOT = ("gpu-001", "mlx5_2")
STORM = ("gpu-003", "mlx5_1")


def get_json(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


class Rig:
    """Processes of one test run in a work directory, their logs, and the
    simulated fabric they watch. Stops every process it started."""

    def __init__(self, prefix):
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.work = tempfile.mkdtemp(prefix=prefix, dir=base)
        self.procs = {}

    def spawn(self, name, argv, env=None):
        log = open(f"{self.work}/{name}.log", "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log,
                                            env=env)

    def spawn_listening(self, name, launch, attempts=5, deadline_s=30):
        """Starts a server on ports free_port() found and waits until it
        answers. No other test gets those ports and no outgoing connection
        takes them, but a process that is none of ours still can before the
        server binds them: a server that exits before it answers is started
        again on fresh ports. launch() picks the ports and returns
        (argv, the URL to wait for, a result); returns the result."""
        for attempt in range(1, attempts + 1):
            argv, url, result = launch()
            self.spawn(name, argv)
            deadline = time.time() + deadline_s
            while self.procs[name].poll() is None:
                try:
                    with urllib.request.urlopen(url, timeout=2):
                        pass
                    # Ours, not another server on the port it failed to
                    # bind: it is still running once the port answered.
                    time.sleep(0.2)
                    if self.procs[name].poll() is None:
                        return result
                except OSError:
                    if time.time() > deadline:
                        raise AssertionError(
                            f"{name} did not answer at {url}:\n" +
                            self.tail(name))
                    time.sleep(0.2)
            print(f"{name} exited before it answered at {url} (attempt "
                  f"{attempt} of {attempts}):\n{self.tail(name, 3)}")
        raise AssertionError(f"{name} exited {attempts} times before it "
                             f"answered:\n{self.tail(name)}")

    def tail(self, name, n=12):
        try:
            with open(f"{self.work}/{name}.log", "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(
                    errors="replace")
        except OSError:
            return ""

    def stop(self):
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def write_inputs(self, fault_start, fault_end, hot=True):
        """The layout, topology and fault scenario (a PFC storm, and a hot
        expert unless hot is False) from fault_start to fault_end."""
        work = self.work
        with open(f"{work}/layout.yaml", "w") as f:
            f.write("job: moe-prom\ngpus_per_node: 4\n"
                    "parallelism: {tp: 4, pp: 1, dp: 4, ep: 4}\n"
                    f"hosts: [{', '.join(NODES)}]\n"
                    f"rails: [{', '.join(NICS)}]\n"
                    "model: {params: 1.6e10, hidden: 4096, layers: 32, "
                    "seq_len: 4096, micro_batch: 1, micro_batches: 4, "
                    "dtype_bytes: 2, experts: 16, top_k: 2}\n")
        with open(f"{work}/topology.yaml", "w") as f:
            f.write("switches:\n  - {name: leaf-0, uplinks: [swp49, swp50, "
                    "swp51, swp52]}\nlinks:\n")
            for i, h in enumerate(NODES):
                for n, nic in enumerate(NICS):
                    f.write(f"  - {{host: {h}, nic: {nic}, switch: leaf-0, "
                            f"port: swp{i * 4 + n + 1}}}\n")
        faults = [{"kind": "pfc_storm", "node": STORM[0], "nic": STORM[1],
                   "priority": 3, "start": fault_start, "end": fault_end}]
        if hot:
            faults.insert(0, {"kind": "hot_expert", "node": HOT[0],
                              "nic": HOT[1], "factor": 6,
                              "start": fault_start, "end": fault_end})
        with open(f"{work}/scenario.json", "w") as f:
            json.dump({"step_seconds": 1.0, "faults": faults}, f)

    def apply_declared(self, cli, grpc):
        for args in (["layout", "apply", f"{self.work}/layout.yaml"],
                     ["topology", "apply", f"{self.work}/topology.yaml"]):
            subprocess.run([cli, f"--collector=127.0.0.1:{grpc}", *args],
                           check=True, capture_output=True, timeout=30)

    def start_fabric(self, sim, agent, collectors_of):
        """The simulator and one agent per node and leaf, the agent of the
        i-th streaming to collectors_of(i) (--collector's value). Returns
        t0, the simulation's start, and the agents' (node, port)."""
        work = self.work
        t0 = time.time()
        self.spawn("sim", [sim, f"--layout={work}/layout.yaml",
                           f"--topology={work}/topology.yaml",
                           f"--scenario={work}/scenario.json",
                           f"--out={work}/fabric", "--interval=1s"])
        while not os.path.isdir(f"{work}/fabric/leaf-0/sys/class/net"):
            if time.time() - t0 > 20:
                raise AssertionError("sim wrote no tree:\n" + self.tail("sim"))
            time.sleep(0.05)
        targets = []
        for i, node in enumerate(NODES + ["leaf-0"]):
            def launch(node=node, i=i):
                port = free_port()
                return ([agent, f"--node={node}",
                         f"--sysfs_root={work}/fabric/{node}/sys",
                         f"--ethtool_dir={work}/fabric/{node}/ethtool",
                         f"--listen=127.0.0.1:{port}", "--interval=1s",
                         f"--collector={collectors_of(i)}"],
                        f"http://127.0.0.1:{port}/metrics", port)
            targets.append((node, self.spawn_listening(f"agent-{node}",
                                                       launch)))
        return t0, targets

    def start_prometheus(self, src, targets, collector_http_ports):
        """Prometheus with our rule files as shipped, a 1 s scrape and
        evaluation, every agent and every collector; its API URL."""
        work = self.work
        shutil.copytree(f"{src}/deploy/prometheus/rules", f"{work}/rules")
        with open(f"{work}/prometheus.yml", "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "rule_files: [rules/*.yml]\nscrape_configs:\n"
                    "  - job_name: fabricdiag-agent\n    static_configs:\n")
            for node, port in targets:
                f.write(f"      - targets: ['127.0.0.1:{port}']\n"
                        f"        labels: {{node: {node}}}\n")
            collectors = ", ".join(f"'127.0.0.1:{p}'"
                                   for p in collector_http_ports)
            f.write("  - job_name: fabricdiag-collector\n"
                    f"    static_configs: [{{targets: [{collectors}]}}]\n")

        def launch():
            prom = free_port()
            return (["prometheus", f"--config.file={work}/prometheus.yml",
                     f"--storage.tsdb.path={work}/tsdb",
                     f"--web.listen-address=127.0.0.1:{prom}"],
                    f"http://127.0.0.1:{prom}/-/ready",
                    f"http://127.0.0.1:{prom}/api/v1")
        return self.spawn_listening("prometheus", launch)

    def start_collector(self, name, argv):
        """A collector on fresh gRPC and HTTP ports, started with argv and
        --listen/--http_listen; its (gRPC, HTTP) ports once it answers."""
        def launch():
            grpc, http = free_port(), free_port()
            return ([*argv, f"--listen=127.0.0.1:{grpc}",
                     f"--http_listen=127.0.0.1:{http}"],
                    f"http://127.0.0.1:{http}/healthz", (grpc, http))
        return self.spawn_listening(name, launch)


def firing_alerts(api):
    """The firing alerts of Prometheus, [] when it does not answer."""
    try:
        alerts = get_json(f"{api}/alerts")["data"]["alerts"]
    except (OSError, ValueError, KeyError):
        return []
    return [a for a in alerts if a.get("state") == "firing"]


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    src, sim, agent, collector, cli = sys.argv[1:]
    if shutil.which("prometheus") is None:
        print("SKIP: prometheus not found (apt-get install prometheus)")
        return 77
    rig = Rig("fabricdiag-prom.")
    work = rig.work
    failures = []
    try:
        rig.write_inputs(FAULT_START, FAULT_END)
        grpc, http = rig.start_collector(
            "collector", [collector, f"--state_dir={work}/state"])
        rig.apply_declared(cli, grpc)
        t0, targets = rig.start_fabric(sim, agent,
                                       lambda i: f"127.0.0.1:{grpc}")
        api = rig.start_prometheus(src, targets, [http])

        # Poll the alerts once a second until the end of the run.
        fired, resolved, annotations = {}, {}, {}
        early = []
        want = {"FabricdiagPfcStorm": STORM, "FabricdiagHotExpertIncast": HOT}
        # The storm's silence: when it was made, when its alert stopped.
        silenced_at = silence_ended = None
        hot_while_silenced = False
        while time.time() - t0 < END:
            t = time.time() - t0
            firing = {}
            for a in firing_alerts(api):
                name = a["labels"].get("alertname", "")
                firing.setdefault(name, []).append(a["labels"])
                if name.startswith("Fabricdiag") and t < FAULT_START:
                    early.append((t, a["labels"]))
                if name not in fired:
                    fired[name] = (t, a["labels"])
                    annotations[name] = a.get("annotations", {})
            if silenced_at is None and "FabricdiagPfcStorm" in firing:
                r = subprocess.run(
                    [cli, f"--collector=127.0.0.1:{grpc}", "silence",
                     f"--matcher=kind=pfc_storm,node={STORM[0]}",
                     "--for=10m", "--comment=prometheus e2e"],
                    capture_output=True, text=True, timeout=20)
                if r.returncode != 0:
                    failures.append(f"silence: exit {r.returncode}: "
                                    f"{r.stderr.strip()}")
                silenced_at = time.time() - t0
            elif silenced_at is not None and silence_ended is None and \
                    "FabricdiagPfcStorm" not in firing:
                silence_ended = t
                hot_while_silenced = "FabricdiagHotExpertIncast" in firing
                r = subprocess.run(
                    [cli, f"--collector=127.0.0.1:{grpc}", "findings",
                     "--json", "--kind=pfc_storm"],
                    capture_output=True, text=True, timeout=20)
                try:
                    storms = json.loads(r.stdout)
                except ValueError:
                    storms = []
                if not any(f.get("node") == STORM[0] and f.get("silenced_by")
                           for f in storms):
                    failures.append("the silenced storm is not listed open "
                                    f"and silenced: {r.stdout.strip()}")
            for name in list(fired):
                if name not in firing and name not in resolved and \
                        t > FAULT_END:
                    resolved[name] = t
            time.sleep(1)

        # --- judgement ---------------------------------------------------
        for t, labels in early:
            failures.append(f"{labels.get('alertname')} fired at {t:.0f}s, "
                            f"before any fault: {labels}")
        for name, (node, device) in want.items():
            if name not in fired:
                failures.append(f"{name} never fired")
                continue
            t, labels = fired[name]
            if t > FAULT_START + DETECT:
                failures.append(f"{name} fired {t - FAULT_START:.0f}s after "
                                f"the fault (limit {DETECT:.0f}s)")
            if (labels.get("node"), labels.get("device")) != (node, device):
                failures.append(f"{name} names {labels.get('node')} "
                                f"{labels.get('device')}, not {node} {device}")
            if labels.get("severity") not in ("warning", "critical"):
                failures.append(f"{name} without a severity: {labels}")
            if "instance" in labels:
                failures.append(f"{name} carries the collector's instance: "
                                f"{labels}")
            url = annotations[name].get("collector_url")
            if url != f"http://127.0.0.1:{http}/":
                failures.append(f"{name}: collector_url {url!r} is not the "
                                f"collector's page http://127.0.0.1:{http}/")
            r = resolved.get(name)
            if name == "FabricdiagPfcStorm":
                continue  # silenced: judged below
            if r is None or r > FAULT_END + RESOLVE:
                failures.append(f"{name} did not resolve within {RESOLVE:.0f}s "
                                f"of the fault's end ({r})")
        if silenced_at is None:
            failures.append("the storm was never silenced (its alert never "
                            "fired)")
        elif silence_ended is None or \
                silence_ended > silenced_at + SILENCED:
            failures.append(f"FabricdiagPfcStorm still fired {SILENCED:.0f}s "
                            f"after its silence ({silence_ended})")
        elif silence_ended > FAULT_END:
            failures.append("the storm's alert ended with the fault, not "
                            "with its silence")
        elif not hot_while_silenced:
            failures.append("the hot expert's alert, not silenced, stopped "
                            "with the storm's")
        if "FabricdiagPauseStormEvent" not in fired:
            failures.append("FabricdiagPauseStormEvent (raw counters) never "
                            "fired")
        elif fired["FabricdiagPauseStormEvent"][1].get("node") != STORM[0]:
            failures.append("FabricdiagPauseStormEvent names "
                            f"{fired['FabricdiagPauseStormEvent'][1]}")
        print(f"faults {FAULT_START:.0f}s..{FAULT_END:.0f}s")
        if silenced_at is not None:
            ended = "-" if silence_ended is None else f"{silence_ended:.1f}s"
            print(f"  the storm silenced at {silenced_at:.1f}s: its alert "
                  f"stopped at {ended}")
        for name in sorted(fired):
            t, labels = fired[name]
            r = resolved.get(name)
            print(f"  {name:<32} fired {t - FAULT_START:+5.1f}s "
                  f"({labels.get('node')} {labels.get('device', '')}"
                  f"{labels.get('netdev', '')}); resolved "
                  + ("-" if r is None else f"{r - FAULT_END:+5.1f}s after "
                     "the end"))
    except AssertionError as e:
        failures.append(str(e))
    finally:
        rig.stop()
        if failures:
            for name in ("prometheus", "collector", "sim"):
                print(f"--- {name} ---\n{rig.tail(name)}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
