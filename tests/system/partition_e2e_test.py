#!/usr/bin/env python3
"""A collector on the minority side of a NATS partition hands its agents
over, with real processes: three nats-servers (JetStream, R3), one of them
in its own network namespace with its collector, and 60 virtual agents of
fabricdiag-sim that rank the three collectors.

usage: partition_e2e_test.py COLLECTOR SIM

The namespace has two veth cables to the root namespace: one carries the
NATS routes between its server (s0) and the other two (s1, s2), the other
carries the agents' streams to its collector (col-a). Cutting the routes'
cable partitions NATS: s0 stays up and col-a stays connected to it (its
NATS link is up), but s0's JetStream has no quorum, so every publish of
col-a fails; col-b and col-c, on the majority, go on.

Asserts: within 45 s of the cut (15 s of failed publishes, then the paced
hand-over, a tenth of its agents per second) col-a holds no agent while
its NATS connection never dropped, it counts the refusals as
`nats_disconnected`, and col-b and col-c hold every agent; no
`agent_down` is open on the majority's leader. Once the cable is back,
prints how long col-a took to get agents back. Needs root (network
namespaces) and nats-server; bounded: every wait has a deadline.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from ports import free_port  # noqa: E402

COLLECTOR, SIM = sys.argv[1], sys.argv[2]
AGENTS = 60
PREFIX = "pt-"
TAG = f"fdpt{os.getpid() % 100000}"
NS = f"{TAG}-ns"
# Root side / namespace side of each cable; test addresses of our own.
ROUTES = ("10.213.1.1", "10.213.1.2")
AGENTS_NET = ("10.213.2.1", "10.213.2.2")
HANDED_OVER_WITHIN_S = 45
FAILURES = []


def run(*args, check=True):
    p = subprocess.run(args, capture_output=True, text=True, timeout=20)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


def metrics(addr):
    """name{labels} -> value of the collector's /metrics at `addr`; {}
    when it cannot be read."""
    try:
        with urllib.request.urlopen(f"http://{addr}/metrics", timeout=3) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(fabricdiag_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def value(m, name):
    """The sample `name` (with its labels when it has them), or the first
    sample of the family `name` whatever its labels."""
    if name in m:
        return m[name]
    return next((v for k, v in m.items()
                 if "{" not in name and k.startswith(name + "{")), None)


def wait(what, predicate, deadline_s):
    end = time.monotonic() + deadline_s
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.5)


def nats_config(name, client, route_listen, routes, store):
    return f"""server_name: {name}
