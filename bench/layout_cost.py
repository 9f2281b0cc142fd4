#!/usr/bin/env python3
"""What large declared layouts cost a real fabricdiag-collector.

Starts the collector binary on loopback ports with a fresh --state_dir, and
no agents, then for each of --layouts layouts of --hosts hosts x 8 GPUs
(tp 8, pp 4, ep 10, dp = the rest: a MoE job as large as the limits allow):
  - `fabricdiag layout apply` wall time (CLI to acknowledged write),
  - one GET /metrics after each apply: wall time and size,
then the collector's CPU over --idle_seconds with every layout declared and
no agent reporting (the analysis loop's idle cost), and its VmRSS.

  bench/layout_cost.py [--build_dir=build] [--hosts=25000] [--layouts=10]
                       [--idle_seconds=10]

Prints one line per measurement and a summary; exit 0 when the targets are
met (apply < 2 s, /metrics < 1 s, idle CPU < 5% of a core), 1 when one is
missed, 2 on errors. The smoke test (ctest -L bench) runs it small.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

# The servers' ports: outside the ephemeral range, held for the run
# (tests/testing/ports.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "testing"))
from ports import free_port  # noqa: E402  (path set just above)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def layout_yaml(job, hosts):
    gpus = hosts * 8
    tp, pp, ep = 8, 4, 10
    dp = gpus // (tp * pp)
    names = ", ".join(f"{job}-h{i:05d}" for i in range(hosts))
    return (f"job: {job}\ngpus_per_node: 8\n"
            f"parallelism: {{tp: {tp}, pp: {pp}, dp: {dp}, ep: {ep}}}\n"
            "rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6,"
            " mlx5_7]\n"
            f"hosts: [{names}]\n")


def wait_http(url, deadline):
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def binaries(build_dir, script):
    """The collector and CLI binaries of build_dir; (None, None), said on
    stderr, when one is missing."""
    collector = os.path.join(build_dir, "server/fabricdiag-collector")
    cli = os.path.join(build_dir, "cli/fabricdiag")
    for binary in (collector, cli):
        if not os.access(binary, os.X_OK):
            print(f"{script}: {binary} not found; build first",
                  file=sys.stderr)
            return None, None
    return collector, cli


def stop(proc):
    """SIGTERM, then SIGKILL after 20 s; reaps it."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build_dir", default="build")
    ap.add_argument("--hosts", type=int, default=25000)
    ap.add_argument("--layouts", type=int, default=10)
    ap.add_argument("--idle_seconds", type=float, default=10)
    args = ap.parse_args()
    if args.hosts % 40 != 0 or not 40 <= args.hosts <= 32760:
        print("layout_cost.py: --hosts must be a multiple of 40 in [40, 32760]"
              " (dp = hosts / 4 must be a multiple of ep = 10)",
              file=sys.stderr)
        return 2
    collector, cli = binaries(args.build_dir, "layout_cost.py")
    if collector is None:
        return 2

    tmp = tempfile.mkdtemp(prefix="fabricdiag_layout_cost.")
    grpc_port, http_port = free_port(), free_port()
    log = open(os.path.join(tmp, "collector.log"), "w")
    proc = subprocess.Popen(
        [collector, f"--listen=127.0.0.1:{grpc_port}",
         f"--http_listen=127.0.0.1:{http_port}",
         f"--state_dir={tmp}/state"],
        stdout=log, stderr=subprocess.STDOUT)
    metrics_url = f"http://127.0.0.1:{http_port}/metrics"
    worst_apply = worst_scrape = 0.0
    try:
        wait_http(f"http://127.0.0.1:{http_port}/healthz",
                  time.monotonic() + 20)
        for i in range(args.layouts):
            path = os.path.join(tmp, f"job{i}.yaml")
            with open(path, "w") as f:
                f.write(layout_yaml(f"job{i}", args.hosts))
            start = time.monotonic()
            subprocess.run([cli, f"--collector=127.0.0.1:{grpc_port}",
                            "--timeout=60s", "layout", "apply", path],
                           check=True, stdout=subprocess.DEVNULL)
            apply_s = time.monotonic() - start
            start = time.monotonic()
            with urllib.request.urlopen(metrics_url, timeout=60) as r:
                size = len(r.read())
            scrape_s = time.monotonic() - start
            worst_apply = max(worst_apply, apply_s)
            worst_scrape = max(worst_scrape, scrape_s)
            print(f"layout {i + 1}: {args.hosts} hosts, {args.hosts * 8} ranks:"
                  f" apply {apply_s:.3f} s, /metrics {scrape_s:.3f} s"
                  f" {size / 1e6:.2f} MB")
        time.sleep(1)  # let the last apply's work settle
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.idle_seconds)
        idle = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0)
        rss = rss_mib(proc.pid)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"layout_cost.py: {e}", file=sys.stderr)
        return 2
    finally:
        stop(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n=== {args.layouts} layouts x {args.hosts} hosts, no agents ===")
    print(f"worst apply:    {worst_apply:.3f} s (target < 2 s)")
    print(f"worst /metrics: {worst_scrape:.3f} s (target < 1 s)")
    print(f"idle CPU:       {idle * 100:.2f}% of a core (target < 5%)")
    print(f"collector RSS:  {rss:.0f} MiB")
    met = worst_apply < 2 and worst_scrape < 1 and idle < 0.05
    print("targets:", "met" if met else "MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
