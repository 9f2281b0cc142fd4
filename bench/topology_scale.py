#!/usr/bin/env python3
"""What a 200k-GPU fabric's topology costs: the CLI that parses it and the
collector that stores and serves it.

Writes the topology of --nodes GPU nodes x 8 NICs, 16 nodes per leaf (128
host ports, 4 uplinks each: 25,000 nodes = 200,000 links, 1,563 switches),
in the flow style of docs/topology-format.md; starts a fabricdiag-collector
on loopback with a fresh --state_dir, then measures:
  - `fabricdiag topology apply`: wall time (read, parse, validate, send,
    acknowledged write) and the CLI process's peak RSS (the YAML parse);
  - the collector's RSS before and after, and its topology.pb;
  - `fabricdiag topology show`: wall time and output size.

  bench/topology_scale.py [--build_dir=build] [--nodes=25000]

Exit 0 when the topology was applied and shown back whole, 1 when it was
refused (the message is printed), 2 on errors.

Measured at 25,000 nodes on a 2-core machine shared with other builds
(docs/topology-format.md#size-limits): apply 10 s, the CLI's peak RSS
964 MiB, the collector 17 -> 209 MiB, topology.pb 7.8 MB, show 9.9 s.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from layout_cost import binaries, free_port, rss_mib, stop, wait_http


def topology_yaml(nodes):
    leaves = (nodes + 15) // 16
    out = ["switches:\n"]
    for leaf in range(leaves):
        out.append(f"  - name: leaf-{leaf}\n"
                   "    uplinks: [swp129, swp130, swp131, swp132]\n")
    out.append("links:\n")
    width = max(3, len(str(nodes - 1)))
    for n in range(nodes):
        for k in range(8):
            out.append(f"  - {{host: gpu-{n:0{width}d}, nic: mlx5_{k}, "
                       f"switch: leaf-{n // 16}, port: swp{n % 16 * 8 + k + 1}}}\n")
    return "".join(out), leaves


def run_measured(argv, stdout):
    """Runs argv; returns (exit code, wall seconds, peak RSS MiB, stderr)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    return proc.returncode, wall, usage.ru_maxrss / 1024, err.decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build_dir", default="build")
    ap.add_argument("--nodes", type=int, default=25000)
    args = ap.parse_args()
    collector, cli = binaries(args.build_dir, "topology_scale.py")
    if collector is None:
        return 2

    tmp = tempfile.mkdtemp(prefix="fabricdiag_topology_scale.")
    path = os.path.join(tmp, "topology.yaml")
    text, leaves = topology_yaml(args.nodes)
    with open(path, "w") as f:
        f.write(text)
    grpc_port, http_port = free_port(), free_port()
    log = open(os.path.join(tmp, "collector.log"), "w")
    proc = subprocess.Popen(
        [collector, f"--listen=127.0.0.1:{grpc_port}",
         f"--http_listen=127.0.0.1:{http_port}", f"--state_dir={tmp}/state"],
        stdout=log, stderr=subprocess.STDOUT)
    target = f"--collector=127.0.0.1:{grpc_port}"
    try:
        wait_http(f"http://127.0.0.1:{http_port}/healthz",
                  time.monotonic() + 20)
        rss_before = rss_mib(proc.pid)
        code, apply_s, cli_rss, err = run_measured(
            [cli, target, "--timeout=120s", "topology", "apply", path],
            subprocess.DEVNULL)
        print(f"topology: {args.nodes} nodes x 8 NICs = {args.nodes * 8} "
              f"links, {leaves} switches, {len(text) / 1e6:.1f} MB of YAML")
        if code != 0:
            print(f"topology apply: exit {code} after {apply_s:.2f} s: "
                  f"{err.strip()}")
            return 1
        time.sleep(1)
        rss_after = rss_mib(proc.pid)
        pb = os.path.join(tmp, "state", "topology.pb")
        pb_size = os.path.getsize(pb) if os.path.exists(pb) else 0
        with open(os.path.join(tmp, "shown.yaml"), "w") as shown:
            code, show_s, show_rss, err = run_measured(
                [cli, target, "--timeout=120s", "topology", "show"], shown)
        shown_size = os.path.getsize(os.path.join(tmp, "shown.yaml"))
        with open(os.path.join(tmp, "shown.yaml")) as f:
            shown_links = sum(1 for line in f if "{host: " in line)
    except (OSError, RuntimeError) as e:
        print(f"topology_scale.py: {e}", file=sys.stderr)
        return 2
    finally:
        stop(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"topology apply: {apply_s:.2f} s, CLI peak RSS {cli_rss:.0f} MiB")
    print(f"collector: RSS {rss_before:.0f} -> {rss_after:.0f} MiB, "
          f"topology.pb {pb_size / 1e6:.1f} MB")
    print(f"topology show: exit {code}, {show_s:.2f} s, CLI peak RSS "
          f"{show_rss:.0f} MiB, {shown_size / 1e6:.1f} MB, "
          f"{shown_links} links")
    return 0 if code == 0 and shown_links == args.nodes * 8 else 1


if __name__ == "__main__":
    sys.exit(main())
