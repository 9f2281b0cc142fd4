#!/usr/bin/env python3
"""The fabric draws itself: real lldpds, agents and collector in namespaces.

A fabric of network namespaces cabled with veth pairs, one real lldpd each
(its own control socket, LLDP every second, port ids being interface names):

    spine-0  swp1 swp2
              |    |
    leaf-0   swp31 swp32       (swp1..swp6 face the hosts; swp5, swp6 free)
             swp1 swp2 swp3 swp4
              |    |    |    |
             eth0 eth1 eth0 eth1
             host-0    host-1  (mlx5_0 on eth0, mlx5_1 on eth1)

The real fabricdiag-agent runs in each of the four namespaces with
--lldpd_socket: on the hosts a fake sysfs tree whose RDMA devices name the
veth ends, on the switches a Linux switch's tree (netdevs, no RDMA device).
They stream to one real fabricdiag-collector.

Where the collector runs: in a fifth namespace, "mgmt", with a bridge that
every node namespace joins through a veth `mgmt0` (10.213.0.0/24; the
collector is .1). Each agent must sit in its node's namespace to reach its
lldpd's interfaces, and a node namespace cannot reach the root one's
loopback; a management network is what real switches and hosts have, it
keeps the collector's listener off the machine's own interfaces, and lldpd
never speaks on mgmt0 (-I names the fabric ports only). The CLI runs in the
mgmt namespace too.

Checks, each within its budget (the timings are printed):
  1. `fabricdiag topology show --discovered` equals the cabling: the four
     host links, the two switch links, leaf-0 tier 1 with uplinks
     swp31/swp32, spine-0 tier 2, and no problems.
  2. `fabricdiag topology adopt`; `topology diff` then agrees.
  3. host-1's eth1 cable moves from leaf-0 swp4 to swp5 (the veth pair is
     deleted and recreated): `cabling_mismatch` opens for host-1 mlx5_1,
     naming leaf-0 swp4 (declared) and leaf-0 swp5 (observed), and
     `topology diff` says moved.
  4. `fabricdiag topology adopt` again: the finding resolves, and no other
     finding was raised all along.

Usage: lldp_discovery_netns_e2e_test.py AGENT COLLECTOR CLI
Needs root, iproute2 (with bridges) and Debian's lldpd; a missing one fails
the test. KEEP_LLDP_E2E=1 keeps the work directory (logs).
"""

import json
import os
import sys
import time

from netns_fabric import (Fabric, fail, host_sysfs, http_get, in_ns,
                          require_root_and_tools, switch_sysfs, wait_for)

# Budgets, in seconds. LLDP is sent every second and the agents read lldpd
# every second, so each step normally takes a few seconds; the budgets leave
# room for a loaded machine.
BUDGET_SETUP_S = 30     # namespaces, lldpds, agents, collector
BUDGET_DISCOVER_S = 30  # from the agents' start to the full cabling
BUDGET_ADOPT_S = 10     # adopt and diff, no waiting
BUDGET_MOVE_S = 30      # from the moved cable to the discovered topology
BUDGET_MISMATCH_S = 30  # from there to the open finding
BUDGET_RESOLVE_S = 30   # from the second adopt to the resolved finding
TAG = f"fdd{os.getpid() % 100000}"
MGMT_NET = "10.213.0"  # the management network, /24
COLLECTOR_PORT = 9811  # gRPC, in the mgmt namespace
COLLECTOR_HTTP_PORT = 9812  # /metrics, in the mgmt namespace
ANALYSIS_INTERVAL = "500ms"

HOST_NICS = {"eth0": "mlx5_0", "eth1": "mlx5_1"}  # host_sysfs() numbering
LEAF_PORTS = ["swp1", "swp2", "swp3", "swp4", "swp5", "swp6", "swp31",
              "swp32"]
SPINE_PORTS = ["swp1", "swp2"]
# (host, netdev) -> leaf-0 port, as first cabled.
HOST_CABLES = {("host-0", "eth0"): "swp1", ("host-0", "eth1"): "swp2",
               ("host-1", "eth0"): "swp3", ("host-1", "eth1"): "swp4"}
UPLINKS = {"swp31": "swp1", "swp32": "swp2"}  # leaf-0 port -> spine-0 port


def expected_topology(host_cables):
    """The discovered topology of this cabling, as the CLI prints it."""
    links = sorted(
        ({"host": host, "nic": HOST_NICS[netdev], "switch": "leaf-0",
          "port": port} for (host, netdev), port in host_cables.items()),
        key=lambda l: (l["host"], l["nic"]))
    return {"switches": [{"name": "leaf-0", "uplinks": sorted(UPLINKS),
                          "tier": 1},
                         {"name": "spine-0", "tier": 2}],
            "links": links,
            "switch_links": [{"switch_a": "leaf-0", "port_a": leaf,
                              "switch_b": "spine-0", "port_b": spine}
                             for leaf, spine in sorted(UPLINKS.items())]}


