#!/usr/bin/env python3
"""What jobs declaring themselves over HTTP cost a real fabricdiag-collector.

Starts the collector binary on loopback ports with a fresh --state_dir and
no agents, then:
  - declares --jobs jobs of --ranks ranks each (8 GPUs a host, explicit
    `ranks` with host, gpu and NIC, as the Python module sends them, tp 8,
    a lease of 1 h, longer than the run) with PUT /api/v1/jobs/JOB over
    one keep-alive connection: the latency of each PUT (request sent to
    answer read);
  - renews every lease once per --renew_period seconds, spread evenly over
    the period, for --renew_rounds periods: the collector's CPU during the
    renewals, against its CPU over as long a time idle with every job
    declared (the same analysis loop, without renewals).

  bench/declare_cost.py [--build_dir=build] [--jobs=1000] [--ranks=512]
                        [--renew_period=30] [--renew_rounds=1]

Prints the figures; exit 0, 2 on errors. The smoke test (ctest -L bench)
runs it small.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# The servers' ports: outside the ephemeral range, held for the run
# (tests/testing/ports.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "testing"))
from ports import free_port  # noqa: E402  (path set just above)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def layout(job, ranks):
    hosts = (ranks + 7) // 8
    return {
        "gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1,
                                            "dp": ranks // 8},
        "ranks": [{"rank": r, "host": f"{job}-h{r // 8:04d}", "gpu": r % 8,
                   "nic": f"mlx5_{r % 8}"} for r in range(hosts * 8)][:ranks],
        "lease_seconds": 3600, "source": "python", "owner": "bench"}


def dropped(what, error, proc, log, tmp):
    """Reports a connection the collector dropped, with its exit status
    and the end of its log; returns the exit code 2."""
    print(f"{what}: {error!r}; collector exit status {proc.poll()}; its "
          "log ends:", file=sys.stderr)
    log.flush()
    with open(os.path.join(tmp, "collector.log")) as f:
        print(f.read()[-1500:], file=sys.stderr)
    return 2


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build_dir", default="build")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--ranks", type=int, default=512)
    ap.add_argument("--renew_period", type=float, default=30)
    ap.add_argument("--renew_rounds", type=int, default=1)
    args = ap.parse_args()
    if args.ranks % 8 != 0 or args.ranks <= 0:
        print("--ranks must be a positive multiple of 8", file=sys.stderr)
        return 2
    collector = os.path.join(args.build_dir, "server/fabricdiag-collector")
    if not os.access(collector, os.X_OK):
        print(f"declare_cost.py: no {collector}; build first",
              file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="declare-cost-")
    http_port = free_port()
    log = open(os.path.join(tmp, "collector.log"), "w")
    proc = subprocess.Popen(
        [collector, "--listen=127.0.0.1:0",
         f"--http_listen=127.0.0.1:{http_port}", f"--state_dir={tmp}/state"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", http_port,
                                                  timeout=60)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("collector did not start", file=sys.stderr)
                    return 2
                time.sleep(0.1)
        jobs = [f"job-{i:04d}" for i in range(args.jobs)]
        headers = {"Content-Type": "application/json"}
        latencies = []
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        for job in jobs:
            body = json.dumps(layout(job, args.ranks))
            start = time.perf_counter()
            try:
                conn.request("PUT", f"/api/v1/jobs/{job}", body, headers)
                r = conn.getresponse()
                answer = r.read()
            except (OSError, http.client.HTTPException) as e:
                return dropped(f"PUT {job}", e, proc, log, tmp)
            latencies.append(time.perf_counter() - start)
            if r.status != 201:
                print(f"PUT {job}: {r.status} {answer[:200]}", file=sys.stderr)
                return 2
        declare_wall = time.monotonic() - t0
        declare_cpu = cpu_seconds(proc.pid) - cpu0
        print(f"declare: {args.jobs} jobs x {args.ranks} ranks "
              f"({len(body)} bytes each) in {declare_wall:.1f} s; latency "
              f"p50 {percentile(latencies, 50) * 1e3:.1f} ms, p99 "
              f"{percentile(latencies, 99) * 1e3:.1f} ms, max "
              f"{max(latencies) * 1e3:.1f} ms; collector CPU "
              f"{declare_cpu:.1f} s")

        span = args.renew_period * args.renew_rounds
        cpu0 = cpu_seconds(proc.pid)
        time.sleep(span)
        idle_cpu = cpu_seconds(proc.pid) - cpu0

        # A fresh connection: the idle wait may outlast the server's idle
        # timeout for a kept connection.
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)
        renew_latencies = []
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        step = args.renew_period / len(jobs)
        for k in range(args.renew_rounds * len(jobs)):
            at = t0 + k * step
            pause = at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            start = time.perf_counter()
            try:
                conn.request("POST",
                             f"/api/v1/jobs/{jobs[k % len(jobs)]}/renew")
                r = conn.getresponse()
                r.read()
            except (OSError, http.client.HTTPException) as e:
                return dropped(f"renewal {k}", e, proc, log, tmp)
            renew_latencies.append(time.perf_counter() - start)
            if r.status != 200:
                print(f"renew: {r.status}", file=sys.stderr)
                return 2
        pause = t0 + span - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        renew_cpu = cpu_seconds(proc.pid) - cpu0
        print(f"renewals: {len(renew_latencies)} over {span:.0f} s "
              f"({len(renew_latencies) / span:.0f}/s); latency p50 "
              f"{percentile(renew_latencies, 50) * 1e3:.2f} ms, p99 "
              f"{percentile(renew_latencies, 99) * 1e3:.2f} ms; collector "
              f"CPU {renew_cpu:.2f} s ({renew_cpu / span * 100:.1f}% of a "
              f"core) against {idle_cpu:.2f} s idle "
              f"({idle_cpu / span * 100:.1f}%): the renewals cost "
              f"{(renew_cpu - idle_cpu) / span * 100:.1f}% of a core")
        return 0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
