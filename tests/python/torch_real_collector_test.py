"""fabricdiag.torch.declare() in a real PyTorch job against the REAL
fabricdiag-collector (with a token), read back through its HTTP API and the
fabricdiag CLI:

- 16 gloo processes posing as 2 hosts of 8 GPUs, shuffled node ranks: while
  the job runs, the collector holds the exact rank -> host -> gpu (-> nic)
  map (`fabricdiag layout show JOB --json`), source `python`, the owner, an
  expiry that the renewals move forward; a normal exit deletes it;
- after SIGKILL of every process the layout disappears with its lease.

    torch_real_collector_test.py COLLECTOR CLI

The faults a real collector cannot be made to show (no answer, 503, the
count of renewals) stay in torch_declare_test.py and fabricdiag_unit_test.py
with the fakes. Every wait has a deadline; the collector and the job's
process group are killed on the way out, also on failure. Needs torch for
the interpreter running it (/usr/bin/python3 with python3-torch).
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
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from torch_declare_test import JOB, TorchJob, expected_ranks  # noqa: E402

COLLECTOR = CLI = None
TOKEN = "torch-real-token-0123456789"
LEASE = 3  # the module's minimum is 2, the collector's 1


class RealCollector:
    """fabricdiag-collector on free loopback ports, state in a temp dir."""

    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="fabricdiag-torch-real-")
        self.token_file = os.path.join(self.work, "token")
        with open(self.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(self.token_file, 0o600)
        self.log_path = os.path.join(self.work, "collector.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
             "--state_dir=" + os.path.join(self.work, "state"),
             "--auth_token_file=" + self.token_file, "--analysis_interval=500ms"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.grpc = self.http = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (self.grpc and self.http):
            with open(self.log_path, "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if "gRPC on port" in line and "HTTP on port" in line:
                        self.grpc = int(line.split("gRPC on port")[1].split()[0].rstrip(",;."))
                        self.http = int(line.split("HTTP on port")[1].split()[0].rstrip(",;."))
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not (self.grpc and self.http):
            tail = self.tail()
            self.close()
            raise AssertionError("the collector did not start:\n" + tail)
        self.url = "http://127.0.0.1:%d" % self.http

    def tail(self):
        with open(self.log_path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-20:]).decode(errors="replace")

    def get(self, path):
        """(status, JSON) of a GET (reads need the token too)."""
        req = urllib.request.Request(self.url + path,
                                     headers={"Authorization": "Bearer " + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            body = e.read()
            return e.code, json.loads(body) if body else None

    def listed(self):
        status, body = self.get("/api/v1/jobs")
        assert status == 200, (status, body)
        return {j["job"]: j for j in body["jobs"]}

    def cli(self, *args):
        r = subprocess.run([CLI, "--collector=127.0.0.1:%d" % self.grpc,
                            "--token_file=" + self.token_file] + list(args),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


def wait_for(fn, timeout):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


class TorchRealCollectorTest(unittest.TestCase):
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

    def setUp(self):
        self.c = RealCollector()
        self.addCleanup(self.c.close)

    def job(self, *extra):
        j = TorchJob(self.c.url, *extra, lease=LEASE, token_file=self.c.token_file)
        self.addCleanup(j.close)
        return j

    def declared(self, j):
        """Waits until the job's layout is on the collector; its list entry."""
        ok = wait_for(lambda: JOB in self.c.listed() or j.proc.poll() is not None, 90)
        self.assertTrue(ok and JOB in self.c.listed(),
                        "not declared:\n" + j.output() + "\n" + self.c.tail())
        return self.c.listed()[JOB]

    def test_layout_on_the_collector_while_running_deleted_at_exit(self):
        stop = os.path.join(self.c.work, "stop")
        j = self.job("--until", stop)
        entry = self.declared(j)
        self.assertEqual(entry["source"], "python", entry)
        self.assertTrue(entry["owner"], entry)
        self.assertEqual((entry["ranks"], entry["hosts"]), (16, 2), entry)
        self.assertEqual(entry["parallelism"], "tp=2 pp=2 dp=4 ep=2", entry)
        self.assertIsNotNone(entry["expires"], entry)
        shown = json.loads(self.c.cli("layout", "show", JOB, "--json"))
        # The collector's form writes a rank without a NIC as "nic": "".
        ranks = [{k: v for k, v in r.items() if not (k == "nic" and v == "")}
                 for r in shown["ranks"]]
        self.assertEqual(ranks, expected_ranks())
        self.assertEqual(shown["hosts"], ["gpu-b", "gpu-a"])
        self.assertEqual(shown["gpus_per_node"], 8)
        self.assertEqual(shown["parallelism"], {"tp": 2, "pp": 2, "dp": 4, "cp": 1, "ep": 2})
        status, view = self.c.get("/api/v1/jobs/" + JOB)
        self.assertEqual(status, 200, view)
        self.assertEqual((view["ranks"], view["hosts"]), (16, 2), view)
        # Renewals every LEASE / 3 s move the expiry (RFC 3339, whole
        # seconds) past the first one.
        first = entry["expires"]
        self.assertTrue(wait_for(lambda: self.c.listed().get(JOB, {}).get("expires", "") > first,
                                 LEASE + 5), "the expiry did not move: renewals refused?\n"
                        + j.output())
        open(stop, "w").close()
        rc = j.wait(60)
        self.assertEqual(rc, 0, j.output())
        # Deleted by the normal exit, not expired: gone at once.
        self.assertNotIn(JOB, self.c.listed())
        status, _ = self.c.get("/api/v1/jobs/" + JOB)
        self.assertEqual(status, 404)
        self.assertNotIn("refused", j.output())
        r0 = j.results()[0]
        self.assertGreaterEqual(r0["renewals"], 1, r0)
        print("\nreal collector: declare() on rank 0 %.3f s, %d renewals"
              % (r0["declare_seconds"], r0["renewals"]), file=sys.stderr)

    def test_sigkill_layout_expires_with_its_lease(self):
        j = self.job("--hang")
        self.declared(j)
        j.kill()
        killed = time.monotonic()
        self.assertTrue(wait_for(lambda: JOB not in self.c.listed(), LEASE + 10),
                        "the layout outlived its lease by 10 s:\n" + self.c.tail())
        gone = time.monotonic() - killed
        print("\nreal collector: layout gone %.1f s after SIGKILL (lease %d s)"
              % (gone, LEASE), file=sys.stderr)
        status, _ = self.c.get("/api/v1/jobs/" + JOB)
        self.assertEqual(status, 404)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: torch_real_collector_test.py COLLECTOR CLI")
    COLLECTOR, CLI = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
