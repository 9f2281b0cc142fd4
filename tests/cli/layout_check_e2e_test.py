#!/usr/bin/env python3
"""`fabricdiag layout check` against the real system: a real
fabricdiag-collector, two real fabricdiag-agents streaming as gpu-000 and
gpu-001 from the checked-in fake sysfs tree (tests/fixtures/sysfs: NICs
hfi1_0, mlx4_0, mlx5_0), layouts applied with the real CLI.

usage: layout_check_e2e_test.py COLLECTOR AGENT CLI SOURCE_DIR

A layout with an FQDN host and a NIC no agent has: exit 3, both named with
the reported names that look alike (table and --json); the corrected
layout: exit 0; an unknown job: exit 1. Bounded: every wait has a deadline.
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

COLLECTOR = AGENT = CLI = SOURCE_DIR = None
NODES = ["gpu-000", "gpu-001"]


class LayoutCheckE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="layout-check-e2e-")
        cls.procs = []
        cls.grpc = None
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
        r = self.cli_run("layout", "check", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("not found", r.stderr)


if __name__ == "__main__":
    COLLECTOR, AGENT, CLI, SOURCE_DIR = sys.argv[1:5]
    unittest.main(argv=sys.argv[:1], verbosity=2)
