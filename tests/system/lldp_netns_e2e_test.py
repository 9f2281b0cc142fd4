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
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

DEADLINE_S = 90  # the whole test
TAG = f"fdl{os.getpid() % 100000}"
LEAF = f"{TAG}leaf"
HOST = f"{TAG}host"


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(*args, check=True):
    p = subprocess.run(args, capture_output=True, text=True, timeout=20)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def in_ns(ns, *args, check=True):
    return run("ip", "netns", "exec", ns, *args, check=check)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def fake_switch_sysfs(root):
    """A Linux switch: front-panel ports swp1..swp3, no RDMA device."""
    for netdev in ("swp1", "swp2", "swp3"):
        net = f"{root}/class/net/{netdev}"
        write(f"{net}/operstate", "up\n")
        write(f"{net}/statistics/rx_bytes", "0\n")


def fake_sysfs(root):
    """Two RDMA devices, mlx5_0 on eth0 and mlx5_1 on eth1."""
    for i, netdev in enumerate(["eth0", "eth1"]):
        dev = f"{root}/class/infiniband/mlx5_{i}"
        write(f"{dev}/fw_ver", "28.39.1002\n")
        write(f"{dev}/node_guid", f"b8ce:f603:00f4:000{i}\n")
        write(f"{dev}/hca_type", "MT4129\n")
        write(f"{dev}/board_id", "MT_0000000838\n")
        port = f"{dev}/ports/1"
        write(f"{port}/state", "4: ACTIVE\n")
        write(f"{port}/phys_state", "5: LinkUp\n")
        write(f"{port}/rate", "400 Gb/sec (4X NDR)\n")
        write(f"{port}/link_layer", "Ethernet\n")
        write(f"{port}/gid_attrs/ndevs/0", f"{netdev}\n")
        write(f"{port}/counters/port_xmit_data", "0\n")
        net = f"{root}/class/net/{netdev}"
        write(f"{net}/operstate", "up\n")
        write(f"{net}/speed", "400000\n")
        write(f"{net}/statistics/rx_bytes", "0\n")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        return r.read().decode()


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


def wait_for(what, fn, deadline):
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, ValueError) as e:
            last = e
        time.sleep(0.2)
    fail(f"timed out waiting for {what}; last seen: {last!r}")


def main():
    if len(sys.argv) != 2:
        fail("usage: lldp_netns_e2e_test.py AGENT_BINARY")
    agent = sys.argv[1]
    if os.geteuid() != 0:
        fail("needs root (network namespaces)")
    for tool in ("ip", "lldpd", "lldpcli"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            fail(f"{tool} not found: apt-get install iproute2 lldpd (scripts/install-deps.sh)")
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    deadline = time.monotonic() + DEADLINE_S
    work = tempfile.mkdtemp(prefix="lldp-e2e-")
    os.chmod(work, 0o755)  # lldpd drops privileges to _lldpd
    procs = []
    try:
        for ns in (LEAF, HOST):
            run("ip", "netns", "del", ns, check=False)  # a stale run's
            run("ip", "netns", "add", ns)
            in_ns(ns, "ip", "link", "set", "lo", "up")

        def cable(swp, eth):
            run("ip", "link", "add", "name", swp, "netns", LEAF, "type", "veth",
                "peer", "name", eth, "netns", HOST)
            in_ns(LEAF, "ip", "link", "set", swp, "up")
            in_ns(HOST, "ip", "link", "set", eth, "up")

        cable("swp1", "eth0")
        cable("swp2", "eth1")

        sockets = {}
        for ns, name, ports in ((LEAF, "leaf-0", "swp*"), (HOST, "host-0", "eth*")):
            sock = f"{work}/{ns}.socket"
            sockets[ns] = sock
            log = open(f"{work}/{ns}-lldpd.log", "w")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, "lldpd", "-d", "-u", sock, "-I", ports,
                 "-O", "/dev/null"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            wait_for(f"lldpd's socket in {ns}",
                     lambda s=sock: os.path.exists(s) or None, deadline)
            for cmd in (["configure", "system", "hostname", name],
                        ["configure", "lldp", "tx-interval", "1"],
                        ["configure", "lldp", "portidsubtype", "ifname"]):
                wait_for(f"lldpcli {' '.join(cmd)} in {ns}",
                         lambda c=cmd, s=sock: in_ns(ns, "lldpcli", "-u", s, *c,
                                                     check=False).returncode == 0,
                         deadline)
        in_ns(LEAF, "lldpcli", "-u", sockets[LEAF], "update")

        sysfs = f"{work}/sys"
        fake_sysfs(sysfs)
        fake_switch_sysfs(f"{work}/leaf-sys")
        os.makedirs(f"{work}/ethtool")
        ports = {}
        for ns, node, root in ((HOST, "host-0", sysfs),
                               (LEAF, "leaf-0", f"{work}/leaf-sys")):
            ports[ns] = free_port()
            agent_log = open(f"{work}/{ns}-agent.log", "w")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, agent, f"--node={node}",
                 f"--sysfs_root={root}", f"--ethtool_dir={work}/ethtool",
                 f"--listen=127.0.0.1:{ports[ns]}",
                 f"--lldpd_socket={sockets[ns]}", "--lldp_interval=1s"],
                stdout=agent_log, stderr=subprocess.STDOUT,
                start_new_session=True))

        # /metrics is served inside each namespace: scrape from there.
        def ns_scrape(ns=HOST):
            p = in_ns(ns, sys.executable, "-c",
                      "import urllib.request,sys;sys.stdout.write(urllib.request."
                      f"urlopen('http://127.0.0.1:{ports[ns]}/metrics',timeout=2)"
                      ".read().decode())", check=False)
            return p.stdout if p.returncode == 0 else ""

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
        in_ns(HOST, "ip", "link", "del", "eth1")  # and its peer swp2
        t1 = time.monotonic()
        cable("swp3", "eth1")
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
                     f"--lldpd_socket={sockets[HOST]}", check=False)
        if '"port_id": "swp3"' not in once.stdout:
            fail(f"--once with lldpd: no swp3 neighbor:\n{once.stdout[-1500:]}")
        with open(f"{work}/{HOST}-agent.log") as f:
            costs = re.findall(r"lldp: \d+ neighbors from lldpd .*read in ([^)]*)\)",
                               f.read())
        print(f"lldpd reads (host agent, on each change): {costs}")
        print(f"PASS after {DEADLINE_S - (deadline - time.monotonic()):.1f} s")
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for ns in (LEAF, HOST):
            run("ip", "netns", "del", ns, check=False)
        if os.environ.get("KEEP_LLDP_E2E"):
            print(f"kept {work}")
        else:
            for name in sorted(os.listdir(work)) if os.path.isdir(work) else []:
                if name.endswith(".log") and sys.exc_info()[0] is not None:
                    print(open(f"{work}/{name}").read()[-2000:], file=sys.stderr)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
