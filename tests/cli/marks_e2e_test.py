#!/usr/bin/env python3
"""ack, silence, silences, silence expire and nodes forget through the real
CLI against a real embedded fabricdiag-collector and one real
fabricdiag-agent (gpu-000, on the checked-in fake sysfs tree).

usage: marks_e2e_test.py COLLECTOR AGENT CLI SOURCE_DIR

A layout whose TP group spans two hosts raises tp_cross_node at once. A
silence on it marks it (findings --json, /metrics silenced="true"); an ack
too; bad input is exit 2, an unknown id exit 3. `report` of the job shows
the finding with both marks and its advice in Markdown and JSON, and its
HTML renders in headless Chromium with no network; an unknown job is exit
3; with the agent reporting, its per-group rates (read with GetSeries). The marks survive a restart
of the collector on its --state_dir. The agent killed, its agent_down opens;
`nodes forget` resolves it, `nodes` no longer lists the node and /metrics
holds neither its agent series nor its facts; restarted, the agent brings
it back whole. The HTTP API writes and ends the same marks
(/api/v1/silences, /api/v1/findings/ID/ack). Bounded: every wait has a
deadline.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

COLLECTOR = AGENT = CLI = SOURCE_DIR = None
# gpu-000's agent series and its node facts on /metrics.
AGENT_UP = re.compile(r'\nfabricdiag_agent_up\{node="gpu-000"\} ')
FACTS_HELD = re.compile(r"\nfabricdiag_node_facts_nodes 1\n")


def wait_for(what, check, timeout=20):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class MarksE2E(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="marks-e2e-")
        self.procs = {}
        self.ethtool = os.path.join(self.work, "ethtool")
        os.makedirs(self.ethtool)

    def tearDown(self):
        for name in list(self.procs):
            self.stop(name)
        shutil.rmtree(self.work, ignore_errors=True)

    def spawn(self, name, argv):
        log = open(os.path.join(self.work, f"{name}.log"), "wb")
        self.procs[name] = (subprocess.Popen(argv, stdout=log,
                                             stderr=subprocess.STDOUT), log)

    def stop(self, name, sig=signal.SIGTERM):
        p, log = self.procs.pop(name)
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()

    def start_collector(self):
        log_path = os.path.join(self.work, "collector.log")
        if os.path.exists(log_path):
            os.remove(log_path)
        self.spawn("collector", [
            COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
            f"--state_dir={self.work}/state", "--analysis_interval=200ms"])

        def ports():
            with open(log_path, "rb") as f:
                m = re.search(rb"gRPC on port (\d+), HTTP on port (\d+)",
                              f.read())
            return m and (int(m.group(1)), int(m.group(2)))
        self.grpc, self.http = wait_for("the collector", ports)

    def start_agent(self):
        self.spawn("agent", [
            AGENT, "--node=gpu-000",
            f"--sysfs_root={SOURCE_DIR}/tests/fixtures/sysfs",
            f"--ethtool_dir={self.ethtool}", "--listen=127.0.0.1:0",
            "--interval=200ms", f"--collector=127.0.0.1:{self.grpc}"])

    def cli(self, *args):
        return subprocess.run([CLI, f"--collector=127.0.0.1:{self.grpc}",
                               *args], capture_output=True, text=True,
                              timeout=30, env={**os.environ, "USER": "alice"})

    def cli_json(self, *args):
        r = self.cli(*args, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def findings(self, kind):
        return [f for f in self.cli_json("findings") if f["kind"] == kind]

    def metrics(self):
        with urllib.request.urlopen(
                f"http://127.0.0.1:{self.http}/metrics", timeout=10) as r:
            return r.read().decode()

    def http_call(self, method, path, body=None):
        """(status, parsed JSON) of an HTTP request to the collector."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}",
                                     data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def check_marks_over_http(self, finding_id):
        """The HTTP API writes the CLI's marks: a silence listed by
        `silences`, ended by DELETE; bad input a 400 naming the field."""
        status, body = self.http_call(
            "POST", "/api/v1/silences",
            {"matchers": {"node": "gpu-001"}, "for": "2h",
             "comment": "maintenance", "who": "bob"})
        self.assertEqual(status, 201, body)
        sid = body["id"]
        listed = [s for s in self.cli_json("silences") if s["id"] == sid]
        self.assertEqual([(s["who"], s["comment"]) for s in listed],
                         [("bob", "maintenance")])
        status, body = self.http_call(
            "POST", "/api/v1/silences",
            {"matchers": {"rack": "r1"}, "for": "2h", "comment": "x"})
        self.assertEqual(status, 400, body)
        self.assertTrue(body["error"].startswith("matchers: unknown key"),
                        body)
        status, body = self.http_call("DELETE", f"/api/v1/silences/{sid}")
        self.assertEqual((status, body["expired"]), (200, True), body)
        status, body = self.http_call(
            "POST", f"/api/v1/findings/{finding_id}/ack",
            {"comment": "over http", "who": "bob"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["acked"]["comment"], "over http")
        status, body = self.http_call("POST", "/api/v1/findings/f-999999/ack")
        self.assertEqual(status, 404, body)

    def check_report(self, finding_id, silence_id):
        r = self.cli("report", "--job=cross")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# Report: job cross", r.stdout)
        self.assertIn("| Parallelism | tp=4 pp=1 dp=1 |", r.stdout)
        self.assertRegex(r.stdout, rf"\| {finding_id} \| tp\\_cross\\_node "
                         rf"\| .* \| active \| .* \| acked by alice; "
                         rf"silenced by {silence_id} \|")
        self.assertIn("Fix the layout", r.stdout)  # docs/findings.md
        report = json.loads(self.cli("report", "--job=cross",
                                     "--format=json").stdout)
        [finding] = report["findings"]
        self.assertEqual((finding["id"], finding["acked"]["who"]),
                         (finding_id, "alice"))
        self.assertEqual(report["silences"][0]["id"], silence_id)
        self.assertEqual(report["layout"]["hosts"], ["gpu-000", "gpu-001"])
        r = self.cli("report", "--job=crosss")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("known jobs: cross", r.stderr)

        html = os.path.join(self.work, "report.html")
        r = self.cli("report", "--job=cross", "--format=html",
                     f"--output={html}")
        self.assertEqual(r.returncode, 0, r.stderr)
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        self.assertIsNotNone(exe, "chromium is not installed "
                             "(scripts/install-deps.sh installs it)")
        # No name resolves and no proxy answers: the report must render
        # from the file alone.
        r = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", f"--user-data-dir={self.work}/chromium",
             "--host-resolver-rules=MAP * ~NOTFOUND",
             "--proxy-server=127.0.0.1:9", "--dump-dom", f"file://{html}"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn('<svg id="timeline"', r.stdout)
        self.assertIn(f'data-finding="{finding_id}"', r.stdout)
        self.assertIn(f'<section class="finding" id="{finding_id}">',
                      r.stdout)
        # No agent reports yet: the rates section says why it is empty.
        self.assertRegex(r.stdout, r'<p class="note" id="rates-note">No '
                         r'per-group rates: this collector holds no rates')

    def check_report_rates(self):
        """With gpu-000's agent reporting: the job's NICs' rates over gRPC
        (the fixture's counters stand still: 0 Gb/s)."""
        def rates():
            r = self.cli("report", "--job=cross", "--format=json")
            self.assertEqual(r.returncode, 0, r.stderr)
            report = json.loads(r.stdout)
            return report["group_rates"] and report
        report = wait_for("the report's rates", rates)
        group_rates = report["group_rates"]
        # gpu-000 mlx5_0 reports; the fixture has no mlx5_1, gpu-001 no agent.
        self.assertEqual((group_rates["nics"], group_rates["nics_reporting"]),
                         (4, 1))
        [tp] = group_rates["dimensions"]
        self.assertEqual((tp["dim"], tp["groups"], tp["far_off"]),
                         ("tp", 1, 0))
        self.assertEqual(tp["shown"][0]["group"], "tp:0")
        self.assertEqual(tp["shown"][0]["mean_gbps"], 0.0)
        self.assertIn("3 of the 4 NICs of the layout have no rate",
                      report["group_rates_note"])
        r = self.cli("report", "--job=cross")
        self.assertIn("### tp (1 groups, 0 far off)", r.stdout)
        self.assertIn("| tp:0 | 1/4 | 0.0 | 0.0 |", r.stdout)

    def test_marks_end_to_end(self):
        self.start_collector()
        layout = os.path.join(self.work, "cross.json")
        with open(layout, "w") as f:
            json.dump({"job": "cross", "gpus_per_node": 2,
                       "parallelism": {"tp": 4, "pp": 1, "dp": 1},
                       "hosts": ["gpu-000", "gpu-001"],
                       "rails": ["mlx5_0", "mlx5_1"]}, f)
        r = self.cli("layout", "apply", layout)
        self.assertEqual(r.returncode, 0, r.stderr)
        [cross] = wait_for("tp_cross_node",
                           lambda: self.findings("tp_cross_node"))
        self.assertNotIn("silenced_by", cross)

        # Bad input: exit 2 naming the field, nothing written.
        r = self.cli("silence", "--matcher=rack=r1", "--for=1h",
                     "--comment=x")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--matcher: unknown key \"rack\"", r.stderr)
        r = self.cli("silence", "--matcher=job=cross", "--for=40d",
                     "--comment=x")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--for: at most 30 days", r.stderr)

        r = self.cli("silence", "--matcher=kind=tp_cross_node,job=cross",
                     "--for=1h", "--comment=intended for this run")
        self.assertEqual(r.returncode, 0, r.stderr)
        sid = r.stdout.split()[1]
        [cross] = self.findings("tp_cross_node")
        self.assertEqual(cross["silenced_by"], [sid])
        self.assertIn('silenced="true"', self.metrics())
        [listed] = self.cli_json("silences")
        self.assertEqual((listed["id"], listed["who"], listed["expired"]),
                         (sid, "alice", False))

        r = self.cli("ack", cross["id"], "--comment=known")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(),
                         f"finding {cross['id']} acknowledged by alice")
        r = self.cli("ack", "f-999999")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.check_report(cross["id"], sid)
        r = self.cli("silence", "expire", "s-0000000000000000")
        self.assertEqual(r.returncode, 3, r.stderr)

        # Durable: the same marks after a restart on the state dir.
        self.stop("collector")
        self.start_collector()
        [again] = wait_for("tp_cross_node after the restart",
                           lambda: self.findings("tp_cross_node"))
        self.assertEqual(again["id"], cross["id"])
        self.assertEqual(again["silenced_by"], [sid])
        self.assertEqual((again["acked"]["who"], again["acked"]["comment"]),
                         ("alice", "known"))

        r = self.cli("silence", "expire", sid)
        self.assertEqual(r.returncode, 0, r.stderr)
        [listed] = self.cli_json("silences")
        self.assertTrue(listed["expired"])
        [cross] = self.findings("tp_cross_node")
        self.assertNotIn("silenced_by", cross)
        self.assertIn("acked", cross)
        self.check_marks_over_http(cross["id"])

        # Forget a node: its agent_down resolves, it is gone from `nodes`
        # until it reports again.
        r = self.cli("nodes", "forget", "gpu-404")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.start_agent()
        wait_for("gpu-000 up", lambda: [
            n for n in self.cli_json("nodes") if n["node"] == "gpu-000"
            and n["up"]])
        self.check_report_rates()
        wait_for("gpu-000's facts",
                 lambda: FACTS_HELD.search(self.metrics()))
        self.stop("agent", signal.SIGKILL)
        [down] = wait_for("agent_down", lambda: self.findings("agent_down"))
        r = self.cli("nodes", "forget", "gpu-000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"resolving {down['id']}", r.stdout)
        wait_for("agent_down resolved",
                 lambda: not self.findings("agent_down"))
        self.assertFalse([n for n in self.cli_json("nodes")
                          if n["node"] == "gpu-000"])
        # Its series and facts are gone too: no fabricdiag_agent_* series.
        metrics = self.metrics()
        self.assertNotRegex(metrics, AGENT_UP)
        self.assertIn("\nfabricdiag_node_facts_nodes 0\n", metrics)
        self.start_agent()
        wait_for("gpu-000 back", lambda: [
            n for n in self.cli_json("nodes") if n["node"] == "gpu-000"])
        # Whole again: its new stream sent its inventory.
        wait_for("gpu-000's facts back",
                 lambda: FACTS_HELD.search(self.metrics()))
        self.assertRegex(self.metrics(), AGENT_UP)


if __name__ == "__main__":
    COLLECTOR, AGENT, CLI, SOURCE_DIR = sys.argv[1:5]
    unittest.main(argv=sys.argv[:1], verbosity=2)
