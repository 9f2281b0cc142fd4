#!/usr/bin/env python3
"""The agent learns its NICs' LLDP neighbors from a real lldpd.

Two network namespaces joined by veth pairs: a "leaf" whose ports are swp1..swp3
and a "host" whose NIC netdevs eth0 and eth1 are the other ends; one real lldpd
per namespace with its own control socket, LLDP sent every second. The real
fabricdiag-agent runs in the host namespace on a fake sysfs tree whose RDMA
devices name eth0 and eth1, asking its lldpd through --lldpd_socket; a second
agent runs in the leaf namespace on a switch's tree (ports swp1..swp3). The host
agent's /metrics must show leaf-0 and swp1/swp2, the leaf agent's host-0 and
eth0/eth1; after eth1's cable moves to swp3 (the pair deleted and recreated),
both must follow. A second agent pointed at a
socket where no lldpd listens must print no neighbors and exit 0.

Usage: lldp_netns_e2e_test.py AGENT_BINARY
Needs root, iproute2 and Debian's lldpd; a missing one fails the test.
"""

import os
import re
import sys
import time

from netns_fabric import (Fabric, fail, host_sysfs, http_get, in_ns,
                          require_root_and_tools, switch_sysfs, wait_for)

DEADLINE_S = 90  # the whole test
TAG = f"fdl{os.getpid() % 100000}"
LEAF = f"{TAG}leaf"  # the namespaces Fabric names after TAG and the key
HOST = f"{TAG}host"
AGENT_PORT = 9810  # /metrics, in each agent's own namespace


def neighbors(text):
    """{netdev: (system_name, port, port_id_type)} from /metrics."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("fabricdiag_lldp_neighbor_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
        out[labels["netdev"]] = (labels["system_name"], labels["port"],
                                 labels["port_id_type"])
    return out


def main():
    require_root_and_tools(len(sys.argv) == 2)
    agent = sys.argv[1]
    deadline = time.monotonic() + DEADLINE_S
    with Fabric(TAG, prefix="lldp-e2e-") as fabric:
        work = fabric.work
        fabric.add_node("leaf", hostname="leaf-0", ports="swp*")
        fabric.add_node("host", hostname="host-0", ports="eth*")
        fabric.cable("leaf", "swp1", "host", "eth0")
        fabric.cable("leaf", "swp2", "host", "eth1")
        fabric.start_lldpd(deadline)

        sysfs = f"{work}/sys"
        host_sysfs(sysfs, ["eth0", "eth1"])
        switch_sysfs(f"{work}/leaf-sys", ["swp1", "swp2", "swp3"])
        os.makedirs(f"{work}/ethtool")
        for key, node, root in (("host", "host-0", sysfs),
                                ("leaf", "leaf-0", f"{work}/leaf-sys")):
            fabric.spawn(key, f"{fabric.ns(key)}-agent", [
                agent, f"--node={node}", f"--sysfs_root={root}",
                f"--ethtool_dir={work}/ethtool",
                f"--listen=127.0.0.1:{AGENT_PORT}",
                f"--lldpd_socket={fabric.sockets[key]}", "--lldp_interval=1s"])

        # /metrics is served inside each namespace: scrape from there.
        def ns_scrape(ns=HOST):
            return http_get(ns, f"http://127.0.0.1:{AGENT_PORT}/metrics")

        t0 = time.monotonic()
        want = {"eth0": ("leaf-0", "swp1", "ifname"),
                "eth1": ("leaf-0", "swp2", "ifname")}
        got = wait_for("eth0 -> leaf-0 swp1 and eth1 -> leaf-0 swp2 on /metrics",
                       lambda: neighbors(ns_scrape()) == want and want, deadline)
        print(f"neighbors on /metrics after {time.monotonic() - t0:.1f} s: {got}")
        # The switch's own agent sees the host on its ports.
        want_leaf = {"swp1": ("host-0", "eth0", "ifname"),
                     "swp2": ("host-0", "eth1", "ifname")}
        wait_for("the leaf agent's swp1 -> host-0 eth0, swp2 -> host-0 eth1",
                 lambda: neighbors(ns_scrape(LEAF)) == want_leaf and want_leaf,
                 deadline)

        # Move eth1's cable from swp2 to swp3.
        fabric.uncable("host", "eth1")  # and its peer swp2
        t1 = time.monotonic()
        fabric.cable("leaf", "swp3", "host", "eth1")
        want = {"eth0": ("leaf-0", "swp1", "ifname"),
                "eth1": ("leaf-0", "swp3", "ifname")}
        wait_for("eth1 -> leaf-0 swp3 after the move",
                 lambda: neighbors(ns_scrape()) == want and want, deadline)
        print(f"moved cable seen on /metrics after {time.monotonic() - t1:.1f} s")
        want_leaf = {"swp1": ("host-0", "eth0", "ifname"),
                     "swp3": ("host-0", "eth1", "ifname")}
        wait_for("the leaf agent's swp3 -> host-0 eth1 after the move",
                 lambda: neighbors(ns_scrape(LEAF)) == want_leaf and want_leaf,
                 deadline)
        text = ns_scrape()
        if 'fabricdiag_lldp_up{source="lldpd"} 1' not in text:
            fail("fabricdiag_lldp_up is not 1 with lldpd running")

        # No lldpd behind the socket: no neighbors, not an error.
        once = in_ns(HOST, agent, "--once", f"--sysfs_root={sysfs}",
                     f"--ethtool_dir={work}/ethtool",
                     f"--lldpd_socket={work}/absent.socket", check=False)
        if once.returncode != 0:
            fail(f"--once with no lldpd: exit {once.returncode}: {once.stderr}")
        if '"neighbors": []' not in once.stdout or '"up": false' not in once.stdout:
            fail(f"--once with no lldpd: unexpected lldp section:\n{once.stdout[-800:]}")
        once = in_ns(HOST, agent, "--once", f"--sysfs_root={sysfs}",
                     f"--ethtool_dir={work}/ethtool",
                     f"--lldpd_socket={fabric.sockets['host']}", check=False)
        if '"port_id": "swp3"' not in once.stdout:
            fail(f"--once with lldpd: no swp3 neighbor:\n{once.stdout[-1500:]}")
        with open(f"{work}/{HOST}-agent.log") as f:
            costs = re.findall(r"lldp: \d+ neighbors from lldpd .*read in ([^)]*)\)",
                               f.read())
        print(f"lldpd reads (host agent, on each change): {costs}")
        print(f"PASS after {DEADLINE_S - (deadline - time.monotonic()):.1f} s")


if __name__ == "__main__":
    main()
