#!/usr/bin/env python3
"""Checks deploy/nats/: the NATS servers of a collector cluster.

The file names its TLS certificates and the collectors' password file under
/etc/nats/; the test makes them (openssl, a throwaway CA) in a temporary
directory and points a copy of the file there, changing nothing else.

1. `nats-server -t` accepts nats-server.conf as each of the three servers
   (NATS_SERVER_NAME nats-1, nats-2, nats-3, as the drop-in sets it) and
   refuses it without a name (no server starts under a made-up one).
2. The file is a three-server JetStream cluster: a cluster name, three
   routes to three distinct hosts, JetStream on with its store_dir the
   directory the drop-in has systemd create (StateDirectory=), memory and
   file storage capped, TLS for clients and routes, the collectors' user
   with its password from the included file, and the drop-in names the
   server.
3. When Debian's nats-server.service is installed: that unit with the
   drop-in passes `systemd-analyze verify` without a word, and reads
   /etc/nats-server.conf, where the instructions put the file.
4. The file really forms a cluster: three nats-server processes started
   from it, with only its addresses moved to free loopback ports and its
   store_dir to a temporary directory, elect a JetStream meta leader over
   TLS routes and each reports a meta cluster of 3 (monitoring /jsz)
   within 30 s.
5. With the collector binary given: two collectors joined with the file's
   user, password and CA (--nats_replicas=3) open every bucket and the
   features stream, announce themselves, one leads the analysis and merges
   the other's features, and neither logs a refused subject (the user's
   permissions cover what fabricdiag uses); one without credentials is
   refused.

  nats_config_test.py SOURCE_DIR [COLLECTOR_BINARY]
Exits 77 (skipped) when nats-server or openssl is not installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from grafana_dashboards_test import stop  # noqa: E402
from ports import free_port  # noqa: E402

FAILURES = []
NAMES = ("nats-1", "nats-2", "nats-3")
PASSWORD = "test-" + os.urandom(12).hex()
DEBIAN_UNIT = "/lib/systemd/system/nats-server.service"


def fail(msg):
    FAILURES.append(msg)


def config_test(nats, conf, name):
    """nats-server -t on conf with NATS_SERVER_NAME=name (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "NATS_SERVER_NAME"}
    if name is not None:
        env["NATS_SERVER_NAME"] = name
    return subprocess.run([nats, "-t", "-c", conf], env=env,
                          capture_output=True, text=True, timeout=30)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True,
                   timeout=60)


def make_secrets(etc):
    """What the file expects under /etc/nats/, made in `etc`: a CA, one
    certificate for all three servers (their names and 127.0.0.1, for TLS
    server and client use: routes dial each other) and the password file
    the file includes."""
    os.makedirs(etc, exist_ok=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            f"{etc}/ca-key.pem", "-subj", "/CN=fabricdiag test CA", "-days",
            "2", "-out", f"{etc}/ca.pem")
    with open(f"{etc}/server.ext", "w", encoding="utf-8") as f:
        f.write("subjectAltName=DNS:nats-1,DNS:nats-2,DNS:nats-3,"
                "DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth,clientAuth\n"
                "basicConstraints=CA:FALSE\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            f"{etc}/server-key.pem", "-subj", "/CN=nats", "-out",
            f"{etc}/server.csr")
    openssl("x509", "-req", "-in", f"{etc}/server.csr", "-CA",
            f"{etc}/ca.pem", "-CAkey", f"{etc}/ca-key.pem",
            "-CAcreateserial", "-days", "2", "-extfile", f"{etc}/server.ext",
            "-out", f"{etc}/server.pem")
    with open(f"{etc}/passwords.conf", "w", encoding="utf-8") as f:
        f.write(f'FABRICDIAG_PASSWORD: "{PASSWORD}"\n')
    for name in ("server-key.pem", "ca-key.pem", "passwords.conf"):
        os.chmod(f"{etc}/{name}", 0o600)
    with open(f"{etc}/collector-password", "w", encoding="utf-8") as f:
        f.write(PASSWORD + "\n")
    os.chmod(f"{etc}/collector-password", 0o600)


