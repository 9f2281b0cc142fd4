#!/usr/bin/env python3
"""What fabricdiag-gnmi-bridge costs at fabric scale.

Starts a fabricdiag-collector, fabricdiag-gnmi-fleet (--switches identical
OpenConfig targets of --ports ports each, one listening port per switch,
streaming every second) and one fabricdiag-gnmi-bridge subscribed to all of
them through the collector's topology. Once every switch is up, measures
over --seconds: the leaves the bridge applied (fabricdiag_gnmi_updates_total),
the bridge's CPU (utime + stime from /proc) and RSS, its reports, and, for
context, the fleet's and the collector's CPU.

  gnmi_scale.py --build_dir=build --switches=1500 --ports=64 --seconds=30
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=30) as r:
        return r.read().decode()


def total(text, name):
    return sum(float(v) for v in re.findall(rf"^{name}{{[^}}]*}} (\S+)$",
                                             text, re.M))


def wait_log(path, pattern, proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        with open(path, "rb") as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.1)
    with open(path, "rb") as f:
        tail = f.read()[-2000:].decode(errors="replace")
    raise SystemExit(f"{path}: no {pattern!r}:\n{tail}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build_dir", required=True)
    ap.add_argument("--switches", type=int, default=1500)
    ap.add_argument("--ports", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warmup_timeout", type=float, default=180)
    ap.add_argument("--perf", default="",
                    help="record the bridge with `perf record -g` into "
                         "this file while measuring")
    args = ap.parse_args()
    b = args.build_dir
    binaries = {
        "collector": f"{b}/server/fabricdiag-collector",
        "cli": f"{b}/cli/fabricdiag",
        "fleet": f"{b}/bench/fabricdiag-gnmi-fleet",
        "bridge": f"{b}/gnmi/fabricdiag-gnmi-bridge",
    }
    work = tempfile.mkdtemp(prefix="fabricdiag-gnmi-scale.")
    procs = {}

    def spawn(name, argv):
        log = open(f"{work}/{name}.log", "wb")
        procs[name] = subprocess.Popen(argv, stdout=log, stderr=log,
                                       start_new_session=True)
        return procs[name]

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        col = spawn("collector", [
            binaries["collector"], "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0", f"--state_dir={work}/state",
            "--analysis_interval=1s"])
        grpc = int(wait_log(f"{work}/collector.log", rb"gRPC on port (\d+)",
                            col, 30).group(1))
        for _ in range(5):
            base = random.randrange(20000, 60000 - args.switches)
            fleet = spawn("fleet", [
                binaries["fleet"], f"--switches={args.switches}",
                f"--ports={args.ports}", f"--base_port={base}",
                f"--topology_out={work}/topology.json"])
            try:
                wait_log(f"{work}/fleet.log", rb"ready", fleet, 60)
                break
            except SystemExit:
                fleet.wait()
        else:
            raise SystemExit("fleet: no free port range")
        subprocess.run([binaries["cli"], f"--collector=127.0.0.1:{grpc}",
                        "topology", "apply", f"{work}/topology.json"],
                       check=True, capture_output=True, timeout=60)
        bridge = spawn("bridge", [
            binaries["bridge"], f"--collector=127.0.0.1:{grpc}",
            "--http_listen=127.0.0.1:0", "--interval=1s",
            "--topology_refresh=5s"])
        http = int(wait_log(f"{work}/bridge.log",
                            rb"serving /metrics on port (\d+)", bridge,
                            30).group(1))
        start = time.time()
        while True:
            up = total(scrape(http), "fabricdiag_gnmi_subscription_up")
            if up >= args.switches:
                break
            if time.time() - start > args.warmup_timeout:
                raise SystemExit(f"only {up:.0f} of {args.switches} "
                                 "switches up")
            time.sleep(1)
        print(f"all {args.switches} switches up after "
              f"{time.time() - start:.1f} s")
        time.sleep(5)  # past the initial full updates
        m0 = scrape(http)
        c0 = {n: cpu_seconds(p.pid) for n, p in procs.items()}
        t0 = time.time()
        if args.perf:
            subprocess.run(["perf", "record", "-g", "-o", args.perf, "-p",
                            str(bridge.pid), "--", "sleep",
                            str(args.seconds)], capture_output=True)
        else:
            time.sleep(args.seconds)
        m1 = scrape(http)
        c1 = {n: cpu_seconds(p.pid) for n, p in procs.items()}
        t1 = time.time()
        secs = t1 - t0
        updates = (total(m1, "fabricdiag_gnmi_updates_total") -
                   total(m0, "fabricdiag_gnmi_updates_total"))
        reports = (total(m1, "fabricdiag_gnmi_reports_total") -
                   total(m0, "fabricdiag_gnmi_reports_total"))
        bridge_cpu = c1["bridge"] - c0["bridge"]
        print(f"{args.switches} switches x {args.ports} ports, "
              f"{secs:.1f} s measured")
        print(f"bridge: {updates / secs:,.0f} leaf updates/s, "
              f"{reports / secs:,.0f} reports/s, "
              f"CPU {bridge_cpu / secs:.2f} cores, "
              f"{bridge_cpu / max(updates, 1) * 1e6:.2f} us per update, "
              f"RSS {rss_mb(bridge.pid):.0f} MB "
              f"({rss_mb(bridge.pid) * 1024 / args.switches:.0f} KB per "
              "switch)")
        for name in ("fleet", "collector"):
            print(f"{name}: CPU {(c1[name] - c0[name]) / secs:.2f} cores, "
                  f"RSS {rss_mb(procs[name].pid):.0f} MB")
        errors = total(m1, "fabricdiag_gnmi_errors_total")
        if errors:
            print(f"bridge errors: {errors:.0f}")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        try:
            with open(f"{work}/fleet.log") as f:
                print("fleet: " + f.read().strip().splitlines()[-1])
        except (OSError, IndexError):
            pass
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
