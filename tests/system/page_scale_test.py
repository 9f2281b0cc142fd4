#!/usr/bin/env python3
"""The collector's live page at fabric scale, in a real browser.

fabricdiag-web-fixture (bench/web_page_fixture.cc) serves the page and its
JSON (the collector's own routes) over a simulated fabric of NODES GPU nodes
x 8 NICs, 32 nodes per leaf, with the findings the real rate analyzers
raise on it (a hot expert on the second node's mlx5_0 among them), and
two windows taking turns every 3 polls. The test:
  - reads /api/v1/fabric as a browser does (gzip) and again with its ETag
    (If-None-Match: 304, no body);
  - loads the page in Debian's headless Chromium for LOAD_MS of virtual
    time (--dump-dom) and checks the DOM text: the status is live, the finding's
    row names the hot NIC, the list of cells named in findings holds the hot
    NIC with its finding and a ratio >= 2 to its rail's median, the heatmap
    is a canvas and not a table of cells, the whole page holds fewer than
    MAX_ELEMENTS elements, and the page polled several times, redrew the
    heatmap when the view changed and was told "not modified" when it had
    not;
  - prints what the page says of itself (#page-stats): elements, polls,
    heatmap draws, the JS heap (its timings are virtual here: real ones
    come from bench/page_timing.mjs).

  page_scale_test.py FIXTURE [NODES]
"""

import gzip
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from page_browser_test import Dom, chromium  # noqa: E402

LOAD_MS = 20000
MAX_ELEMENTS = 15000


def start_fixture(fixture, nodes):
    proc = subprocess.Popen(
        [fixture, f"--nodes={nodes}", "--new_view_after=6"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = {}
    deadline = time.time() + 120
    while "port" not in info:
        line = proc.stdout.readline()
        if not line or time.time() > deadline:
            proc.kill()
            raise AssertionError(f"the fixture did not start: {line!r} "
                                 f"{proc.stderr.read()[-2000:]}")
        key, _, value = line.strip().partition(" ")
        info[key] = value
    return proc, info


def get(port, path, headers):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def check_api(port, failures):
    start = time.monotonic()
    status, headers, body = get(port, "/api/v1/fabric",
                                {"Accept-Encoding": "gzip"})
    ms = 1e3 * (time.monotonic() - start)
    if status != 200 or headers.get("Content-Encoding") != "gzip":
        failures.append(f"/api/v1/fabric: {status} {headers}")
        return
    plain = gzip.decompress(body)
    print(f"/api/v1/fabric: {len(plain)} bytes, {len(body)} gzipped, "
          f"{ms:.0f} ms to the first byte and back")
    etag = headers.get("ETag", "")
    if not etag.startswith('W/"'):
        failures.append(f"/api/v1/fabric ETag {etag!r}")
        return
    status, headers, body = get(port, "/api/v1/fabric",
                                {"Accept-Encoding": "gzip",
                                 "If-None-Match": etag})
    # The fixture serves the same window to both requests.
    if status != 304 or body or headers.get("ETag") != etag:
        failures.append(f"If-None-Match {etag}: {status} {headers} "
                        f"{len(body)} bytes")


def load_page(port, work):
    # Virtual time: the page's polls run back to back (its own timings read
    # 0; bench/page_timing.mjs measures them in real time); the fixture
    # swaps windows every 3 polls.
    dom = Dom()
    dom.feed(chromium(["--enable-precise-memory-info", "--window-size=1400,1600",
                       "--dump-dom", f"http://127.0.0.1:{port}/"],
                      work, budget_ms=LOAD_MS))
    return dom


def check_page(dom, hot, failures):
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

    expect(dom.by_id("status")[2].strip() == "live",
           f"status {dom.by_id('status')[2]!r}")
    rows = [r for r in dom.find("tr", data_kind="hot_expert_incast")
            if "active" in r[1].get("class", "")]
    expect(any(hot[0] in r[2] and hot[1] in r[2] for r in rows),
           f"no finding row names {hot}: {[r[2][:120] for r in rows]}")

    cells = dom.find("tr", data_node=hot[0], data_rail=hot[1])
    expect(len(cells) == 1, f"{len(cells)} rows of #hot-cells for {hot}")
    if cells:
        classes = cells[0][1].get("class", "").split()
        expect("finding" in classes and "hot" in classes,
               f"hot cell classes {classes}")
        expect("hot_expert_incast" in cells[0][2],
               f"hot cell text {cells[0][2]!r}")
        ratio = re.search(r"([0-9.]+)×", cells[0][2])
        expect(ratio is not None and float(ratio.group(1)) >= 2,
               f"hot cell ratio in {cells[0][2]!r}")

    canvas = dom.by_id("heatmap-canvas")
    expect(canvas[1].get("hidden") is None, "the canvas is hidden")
    expect(dom.by_id("heatmap")[1].get("hidden") is not None,
           "the heatmap table is shown")
    table_cells = [e for e in dom.find("td")
                   if "cell" in e[1].get("class", "").split()]
    expect(not table_cells, f"{len(table_cells)} heatmap table cells")
    expect(len(dom.elements) < MAX_ELEMENTS,
           f"{len(dom.elements)} elements (at most {MAX_ELEMENTS})")

    stats = dom.by_id("page-stats")[1]
    print("page:", dom.by_id("page-stats")[2].strip())
    print(f"page: {len(dom.elements)} elements in the dumped DOM; first "
          f"heatmap drawn {stats.get('data-first-heatmap-at-ms')} ms after "
          f"navigation; last draw {stats.get('data-heatmap-ms')} ms; last "
          f"poll {stats.get('data-poll-ms')} ms; heap "
          f"{stats.get('data-heap-bytes')} bytes")
    polls = int(stats.get("data-polls") or 0)
    draws = int(stats.get("data-fabric-draws") or 0)
    unchanged = int(stats.get("data-not-modified") or 0)
    expect(polls >= 3 and draws >= 2 and unchanged >= 1,
           f"{polls} polls, {draws} heatmap draws, {unchanged} not modified "
           "(want >= 3, >= 2 and >= 1)")


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    fixture = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) == 3 else 8512
    work = tempfile.mkdtemp(prefix="fabricdiag-page-scale.")
    failures = []
    proc = None
    try:
        proc, info = start_fixture(fixture, nodes)
        hot = tuple(info["hot"].split())
        print(f"fixture: {nodes} nodes x 8 NICs built {info.get('built')}, "
              f"hot expert on {hot}")
        port = int(info["port"])
        check_api(port, failures)
        check_page(load_page(port, work), hot, failures)
    except AssertionError as e:
        failures.append(str(e))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
