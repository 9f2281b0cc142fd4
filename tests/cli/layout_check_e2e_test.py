#!/usr/bin/env python3
"""`fabricdiag layout check` against the real system: a real
fabricdiag-collector, two real fabricdiag-agents streaming as gpu-000 and
gpu-001 from the checked-in fake sysfs tree (tests/fixtures/sysfs: NICs
hfi1_0, mlx4_0, mlx5_0), layouts applied with the real CLI.

usage: layout_check_e2e_test.py COLLECTOR AGENT CLI SOURCE_DIR

A layout with an FQDN host and a NIC no agent has: exit 3, both named with
the reported names that look alike (table and --json); the corrected
layout: exit 0; an unknown job: exit 3 (not found). `findings` with its
filters and history against the same collector: a layout's tp_cross_node
finding listed by job, node and window, still listed resolved after the
layout is deleted; every bad input exit 2 naming the field, over the CLI
and /api/v1/findings (400); a bad --findings_retention is exit 2. Bounded: every wait has a deadline.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

COLLECTOR = AGENT = CLI = SOURCE_DIR = None
NODES = ["gpu-000", "gpu-001"]


class LayoutCheckE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="layout-check-e2e-")
        cls.procs = []
        cls.grpc = cls.http = None
        log_path = os.path.join(cls.work, "collector.log")
        cls.spawn("collector", [
            COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
            f"--state_dir={cls.work}/state", "--analysis_interval=200ms"])
        deadline = time.time() + 30
        while time.time() < deadline and not cls.grpc:
            with open(log_path, "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if "gRPC on port" in line:
                        cls.grpc = int(line.split("gRPC on port")[1].split()[0]
                                       .rstrip(",;."))
                        cls.http = int(line.split("HTTP on port")[1].split()[0]
                                       .rstrip(",;."))
            time.sleep(0.05)
        if not cls.grpc:
            cls.tearDownClass()
            raise AssertionError("collector did not start")
        ethtool = os.path.join(cls.work, "ethtool")
        os.makedirs(ethtool)
        for node in NODES:
            cls.spawn(f"agent-{node}", [
                AGENT, f"--node={node}",
                f"--sysfs_root={SOURCE_DIR}/tests/fixtures/sysfs",
                f"--ethtool_dir={ethtool}", "--listen=127.0.0.1:0",
                "--interval=200ms", f"--collector=127.0.0.1:{cls.grpc}"])
        # Both agents reporting their NICs.
        deadline = time.time() + 30
        while True:
            nodes = json.loads(cls.cli_run("nodes", "--json").stdout or "[]")
            if sorted(n["node"] for n in nodes
                      if "mlx5_0" in (n.get("rdma_devices") or [])) == NODES:
                break
            if time.time() > deadline:
                cls.tearDownClass()
                raise AssertionError(f"agents did not report: {nodes}")
            time.sleep(0.1)

    @classmethod
    def spawn(cls, name, argv):
        log = open(os.path.join(cls.work, f"{name}.log"), "wb")
        cls.procs.append((subprocess.Popen(argv, stdout=log,
                                           stderr=subprocess.STDOUT), log))

    @classmethod
    def tearDownClass(cls):
        for p, log in reversed(cls.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def cli_run(cls, *args):
        return subprocess.run([CLI, f"--collector=127.0.0.1:{cls.grpc}",
                               *args], capture_output=True, text=True,
                              timeout=30)

    def apply(self, job, hosts, rails):
        path = os.path.join(self.work, f"{job}.json")
        with open(path, "w") as f:
            json.dump({"job": job, "gpus_per_node": 2,
                       "parallelism": {"tp": 2, "pp": 1, "dp": len(hosts)},
                       "hosts": hosts, "rails": rails}, f)
        r = self.cli_run("layout", "apply", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_unmatched_names_with_look_alikes(self):
        r = self.apply("typo", ["gpu-000.example.com", "gpu-001"],
                       ["mlx5_0", "mlx5_1"])
        # The collector warned at apply already.
        self.assertIn("warning:", r.stderr)
        r = self.cli_run("layout", "check", "typo")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("layout typo: 1 of 2 hosts and 1 of 4 NICs are "
                      "reported by no agent", r.stdout)
        rows = {l.split()[1]: l for l in r.stdout.splitlines()[2:]}
        self.assertTrue(rows["gpu-000.example.com"].startswith("host"))
        self.assertTrue(rows["gpu-000.example.com"].rstrip().endswith(
            "gpu-000, gpu-001"), rows)
        self.assertIn("gpu-001", rows["mlx5_1"])
        self.assertTrue(rows["mlx5_1"].rstrip().endswith("mlx5_0, mlx4_0"),
                        rows)

        r = self.cli_run("layout", "check", "typo", "--json")
        self.assertEqual(r.returncode, 3, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["reporting_nodes"], 2)
        self.assertEqual([(u["kind"], u["host"], u["nic"], u["looks_like"])
                          for u in j["unmatched"]],
                         [("host", "gpu-000.example.com", None,
                           ["gpu-000", "gpu-001"]),
                          ("nic", "gpu-001", "mlx5_1", ["mlx5_0", "mlx4_0"])])

    def test_corrected_layout_is_clean(self):
        self.apply("fixed", ["gpu-000", "gpu-001"], ["mlx5_0", "mlx4_0"])
        r = self.cli_run("layout", "check", "fixed")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "layout fixed: every host (2) and NIC (4) "
                                   "is reported by an agent\n"
                                   "layout fixed: 4 of 4 ranks have a known "
                                   "NIC (0 declared in ranks, 4 from rails, "
                                   "0 paired by the agent)\n")

    def test_unknown_job(self):
        for command in ("check", "show"):
            r = self.cli_run("layout", command, "nope")
            self.assertEqual(r.returncode, 3, command)
            self.assertIn("not found", r.stderr)
        # Deleting what is not there: what was asked for holds.
        r = self.cli_run("layout", "delete", "nope")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "fabricdiag: layout nope was not declared; "
                                   "nothing to delete\n")

    def test_collector_refuses_a_bad_retention(self):
        for value in ("abc", "0d", "-1h"):
            r = subprocess.run(
                [COLLECTOR, f"--findings_retention={value}",
                 f"--state_dir={self.work}/unused", "--listen=127.0.0.1:0",
                 "--http_listen=127.0.0.1:0"],
                capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--findings_retention: ", r.stderr)

    def findings(self, *args):
        r = self.cli_run("findings", "--json", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [(f["kind"], f["state"]) for f in json.loads(r.stdout)]

    def api(self, query):
        url = f"http://127.0.0.1:{self.http}/api/v1/findings?{query}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_findings_filters_and_history(self):
        # One GPU per node and tp=2: each TP group crosses nodes.
        path = os.path.join(self.work, "crossing.json")
        with open(path, "w") as f:
            json.dump({"job": "crossing", "gpus_per_node": 1,
                       "parallelism": {"tp": 2, "pp": 1, "dp": 1},
                       "hosts": NODES, "rails": ["mlx5_0"]}, f)
        r = self.cli_run("layout", "apply", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        crossing = [("tp_cross_node", "active")]
        self.assertEqual(self.findings("--job=crossing"), crossing)
        self.assertEqual(self.findings("--job=crossing", "--node=gpu-001",
                                       "--severity=info", "--since=1h"),
                         crossing)
        self.assertEqual(self.findings("--job=crossing", "--node=gpu-009"), [])
        self.assertEqual(self.findings("--job=crossing", "--until=1h"), [])

        bad = {("--kind=pfc_strom",): "--kind: unknown finding kind "
                                      "\"pfc_strom\"; known kinds: agent_down",
               ("--job=typo",): "known jobs: crossing",
               ("--since=yesterday",): "--since: \"yesterday\" is neither",
               ("--since=1h", "--until=2h"): "--until: 2h (",
               ("--severity=loud",): "--severity: unknown severity"}
        for args, message in bad.items():
            r = self.cli_run("findings", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr)
            self.assertEqual(r.stdout, "")

        status, body = self.api("job=crossing&node=gpu-000&since=2h")
        self.assertEqual(status, 200, body)
        self.assertEqual([f["kind"] for f in body["active"]],
                         ["tp_cross_node"])
        for query, field in (("kind=pfc_strom", "kind: "),
                             ("job=typo", "job: "), ("since=2x", "since: "),
                             ("page_token=garbage", "page_token: "),
                             ("severity=loud", "severity: ")):
            status, body = self.api(query)
            self.assertEqual(status, 400, query)
            self.assertTrue(body["error"].startswith(field), body)

        # Deleted: the finding resolves, and the window still lists it (the
        # job stays known through it).
        r = self.cli_run("layout", "delete", "crossing")
        self.assertEqual(r.returncode, 0, r.stderr)
        deadline = time.time() + 10
        while self.findings("--job=crossing") and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.findings("--job=crossing"), [])
        self.assertEqual(self.findings("--job=crossing", "--since=10m"),
                         [("tp_cross_node", "resolved")])
        r = self.cli_run("findings", "--job=crossing", "--since=10m")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resolved  tp_cross_node", r.stdout)


if __name__ == "__main__":
    COLLECTOR, AGENT, CLI, SOURCE_DIR = sys.argv[1:5]
    unittest.main(argv=sys.argv[:1], verbosity=2)