def normalize(topology):
    """The parts of a topology (the file format) the test compares, lists
    sorted, a switch link's ends in order, defaults (no uplinks, tier 0)
    dropped."""
    switches = []
    for s in topology.get("switches", []):
        entry = {"name": s["name"]}
        if s.get("uplinks"):
            entry["uplinks"] = sorted(s["uplinks"])
        if s.get("tier"):
            entry["tier"] = s["tier"]
        switches.append(entry)
    links = [{"host": l["host"], "nic": l["nic"], "switch": l["switch"],
              "port": l["port"]} for l in topology.get("links", [])]
    switch_links = []
    for sl in topology.get("switch_links", []):
        a, b = sorted([(sl["switch_a"], sl["port_a"]),
                       (sl["switch_b"], sl["port_b"])])
        switch_links.append({"switch_a": a[0], "port_a": a[1],
                             "switch_b": b[0], "port_b": b[1]})
    return {"switches": sorted(switches, key=lambda s: s["name"]),
            "links": sorted(links, key=lambda l: (l["host"], l["nic"])),
            "switch_links": sorted(switch_links,
                                   key=lambda s: (s["switch_a"], s["port_a"]))}


class Timer:
    """Measures each step against its budget; prints them at the end."""

    def __init__(self):
        self.steps = []

    def step(self, name, budget_s):
        return _Step(self, name, budget_s)

    def report(self):
        for name, took, budget in self.steps:
            print(f"  {name}: {took:.1f} s (budget {budget} s)")


class _Step:
    def __init__(self, timer, name, budget_s):
        self.timer, self.name, self.budget = timer, name, budget_s

    def __enter__(self):
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.budget
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            took = time.monotonic() - self.t0
            if took > self.budget:
                fail(f"{self.name}: {took:.1f} s, over its budget of "
                     f"{self.budget} s")
            self.timer.steps.append((self.name, took, self.budget))
        return False