listen: 127.0.0.1:{client}
ping_interval: "1s"
ping_max: 3
jetstream {{
  store_dir: "{store}"
  max_memory_store: 256MB
  max_file_store: 1GB
}}
cluster {{
  name: fdpt
  listen: {route_listen}
  no_advertise: true
  routes: [{", ".join(f"nats-route://{r}" for r in routes)}]
}}
"""


def setup_network():
    run("ip", "netns", "del", NS, check=False)
    run("ip", "netns", "add", NS)
    run("ip", "-n", NS, "link", "set", "lo", "up")
    for cable, (root, inner) in (("r", ROUTES), ("a", AGENTS_NET)):
        outer_if, inner_if = f"{TAG}{cable}0", f"{TAG}{cable}1"
        run("ip", "link", "add", outer_if, "type", "veth", "peer", "name",
            inner_if, "netns", NS)
        run("ip", "addr", "add", f"{root}/24", "dev", outer_if)
        run("ip", "link", "set", outer_if, "up")
        run("ip", "-n", NS, "addr", "add", f"{inner}/24", "dev", inner_if)
        run("ip", "-n", NS, "link", "set", inner_if, "up")


def teardown_network():
    for cable in ("r", "a"):
        run("ip", "link", "del", f"{TAG}{cable}0", check=False)
    run("ip", "netns", "del", NS, check=False)


def main():
    nats = shutil.which("nats-server") or "/usr/sbin/nats-server"
    if os.geteuid() != 0 or not os.access(nats, os.X_OK) or \
            shutil.which("ip") is None:
        print("FAIL: needs root, ip and nats-server (scripts/install-deps.sh)")
        return 1
    work = tempfile.mkdtemp(prefix="partition-e2e-")
    procs = []

    def spawn(name, args, ns=None):
        log = open(os.path.join(work, f"{name}.log"), "wb")
        prefix = ["ip", "netns", "exec", NS] if ns else []
        p = subprocess.Popen(prefix + args, stdout=log,
                             stderr=subprocess.STDOUT)
        procs.append((name, p))
        return p

    try:
        setup_network()
        client = [free_port() for _ in range(3)]
        route = [free_port() for _ in range(3)]
        # s0 in the namespace: its routes over the routes' cable; s1 and s2
        # in the root namespace, reached by s0 at the cable's root end.
        where = [f"{ROUTES[1]}:{route[0]}", f"{ROUTES[0]}:{route[1]}",
                 f"{ROUTES[0]}:{route[2]}"]
        for i in range(3):
            path = f"{work}/s{i}.conf"
            with open(path, "w") as f:
                f.write(nats_config(f"s{i}", client[i], where[i],
                                    [w for j, w in enumerate(where) if j != i],
                                    f"{work}/s{i}-store"))
            spawn(f"s{i}", [nats, "-c", path], ns=(i == 0))

        grpc = {"col-a": f"{AGENTS_NET[1]}:{free_port()}",
                "col-b": f"127.0.0.1:{free_port()}",
                "col-c": f"127.0.0.1:{free_port()}"}
        http = {"col-a": f"{AGENTS_NET[1]}:{free_port()}",
                "col-b": f"127.0.0.1:{free_port()}",
                "col-c": f"127.0.0.1:{free_port()}"}
        for i, cid in enumerate(grpc):
            spawn(cid, [COLLECTOR, f"--listen={grpc[cid]}",
                        f"--http_listen={http[cid]}",
                        f"--advertise_address={grpc[cid]}",
                        f"--state_dir={work}/state-{cid}",
                        f"--nats=nats://127.0.0.1:{client[i]}",
                        f"--collector_id={cid}", "--nats_replicas=3"],
                  ns=(cid == "col-a"))

        def leader():
            return [c for c in http if value(metrics(http[c]),
                    "fabricdiag_cluster_analysis_leader") == 1]

        wait("three members on every collector and one leader", lambda: all(
            value(metrics(http[c]), "fabricdiag_cluster_members") == 3
            for c in http) and len(leader()) == 1, 90)

        def streams(cid):
            return value(metrics(http[cid]),
                         "fabricdiag_ingest_connected_streams")

        spawn("sim", [SIM, f"--virtual_agents={AGENTS}",
                      f"--virtual_agent_prefix={PREFIX}", "--duration=600s",
                      "--collector=" + ",".join(grpc.values())])
        before = wait("every agent streaming, some to col-a", lambda: (
            lambda c: c if None not in c.values() and
            sum(c.values()) == AGENTS and c["col-a"] > 0 else None)(
                {cid: streams(cid) for cid in grpc}), 60)
        print(f"before the partition: {before}, leader {leader()}")

        run("ip", "link", "set", f"{TAG}r0", "down")
        cut = time.monotonic()
        dropped = []  # col-a's NATS link seen down meanwhile

        def handed_over():
            a = metrics(http["col-a"])
            if value(a, "fabricdiag_cluster_nats_connected") == 0:
                dropped.append(time.monotonic() - cut)
            counts = {cid: streams(cid) for cid in grpc}
            if counts["col-a"] == 0 and None not in counts.values() and \
                    counts["col-b"] + counts["col-c"] == AGENTS:
                return counts
            return None

        try:
            after = wait("col-a's agents on col-b and col-c", handed_over,
                         HANDED_OVER_WITHIN_S)
            print(f"{time.monotonic() - cut:.1f} s after the partition: "
                  f"{after}")
        except AssertionError as e:
            FAILURES.append(f"{e}: {({c: streams(c) for c in grpc})}")
        if dropped:
            FAILURES.append(f"col-a's NATS connection dropped at "
                            f"{dropped[0]:.1f} s: the test proves nothing "
                            "about a connected collector")
        a = metrics(http["col-a"])
        refused = value(a, 'fabricdiag_ingest_refused_streams_total'
                           '{reason="nats_disconnected"}')
        if not refused:
            FAILURES.append(f"col-a counted {refused} refused streams")
        majority = [c for c in ("col-b", "col-c") if value(
            metrics(http[c]), "fabricdiag_cluster_analysis_leader") == 1]
        print(f"the majority's leader: {majority}")
        for c in majority:
            down = [k for k, v in metrics(http[c]).items()
                    if k.startswith("fabricdiag_finding_active{") and
                    'kind="agent_down"' in k and v == 1]
            if down:
                FAILURES.append(f"{c} has agent_down open: {down}")

        run("ip", "link", "set", f"{TAG}r0", "up")
        healed = time.monotonic()
        try:
            wait("col-a holds agents again", lambda: (streams("col-a") or 0)
                 > 0, 90)
            print(f"{time.monotonic() - healed:.1f} s after the cable came "
                  f"back col-a holds agents again: "
                  f"{({c: streams(c) for c in grpc})}")
        except AssertionError as e:
            print(f"note: {e}")
    except (AssertionError, RuntimeError) as e:
        FAILURES.append(str(e))
    finally:
        for _, p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        teardown_network()
        if FAILURES:
            for name, _ in procs:
                with open(os.path.join(work, f"{name}.log"), "rb") as f:
                    tail = f.read()[-3000:].decode(errors="replace")
                print(f"--- {name}.log (end)\n{tail}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    for f in FAILURES:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
