#!/usr/bin/env python3
"""What the Python module (python/fabricdiag) costs the training process.

Starts the fabricdiag-collector binary on loopback with a fresh
--state_dir, then, in this process, does what rank 0 does after the
ranks' all_gather, with the module's non-torch core:
  - declare: --declares times, a layout of --ranks ranks (8 GPUs a host,
    explicit ranks with host, gpu and NIC, tp 8, ep 8) built from the
    gathered placement with layout.build_from_ranks, then a client.Lease
    started and waited for until the collector answered the PUT: the
    time the training thread spends in declare (p50, p99, max), and how
    much of it is building the layout, and the CPU time the process spent
    (time.process_time: every thread). Each job is deleted (untimed)
    before the next, as a finished job does;
  - renew: one lease renewed every --renew_period seconds by the module's
    daemon thread for --renewals renewals: the thread's CPU time per
    renewal (time.thread_time, which the Lease records), the whole
    process's CPU over the same span as a check, and both per hour at a
    30 s renewal period (a 90 s lease: the module renews every lease/3).

  bench/python_declare_cost.py [--build_dir=build] [--declares=200]
                               [--ranks=512] [--renewals=30]
                               [--renew_period=1]

Prints the figures; exit 0, 2 on errors (a declare that was not accepted,
a renewal that did not happen). The smoke test (ctest -L bench) runs it
small.
"""

import argparse
import http.client
import logging
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from fabricdiag import client, layout  # noqa: E402  (path set just above)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def gathered(job, ranks):
    """What all_gather_object hands rank 0: (rank, host, gpu, nic) each."""
    return [layout.RankInfo(r, "%s-h%04d" % (job, r // 8), r % 8, "mlx5_%d" % (r % 8))
            for r in range(ranks)]


def wait_healthy(port, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            conn.close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def bench_declare(cfg, args):
    """Returns (wall s, build s, process CPU s) per declare, or None."""
    totals, builds, cpus = [], [], []
    for i in range(args.declares):
        job = "py-bench-%04d" % i
        ranks = gathered(job, args.ranks)
        cpu0 = time.process_time()
        start = time.perf_counter()
        doc = layout.build_from_ranks(job, ranks, tp=8, ep=8)
        built = time.perf_counter()
        lease = client.Lease(client.Client(cfg), doc, cfg.lease)
        lease.start()
        ok = lease.wait_declared(cfg.timeout + 1.0)
        end = time.perf_counter()
        cpus.append(time.process_time() - cpu0)
        lease.stop()  # deletes: not timed, the job has ended
        if not ok:
            print("declare %s: state %s, HTTP %s" % (job, lease.state, lease.last_status),
                  file=sys.stderr)
            return None
        totals.append(end - start)
        builds.append(built - start)
    return totals, builds, cpus


def bench_renew(cfg, args):
    """Returns (thread CPU s, process CPU s, renewals, wall s), or None."""
    doc = layout.build_from_ranks("py-bench-renew", gathered("py-bench-renew", args.ranks),
                                  tp=8, ep=8)
    # The module renews every lease/3 seconds.
    lease = client.Lease(client.Client(cfg), doc, int(round(args.renew_period * 3)))
    lease.start()
    if not lease.wait_declared(cfg.timeout + 1.0):
        print("renew: the layout was not declared", file=sys.stderr)
        return None
    # Start counting after the first renewal: the thread's CPU then holds
    # the initial PUT (JSON of every rank) and the thread start.
    deadline = time.monotonic() + args.renew_period * 3 + 10
    while lease.renewals < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    # The thread records its CPU time just after counting a renewal.
    time.sleep(args.renew_period / 4)
    thread0, proc0, n0, wall0 = (lease.thread_cpu_seconds, time.process_time(),
                                 lease.renewals, time.monotonic())
    deadline = wall0 + args.renew_period * (args.renewals + 3) + 10
    while lease.renewals < n0 + args.renewals and time.monotonic() < deadline:
        time.sleep(args.renew_period / 4)
    time.sleep(args.renew_period / 4)
    thread1, proc1, n1, wall1 = (lease.thread_cpu_seconds, time.process_time(),
                                 lease.renewals, time.monotonic())
    lease.stop()
    if n1 - n0 < args.renewals:
        print("renew: %d renewals in %.0f s, expected %d" % (n1 - n0, wall1 - wall0,
                                                             args.renewals),
              file=sys.stderr)
        return None
    return thread1 - thread0, proc1 - proc0, n1 - n0, wall1 - wall0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build_dir", default="build")
    ap.add_argument("--declares", type=int, default=200)
    ap.add_argument("--ranks", type=int, default=512)
    ap.add_argument("--renewals", type=int, default=30)
    ap.add_argument("--renew_period", type=float, default=1.0)
    args = ap.parse_args()
    if args.ranks <= 0 or args.ranks % 64 != 0:
        print("--ranks must be a positive multiple of 64 (tp 8 x ep 8)", file=sys.stderr)
        return 2
    if args.renew_period < 1:
        print("--renew_period must be at least 1 s (the module's shortest)", file=sys.stderr)
        return 2
    collector = os.path.join(args.build_dir, "server/fabricdiag-collector")
    if not os.access(collector, os.X_OK):
        print("python_declare_cost.py: no %s; build first" % collector, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    tmp = tempfile.mkdtemp(prefix="py-declare-cost-")
    http_port = free_port()
    log = open(os.path.join(tmp, "collector.log"), "w")
    proc = subprocess.Popen(
        [collector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:%d" % http_port,
         "--state_dir=%s/state" % tmp], stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_healthy(http_port, proc):
            print("collector did not start", file=sys.stderr)
            return 2
        cfg = client.Config(collector="http://127.0.0.1:%d" % http_port, lease=600)
        declared = bench_declare(cfg, args)
        if declared is None:
            return 2
        totals, builds, cpus = declared
        print("declare: %d x %d ranks: p50 %.1f ms, p99 %.1f ms, max %.1f ms "
              "(building the layout: p50 %.1f ms; the rest is the PUT answered); "
              "CPU of this process: p50 %.1f ms, p99 %.1f ms"
              % (len(totals), args.ranks, percentile(totals, 50) * 1e3,
                 percentile(totals, 99) * 1e3, max(totals) * 1e3,
                 percentile(builds, 50) * 1e3, percentile(cpus, 50) * 1e3,
                 percentile(cpus, 99) * 1e3))
        renewed = bench_renew(cfg, args)
        if renewed is None:
            return 2
        thread_cpu, proc_cpu, n, wall = renewed
        per = thread_cpu / n
        print("renew: %d renewals every %.0f s: lease thread CPU %.3f ms per renewal "
              "(process %.3f ms), %.1f ms per hour at 30 s (process %.1f ms)"
              % (n, wall / n, per * 1e3, proc_cpu / n * 1e3, per * 120 * 1e3,
                 proc_cpu / n * 120 * 1e3))
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
