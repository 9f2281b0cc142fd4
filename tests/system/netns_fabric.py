"""Network namespaces cabled with veth pairs, one real lldpd each, for tests.

The LLDP system tests build a small fabric of Linux network namespaces: each
namespace is a node (a host or a switch), each veth pair a cable, and each
node runs Debian's lldpd with its own control socket, so that the real
fabricdiag-agent can ask it through --lldpd_socket. The fake sysfs trees the
agents read name the veth ends as their netdevs.

    with Fabric(tag="fdl123", prefix="lldp-e2e-") as fabric:
        fabric.add_node("leaf", hostname="leaf-0", ports="swp*")
        fabric.add_node("host", hostname="host-0", ports="eth*")
        fabric.cable("leaf", "swp1", "host", "eth0")
        fabric.start_lldpd(deadline)
        ...  # logs and trees in fabric.work
    # Every process ended, every namespace and the work directory deleted
    # (KEEP_LLDP_E2E=1 keeps the directory), the logs shown on a failure.

Namespace names are the tag plus the node's key, so two runs (or two tests)
with different tags never share one.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(*args, check=True, timeout=20):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def in_ns(ns, *args, check=True, timeout=20):
    return run("ip", "netns", "exec", ns, *args, check=check, timeout=timeout)


def http_get(ns, url):
    """The body at `url` fetched from inside namespace `ns` (a listener
    there is reachable only from there); "" when it cannot be fetched."""
    p = in_ns(ns, sys.executable, "-c",
              "import sys, urllib.request; sys.stdout.write(urllib.request."
              f"urlopen({url!r}, timeout=2).read().decode())", check=False)
    return p.stdout if p.returncode == 0 else ""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def wait_for(what, fn, deadline, period=0.2, seen=None):
    """Polls fn() until it returns something true, which it returns; fails
    the test at `deadline` (time.monotonic()) naming `what` and the last
    value seen (seen(), when fn() returns only whether)."""
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, ValueError, RuntimeError) as e:
            last = e
        time.sleep(period)
    if seen is not None:
        last = seen()
    fail(f"timed out waiting for {what}; last seen: {last!r}")


def require_root_and_tools(usage_ok):
    """Fails the test unless it runs as root with iproute2 and lldpd."""
    if not usage_ok:
        fail(f"usage: {os.path.basename(sys.argv[0])} (see its docstring)")
    if os.geteuid() != 0:
        fail("needs root (network namespaces)")
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    for tool in ("ip", "lldpd", "lldpcli"):
        if shutil.which(tool) is None:
            fail(f"{tool} not found: apt-get install iproute2 lldpd "
                 "(scripts/install-deps.sh)")


def host_sysfs(root, netdevs):
    """A GPU host's tree: one RDMA device mlx5_I per netdev, port 1 on it."""
    for i, netdev in enumerate(netdevs):
        dev = f"{root}/class/infiniband/mlx5_{i}"
        write(f"{dev}/fw_ver", "28.39.1002\n")
        write(f"{dev}/node_guid", f"b8ce:f603:00f4:{i:04x}\n")
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


def switch_sysfs(root, netdevs):
    """A Linux switch's tree: front-panel netdevs, no RDMA device."""
    for netdev in netdevs:
        net = f"{root}/class/net/{netdev}"
        write(f"{net}/operstate", "up\n")
        write(f"{net}/statistics/rx_bytes", "0\n")


