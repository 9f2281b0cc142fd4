#!/usr/bin/env python3
"""The collector's live page, in a real browser, on a running system.

Real processes on loopback (tests/system/loopback_cluster.py): fabricdiag-sim
(4 GPU nodes x 4 mlx5 NICs, two leaves) with a hot expert on gpu-001 mlx5_2,
one agent per node and leaf, the collector with a token file (an admin
token for the CLI, a read token for the page), and the CLI declaring the
job and the topology. Once the collector has opened the hot_expert_incast
finding, the test:
  - reads the JSON API (/api/v1/findings, /fabric, /jobs, /jobs/JOB) with
    the read token and checks that it names the finding (also through the
    findings filters), outlines the hot cell and shows its ratio to the
    rail's median, and answers bad requests (and no token) with JSON errors;
  - drives the page in Debian's headless Chromium over the DevTools
    protocol (--remote-debugging-pipe: no extra package): with no token
    stored it shows its login form; a wrong token is refused with the
    collector's reason; the read token loads the findings, and still does
    after a reload (the token is kept); then it checks the DOM: the
    finding's row, the hot cell of gpu-001 x mlx5_2 marked as named in a
    finding and hot, every node x rail cell present, the uplinks of both
    leaves, the job's groups; and, opened with the filter "node=gpu-002" in
    its #fragment, no row of the hot expert; the hot expert's "ack" button
    is refused with the read token, and with the admin token (signed in
    again) "ack" and "silence" mark its row; the notes that the heatmap and
    the job's rates are this collector's agents only, hidden here, show in
    a tab whose fabric and job answers say so (scope "collector", as a
    collector of a sharded cluster gives them; rewritten in the page's
    fetch()); "log out" forgets the token and brings the form back;
  - saves screenshots of the page next to the test's log
    (page_browser_test-*.png in the working directory).

  page_browser_test.py SIM AGENT COLLECTOR CLI
"""

import base64
import json
import os
import re
import select
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
ADMIN_TOKEN = "page-admin-0123456789abcdef"  # the CLI's: declares, reads
READ_TOKEN = "page-read-0123456789abcdef"  # the page's and the API reads'
WRONG_TOKEN = "wrong-token-0123456789"  # in no token file


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


def write_tokens(work):
    """The collector's token file and the CLI's (one token each line)."""
    for name, text in (("tokens", f"cli admin {ADMIN_TOKEN}\n"
                                  f"page read {READ_TOKEN}\n"),
                       ("cli-token", ADMIN_TOKEN + "\n")):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)


