#!/usr/bin/env python3
"""The collector's live page, in a real browser, on a running system.

Real processes on loopback (tests/system/loopback_cluster.py): fabricdiag-sim
(4 GPU nodes x 4 mlx5 NICs, two leaves) with a hot expert on gpu-001 mlx5_2,
one agent per node and leaf, the collector, and the CLI declaring the job
and the topology. Once the collector has opened the hot_expert_incast
finding, the test:
  - reads the JSON API (/api/v1/findings, /fabric, /jobs, /jobs/JOB) and
    checks that it names the finding, outlines the hot cell and shows its
    ratio to the rail's median, and answers bad requests with JSON errors;
  - loads the page in Debian's headless Chromium (--dump-dom after the
    page's script ran) and checks the DOM text: the finding's row, the hot
    cell of gpu-001 x mlx5_2 marked as named in a finding and hot, every
    node x rail cell present, the uplinks of both leaves, the job's groups;
  - saves screenshots of the page next to the test's log
    (page_browser_test-*.png in the working directory).

  page_browser_test.py SIM AGENT COLLECTOR CLI
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser

from loopback_cluster import System

INTERVAL = 0.5
NODES = [f"gpu-{i:03d}" for i in range(4)]
NICS = [f"mlx5_{n}" for n in range(4)]
LEAF_OF = {h: f"leaf-{i // 2}" for i, h in enumerate(NODES)}
HOT = ("gpu-001", "mlx5_2")
JOB = "moe-page"


def write_inputs(work):
    with open(f"{work}/layout.yaml", "w") as f:
        f.write(f"job: {JOB}\ngpus_per_node: 4\n"
                "parallelism: {tp: 4, pp: 1, dp: 4, ep: 4}\n"
                f"hosts: [{', '.join(NODES)}]\n"
                f"rails: [{', '.join(NICS)}]\n"
                "model: {params: 1.6e10, hidden: 4096, layers: 32, "
                "seq_len: 4096, micro_batch: 1, micro_batches: 4, "
                "dtype_bytes: 2, experts: 16, top_k: 2}\n")
    with open(f"{work}/topology.yaml", "w") as f:
        f.write("switches:\n")
        for leaf in ("leaf-0", "leaf-1"):
            f.write(f"  - {{name: {leaf}, uplinks: [swp49, swp50]}}\n")
        f.write("links:\n")
        for i, h in enumerate(NODES):
            for n, nic in enumerate(NICS):
                f.write(f"  - {{host: {h}, nic: {nic}, switch: {LEAF_OF[h]}, "
                        f"port: swp{(i % 2) * 4 + n + 1}}}\n")
    with open(f"{work}/scenario.json", "w") as f:
        json.dump({"step_seconds": 1.0, "faults": [
            {"kind": "hot_expert", "node": HOT[0], "nic": HOT[1],
             "factor": 6, "start": 2.0, "end": 600.0}]}, f)
    with open(f"{work}/analysis.yaml", "w") as f:
        f.write("window_seconds: 1.5\n"
                "hysteresis: {open_after: 3, clear_after: 4}\n")


def http_get(port, path):
    """(status, parsed JSON or text) of GET path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=10) as r:
            body, status, ctype = r.read(), r.status, r.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        body, status, ctype = e.read(), e.code, e.headers["Content-Type"]
    if ctype.startswith("application/json"):
        return status, json.loads(body)
    return status, body.decode()