def main():
    require_root_and_tools(len(sys.argv) == 4)
    agent, collector, cli = sys.argv[1:]
    timer = Timer()
    t_start = time.monotonic()

    def cli_run(*args, check=True):
        p = in_ns(fabric.ns("mgmt"), cli,
                  f"--collector=127.0.0.1:{COLLECTOR_PORT}", *args,
                  check=False, timeout=30)
        if check and p.returncode != 0:
            raise RuntimeError(f"fabricdiag {' '.join(args)}: exit "
                               f"{p.returncode}: {p.stderr.strip()}")
        return p

    def discovered():
        p = cli_run("topology", "show", "--discovered", "--json")
        return normalize(json.loads(p.stdout))

    def collector_metrics():
        return http_get(fabric.ns("mgmt"),
                        f"http://127.0.0.1:{COLLECTOR_HTTP_PORT}/metrics")

    def mismatches(state="active"):
        p = cli_run("findings", "--all", "--kind", "cabling_mismatch",
                    "--json")
        return [f for f in json.loads(p.stdout) if f["state"] == state]

    with Fabric(TAG, prefix="lldp-discovery-e2e-") as fabric:
        work = fabric.work
        with timer.step("namespaces, lldpds, collector, agents",
                        BUDGET_SETUP_S) as step:
            fabric.add_node("mgmt", hostname=None, ports=None)
            fabric.add_node("spine", hostname="spine-0", ports="swp*")
            fabric.add_node("leaf", hostname="leaf-0", ports="swp*")
            fabric.add_node("host0", hostname="host-0", ports="eth*")
            fabric.add_node("host1", hostname="host-1", ports="eth*")
            for leaf_port, spine_port in UPLINKS.items():
                fabric.cable("leaf", leaf_port, "spine", spine_port)
            for (host, netdev), port in HOST_CABLES.items():
                fabric.cable("leaf", port, host.replace("-", ""), netdev)
            collector_ip = fabric.management_network(
                "mgmt", MGMT_NET, ["spine", "leaf", "host0", "host1"])
            fabric.start_lldpd(step.deadline)

            fabric.spawn("mgmt", "collector", [
                collector, f"--listen=0.0.0.0:{COLLECTOR_PORT}",
                f"--http_listen=127.0.0.1:{COLLECTOR_HTTP_PORT}",
                f"--state_dir={work}/state",
                f"--analysis_interval={ANALYSIS_INTERVAL}"])
            wait_for("the collector to answer",
                     lambda: cli_run("findings", check=False).returncode == 0,
                     step.deadline)

            os.makedirs(f"{work}/ethtool")
            for key, node, ports in (("spine", "spine-0", SPINE_PORTS),
                                     ("leaf", "leaf-0", LEAF_PORTS),
                                     ("host0", "host-0", None),
                                     ("host1", "host-1", None)):
                root = f"{work}/{key}-sys"
                if ports is None:
                    host_sysfs(root, sorted(HOST_NICS))
                else:
                    switch_sysfs(root, ports)
                fabric.spawn(key, f"agent-{node}", [
                    agent, f"--node={node}", f"--sysfs_root={root}",
                    f"--ethtool_dir={work}/ethtool",
                    "--listen=127.0.0.1:0", "--interval=1s",
                    f"--collector={collector_ip}:{COLLECTOR_PORT}",
                    f"--lldpd_socket={fabric.sockets[key]}",
                    "--lldp_interval=1s"])

        # 1. The discovered topology is the cabling.
        want = expected_topology(HOST_CABLES)
        with timer.step("discovered topology equals the cabling",
                        BUDGET_DISCOVER_S) as step:
            wait_for(f"topology show --discovered to equal the cabling "
                     f"{want}", lambda: discovered() == want, step.deadline,
                     seen=discovered)
        metrics = collector_metrics()
        for line in ('fabricdiag_topology_discovered_links{kind="host"} 4',
                     'fabricdiag_topology_discovered_links{kind="switch"} 2',
                     "fabricdiag_topology_discovered_switches 2",
                     "fabricdiag_topology_problems 0"):
            if line not in metrics.splitlines():
                fail(f"no '{line}' on the collector's /metrics:\n" +
                     "\n".join(l for l in metrics.splitlines()
                               if l.startswith("fabricdiag_topology")))

        # 2. Adopt it; the declared and discovered topologies then agree.
        with timer.step("adopt, diff agrees", BUDGET_ADOPT_S):
            adopted = cli_run("topology", "adopt").stdout
            if ("4 host links" not in adopted or
                    "2 switch links" not in adopted):
                fail(f"topology adopt wrote something else:\n{adopted}")
            diff = cli_run("topology", "diff", check=False)
            if diff.returncode != 0:
                fail(f"topology diff after adopt: exit {diff.returncode}:\n"
                     f"{diff.stdout}{diff.stderr}")
        if mismatches():
            fail(f"cabling_mismatch before any cable moved: {mismatches()}")

        # 3. host-1's eth1 moves from leaf-0 swp4 to swp5.
        moved_cables = dict(HOST_CABLES)
        moved_cables[("host-1", "eth1")] = "swp5"
        want = expected_topology(moved_cables)
        fabric.uncable("host1", "eth1")  # and its peer, leaf-0 swp4
        fabric.cable("leaf", "swp5", "host1", "eth1")
        with timer.step("moved cable in the discovered topology",
                        BUDGET_MOVE_S) as step:
            wait_for("the discovered topology to follow the moved cable",
                     lambda: discovered() == want, step.deadline,
                     seen=discovered)
        with timer.step("then cabling_mismatch opens",
                        BUDGET_MISMATCH_S) as step:
            found = wait_for("cabling_mismatch for host-1 mlx5_1",
                             lambda: [f for f in mismatches()
                                      if f["node"] == "host-1"],
                             step.deadline)
        if len(found) != 1 or found[0]["device"] != "mlx5_1":
            fail(f"expected one cabling_mismatch on host-1 mlx5_1: {found}")
        f = found[0]
        ev = f.get("evidence", {})
        named = (ev.get("declared_switch"), ev.get("declared_port"),
                 ev.get("observed_switch"), ev.get("observed_port"))
        if named != ("leaf-0", "swp4", "leaf-0", "swp5"):
            fail(f"the finding names {named}, not leaf-0 swp4 -> swp5: {f}")
        if "leaf-0 swp4" not in f["summary"] or \
                "leaf-0 swp5" not in f["summary"]:
            fail(f"the summary does not name both ports: {f['summary']}")
        print(f"finding: {f['summary']}")
        diff = cli_run("topology", "diff", check=False)
        moved = ("moved: host-1 mlx5_1 is cabled to leaf-0 swp5, "
                 "declared leaf-0 swp4")
        if diff.returncode != 3 or moved not in diff.stdout:
            fail(f"topology diff after the move: exit {diff.returncode}, "
                 f"no '{moved}':\n{diff.stdout}")

        # 4. Adopt the new cabling: the finding resolves.
        with timer.step("adopt again resolves cabling_mismatch",
                        BUDGET_RESOLVE_S) as step:
            cli_run("topology", "adopt")
            wait_for("cabling_mismatch to resolve",
                     lambda: not mismatches() and mismatches("resolved"),
                     step.deadline)
        diff = cli_run("topology", "diff", check=False)
        if diff.returncode != 0:
            fail(f"topology diff after the second adopt: exit "
                 f"{diff.returncode}:\n{diff.stdout}")
        # Nothing else was ever raised: the switches' agents, their free
        # ports and the hosts' idle NICs are no fault.
        others = [f"{f['kind']} {f['node']} {f['device']}"
                  for f in json.loads(
                      cli_run("findings", "--all", "--json").stdout)
                  if f["kind"] != "cabling_mismatch"]
        if others:
            fail(f"findings other than cabling_mismatch: {others}")
        print("steps:")
        timer.report()
        print(f"PASS after {time.monotonic() - t_start:.1f} s")


if __name__ == "__main__":
    main()
