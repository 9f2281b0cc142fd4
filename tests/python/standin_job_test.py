"""Tests of python/examples/standin_job.py (the demo's training job) against
the strict fake collector: the explicit ranks it declares, the lease it
renews, a normal stop that deletes the layout, SIGKILL that leaves it to
expire, and bad arguments. Hermetic; run: python3 tests/python/standin_job_test.py
"""

import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from fake_collector import FakeCollector, refused_url  # noqa: E402

JOB = os.path.join(REPO, "python", "examples", "standin_job.py")
RAILS = ",".join("mlx5_%d" % i for i in range(8))


def start(url, *args, lease="3"):
    env = dict(os.environ, FABRICDIAG_COLLECTOR=url, FABRICDIAG_LEASE=lease,
               FABRICDIAG_TIMEOUT="1")
    return subprocess.Popen([sys.executable, JOB] + list(args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class StandinJobTest(unittest.TestCase):
    def test_declares_explicit_ranks_renews_and_deletes_on_sigterm(self):
        with FakeCollector() as fc:
            p = start(fc.url, "--job", "moe-x", "--hosts", "gpu-001,gpu-000", "--tp", "8",
                      "--ep", "2", "--rails", RAILS, "--model",
                      '{"experts": 16, "top_k": 2}')
            try:
                self.assertEqual(p.stdout.readline().strip(), "declared moe-x revision 1")
                body = fc.layout("moe-x")
                self.assertEqual(body["source"], "python")
                self.assertEqual(body["lease_seconds"], 3)
                self.assertEqual(body["hosts"], ["gpu-001", "gpu-000"])
                self.assertEqual(len(body["ranks"]), 16)
                # Node rank order, not name order: rank 8 is on gpu-000.
                self.assertEqual(body["ranks"][9], {"rank": 9, "host": "gpu-000", "gpu": 1,
                                                    "nic": "mlx5_1"})
                self.assertEqual(body["model"]["experts"], 16)
                # A 3 s lease is renewed every second: it outlives its lease.
                self.assertTrue(fc.wait_for(lambda: len(fc.requests("POST")) >= 4, 10))
                self.assertIsNotNone(fc.layout("moe-x"))
                p.send_signal(signal.SIGTERM)
                self.assertEqual(p.wait(10), 0)
                self.assertEqual(len(fc.requests("DELETE")), 1)
                self.assertIsNone(fc.layout("moe-x"))
            finally:
                p.kill()
                p.wait()
                p.stdout.close()
                p.stderr.close()

    def test_sigkill_leaves_the_layout_to_expire_with_its_lease(self):
        with FakeCollector() as fc:
            p = start(fc.url, "--job", "moe-k", "--hosts", "gpu-000", "--tp", "8")
            try:
                self.assertEqual(p.stdout.readline().strip(), "declared moe-k revision 1")
                killed = time.monotonic()
                p.kill()
                p.wait()
                self.assertIsNotNone(fc.layout("moe-k"))
                self.assertTrue(fc.wait_for(lambda: fc.layout("moe-k") is None, 10))
                # Gone within its lease of the kill, and nobody deleted it.
                self.assertLess(time.monotonic() - killed, 3.5)
                self.assertEqual(fc.requests("DELETE"), [])
            finally:
                p.stdout.close()
                p.stderr.close()

    def test_bad_input_and_an_unreachable_collector(self):
        for args, code, message in [
                (["--job", "x", "--hosts", "gpu-000", "--tp", "3"], 2, "tp"),
                (["--job", "x", "--hosts", "gpu-000", "--rails", "mlx5_0"], 2, "rails"),
                (["--job", "x", "--hosts", "gpu-000", "--model", "{"], 2, "standin_job"),
                (["--job", "bad job", "--hosts", "gpu-000"], 2, "job")]:
            p = start("http://127.0.0.1:1", *args)
            out, err = p.communicate(timeout=20)
            self.assertEqual(p.returncode, code, (args, err))
            self.assertIn(message, err, args)
        p = start(refused_url(), "--job", "x", "--hosts", "gpu-000")
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 1, err)
        self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