class Dom(HTMLParser):
    """Elements with their attributes and text, from Chromium's --dump-dom."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.elements = []  # [tag, attrs dict, text]

    def handle_starttag(self, tag, attrs):
        e = [tag, dict(attrs), ""]
        self.elements.append(e)
        if tag not in ("meta", "link", "br", "img", "input"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e[2] += data

    def find(self, tag=None, **attrs):
        return [e for e in self.elements
                if (tag is None or e[0] == tag) and
                all(e[1].get(k.replace("_", "-")) == v
                    for k, v in attrs.items())]

    def by_id(self, id_):
        found = self.find(id=id_)
        if not found:
            raise AssertionError(f"the page has no #{id_}")
        return found[0]


def chromium(args, work, budget_ms=10000):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise AssertionError("chromium is not installed "
                             "(scripts/install-deps.sh installs it)")
    profile = tempfile.mkdtemp(prefix="chromium.", dir=work)
    r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", f"--user-data-dir={profile}",
                        f"--virtual-time-budget={budget_ms}", *args],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"chromium {args}: exit {r.returncode}: "
                             f"{r.stderr.decode(errors='replace')[-2000:]}")
    return r.stdout.decode(errors="replace")


def check_api(port, failures):
    def expect(cond, what):
        if not cond:
            failures.append(what)

    status, findings = http_get(port, "/api/v1/findings")
    expect(status == 200, f"/api/v1/findings: {status}")
    hot = [f for f in findings["active"]
           if f["kind"] == "hot_expert_incast" and
           (f["node"], f["device"]) == HOT]
    expect(len(hot) == 1, f"/api/v1/findings does not list the hot expert: "
                          f"{findings['active']}")
    if hot:
        expect(hot[0]["duration_seconds"] >= 0 and hot[0]["job"] == JOB,
               f"hot expert finding: {hot[0]}")

    status, fabric = http_get(port, "/api/v1/fabric")
    expect(status == 200, f"/api/v1/fabric: {status}")
    expect(fabric["rails"] == NICS, f"rails {fabric['rails']}")
    expect(fabric["nodes"] == NODES, f"nodes {fabric['nodes']}")
    outlined = {(o["node"], o["rail"]) for o in fabric["outlined"]}
    expect(HOT in outlined, f"{HOT} not outlined: {fabric['outlined']}")
    n, r = NODES.index(HOT[0]), NICS.index(HOT[1])
    rx = fabric["values"]["rx_bytes"][n][r]
    median = fabric["rail_medians"]["rx_bytes"][r]
    expect(rx is not None and median and rx / median >= 2,
           f"hot cell rx {rx} vs rail median {median}")
    leaves = {s["switch"]: s for s in fabric["switches"]}
    expect(sorted(leaves) == ["leaf-0", "leaf-1"] and
           all(len(s["uplinks"]) == 2 for s in leaves.values()),
           f"switches {fabric['switches']}")

    status, jobs = http_get(port, "/api/v1/jobs")
    expect(status == 200 and [j["job"] for j in jobs["jobs"]] == [JOB],
           f"/api/v1/jobs: {status} {jobs}")
    status, job = http_get(port, f"/api/v1/jobs/{JOB}?dim=ep")
    expect(status == 200, f"/api/v1/jobs/{JOB}?dim=ep: {status} {job}")
    if status == 200:
        expect(job["groups_total"] == 4 and len(job["groups"]) == 4,
               f"ep groups: {job['groups_total']}")
        members = [m for g in job["groups"] for m in g["members"]
                   if (m["host"], m["nic"]) == HOT]
        expect(len(members) == 1 and members[0]["rx_ratio"] >= 2 and
               members[0]["findings"] and
               members[0]["predicted_rx_bytes_per_step"] > 0,
               f"hot member in its ep group: {members}")

    for path, want in [(f"/api/v1/jobs/{JOB}?dim=xy", 400),
                       (f"/api/v1/jobs/{JOB}?dim=ep&group=ep:99", 404),
                       ("/api/v1/jobs/no-such-job", 404),
                       ("/api/v1/findings?color=red", 400),
                       ("/api/v1/nothing", 404)]:
        status, body = http_get(port, path)
        expect(status == want and isinstance(body, dict) and body.get("error"),
               f"{path}: want {want} with a JSON error, got {status} {body}")
    status, body = http_get(port, "/no-such-page")
    expect(status == 404, f"/no-such-page: {status}")


def check_page(port, work, failures):
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

    url = f"http://127.0.0.1:{port}/"
    dom = Dom()
    dom.feed(chromium(["--dump-dom", url], work))
    expect(dom.by_id("status")[2].strip() == "live",
           f"status {dom.by_id('status')[2]!r}")

    rows = dom.find("tr", data_kind="hot_expert_incast")
    active = [r for r in rows if "active" in r[1].get("class", "")]
    expect(len(active) == 1 and HOT[0] in active[0][2] and
           HOT[1] in active[0][2] and "critical" in active[0][2],
           f"the finding's row: {[r[2] for r in rows]}")
    expect("No open findings" not in dom.by_id("findings-section")[2] or
           dom.by_id("no-findings")[1].get("hidden") is not None,
           "says there are no open findings")

    cells = dom.find("td", data_node=HOT[0], data_rail=HOT[1])
    expect(len(cells) == 1, f"{len(cells)} cells for {HOT}")
    if cells:
        classes = cells[0][1].get("class", "").split()
        expect("finding" in classes and "hot" in classes,
               f"hot cell classes {classes}")
        ratio = re.match(r"([0-9.]+)×", cells[0][2])
        expect(ratio is not None and float(ratio.group(1)) >= 2,
               f"hot cell text {cells[0][2]!r}")
        expect("hot_expert_incast" in cells[0][1].get("title", ""),
               f"hot cell title {cells[0][1].get('title')!r}")
    all_cells = [e for e in dom.find("td")
                 if "cell" in e[1].get("class", "").split()]
    expect(len(all_cells) == len(NODES) * len(NICS),
           f"{len(all_cells)} heatmap cells")
    others = [c for c in all_cells
              if (c[1]["data-node"], c[1]["data-rail"]) != HOT and
              "finding" in c[1].get("class", "")]
    expect(not others, f"cells outlined without a finding: "
                       f"{[(c[1]['data-node'], c[1]['data-rail']) for c in others]}")

    switches = {e[1]["data-switch"] for e in dom.find("div")
                if "data-switch" in e[1]}
    expect(switches == {"leaf-0", "leaf-1"}, f"uplink blocks {switches}")
    expect(JOB in dom.by_id("job-summary")[2],
           f"job summary {dom.by_id('job-summary')[2]!r}")
    expect(len(dom.find("tr", data_group="tp:0")) == 1, "no tp:0 group row")

    for name, size in (("page_browser_test-page.png", "1400,1600"),
                       ("page_browser_test-narrow.png", "700,1200")):
        chromium([f"--window-size={size}", f"--screenshot={os.path.abspath(name)}",
                  url], work)
        expect(os.path.getsize(name) > 10000, f"{name} is nearly empty")
        print(f"screenshot: {os.path.abspath(name)}")


def main():
    binaries = sys.argv[1:5]
    if len(binaries) != 4:
        print(__doc__)
        return 2
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = tempfile.mkdtemp(prefix="fabricdiag-page.", dir=base)
    cluster = System(binaries, work, INTERVAL)
    failures = []
    try:
        write_inputs(work)
        cluster.start_collector()
        cluster.cli_run("layout", "apply", f"{work}/layout.yaml")
        cluster.cli_run("topology", "apply", f"{work}/topology.yaml")
        cluster.start_sim("leaf-1")
        for node in NODES + ["leaf-0", "leaf-1"]:
            cluster.start_agent(node)

        deadline = time.time() + 60
        while True:
            active = cluster.active() or []
            if any(f["kind"] == "hot_expert_incast" and
                   (f["node"], f["device"]) == HOT for f in active):
                break
            if time.time() > deadline:
                raise AssertionError(
                    f"no hot_expert_incast on {HOT} after 60 s: {active}\n" +
                    cluster.log_tail("collector"))
            time.sleep(0.5)
        if cluster.http is None:
            raise AssertionError("the collector did not say its HTTP port")
        check_api(cluster.http, failures)
        check_page(cluster.http, work, failures)
    except AssertionError as e:
        failures.append(str(e))
    finally:
        cluster.stop_all()
        if failures:
            print(f"work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
