#!/usr/bin/env python3
"""The connect storm: --agents virtual agents connect at once to one
fabricdiag-collector that has --jobs layouts declared over their nodes,
once with the agents' LLDP neighbors in their inventories and once without
(--lldp=both, the default; on or off runs one side), so that the ingest
cost of the discovery shows side by side.

Each run starts the collector on loopback with a fresh --state_dir, pinned
to CPU --collector_cpu (taskset), applies --jobs layouts (tp 8, pp 1, the
agents' nodes vnode-00000.. dealt to them in order), then starts
`fabricdiag-sim --virtual_agents=--agents [--virtual_agent_lldp=false]`
pinned to CPU --sim_cpu for --seconds. While it runs, polls the
collector's /metrics: every 0.2 s until the discovered topology is
complete (fabricdiag_node_facts_nodes and
fabricdiag_topology_discovered_links{kind="host"} at agents x 8 NICs),
then every --poll_seconds (1 s: a scrape of 8,500 nodes' series costs the
collector ~30 ms, which a 5 Hz poll would take from the pass it measures;
Prometheus scrapes every 15-60 s); reads the fabricdiag_analysis_pass_seconds
histogram at the end, which counts every pass. Prints per run:
  - the passes over 1 s (from the histogram), the longest pass seen;
  - the sim's summary: reports acknowledged of sent, dropped (lost at the
    agents: their backlog was full), and the warm-up it needed until 99% of
    the agents had caught up with their backlog (the backlog-clear time; at
    least min(5 s, --seconds/4));
  - the collector's CPU seconds (utime + stime, /proc/PID/stat) and RSS,
    and the most its agent streams' read buffers held at a poll
    (fabricdiag_ingest_read_buffer_bytes);
  - the node facts held and failed, the topology's rebuilds, when the last
    node's facts were held and when the discovered topology was complete
    (both from the start of the sim, to the poll), and the last rebuild's
    duration (fabricdiag_topology_rebuild_seconds);
  - the load average (1 min) before and after: the machine is shared.

  bench/connect_storm.py [--build_dir=build] [--agents=8500] [--jobs=100]
                         [--seconds=60] [--poll_seconds=1]
                         [--lldp=both|on|off]
                         [--collector_flag=--analysis_shards ...]
                         [--collector_env=VAR=value ...]

Exit 0 when the targets are met in every run (no pass over 1 s, backlog
cleared within 30 s, no report dropped; with neighbors, the discovered
topology complete), 1 when one is missed, 2 on errors.

Measured on a 2-core machine shared with other builds: bench/RESULTS.md
("The connect storm with LLDP neighbors") and docs/cluster.md#measured.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from layout_cost import binaries, cpu_seconds, free_port, rss_mib, stop
from layout_cost import wait_http


def metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def passes_over_one_second(text):
    """Passes that took more than 1 s, from the pass histogram."""
    le1 = re.search(r'^fabricdiag_analysis_pass_seconds_bucket\{le="1(?:\.0)?"\}'
                    r" (\S+)$", text, re.M)
    count = metric(text, "fabricdiag_analysis_pass_seconds_count")
    if le1 is None or count is None:
        return None
    return int(count - float(le1.group(1)))


def apply_layouts(cli, target, tmp, agents, jobs):
    per_job = agents // jobs
    for j in range(jobs):
        first = j * per_job
        count = per_job if j < jobs - 1 else agents - first
        hosts = ", ".join(f"vnode-{first + h:05d}" for h in range(count))
        path = os.path.join(tmp, f"job{j}.yaml")
        with open(path, "w") as f:
            f.write(f"job: job{j}\ngpus_per_node: 8\n"
                    f"parallelism: {{tp: 8, pp: 1, dp: {count}}}\n"
                    f"hosts: [{hosts}]\n")
        subprocess.run([cli, target, "--timeout=60s", "layout", "apply", path],
                       check=True, stdout=subprocess.DEVNULL)


NICS = 8  # fabricdiag-sim's virtual agents: 8 NICs each


def host_links(text):
    m = re.search(r'^fabricdiag_topology_discovered_links\{kind="host"\} '
                  r"(\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def collector_env(settings):
    """This process's environment with the collector's own VAR=value
    settings (the simulator keeps this process's)."""
    env = dict(os.environ)
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or not name:
            raise ValueError(f"--collector_env wants VAR=value: {setting!r}")
        env[name] = value
    return env


def run_storm(args, collector, cli, sim, lldp):
    """One storm; a dict of what it measured. Raises on errors."""
    tmp = tempfile.mkdtemp(prefix="fabricdiag_connect_storm.")
    grpc_port, http_port = free_port(), free_port()
    log = open(os.path.join(tmp, "collector.log"), "w")
    proc = subprocess.Popen(
        ["taskset", "-c", str(args.collector_cpu), collector,
         f"--listen=127.0.0.1:{grpc_port}",
         f"--http_listen=127.0.0.1:{http_port}", f"--state_dir={tmp}/state"]
        + args.collector_flag,
        env=collector_env(args.collector_env),
        stdout=log, stderr=subprocess.STDOUT)
    target = f"--collector=127.0.0.1:{grpc_port}"
    passes = {}  # passes_total -> the duration its scrape showed
    scrape_errors = []
    want_links = args.agents * NICS
    seen = {}  # "facts", "topology" -> seconds after the sim started
    done = threading.Event()
    start = [0.0]

    def poll():
        url = f"http://127.0.0.1:{http_port}/metrics"
        while not done.is_set():
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    text = r.read().decode()
                at = time.monotonic() - start[0]
                n = metric(text, "fabricdiag_analysis_passes_total")
                d = metric(text, "fabricdiag_analysis_pass_duration_seconds")
                if n is not None and d is not None:
                    passes[int(n)] = d
                buffers = metric(text, "fabricdiag_ingest_read_buffer_bytes")
                if buffers is not None:
                    seen["read_buffers"] = max(buffers,
                                               seen.get("read_buffers", 0))
                nodes = metric(text, "fabricdiag_node_facts_nodes")
                if lldp and "facts" not in seen and nodes == args.agents:
                    seen["facts"] = at
                if lldp and "topology" not in seen and \
                        host_links(text) == want_links:
                    seen["topology"] = at
                    seen["rebuild_seconds"] = metric(
                        text, "fabricdiag_topology_rebuild_seconds")
            except OSError as e:
                scrape_errors.append(str(e))
            fast = lldp and "topology" not in seen
            done.wait(0.2 if fast else args.poll_seconds)

    try:
        wait_http(f"http://127.0.0.1:{http_port}/healthz",
                  time.monotonic() + 20)
        apply_layouts(cli, target, tmp, args.agents, args.jobs)
        load_before = os.getloadavg()[0]
        cpu0 = cpu_seconds(proc.pid)
        poller = threading.Thread(target=poll)
        start[0] = time.monotonic()
        poller.start()
        try:
            out = subprocess.run(
                ["taskset", "-c", str(args.sim_cpu), sim,
                 f"--virtual_agents={args.agents}",
                 f"--virtual_agent_lldp={'true' if lldp else 'false'}",
                 f"--collector=127.0.0.1:{grpc_port}",
                 f"--duration={args.seconds:g}s"],
                capture_output=True, text=True, timeout=args.seconds + 120)
        finally:
            done.set()
            poller.join()
        wall = time.monotonic() - start[0]
        cpu = cpu_seconds(proc.pid) - cpu0
        with urllib.request.urlopen(
                f"http://127.0.0.1:{http_port}/metrics", timeout=10) as r:
            final = r.read().decode()
        rss = rss_mib(proc.pid)
        load_after = os.getloadavg()[0]
    finally:
        stop(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    summary = [line for line in out.stdout.splitlines()
               if line.startswith("virtual agents:")]
    if out.returncode != 0 or not summary:
        raise RuntimeError(f"fabricdiag-sim exit {out.returncode}:\n"
                           f"{out.stdout[-2000:]}{out.stderr[-2000:]}")
    sim_result = re.search(r"reports acked (\d+) of (\d+) \(dropped (\d+)\)",
                           summary[0])
    warm = re.search(r"after (\d+) s of warm-up", summary[0])
    acked, sent, dropped = (int(g) for g in sim_result.groups())
    return {
        "summary": summary[0],
        "over": passes_over_one_second(final),
        "longest": max(passes.values()) if passes else float("nan"),
        "passes_seen": len(passes),
        "backlog": float(warm.group(1)) if warm else float("inf"),
        "acked": acked, "sent": sent, "dropped": dropped,
        "cpu": cpu, "wall": wall, "rss": rss,
        "facts_nodes": metric(final, "fabricdiag_node_facts_nodes"),
        "facts_failed": metric(final,
                               "fabricdiag_node_facts_writes_failed_total"),
        "host_links": host_links(final),
        "rebuilds": metric(final, "fabricdiag_topology_rebuilds_total"),
        "facts_at": seen.get("facts"),
        "topology_at": seen.get("topology"),
        "rebuild_seconds": seen.get("rebuild_seconds"),
        "read_buffers": seen.get("read_buffers"),
        "load": (load_before, load_after),
        "scrape_errors": scrape_errors,
    }


def show(value, fmt):
    return "-" if value is None else fmt.format(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build_dir", default="build")
    ap.add_argument("--agents", type=int, default=8500)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--collector_cpu", default="1",
                    help="CPUs for taskset -c, e.g. 1 or 0,1")
    ap.add_argument("--sim_cpu", default="0")
    ap.add_argument("--poll_seconds", type=float, default=1.0)
    ap.add_argument("--lldp", choices=("both", "on", "off"), default="both")
    ap.add_argument("--collector_flag", action="append", default=[],
                    help="a flag for the collector, e.g. "
                         "--collector_flag=--analysis_shards (repeatable)")
    ap.add_argument("--collector_env", action="append", default=[],
                    help="VAR=value in the collector's environment alone, "
                         "e.g. the unit's GLIBC_TUNABLES=glibc.malloc."
                         "hugetlb=1 (repeatable)")
    args = ap.parse_args()
    try:
        collector_env(args.collector_env)
    except ValueError as e:
        print(f"connect_storm.py: {e}", file=sys.stderr)
        return 2
    collector, cli = binaries(args.build_dir, "connect_storm.py")
    if collector is None:
        return 2
    sim = os.path.join(args.build_dir, "sim/fabricdiag-sim")
    if args.agents < args.jobs or args.jobs < 1:
        print("connect_storm.py: need --agents >= --jobs >= 1",
              file=sys.stderr)
        return 2

    sides = {"both": (False, True), "on": (True,), "off": (False,)}[args.lldp]
    runs = []
    for lldp in sides:
        try:
            r = run_storm(args, collector, cli, sim, lldp)
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            print(f"connect_storm.py: {e}", file=sys.stderr)
            return 2
        print(("with" if lldp else "without") + " LLDP: " + r["summary"])
        runs.append((lldp, r))

    print(f"\n=== connect storm: {args.agents} agents at once, {args.jobs} "
          f"jobs, {args.seconds:g} s; collector on CPU {args.collector_cpu},"
          f" sim on CPU {args.sim_cpu}"
          + (f"; collector flags {' '.join(args.collector_flag)}"
             if args.collector_flag else "") + " ===")
    rows = [
        ("load average (1 min) before / after",
         lambda r: f"{r['load'][0]:.1f} / {r['load'][1]:.1f}"),
        ("collector CPU seconds (% of a core)",
         lambda r: f"{r['cpu']:.1f} ({r['cpu'] / r['wall'] * 100:.0f}%)"),
        ("collector RSS at the end", lambda r: f"{r['rss']:.0f} MiB"),
        ("streams' read buffers, most seen",
         lambda r: show(r["read_buffers"] and r["read_buffers"] / 2**20,
                        "{:.0f} MiB")),
        ("analysis passes over 1 s (target 0)",
         lambda r: f"{r['over']} (longest seen {r['longest']:.2f} s)"),
        ("backlog cleared (target <= 30 s)",
         lambda r: f"{r['backlog']:g} s"),
        ("reports dropped at the agents (target 0)",
         lambda r: f"{r['dropped']} of {r['sent']}"),
        ("node facts held / failed",
         lambda r: f"{show(r['facts_nodes'], '{:.0f}')} / "
                   f"{show(r['facts_failed'], '{:.0f}')}"),
        ("topology rebuilds", lambda r: show(r["rebuilds"], "{:.0f}")),
        ("discovered host links", lambda r: show(r["host_links"], "{:.0f}")),
        ("last node's facts held, after the sim started",
         lambda r: show(r["facts_at"], "{:.1f} s")),
        ("discovered topology complete, after the sim started",
         lambda r: show(r["topology_at"], "{:.1f} s")),
        ("the rebuild that completed it",
         lambda r: show(r["rebuild_seconds"], "{:.2f} s")),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'':{width}}  " + "  ".join(
        f"{'with LLDP' if lldp else 'without LLDP':>24}" for lldp, _ in runs))
    for name, cell in rows:
        print(f"{name:{width}}  " +
              "  ".join(f"{cell(r):>24}" for _, r in runs))
    for lldp, r in runs:
        if r["scrape_errors"]:
            print(f"/metrics scrapes failed ({'with' if lldp else 'without'}"
                  f" LLDP): {len(r['scrape_errors'])} "
                  f"({r['scrape_errors'][0]})")
    met = all(r["over"] == 0 and r["backlog"] <= 30 and r["dropped"] == 0 and
              (not lldp or r["topology_at"] is not None)
              for lldp, r in runs)
    print("targets:", "met" if met else "MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
