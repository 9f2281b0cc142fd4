#!/usr/bin/env python3
"""Checks deploy/grafana/ and the metric names of deploy/prometheus/rules/.

1. Every dashboard is valid JSON with a unique uid, panels with targets,
   and every datasource uid is the one the provisioning file defines.
2. Every PromQL expression of every panel and template variable parses
   (promtool check rules, with Grafana's variables substituted).
3. Every panel query on a series that every collector of a cluster exports
   alike (fabricdiag_finding_active, fabricdiag_agent_up) aggregates the
   scrape's instance away, so that a finding is one row and a node one
   agent however many collectors serve them.
4. Every metric a dashboard or a rule names is really exported: it appears
   in the live /metrics of a real agent (reading a simulated tree and
   streaming to a collector) or of a real collector (with a layout, a
   topology and a finding applied), or it is one of our recording rules.
   The fabricdiag_cluster_* families come from a second collector that
   joins a one-server NATS cluster with --analysis_shards, which exports
   the shards' families besides the others (checked only when nats-server
   is installed).

  grafana_dashboards_test.py SOURCE_DIR SIM AGENT COLLECTOR CLI
Exits 77 (skipped) when promtool or python3-yaml is not installed.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from ports import free_port  # noqa: E402

FAILURES = []


def fail(msg):
    FAILURES.append(msg)


def stop(procs):
    """Terminates processes we started, killing those that linger."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def get(url, timeout=20):
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read().decode()
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def metric_names(text):
    """The series names of an exposition, and the families it declares
    (`# TYPE`) though they hold no series yet: a lone collector of a
    cluster has no other collector's feature lag to export."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, 1)[0])
    return names


def live_metrics(sim, agent, collector, cli, work):
    """Metric names of a real agent (host and switch) and collector."""
    with open(f"{work}/layout.yaml", "w") as f:
        f.write("job: j\ngpus_per_node: 2\nparallelism: {tp: 4, pp: 1, dp: 1}\n"
                "hosts: [gpu-000, gpu-001]\nrails: [mlx5_0, mlx5_1]\n")
    with open(f"{work}/topology.yaml", "w") as f:
        f.write("switches:\n  - {name: leaf-0, uplinks: [swp49, swp50]}\n"
                "links:\n")
        for h in ("gpu-000", "gpu-001"):
            for n in (0, 1):
                port = 1 + 2 * int(h[-1]) + n
                f.write(f"  - {{host: {h}, nic: mlx5_{n}, switch: leaf-0, "
                        f"port: swp{port}}}\n")
    subprocess.run([sim, f"--layout={work}/layout.yaml",
                    f"--topology={work}/topology.yaml", f"--out={work}/fabric",
                    "--ticks=2", "--interval=1s"], check=True,
                   capture_output=True)
    grpc, http, a1, a2 = free_port(), free_port(), free_port(), free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(
            [collector, f"--listen=127.0.0.1:{grpc}",
             f"--http_listen=127.0.0.1:{http}", f"--state_dir={work}/state"],
            stderr=subprocess.DEVNULL))
        get(f"http://127.0.0.1:{http}/healthz")
        for args in (["layout", "apply", f"{work}/layout.yaml"],
                     ["topology", "apply", f"{work}/topology.yaml"]):
            subprocess.run([cli, f"--collector=127.0.0.1:{grpc}", *args],
                           check=True, capture_output=True)
        for node, port in (("gpu-000", a1), ("leaf-0", a2)):
            procs.append(subprocess.Popen(
                [agent, f"--node={node}",
                 f"--sysfs_root={work}/fabric/{node}/sys",
                 f"--ethtool_dir={work}/fabric/{node}/ethtool",
                 f"--listen=127.0.0.1:{port}", "--interval=1s",
                 f"--collector=127.0.0.1:{grpc}"], stderr=subprocess.DEVNULL))
        names = set()
        for port in (a1, a2):
            get(f"http://127.0.0.1:{port}/metrics")
        ports = [a1, a2, http]
        cluster_http = start_cluster_collector(collector, work, procs)
        if cluster_http is not None:
            ports.append(cluster_http)
        # Two reads, so that rates and stream state are there.
        time.sleep(2.5)
        for port in ports:
            names |= metric_names(get(f"http://127.0.0.1:{port}/metrics"))
        return names, cluster_http is not None
    finally:
        stop(procs)


def start_cluster_collector(collector, work, procs):
    """A collector of a one-server NATS cluster, for the fabricdiag_cluster_*
    families; its HTTP port, or None without nats-server."""
    nats = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if os.access("/usr/sbin/nats-server", os.X_OK)
        else None)
    if nats is None:
        return None
    nats_port, grpc, http = free_port(), free_port(), free_port()
    procs.append(subprocess.Popen(
        [nats, "-js", "-a", "127.0.0.1", "-p", str(nats_port),
         "-sd", f"{work}/nats"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL))
    procs.append(subprocess.Popen(
        [collector, f"--listen=127.0.0.1:{grpc}",
         f"--http_listen=127.0.0.1:{http}", f"--state_dir={work}/state-c",
         f"--nats=nats://127.0.0.1:{nats_port}", "--collector_id=c",
         "--nats_replicas=1", "--analysis_shards"],
        stderr=subprocess.DEVNULL))
    get(f"http://127.0.0.1:{http}/metrics", timeout=40)
    return http


def substitute(expr):
    """Grafana variables -> values promtool accepts."""
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m")
    expr = expr.replace('"$job"', '"j"')
    return re.sub(r"\$\{?(\w+)\}?", ".*", expr)


# Series all collectors of a cluster export alike, and how a panel reads
# them: inside an aggregation that drops `instance`.
CLUSTER_WIDE = ("fabricdiag_finding_active", "fabricdiag_agent_up")
AGGREGATION = (r"\b(?:max|min|sum|count)\s*(?:without\s*\(\s*instance\s*\)|"
               r"by\s*\((?![^)]*\binstance\b)[^)]*\))\s*\(\s*")


def per_collector(expr):
    """The cluster-wide metrics a query reads without dropping instance."""
    found = []
    for metric in CLUSTER_WIDE:
        for m in re.finditer(r"(?<![\w:])" + metric + r"(?![\w:])", expr):
            if not re.search(AGGREGATION + r"$", expr[:m.start()]):
                found.append(metric)
    return found


def names_in(expr):
    """Metric names in a PromQL expression (ours, recorded, and `up`)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # drop string literals
    expr = re.sub(r"\{[^}]*\}", "", expr)             # and label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*"
                  r"\([^)]*\)", "", expr)
    tokens = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    return {t for t in tokens
            if t.startswith("fabricdiag_") or ":" in t or t == "up"}


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    src, sim, agent, collector, cli = sys.argv[1:]
    if shutil.which("promtool") is None:
        print("SKIP: promtool not found (apt-get install prometheus)")
        return 77
    global yaml
    try:
        import yaml
    except ImportError:
        print("SKIP: python3-yaml not installed")
        return 77
    grafana = f"{src}/deploy/grafana"
    rules_dir = f"{src}/deploy/prometheus/rules"

    with open(f"{grafana}/provisioning/datasources/fabricdiag.yml") as f:
        m = re.search(r"uid:\s*(\S+)", f.read())
    ds_uid = m.group(1) if m else None
    if ds_uid is None:
        fail("the datasource provisioning file defines no uid")

    recorded = set()
    rule_exprs = []
    for path in sorted(glob.glob(f"{rules_dir}/*.yml")):
        with open(path) as f:
            groups = yaml.safe_load(f).get("groups", [])
        for group in groups:
            for rule in group.get("rules", []):
                if "record" in rule:
                    recorded.add(rule["record"])
                name = rule.get("record") or rule.get("alert")
                rule_exprs.append((f"{os.path.basename(path)} {name}",
                                   rule["expr"]))

    dash_exprs = []
    uids = set()
    dashboards = sorted(glob.glob(f"{grafana}/dashboards/*.json"))
    if len(dashboards) < 3:
        fail(f"expected the fleet, job and switch dashboards, found "
             f"{len(dashboards)}")
    for path in dashboards:
        name = os.path.basename(path)
        try:
            with open(path) as f:
                d = json.load(f)
        except ValueError as e:
            fail(f"{name}: not JSON: {e}")
            continue
        if not d.get("uid") or d["uid"] in uids:
            fail(f"{name}: missing or duplicate uid")
        uids.add(d.get("uid"))
        panels = d.get("panels", [])
        if not panels:
            fail(f"{name}: no panels")
        for p in panels:
            where = f"{name} panel '{p.get('title')}'"
            if p.get("datasource", {}).get("uid") != ds_uid:
                fail(f"{where}: datasource uid is not {ds_uid}")
            if not p.get("targets"):
                fail(f"{where}: no targets")
            for t in p.get("targets", []):
                if t.get("datasource", {}).get("uid") != ds_uid:
                    fail(f"{where}: target datasource uid is not {ds_uid}")
                if not t.get("expr"):
                    fail(f"{where}: a target without expr")
                    continue
                dash_exprs.append((where, t["expr"]))
                for metric in per_collector(t["expr"]):
                    fail(f"{where}: {t['expr']!r} reads {metric} per "
                         f"collector: aggregate instance away (max without "
                         f"(instance) (...)), or a cluster shows each finding "
                         f"once per collector")
            for key in ("x", "y", "w", "h"):
                if key not in p.get("gridPos", {}):
                    fail(f"{where}: gridPos.{key} missing")
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            q = v.get("query", {})
            q = q.get("query") if isinstance(q, dict) else q
            m = re.match(r"label_values\((.*),\s*\w+\)$", q or "")
            if not m:
                fail(f"{name} variable {v.get('name')}: unexpected query {q}")
                continue
            dash_exprs.append((f"{name} variable {v.get('name')}",
                               m.group(1)))

    # 2. Every dashboard expression parses.
    work = tempfile.mkdtemp(prefix="grafana-check.")
    try:
        with open(f"{work}/exprs.yml", "w") as f:
            f.write("groups:\n  - name: grafana\n    rules:\n")
            for i, (_, expr) in enumerate(dash_exprs):
                f.write(f"      - record: grafana_check_{i}\n"
                        f"        expr: {json.dumps(substitute(expr))}\n")
        r = subprocess.run(["promtool", "check", "rules", f"{work}/exprs.yml"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("a dashboard expression does not parse:\n" + r.stdout +
                 r.stderr)

        # 3. Every metric named is exported (or recorded).
        live, with_cluster = live_metrics(sim, agent, collector, cli, work)
        if "fabricdiag_rdma_port_received_bytes_total" not in live or \
                "fabricdiag_finding_active" not in live:
            fail(f"the live metrics look wrong ({len(live)} names)")
        for where, expr in dash_exprs + rule_exprs:
            for n in sorted(names_in(expr)):
                if ":" in n:
                    if n not in recorded:
                        fail(f"{where}: {n} is not a recording rule")
                elif n.startswith("fabricdiag_cluster_") and \
                        not with_cluster:
                    print(f"not checked (no nats-server): {where}: {n}")
                elif n != "up" and n not in live:
                    fail(f"{where}: {n} is not exported by the agent or the "
                         f"collector")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for f in FAILURES:
        print("FAIL:", f, file=sys.stderr)
    if FAILURES:
        return 1
    print(f"PASS: {len(dashboards)} dashboards, {len(dash_exprs)} dashboard "
          f"and {len(rule_exprs)} rule expressions parse and name only "
          f"exported or recorded metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
