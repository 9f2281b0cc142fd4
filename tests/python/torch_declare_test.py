"""fabricdiag.torch.declare() in a real PyTorch job (Debian's python3-torch,
CPU, gloo), 16 processes posing as 2 hosts of 8 GPUs, against the fake
collector:

- exactly one PUT with the exact rank -> host -> gpu (-> nic) map, also with
  shuffled node ranks; renewals arrive; the layout is deleted at exit;
- after SIGKILL of every process the renewals stop and the lease expires;
- with the collector down the job still completes with exit 0.

Prints the time spent in declare() and the lease thread's CPU. Needs torch
for the interpreter running it (/usr/bin/python3 with python3-torch);
without it the test fails with a message saying so.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "testing"))

from fake_collector import FakeCollector, refused_url  # noqa: E402
from ports import free_port  # noqa: E402

JOB = "slurm-777"
LEASE = 3  # renewals every second


def expected_ranks():
    out = []
    for r in range(16):
        node, local = divmod(r, 8)
        host = "gpu-b" if node == 0 else "gpu-a"
        gpu = 7 - local if node == 0 else local
        entry = {"rank": r, "host": host, "gpu": gpu}
        if local == 3:
            entry["nic"] = "mlx5_%d" % gpu
        out.append(entry)
    return out


class TorchJob:
    """torch_job.py in its own process group, killed with it on cleanup."""

    def __init__(self, collector_url, *extra, lease=LEASE, token_file=None):
        self.out = tempfile.mkdtemp(prefix="fabricdiag-torch-")
        env = dict(os.environ, FABRICDIAG_COLLECTOR=collector_url, FABRICDIAG_LEASE=str(lease),
                   FABRICDIAG_TIMEOUT="1", SLURM_JOB_ID="777", OMP_NUM_THREADS="1")
        env.pop("TORCHELASTIC_RUN_ID", None)
        env.pop("FABRICDIAG_TOKEN_FILE", None)
        if token_file:
            env["FABRICDIAG_TOKEN_FILE"] = token_file
        self.log = open(os.path.join(self.out, "job.log"), "w+")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "torch_job.py"), "--out", self.out,
             "--port", str(free_port())] + list(extra),
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def output(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def results(self):
        out = {}
        for path in glob.glob(os.path.join(self.out, "rank-*.json")):
            with open(path) as f:
                r = json.load(f)
            out[r["rank"]] = r
        return out

    def close(self):
        if self.proc.poll() is None:
            self.kill()
        self.log.close()
        shutil.rmtree(self.out, ignore_errors=True)


class TorchDeclareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import torch.distributed as dist
        except ImportError as e:
            raise AssertionError("this test needs PyTorch for %s (Debian: apt-get install "
                                 "python3-torch; scripts/install-deps.sh): %s"
                                 % (sys.executable, e))
        if not dist.is_available() or not dist.is_gloo_available():
            raise AssertionError("torch.distributed with gloo is not available")

    def job(self, url, *extra):
        j = TorchJob(url, *extra)
        self.addCleanup(j.close)
        return j

    def test_declares_renews_and_deletes(self):
        with FakeCollector() as fc:
            j = self.job(fc.url, "--seconds", "3.5")
            rc = j.wait(90)
            self.assertEqual(rc, 0, j.output())
            puts = fc.requests("PUT")
            self.assertEqual(len(puts), 1, [p.path for p in puts])
            body = puts[0].body
            self.assertEqual(puts[0].path, "/api/v1/jobs/" + JOB)
            self.assertEqual(body["ranks"], expected_ranks())
            self.assertEqual(body["hosts"], ["gpu-b", "gpu-a"])
            self.assertEqual(body["gpus_per_node"], 8)
            self.assertEqual(body["parallelism"], {"tp": 2, "pp": 2, "dp": 4, "cp": 1, "ep": 2})
            self.assertEqual(body["source"], "python")
            renewals = fc.requests("POST")
            self.assertGreaterEqual(len(renewals), 2, "renewals every %g s" % (LEASE / 3))
            deletes = fc.requests("DELETE")
            self.assertEqual(len(deletes), 1)
            self.assertIsNone(fc.layout(JOB))
            self.assertGreater(deletes[0].time, renewals[-1].time)
            results = j.results()
            self.assertEqual(sorted(results), list(range(16)))
            times = [r["declare_seconds"] for r in results.values()]
            r0 = results[0]
            print("\ndeclare(): rank 0 %.3f s (gather %.3f s, PUT %.3f s), all ranks max %.3f s; "
                  "lease thread CPU %.4f s for %d renewals over %d steps"
                  % (r0["declare_seconds"], r0["gather_seconds"],
                     r0["declare_seconds"] - r0["gather_seconds"], max(times),
                     r0["thread_cpu_seconds"], r0["renewals"], r0["steps"]), file=sys.stderr)
            self.assertLess(r0["declare_seconds"] - r0["gather_seconds"], 1.0 + 1.0 + 0.5)
            self.assertLess(r0["thread_cpu_seconds"], 0.5)

    def test_sigkill_stops_renewals_and_lease_expires(self):
        with FakeCollector() as fc:
            j = self.job(fc.url, "--hang")
            self.assertTrue(fc.wait_for(lambda: len(fc.requests("POST")) >= 1, 90), j.output())
            self.assertIsNotNone(fc.layout(JOB))
            j.kill()
            killed = time.monotonic()
            n = len(fc.requests("POST"))
            # The lease expires LEASE s after the last renewal; poll past it.
            self.assertTrue(fc.wait_for(lambda: fc.layout(JOB) is None, LEASE + 3))
            time.sleep(max(0.0, killed + 2 * LEASE / 3 - time.monotonic()))
            self.assertEqual(len(fc.requests("POST")), n, "renewals after SIGKILL")
            self.assertEqual(fc.requests("DELETE"), [])
            self.assertEqual(len(fc.requests("PUT")), 1)

    def test_collector_down_job_completes(self):
        j = self.job(refused_url(), "--seconds", "1")
        rc = j.wait(90)
        self.assertEqual(rc, 0, j.output())
        results = j.results()
        self.assertEqual(sorted(results), list(range(16)))
        r0 = results[0]
        print("\ncollector down: declare() on rank 0 %.3f s (gather %.3f s), job %.1f s"
              % (r0["declare_seconds"], r0["gather_seconds"], time.monotonic() - j.started),
              file=sys.stderr)
        # The gather is the job's own collective; after it declare() waits
        # at most FABRICDIAG_TIMEOUT + 1 s (here: until the refusal).
        self.assertLess(r0["declare_seconds"] - r0["gather_seconds"], 1.0 + 1.0 + 0.5)
        self.assertIn("unreachable", j.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