def local_copy(conf_text, work):
    """The file as it would read on a server whose /etc is `work`: its
    /etc/nats/ paths moved to work/nats/, where make_secrets put them (the
    include is relative to the file: nats/passwords.conf)."""
    text, n = re.subn(r"/etc/nats/", f"{work}/nats/", conf_text)
    if n < 6:
        fail(f"nats-server.conf: {n} paths under /etc/nats/, want the "
             f"certificate, key and CA for clients and for routes")
    return text


def check_structure(conf_text, dropin_text):
    if not re.search(r"^server_name:\s*\$NATS_SERVER_NAME\s*$", conf_text,
                     re.M):
        fail("nats-server.conf: server_name is not $NATS_SERVER_NAME")
    m = re.search(r"^cluster\s*\{(.*?)^\}", conf_text, re.M | re.S)
    if not m:
        fail("nats-server.conf: no cluster block")
    else:
        block = m.group(1)
        if not re.search(r"^\s*name:\s*\S+", block, re.M):
            fail("nats-server.conf: the cluster has no name")
        hosts = re.findall(r"nats-route://([^:\s]+):\d+", block)
        if len(hosts) != 3 or len(set(hosts)) != 3:
            fail(f"nats-server.conf: routes to {hosts}, want three distinct "
                 f"hosts")
    m = re.search(r"^jetstream\s*\{(.*?)^\}", conf_text, re.M | re.S)
    store = m and re.search(r"^\s*store_dir:\s*(\S+)", m.group(1), re.M)
    if not store:
        fail("nats-server.conf: no jetstream block with a store_dir")
    state = re.search(r"^StateDirectory=(\S+)$", dropin_text, re.M)
    if not state:
        fail("the drop-in has no StateDirectory= (Debian's package does not "
             "create the store_dir)")
    elif store and store.group(1) != "/var/lib/" + state.group(1):
        fail(f"store_dir {store.group(1)} is not the drop-in's "
             f"/var/lib/{state.group(1)}")
    if not re.search(r"^Environment=NATS_SERVER_NAME=\S+$", dropin_text,
                     re.M):
        fail("the drop-in does not set NATS_SERVER_NAME")
    js = m.group(1) if m else ""
    for cap in ("max_memory_store", "max_file_store"):
        if not re.search(rf"^\s*{cap}:\s*\d+[GM]B\s*$", js, re.M):
            fail(f"nats-server.conf: jetstream has no {cap}")
    if not re.search(r"^tls\s*\{[^}]*cert_file:[^}]*key_file:[^}]*\}",
                     conf_text, re.M | re.S):
        fail("nats-server.conf: no tls block for clients")
    cluster = re.search(r"^cluster\s*\{(.*?)^\}", conf_text, re.M | re.S)
    if not cluster or not re.search(r"^\s*tls\s*\{", cluster.group(1), re.M):
        fail("nats-server.conf: the routes have no tls block")
    if not re.search(r'^include\s+"nats/passwords\.conf"', conf_text, re.M):
        fail("nats-server.conf: does not include nats/passwords.conf")
    if not re.search(r"user:\s*fabricdiag\s*\n\s*password:\s*"
                     r"\$FABRICDIAG_PASSWORD", conf_text):
        fail("nats-server.conf: no user fabricdiag with $FABRICDIAG_PASSWORD")


