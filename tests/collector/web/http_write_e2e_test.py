#!/usr/bin/env python3
"""Jobs declared over HTTP, end to end: the real fabricdiag-collector driven
with the real curl, read back with the real fabricdiag CLI.

usage: http_write_e2e_test.py COLLECTOR CLI

Covers the scoped tokens (a file of named tokens: none, a wrong one, one
without the scope the route needs, 401 and 403; the right one), every error through curl (bad JSON, a wrong field, a path/body job
mismatch, bad leases, a body over the bound, renewing a job that is gone),
delete twice, `fabricdiag layout list` showing source, owner and expiry,
a short lease running out: the layout goes and its tp_cross_node finding
resolves; and revision-aware writes, HTTP and CLI on one layout (If-Match
and If-None-Match: *, 412; `layout apply --if_revision`, exit 4; `layout
show` printing the revision). Bounded: every wait has a deadline.
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

COLLECTOR = CLI = None
TOKEN = "e2e-token-0123456789"  # admin: everything
READ_TOKEN = "e2e-read-0123456789"
DECLARE_TOKEN = "e2e-declare-0123456789"

# 16 ranks, TP groups of 16 over two 8-GPU hosts: tp_cross_node at apply.
CROSS = {"gpus_per_node": 8, "parallelism": {"tp": 16, "pp": 1, "dp": 1},
         "hosts": ["gpu-000", "gpu-001"]}
# 16 ranks on two hosts, TP inside each.
DENSE = {"gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1, "dp": 2},
         "hosts": ["gpu-000", "gpu-001"]}


class HttpWriteE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="http-write-e2e-")
        token_file = os.path.join(cls.work, "tokens")
        with open(token_file, "w") as f:
            f.write(f"# name scopes token\ne2e admin {TOKEN}\n"
                    f"reader read {READ_TOKEN}\n"
                    f"prolog declare {DECLARE_TOKEN}\n")
        os.chmod(token_file, 0o600)
        # The CLI's --token_file holds one token.
        with open(os.path.join(cls.work, "token"), "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(os.path.join(cls.work, "token"), 0o600)
        cls.log_path = os.path.join(cls.work, "collector.log")
        cls.log = open(cls.log_path, "wb")
        cls.proc = subprocess.Popen(
            [COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
             f"--state_dir={cls.work}/state",
             f"--auth_token_file={token_file}",
             "--analysis_interval=500ms"],
            stdout=cls.log, stderr=subprocess.STDOUT)
        cls.grpc = cls.http = None
        deadline = time.time() + 30
        while time.time() < deadline and not (cls.grpc and cls.http):
            with open(cls.log_path, "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if "gRPC on port" in line and "HTTP on port" in line:
                        cls.grpc = int(line.split("gRPC on port")[1].split()[0]
                                       .rstrip(",;."))
                        cls.http = int(line.split("HTTP on port")[1].split()[0]
                                       .rstrip(",;."))
            if cls.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not (cls.grpc and cls.http):
            cls.tearDownClass()
            raise AssertionError("collector did not start:\n" + cls.tail())

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            try:
                cls.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                cls.proc.kill()
                cls.proc.wait()
        cls.log.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def tail(cls):
        with open(cls.log_path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-20:]).decode(
                errors="replace")

    def curl(self, method, path, body=None, token=TOKEN, data_file=None,
             extra=()):
        """Returns (status, parsed JSON body, headers text)."""
        headers = os.path.join(self.work, "headers")
        argv = ["curl", "-sS", "--max-time", "20", "-X", method,
                "-D", headers, "-o", "-",
                f"http://127.0.0.1:{self.http}{path}"]
        for header in extra:
            argv += ["-H", header]
        if token is not None:
            argv += ["-H", f"Authorization: Bearer {token}"]
        if body is not None:
            argv += ["-H", "Content-Type: application/json",
                     "--data-binary", body if isinstance(body, str)
                     else json.dumps(body)]
        if data_file is not None:
            argv += ["-H", "Content-Type: application/json",
                     "--data-binary", "@" + data_file]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(headers) as f:
            head = f.read()
        # The final response (after a possible 100 Continue).
        status = int(head.strip().split("\r\n\r\n")[-1].split()[1])
        try:
            body = json.loads(r.stdout) if r.stdout else None
        except json.JSONDecodeError:
            body = r.stdout  # the server's own refusals (413) are text
        return status, body, head

    def cli(self, *args):
        r = subprocess.run([CLI, f"--collector=127.0.0.1:{self.grpc}",
                            "--token_file=" + os.path.join(self.work, "token"),
                            *args],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def cli_rc(self, *args):
        """Returns (exit status, stdout, stderr)."""
        r = subprocess.run([CLI, f"--collector=127.0.0.1:{self.grpc}",
                            "--token_file=" + os.path.join(self.work, "token"),
                            *args], capture_output=True, text=True, timeout=30)
        return r.returncode, r.stdout, r.stderr

    def test_revision_aware_writes_over_http_and_the_cli(self):
        status, body, head = self.curl("PUT", "/api/v1/jobs/rev", DENSE,
                                       extra=["If-None-Match: *"])
        self.assertEqual(status, 201, body)
        first = body["revision"]
        self.assertGreater(first, 0)
        self.assertIn(f'ETag: "{first}"', head)
        status, body, _ = self.curl("PUT", "/api/v1/jobs/rev", DENSE,
                                    extra=["If-None-Match: *"])
        self.assertEqual(status, 412, body)
        self.assertIn(f"at revision {first}", body["error"])

        shown = json.loads(self.cli("layout", "show", "rev", "--json"))
        self.assertEqual(shown["revision"], first)
        self.assertIn(f"revision: {first}", self.cli("layout", "show", "rev"))

        layout = os.path.join(self.work, "rev.json")
        with open(layout, "w") as f:
            json.dump(dict(DENSE, job="rev"), f)
        rc, out, err = self.cli_rc("layout", "apply", layout,
                                   f"--if_revision={first}")
        self.assertEqual(rc, 0, out + err)
        second = json.loads(self.cli("layout", "show", "rev",
                                     "--json"))["revision"]
        self.assertGreater(second, first)
        self.assertIn(f"revision {second}", out)
        # The CLI's stale copy: exit 4, nothing written.
        for stale in (first, 0):
            rc, out, err = self.cli_rc("layout", "apply", layout,
                                       f"--if_revision={stale}")
            self.assertEqual(rc, 4, out + err)
            self.assertIn(f"at revision {second}", err)
        rc, out, err = self.cli_rc("layout", "apply", layout,
                                   "--if_revision=soon")
        self.assertEqual(rc, 2, out + err)
        # HTTP's stale copy: 412; the current one writes.
        status, body, _ = self.curl("PUT", "/api/v1/jobs/rev", DENSE,
                                    extra=[f'If-Match: "{first}"'])
        self.assertEqual(status, 412, body)
        status, body, _ = self.curl("PUT", "/api/v1/jobs/rev", DENSE,
                                    extra=[f'If-Match: "{second}"'])
        self.assertEqual(status, 200, body)
        self.assertGreater(body["revision"], second)
        status, body, _ = self.curl("PUT", "/api/v1/jobs/rev", DENSE,
                                    extra=['If-Match: W/"1"'])
        self.assertEqual(status, 400, body)
        self.curl("DELETE", "/api/v1/jobs/rev")

    def listed(self):
        return {l["job"]: l for l in json.loads(self.cli("layout", "list",
                                                         "--json"))}

    def test_token_is_required(self):
        for token in (None, "wrong"):
            status, body, head = self.curl("PUT", "/api/v1/jobs/tok", DENSE,
                                           token=token)
            self.assertEqual(status, 401)
            self.assertIn("error", body)
            self.assertIn("WWW-Authenticate: Bearer", head)
        status, _, _ = self.curl("DELETE", "/api/v1/jobs/tok", token=None)
        self.assertEqual(status, 401)
        status, _, _ = self.curl("POST", "/api/v1/jobs/tok/renew", token=None)
        self.assertEqual(status, 401)
        self.assertNotIn("tok", self.listed())
        # Reads need a token too, with the read scope.
        status, body, head = self.curl("GET", "/api/v1/jobs", token=None)
        self.assertEqual(status, 401)
        self.assertIn("WWW-Authenticate: Bearer", head)
        status, body, _ = self.curl("GET", "/api/v1/jobs", token=READ_TOKEN)
        self.assertEqual(status, 200, body)
        # A token without the scope: 403 naming it.
        status, body, _ = self.curl("PUT", "/api/v1/jobs/tok", DENSE,
                                    token=READ_TOKEN)
        self.assertEqual(status, 403)
        self.assertEqual(body["scope"], "declare")
        self.assertIn('"reader"', body["error"])
        status, body, _ = self.curl("GET", "/api/v1/findings",
                                    token=DECLARE_TOKEN)
        self.assertEqual(status, 403)
        self.assertEqual(body["scope"], "read")
        # A scheduler's declare token declares and deletes.
        status, body, _ = self.curl("PUT", "/api/v1/jobs/tok", DENSE,
                                    token=DECLARE_TOKEN)
        self.assertEqual(status, 201, body)
        status, body, _ = self.curl("DELETE", "/api/v1/jobs/tok",
                                    token=DECLARE_TOKEN)
        self.assertEqual((status, body["deleted"]), (200, True))
        # The page's files, /metrics and /healthz stay public.
        for path in ("/", "/app.js", "/metrics", "/healthz"):
            status, _, _ = self.curl("GET", path, token=None)
            self.assertEqual(status, 200, path)

    @unittest.skipUnless(shutil.which("chromium"), "chromium is not installed")
    def test_page_asks_for_a_token(self):
        """The page, in headless Chromium with no token stored: its API
        reads answer 401, so it shows the login form instead of data."""
        profile = tempfile.mkdtemp(prefix="chromium.", dir=self.work)
        r = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", f"--user-data-dir={profile}",
             "--virtual-time-budget=3000", "--dump-dom",
             f"http://127.0.0.1:{self.http}/"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        form = re.search(r'<form id="login"[^>]*>', r.stdout)
        self.assertIsNotNone(form, r.stdout[:2000])
        self.assertNotIn("hidden", form.group(0))
        self.assertIn("needs a token with the read scope", r.stdout)
        self.assertRegex(r.stdout, r'id="status"[^>]*>sign in with a token<')
        self.assertRegex(r.stdout, r'<a id="logout"[^>]*hidden')

    def test_errors_through_curl(self):
        cases = [
            ("bad JSON", '{"gpus_per_node": 8,', 400, "body: not valid JSON"),
            ("wrong field", dict(DENSE, colour="red"), 400, "colour: "),
            ("float degree", dict(DENSE, parallelism={"tp": 8.5, "pp": 1,
                                                      "dp": 2}),
             400, "parallelism.tp: "),
            ("job mismatch", dict(DENSE, job="other"), 400,
             'job: "other" does not match'),
            ("lease 0", dict(DENSE, lease_seconds=0), 400, "lease_seconds: "),
            ("lease negative", dict(DENSE, lease_seconds=-3), 400,
             "lease_seconds: "),
            ("lease huge", dict(DENSE, lease_seconds=10**12), 400,
             "lease_seconds: "),
            ("lease not a number", dict(DENSE, lease_seconds="10m"), 400,
             "lease_seconds: "),
        ]
        for name, body, want_status, want_error in cases:
            status, answer, _ = self.curl("PUT", "/api/v1/jobs/bad", body)
            self.assertEqual(status, want_status, name)
            self.assertTrue(answer["error"].startswith(want_error),
                            f"{name}: {answer}")
        # Over the bound: refused before the body is read (curl waits for
        # 100 Continue on a body this large, and gets 413 instead).
        big = os.path.join(self.work, "big.json")
        with open(big, "w") as f:
            f.write('{"x": "' + "a" * (17 << 20) + '"}')
        status, answer, _ = self.curl("PUT", "/api/v1/jobs/bad",
                                      data_file=big)
        self.assertEqual(status, 413)
        self.assertIn("larger than", answer)
        status, answer, _ = self.curl("POST", "/api/v1/jobs/gone/renew")
        self.assertEqual(status, 404)
        self.assertIn("error", answer)
        self.assertNotIn("bad", self.listed())
        # The collector is still there.
        status, _, _ = self.curl("GET", "/api/v1/jobs")
        self.assertEqual(status, 200)

    def test_declare_list_renew_delete(self):
        status, body, _ = self.curl(
            "PUT", "/api/v1/jobs/dense",
            dict(DENSE, lease_seconds=600, source="python", owner="alice"))
        self.assertEqual(status, 201, body)
        self.assertEqual(body["job"], "dense")
        self.assertEqual(body["warnings"], [])
        listed = self.listed()["dense"]
        self.assertEqual(listed["source"], "python")
        self.assertEqual(listed["owner"], "alice")
        self.assertIn("expires", listed)
        table = self.cli("layout", "list")
        self.assertIn("SOURCE", table)
        self.assertIn("EXPIRES", table)
        row = [l for l in table.splitlines() if l.startswith("dense ")][0]
        self.assertIn("python", row)
        self.assertIn("alice", row)
        self.assertIn(listed["expires"], row)

        status, body, _ = self.curl("POST", "/api/v1/jobs/dense/renew",
                                    {"lease_seconds": 900})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["declaration"]["lease_seconds"], 900)
        self.assertGreater(body["declaration"]["expires"], listed["expires"])

        # Replaced, and the CLI's own apply records itself.
        status, body, _ = self.curl("PUT", "/api/v1/jobs/dense", DENSE)
        self.assertEqual(status, 200, body)
        layout = os.path.join(self.work, "dense.json")
        with open(layout, "w") as f:
            json.dump(dict(DENSE, job="dense"), f)
        self.cli("--token_file=" + os.path.join(self.work, "token"),
                 "layout", "apply", layout, "--lease=10m")
        listed = self.listed()["dense"]
        self.assertEqual(listed["source"], "cli")
        self.assertIn("expires", listed)

        status, body, _ = self.curl("DELETE", "/api/v1/jobs/dense")
        self.assertEqual((status, body["deleted"]), (200, True))
        status, body, _ = self.curl("DELETE", "/api/v1/jobs/dense")
        self.assertEqual((status, body["deleted"]), (200, False))
        self.assertNotIn("dense", self.listed())

    def test_short_lease_expires_and_findings_resolve(self):
        status, body, _ = self.curl("PUT", "/api/v1/jobs/short",
                                    dict(CROSS, lease_seconds=2))
        self.assertEqual(status, 201, body)
        _, findings, _ = self.curl("GET", "/api/v1/findings?job=short",
                                   token=READ_TOKEN)
        self.assertTrue(any(f["kind"] == "tp_cross_node"
                            for f in findings["active"]), findings)
        deadline = time.time() + 15
        while "short" in self.listed():
            self.assertLess(time.time(), deadline,
                            "the lease did not expire:\n" + self.tail())
            time.sleep(0.2)
        _, findings, _ = self.curl("GET", "/api/v1/findings?job=short",
                                   token=READ_TOKEN)
        self.assertEqual(findings["active"], [], findings)
        status, _, _ = self.curl("POST", "/api/v1/jobs/short/renew")
        self.assertEqual(status, 404)
        metrics = subprocess.run(
            ["curl", "-sS", "--max-time", "10",
             f"http://127.0.0.1:{self.http}/metrics"],
            capture_output=True, text=True, timeout=20).stdout
        expired = [l for l in metrics.splitlines()
                   if l.startswith("fabricdiag_layouts_expired_total ")]
        self.assertEqual(len(expired), 1, metrics[-2000:])
        self.assertGreaterEqual(float(expired[0].split()[1]), 1)


if __name__ == "__main__":
    COLLECTOR, CLI = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