def http_get(port, path, token=READ_TOKEN):
    """(status, parsed JSON or text) of GET path."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
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
    """One headless Chromium run (--dump-dom, --screenshot); its stdout."""
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


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: commands on its fd 3, answers on its fd 4,
    each message a JSON object ended by a NUL byte)."""

    def __init__(self, work):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe is None:
            raise AssertionError("chromium is not installed "
                                 "(scripts/install-deps.sh installs it)")
        profile = tempfile.mkdtemp(prefix="chromium.", dir=work)
        to_browser, self.commands = os.pipe()
        self.answers, from_browser = os.pipe()

        def pipes():
            # Through fresh numbers: either end may be 3 or 4 already, and
            # dup2 onto itself would keep it close-on-exec.
            ends = os.dup(to_browser), os.dup(from_browser)
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        log = open(os.path.join(work, "chromium.log"), "ab")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", f"--user-data-dir={profile}",
             "--remote-debugging-pipe"],
            stdout=log, stderr=log, preexec_fn=pipes, close_fds=False)
        os.close(to_browser)
        os.close(from_browser)
        self.next_id = 0
        self.buffer = b""

    def call(self, method, session=None, timeout=30, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("id") != self.next_id:
                    continue  # an event
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            left = deadline - time.time()
            if left <= 0 or not select.select([self.answers], [], [], left)[0]:
                raise AssertionError(f"chromium did not answer {method}")
            chunk = os.read(self.answers, 1 << 20)
            if not chunk:
                raise AssertionError(f"chromium exited during {method}")
            self.buffer += chunk

    def open(self, url):
        """A new tab on `url`; its session."""
        target = self.call("Target.createTarget", url=url)["targetId"]
        return self.call("Target.attachToTarget", targetId=target,
                         flatten=True)["sessionId"]

    def js(self, session, expression):
        result = self.call("Runtime.evaluate", session,
                           expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def wait(self, session, expression, what, timeout=20):
        """Waits until `expression` is truthy in the page; its value."""
        deadline = time.time() + timeout
        while True:
            value = self.js(session, expression)
            if value:
                return value
            if time.time() > deadline:
                raise AssertionError(f"page: {what} (after {timeout} s; "
                                     f"{self.described(session)})")
            time.sleep(0.1)

    def described(self, session):
        """What the page shows that the waits read: a failed wait says it."""
        try:
            return self.js(session, PAGE_STATE)
        except AssertionError as e:
            return f"the page's state unread: {e}"

    def screenshot(self, session, path, width, height):
        self.call("Emulation.setDeviceMetricsOverride", session, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", session)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.commands)
        os.close(self.answers)


# Page conditions, as JavaScript expressions.
def _shown(id_):
    return f"!document.getElementById('{id_}').hidden"


def _text(id_):
    return f"document.getElementById('{id_}').textContent"


# What the page shows: its status line, the login form and its reason, and
# the kinds of the active findings' rows.
PAGE_STATE = (
    "'status ' + JSON.stringify(" + _text("status") + ") + ', login ' + "
    "(document.getElementById('login').hidden ? 'hidden' : 'shown: ' + "
    "JSON.stringify(" + _text("login-why") + ")) + ', active rows ' + "
    "JSON.stringify(Array.from(document.querySelectorAll('tr.active'), "
    "(r) => r.dataset.kind))")

# Holds the answers to the page's requests sent with the authorization %s
# until window.releaseAnswers(), which also stops holding.
HOLD_ANSWERS_TO = """(() => {
  const fetchNow = window.fetch;
  const held = [];
  window.heldAnswers = held;
  window.releaseAnswers = () => {
    window.fetch = fetchNow;
    held.splice(0).forEach((release) => release());
  };
  window.fetch = (url, options) => {
    const answer = fetchNow(url, options);
    const headers = (options && options.headers) || {};
    if (headers.Authorization !== %s) return answer;
    return new Promise((resolve, reject) =>
      held.push(() => answer.then(resolve, reject)));
  };
  return true;
})()"""

HOT_ROW_SHOWN = (
    "document.querySelectorAll('tr.active[data-kind=\"hot_expert_incast\"]')"
    ".length == 1 && " + _text("status") + " == 'live'")


def check_api(port, failures):
    def expect(cond, what):
        if not cond:
            failures.append(what)

    status, findings = http_get(port, "/api/v1/findings")
    expect(status == 200, f"/api/v1/findings: {status} {findings}")
    if status != 200:
        return
    hot = [f for f in findings["active"]
           if f["kind"] == "hot_expert_incast" and
           (f["node"], f["device"]) == HOT]
    expect(len(hot) == 1, f"/api/v1/findings does not list the hot expert: "
                          f"{findings['active']}")
    if hot:
        expect(hot[0]["duration_seconds"] >= 0 and hot[0]["job"] == JOB,
               f"hot expert finding: {hot[0]}")

    # The filters of `fabricdiag findings` as query parameters.
    for query, listed in ((f"node={HOT[0]}&severity=critical&since=1h", True),
                          ("node=gpu-002&kind=hot_expert_incast", False)):
        status, body = http_get(port, "/api/v1/findings?" + query)
        expect(status == 200 and listed == any(
            f["kind"] == "hot_expert_incast" for f in body["active"]),
            f"/api/v1/findings?{query}: {status} {body}")

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
                       ("/api/v1/findings?kind=pfc_strom", 400),
                       ("/api/v1/nothing", 404)]:
        status, body = http_get(port, path)
        expect(status == want and isinstance(body, dict) and body.get("error"),
               f"{path}: want {want} with a JSON error, got {status} {body}")
    status, body = http_get(port, "/no-such-page")
    expect(status == 404, f"/no-such-page: {status}")
    for token in (None, WRONG_TOKEN):
        status, body = http_get(port, "/api/v1/findings", token=token)
        expect(status == 401 and isinstance(body, dict) and body.get("error"),
               f"/api/v1/findings with token {token}: {status} {body}")


def sign_in(browser, url, failures):
    """The login round trip; the signed-in tab's session."""
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

    tab = browser.open(url)
    # No token stored: the API answers 401 and the page asks for one.
    browser.wait(tab, _shown("login"), "no login form without a token")
    expect(browser.js(tab, _text("status")) == "sign in with a token",
           f"status {browser.js(tab, _text('status'))!r}")
    expect("needs a token with the read scope" in
           browser.js(tab, _text("login-why")),
           f"login says {browser.js(tab, _text('login-why'))!r}")
    expect(browser.js(tab, "document.querySelectorAll('tr.active').length")
           == 0, "findings shown without a token")

    def submit(token):
        browser.js(tab, "document.getElementById('login-token').value = "
                        f"{json.dumps(token)}; "
                        "document.getElementById('login').requestSubmit()")

    # A wrong token: refused, with the collector's reason, form kept.
    submit(WRONG_TOKEN)
    why = browser.wait(
        tab, _shown("login") + " && " + _text("login-why") +
        ".startsWith('The token was refused') && " + _text("login-why"),
        "a wrong token is not refused")
    expect(len(why) > len("The token was refused: "), f"refusal {why!r}")

    # The read token, signed in while a poll with the wrong one is on its
    # way (its answers held until the read token's are in): the findings
    # load, the form goes, "log out" shows, and the wrong token's refusal,
    # come late, brings nothing back.
    browser.js(tab, HOLD_ANSWERS_TO % json.dumps("Bearer " + WRONG_TOKEN))
    browser.wait(tab, "window.heldAnswers.length > 0",
                 "no poll with the wrong token")
    submit(READ_TOKEN)
    browser.wait(tab, HOT_ROW_SHOWN + " && document.getElementById('login')"
                 ".hidden", "the read token loads no findings")
    expect(browser.js(tab, _shown("logout")), "no log out link signed in")
    browser.js(tab, "window.releaseAnswers()")
    time.sleep(1)  # the refusals are read and handled in milliseconds
    expect(browser.js(tab, HOT_ROW_SHOWN + " && document.getElementById("
                      "'login').hidden"),
           "the wrong token's late refusal signed the page out: " +
           browser.described(tab))

    # A reload keeps the token: the findings load without the form.
    browser.call("Page.reload", tab)
    browser.wait(tab, "document.readyState == 'complete' && " + HOT_ROW_SHOWN,
                 "no findings after a reload")
    expect(not browser.js(tab, _shown("login")), "login form after a reload")
    return tab


def check_page(port, work, failures):
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

    url = f"http://127.0.0.1:{port}/"
    browser = Browser(work)
    try:
        tab = sign_in(browser, url, failures)
        dom = Dom()
        dom.feed(browser.js(tab, "document.documentElement.outerHTML"))
        check_dom(dom, failures)

        # The filter box, from the link's #fragment: another node's
        # findings (a new tab, the same stored token).
        other = browser.open(url + "#node%3Dgpu-002")
        browser.wait(other, _text("status") + " == 'live'",
                     "the filtered page does not load")
        filtered = Dom()
        filtered.feed(browser.js(other, "document.documentElement.outerHTML"))
        rows = [r for r in filtered.find("tr", data_kind="hot_expert_incast")
                if "active" in r[1].get("class", "")]
        expect(not rows and
               filtered.by_id("filter-error")[1].get("hidden") is not None,
               f"filtered page: rows {[r[2] for r in rows]}, error "
               f"{filtered.by_id('filter-error')}")

        for name, (width, height) in (("page_browser_test-page.png",
                                       (1400, 1600)),
                                      ("page_browser_test-narrow.png",
                                       (700, 1200))):
            browser.screenshot(tab, os.path.abspath(name), width, height)
            expect(os.path.getsize(name) > 10000, f"{name} is nearly empty")
            print(f"screenshot: {os.path.abspath(name)}")

        check_marks(browser, tab, failures)
        check_scope_notes(browser, url, failures)

        # Log out: the token is forgotten and the form is back.
        browser.js(tab, "document.getElementById('logout').click()")
        browser.wait(tab, _shown("login") + " && " + _text("login-why") +
                     ".includes('needs a token')",
                     "no login form after log out")
        expect(browser.js(tab, "localStorage.getItem('fabricdiag.token')")
               is None, "the token is still stored after log out")
    finally:
        browser.close()


# Loaded before the page's own script: the fabric's and the job's answers
# as a collector of a sharded cluster gives them (scope "collector": its
# own agents' ports only; the job's naming the owner of its shard),
# everything else as the collector gave it.
AS_A_SHARDED_COLLECTOR = """
(() => {
  const real = window.fetch;
  window.rescoped = 0;
  window.fetch = async (url, options) => {
    const r = await real(url, options);
    const path = String(url);
    if (r.status !== 200 || !(path.startsWith('/api/v1/fabric') ||
                              path.startsWith('/api/v1/jobs/'))) {
      return r;
    }
    const body = await r.json();
    body.scope = 'collector';
    if (path.startsWith('/api/v1/jobs/')) body.shard_owner = 'col-b';
    window.rescoped++;
    return new Response(JSON.stringify(body),
                        {status: r.status, statusText: r.statusText,
                         headers: r.headers});
  };
})();
"""


def check_scope_notes(browser, url, failures):
    """The notes that say the heatmap and the job's rates are this
    collector's agents only, hidden on a lone collector (check_dom), shown
    when the API says so (scope "collector", as a collector of a sharded
    cluster answers), with the heatmap and the job still drawn."""
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

    target = browser.call("Target.createTarget", url="about:blank")
    tab = browser.call("Target.attachToTarget", targetId=target["targetId"],
                       flatten=True)["sessionId"]
    browser.call("Page.enable", tab)
    browser.call("Page.addScriptToEvaluateOnNewDocument", tab,
                 source=AS_A_SHARDED_COLLECTOR)
    browser.call("Page.navigate", tab, url=url)
    try:
        browser.wait(tab, _shown("fabric-scope") + " && " +
                     _shown("job-scope") + " && " + _text("status") +
                     " == 'live'", "the scope notes are not shown")
    except AssertionError as e:
        state = browser.js(tab, "JSON.stringify({rescoped: window.rescoped, "
                           "status: " + _text("status") + ", fabric: " +
                           _shown("fabric-scope") + ", job: " +
                           _shown("job-scope") + "})")
        failures.append(f"{e}: {state}")
        return
    dom = Dom()
    dom.feed(browser.js(tab, "document.documentElement.outerHTML"))
    expect("agents only" in dom.by_id("fabric-scope")[2],
           f"fabric scope note {dom.by_id('fabric-scope')[2]!r}")
    expect("agents only" in dom.by_id("job-scope")[2],
           f"job scope note {dom.by_id('job-scope')[2]!r}")
    owner_note = " ".join(browser.js(
        tab, "document.getElementById('job-scope').textContent").split())
    expect("owns the job's analysis shard (col-b) shows" in owner_note,
           f"the job scope note names no shard owner: {owner_note!r}")
    expect(browser.js(tab, "window.rescoped") >= 2,
           "the answers were not rescoped")
    cells = dom.find("td", data_node=HOT[0], data_rail=HOT[1])
    expect(len(cells) == 1 and
           "hot" in cells[0][1].get("class", "").split(),
           "no hot cell beside the scope note")
    expect(JOB in dom.by_id("job-summary")[2],
           "no job summary beside the scope note")


HOT_ROW = "document.querySelector('tr.active[data-kind=\"hot_expert_incast\"]')"


def check_marks(browser, tab, failures):
    """Ack and silence from the page: refused with the read token, done with
    the admin token (signed in again), and the row shows both marks."""
    def expect(cond, what):
        if not cond:
            failures.append("page marks: " + what)

    def click(action):
        browser.js(tab, HOT_ROW + f".querySelector('button[data-action=\"{action}\"]').click()")

    click("ack")
    refused = browser.wait(
        tab, _text("mark-result") + ".startsWith('refused') && " +
        _text("mark-result"), "an ack with the read token is not refused")
    expect("admin scope" in refused, f"refusal {refused!r}")

    browser.js(tab, "document.getElementById('logout').click()")
    browser.wait(tab, _shown("login"), "no login form after log out")
    browser.js(tab, "document.getElementById('login-token').value = "
                    f"{json.dumps(ADMIN_TOKEN)}; "
                    "document.getElementById('login').requestSubmit()")
    browser.wait(tab, HOT_ROW_SHOWN, "the admin token loads no findings")
    browser.js(tab, "document.getElementById('mark-comment').value = 'on it'")
    click("ack")
    browser.wait(tab, HOT_ROW + " && " + HOT_ROW +
                 ".textContent.includes('[acked by cli]')",
                 "the acked row does not say so")
    click("silence")
    said = browser.wait(
        tab, HOT_ROW + " && " + HOT_ROW +
        ".textContent.includes('[silenced s-') && " + _text("mark-result"),
        "the silenced row does not say so")
    expect(said.startswith("silenced as s-") and
           "kind=hot_expert_incast" in said and "node=gpu-001" in said,
           f"silence result {said!r}")


def check_dom(dom, failures):
    def expect(cond, what):
        if not cond:
            failures.append("page: " + what)

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
    expect(dom.by_id("fabric-scope")[1].get("hidden") is not None,
           "a lone collector's fabric said to be its agents' only")

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
    expect(dom.by_id("job-scope")[1].get("hidden") is not None,
           "a lone collector's job rates said to be its agents' only")
    expect(len(dom.find("tr", data_group="tp:0")) == 1, "no tp:0 group row")


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
        write_tokens(work)
        cluster.collector_args = [f"--auth_token_file={work}/tokens"]
        cluster.cli_args = [f"--token_file={work}/cli-token"]
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