def check_unit(dropin):
    analyze = shutil.which("systemd-analyze")
    if not os.path.isfile(DEBIAN_UNIT) or not analyze:
        print(f"NOTE: {DEBIAN_UNIT} or systemd-analyze missing: the drop-in "
              f"is not verified against the unit")
        return
    with open(DEBIAN_UNIT, encoding="utf-8") as f:
        unit = f.read()
    if not re.search(r"^ExecStart=\S*nats-server .*-c /etc/nats-server\.conf",
                     unit, re.M):
        fail(f"{DEBIAN_UNIT} does not read /etc/nats-server.conf")
    tmp = tempfile.mkdtemp(prefix="nats-unit.")
    try:
        shutil.copy(DEBIAN_UNIT, tmp)
        os.mkdir(f"{tmp}/nats-server.service.d")
        shutil.copy(dropin, f"{tmp}/nats-server.service.d/")
        env = dict(os.environ, SYSTEMD_UNIT_PATH=tmp + ":")
        r = subprocess.run([analyze, "verify", "--man=no",
                            f"{tmp}/nats-server.service"], env=env,
                           capture_output=True, text=True, timeout=60)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or out:
            fail(f"systemd-analyze verify of {DEBIAN_UNIT} with the drop-in "
                 f"(exit {r.returncode}):\n{out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def loopback_config(conf_text, ports, index, store):
    """The file with its addresses on loopback ports and store_dir in tmp."""
    client, http, route = ports[index]
    text = conf_text
    subs = [
        (r"^listen:\s*\S+$", f"listen: 127.0.0.1:{client}"),
        (r"^http:\s*\S+$", f"http: 127.0.0.1:{http}"),
        (r"^(\s*)listen:\s*0\.0\.0\.0:6222$",
         rf"\g<1>listen: 127.0.0.1:{route}"),
        (r"^(\s*)store_dir:\s*\S+$", rf"\g<1>store_dir: {store}"),
    ]
    for pattern, repl in subs:
        text, n = re.subn(pattern, repl, text, flags=re.M)
        if n != 1:
            fail(f"nats-server.conf: {pattern!r} matched {n} lines, not 1")
    for i, name in enumerate(NAMES):
        text, n = re.subn(rf"nats-route://{name}:6222",
                          f"nats-route://127.0.0.1:{ports[i][2]}", text)
        if n != 1:
            fail(f"nats-server.conf: no route to {name}:6222")
    return text


def jsz(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz",
                                    timeout=2) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def start_servers(nats, conf_text, work, procs, attempts=5):
    """Starts the three servers of conf_text on loopback; their client,
    monitoring and route ports. The processes are appended to procs.

    free_port() keeps its ports from other tests and outgoing connections,
    but a process that is none of ours can still take one before the
    server binds it: a server that exits with "address already in use"
    before it listens for routes is stopped with the others, and all
    three start again on new ports."""
    for attempt in range(attempts):
        ports = [(free_port(), free_port(), free_port()) for _ in NAMES]
        started = []
        for i, name in enumerate(NAMES):
            path = f"{work}/{name}.conf"
            with open(path, "w", encoding="utf-8") as f:
                f.write(loopback_config(conf_text, ports, i,
                                        f"{work}/{name}-store"))
            env = dict(os.environ, NATS_SERVER_NAME=name)
            log = open(f"{work}/{name}.log", "w", encoding="utf-8")
            started.append(subprocess.Popen([nats, "-c", path], env=env,
                                            stdout=log, stderr=log))
        if attempt == attempts - 1 or not lost_a_port(work, started):
            procs.extend(started)
            return ports
        for p in started:
            p.kill()
            p.wait()
        for name in NAMES:
            shutil.rmtree(f"{work}/{name}-store", ignore_errors=True)
    raise AssertionError("unreachable")


def collector_flags(work):
    """The flags a collector joins the servers of start_secured_servers
    with: the shipped user, its password file and the test CA."""
    etc = f"{work}/nats"
    return ["--nats_user=fabricdiag",
            f"--nats_password_file={etc}/collector-password",
            f"--nats_tls_ca={etc}/ca.pem"]


def start_secured_servers(nats, conf_text, work, procs):
    """start_servers for the shipped file as deployed: its certificates
    and password file made under work/nats/ first. Returns the ports and
    the flags a collector joins with (collector_flags)."""
    make_secrets(f"{work}/nats")
    ports = start_servers(nats, local_copy(conf_text, work), work, procs)
    return ports, collector_flags(work)


def lost_a_port(work, started, deadline_s=10):
    """Whether a server of `started` exited because one of its ports was
    taken, before all of them listened for routes (their last bind)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        logs = []
        for name in NAMES:
            with open(f"{work}/{name}.log", encoding="utf-8") as f:
                logs.append(f.read())
        if any(p.poll() is not None for p in started):
            return any("address already in use" in text for text in logs)
        if all("Listening for route connections" in text for text in logs):
            return False
        time.sleep(0.05)
    return False


def wait_meta_leader(work, ports, procs, deadline_s=30):
    """Waits until every server reports a JetStream meta cluster of 3 with
    one leader; the seconds it took, or None (after a failure)."""
    start = time.monotonic()
    state = {}
    while time.monotonic() - start < deadline_s:
        state = {name: jsz(ports[i][1]) for i, name in enumerate(NAMES)}
        metas = [(s or {}).get("meta_cluster") or {} for s in state.values()]
        if all(m.get("cluster_size") == 3 and m.get("leader") for m in metas):
            leaders = {m["leader"] for m in metas}
            if len(leaders) != 1 or not leaders <= set(NAMES):
                fail(f"the servers disagree on the meta leader: {leaders}")
                return None
            return time.monotonic() - start
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.25)
    logs = ""
    for name in NAMES:
        with open(f"{work}/{name}.log", encoding="utf-8") as f:
            logs += f"--- {name}\n" + f.read()[-3000:]
    meta = {n: (s or {}).get("meta_cluster") for n, s in state.items()}
    fail(f"no JetStream cluster of 3 with a leader within {deadline_s} s: "
         f"{json.dumps(meta)}\n{logs}")
    return None


def metrics(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=2) as r:
            return r.read().decode()
    except OSError:
        return ""


def value(text, name):
    """The value of the sample of family `name` (one collector_id label)."""
    m = re.search(rf"^{re.escape(name)}{{[^}}]*}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def check_collector(collector, work, ports):
    """Two collectors with the user, password and CA join, one leads and
    merges the other's features; one without credentials is refused."""
    etc = f"{work}/nats"
    urls = ",".join(f"nats://127.0.0.1:{p[0]}" for p in ports)
    base = [collector, "--listen=127.0.0.1:0", f"--nats={urls}",
            "--analysis_interval=500ms", "--nats_startup_timeout=30s"]
    refused = subprocess.run(
        base + ["--http_listen=127.0.0.1:0", "--collector_id=col-x",
                f"--state_dir={work}/refused", f"--nats_tls_ca={etc}/ca.pem"],
        capture_output=True, text=True, timeout=60)
    if refused.returncode != 1 or \
            "authorization violation" not in refused.stderr:
        fail(f"a collector without credentials was not refused (exit "
             f"{refused.returncode}): {refused.stderr[-2000:]}")
    procs, https, logs = [], [], []
    for name in ("col-a", "col-b"):
        https.append(free_port())
        logs.append(f"{work}/{name}.log")
        with open(logs[-1], "w", encoding="utf-8") as log:
            procs.append(subprocess.Popen(
                base + [f"--http_listen=127.0.0.1:{https[-1]}",
                        f"--collector_id={name}",
                        f"--state_dir={work}/{name}",
                        "--nats_user=fabricdiag",
                        f"--nats_password_file={etc}/collector-password",
                        f"--nats_tls_ca={etc}/ca.pem"],
                stdout=log, stderr=log))
    try:
        start = time.monotonic()
        ok = False
        texts = []
        while time.monotonic() - start < 40 and \
                all(p.poll() is None for p in procs):
            texts = [metrics(h) for h in https]
            leaders = [value(t, "fabricdiag_cluster_analysis_leader")
                       for t in texts]
            # The leader merges the other's features: both published,
            # the leader received (its subscription).
            if (None not in leaders and sorted(leaders) == [0, 1]
                    and all(value(t, "fabricdiag_cluster_members") == 2
                            for t in texts)
                    and value(texts[leaders.index(1)],
                              "fabricdiag_cluster_features_merged_members")
                    == 1):
                ok = True
                break
            time.sleep(0.25)
        if ok:
            print(f"two collectors with the file's user joined, one leads "
                  f"and merges the other's features, in "
                  f"{time.monotonic() - start:.1f} s")
            time.sleep(2)  # a few passes of writes more
            texts = [metrics(h) for h in https]
        log_text = ""
        for path in logs:
            with open(path, encoding="utf-8") as f:
                log_text += f"--- {path}\n" + f.read()
        if not ok:
            cluster = "\n".join(line for t in texts
                                for line in t.splitlines()
                                if line.startswith("fabricdiag_cluster_"))
            fail(f"the collectors did not lead and exchange features within "
                 f"40 s:\n{log_text[-4000:]}\n{cluster}")
        for family in ("fabricdiag_cluster_features_publish_errors_total",
                       "fabricdiag_cluster_findings_write_errors_total"):
            if any(value(t, family) for t in texts):
                fail(f"{family} is not 0:\n{log_text[-4000:]}")
        if "NATS: " in log_text or "ermission" in log_text:
            fail(f"a collector was refused a subject (the user's "
                 f"permissions):\n{log_text[-4000:]}")
    finally:
        stop(procs)


def check_cluster(nats, conf_text, collector):
    work = tempfile.mkdtemp(prefix="nats-cluster.")
    procs = []
    try:
        make_secrets(f"{work}/nats")
        conf_text = local_copy(conf_text, work)
        ports = start_servers(nats, conf_text, work, procs)
        if FAILURES:
            return
        took = wait_meta_leader(work, ports, procs)
        if took is not None:
            print(f"cluster formed over TLS routes: one meta leader, cluster "
                  f"size 3, in {took:.1f} s")
            if collector:
                check_collector(collector, work, ports)
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    collector = sys.argv[2] if len(sys.argv) == 3 else None
    nats = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if os.access("/usr/sbin/nats-server", os.X_OK)
        else None)
    if not nats:
        print("SKIP: nats-server not found (apt-get install nats-server)")
        return 77
    if not shutil.which("openssl"):
        print("SKIP: openssl not found (the test makes the certificates)")
        return 77
    conf = f"{src}/deploy/nats/nats-server.conf"
    dropin = f"{src}/deploy/nats/nats-server.service.d/fabricdiag.conf"
    with open(conf, encoding="utf-8") as f:
        conf_text = f.read()
    with open(dropin, encoding="utf-8") as f:
        dropin_text = f.read()

    etc = tempfile.mkdtemp(prefix="nats-etc.")
    try:
        make_secrets(f"{etc}/nats")
        local = f"{etc}/nats-server.conf"
        with open(local, "w", encoding="utf-8") as f:
            f.write(local_copy(conf_text, etc))
        for name in NAMES:
            r = config_test(nats, local, name)
            if r.returncode != 0:
                fail(f"nats-server -t refuses {conf} as {name}:\n"
                     f"{r.stdout}{r.stderr}")
        r = config_test(nats, local, None)
        if r.returncode == 0:
            fail(f"nats-server -t accepts {conf} without NATS_SERVER_NAME")
        # Without the password file the server refuses to start rather
        # than start open.
        os.remove(f"{etc}/nats/passwords.conf")
        r = config_test(nats, local, NAMES[0])
        if r.returncode == 0:
            fail(f"nats-server -t accepts {conf} without nats/passwords.conf")
    finally:
        shutil.rmtree(etc, ignore_errors=True)
    check_structure(conf_text, dropin_text)
    check_unit(dropin)
    if not FAILURES:
        check_cluster(nats, conf_text, collector)

    for f in FAILURES:
        print("FAIL:", f, file=sys.stderr)
    if FAILURES:
        return 1
    print("PASS: nats-server accepts the configuration as nats-1..3 (and "
          "not without a name or password file), the drop-in verifies with "
          "Debian's unit, three servers from it form a JetStream cluster "
          "over TLS" + (", and collectors work with its user" if collector
                       else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