class Fabric:
    """Namespaces, their cables and lldpds, and a work directory for their
    logs; leaving the `with` block undoes all of it."""

    def __init__(self, tag, prefix):
        self.tag = tag
        self.work = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.work, 0o755)  # lldpd drops privileges to _lldpd
        self.nodes = {}  # key -> (namespace, hostname, lldpd port glob)
        self.sockets = {}  # key -> lldpd control socket
        self.procs = []

    def ns(self, key):
        return self.nodes[key][0]

    def add_node(self, key, hostname, ports):
        """A namespace for node `key`; its lldpd (see start_lldpd) calls
        itself `hostname` and speaks on the interfaces matching `ports`
        (None: no lldpd)."""
        ns = f"{self.tag}{key}"
        run("ip", "netns", "del", ns, check=False)  # a stale run's
        run("ip", "netns", "add", ns)
        self.nodes[key] = (ns, hostname, ports)
        in_ns(ns, "ip", "link", "set", "lo", "up")
        return ns

    def cable(self, key_a, port_a, key_b, port_b):
        """A veth pair from key_a's port_a to key_b's port_b, both up."""
        run("ip", "link", "add", "name", port_a, "netns", self.ns(key_a),
            "type", "veth", "peer", "name", port_b, "netns", self.ns(key_b))
        in_ns(self.ns(key_a), "ip", "link", "set", port_a, "up")
        in_ns(self.ns(key_b), "ip", "link", "set", port_b, "up")

    def uncable(self, key, port):
        """Deletes `port` of node `key`, and with it the other end."""
        in_ns(self.ns(key), "ip", "link", "del", port)

    def management_network(self, hub, net, keys):
        """Joins the namespaces of `keys` to a bridge in `hub`'s namespace,
        each through a veth `mgmt0`: `hub` is NET.1, the others NET.10 on
        (NET is the first three octets of a /24). Returns the hub's
        address."""
        hub_ns = self.ns(hub)
        in_ns(hub_ns, "ip", "link", "add", "br0", "type", "bridge")
        in_ns(hub_ns, "ip", "addr", "add", f"{net}.1/24", "dev", "br0")
        in_ns(hub_ns, "ip", "link", "set", "br0", "up")
        for i, key in enumerate(keys):
            run("ip", "link", "add", "name", "mgmt0", "netns", self.ns(key),
                "type", "veth", "peer", "name", f"m{key}"[:15], "netns",
                hub_ns)
            in_ns(hub_ns, "ip", "link", "set", f"m{key}"[:15], "master", "br0",
                  "up")
            in_ns(self.ns(key), "ip", "addr", "add", f"{net}.{10 + i}/24",
                  "dev", "mgmt0")
            in_ns(self.ns(key), "ip", "link", "set", "mgmt0", "up")
        return f"{net}.1"

    def spawn(self, key, name, argv):
        """Runs argv in node `key`'s namespace (or the root one when key is
        None) in its own session, logging to work/NAME.log."""
        log = open(os.path.join(self.work, f"{name}.log"), "w")
        prefix = [] if key is None else ["ip", "netns", "exec", self.ns(key)]
        p = subprocess.Popen(prefix + argv, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def start_lldpd(self, deadline):
        """One lldpd per node with its own control socket, sending every
        second, port ids being interface names.

        The settings go in lldpd's configuration file (-O), which lldpd
        applies before it sends its first LLDPDU: set afterwards with
        lldpcli, the first LLDPDUs would carry the machine's hostname and
        MAC port ids, and a neighbor that misses the shutdown LLDPDU of
        that identity keeps it for its TTL (120 s at the default interval),
        a second neighbor on the port that the test did not cable."""
        speakers = {k: v for k, v in self.nodes.items() if v[2] is not None}
        for key, (ns, hostname, ports) in speakers.items():
            sock = f"{self.work}/{ns}.socket"
            self.sockets[key] = sock
            conf = f"{self.work}/{ns}-lldpd.conf"
            write(conf, f"configure system hostname {hostname}\n"
                        "configure lldp tx-interval 1\n"
                        "configure lldp portidsubtype ifname\n")
            self.spawn(key, f"{ns}-lldpd",
                       ["lldpd", "-d", "-u", sock, "-I", ports, "-O", conf])
        for key, (ns, hostname, _) in speakers.items():
            sock = self.sockets[key]
            wait_for(f"lldpd in {ns} to run as {hostname}",
                     lambda s=sock, n=ns, h=hostname: os.path.exists(s) and
                     f"chassis.name={h}\n" in in_ns(
                         n, "lldpcli", "-u", s, "-f", "keyvalue", "show",
                         "chassis", check=False).stdout,
                     deadline)

    def stop(self):
        """Ends every process started here, then deletes every namespace;
        safe to call after a failure at any step."""
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for ns, _, _ in self.nodes.values():
            run("ip", "netns", "del", ns, check=False)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.dump_logs()
        self.stop()
        if os.environ.get("KEEP_LLDP_E2E"):
            print(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)
        return False

    def dump_logs(self, lines=30):
        """The tail of every log, to standard error (after a failure)."""
        for name in sorted(os.listdir(self.work)):
            if name.endswith(".log"):
                with open(os.path.join(self.work, name), "rb") as f:
                    tail = f.read().splitlines()[-lines:]
                print(f"--- {name}", file=sys.stderr)
                print(b"\n".join(tail).decode(errors="replace"),
                      file=sys.stderr)
