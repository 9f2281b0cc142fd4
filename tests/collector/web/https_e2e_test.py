#!/usr/bin/env python3
"""The collector's HTTP port over TLS, end to end: the real
fabricdiag-collector with --http_tls_cert/--http_tls_key and a token,
certificates made here with the openssl command, driven by the real curl
(--cacert), by the Python module's client (FABRICDIAG_COLLECTOR=https://...,
FABRICDIAG_CA_FILE) and by the Slurm prolog script (with a fake scontrol).

usage: https_e2e_test.py COLLECTOR SOURCE_DIR

Also: plain HTTP to the TLS port fails cleanly and the port keeps serving;
a client that does not trust the CA fails; the startup errors (one flag
without the other, an unreadable file, a key of another certificate) name
the flag or file and the collector exits non-zero; --help lists the flags.
Bounded: every wait has a deadline.
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

COLLECTOR = SOURCE_DIR = None
TOKEN = "https-e2e-token-0123456789"
DENSE = {"gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1, "dp": 2},
         "hosts": ["gpu-000", "gpu-001"]}


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True,
                   timeout=30)


def make_pki(d, name):
    """A CA and a server certificate for 127.0.0.1 signed by it, under d."""
    ca, ca_key = f"{d}/{name}-ca.pem", f"{d}/{name}-ca-key.pem"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key,
            "-subj", f"/CN={name} CA", "-days", "2", "-out", ca)
    key, csr, cert = (f"{d}/{name}-key.pem", f"{d}/{name}.csr",
                      f"{d}/{name}.pem")
    ext = f"{d}/{name}.ext"
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
            "-subj", "/CN=localhost", "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert)
    return ca, cert, key


class HttpsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="https-e2e-")
        cls.token_file = os.path.join(cls.work, "token")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(cls.token_file, 0o600)
        cls.ca, cls.cert, cls.key = make_pki(cls.work, "a")
        cls.other_ca, _, cls.other_key = make_pki(cls.work, "b")
        cls.log_path = os.path.join(cls.work, "collector.log")
        cls.log = open(cls.log_path, "wb")
        cls.proc = subprocess.Popen(
            [COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
             f"--state_dir={cls.work}/state",
             f"--auth_token_file={cls.token_file}",
             f"--http_tls_cert={cls.cert}", f"--http_tls_key={cls.key}",
             "--analysis_interval=500ms"],
            stdout=cls.log, stderr=subprocess.STDOUT)
        cls.http = None
        cls.started_line = ""
        deadline = time.time() + 30
        while time.time() < deadline and not cls.http:
            with open(cls.log_path, "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if "HTTP on port" in line:
                        cls.started_line = line
                        cls.http = int(line.split("HTTP on port")[1].split()[0]
                                       .rstrip(",;."))
            if cls.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not cls.http:
            cls.tearDownClass()
            raise AssertionError("collector did not start:\n" + cls.tail())
        cls.url = f"https://127.0.0.1:{cls.http}"

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

    def curl(self, method, path, body=None, token=TOKEN, ca=None,
             scheme="https"):
        """Returns (curl exit code, HTTP status, body text)."""
        argv = ["curl", "-sS", "--max-time", "20", "-X", method,
                "-o", "-", "-w", "\n%{http_code}",
                "--cacert", ca or self.ca,
                f"{scheme}://127.0.0.1:{self.http}{path}"]
        if token is not None:
            argv += ["-H", f"Authorization: Bearer {token}"]
        if body is not None:
            argv += ["-H", "Content-Type: application/json",
                     "--data-binary", json.dumps(body)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        text, _, code = r.stdout.rpartition("\n")
        return r.returncode, int(code or 0), text

    def jobs(self):
        rc, status, text = self.curl("GET", "/api/v1/jobs")
        self.assertEqual((rc, status), (0, 200), text)
        return {j["job"]: j for j in json.loads(text)["jobs"]}

    def test_log_says_tls(self):
        self.assertIn("(TLS)", self.started_line)

    def test_put_renew_delete_over_https_with_the_token(self):
        rc, status, text = self.curl("PUT", "/api/v1/jobs/tls-job",
                                     dict(DENSE, lease_seconds=600))
        self.assertEqual((rc, status), (0, 201), text)
        self.assertEqual(json.loads(text)["job"], "tls-job")
        self.assertIn("tls-job", self.jobs())
        rc, status, _ = self.curl("PUT", "/api/v1/jobs/tls-job", DENSE,
                                  token=None)
        self.assertEqual((rc, status), (0, 401))
        rc, status, _ = self.curl("POST", "/api/v1/jobs/tls-job/renew")
        self.assertEqual((rc, status), (0, 200))
        rc, status, text = self.curl("DELETE", "/api/v1/jobs/tls-job")
        self.assertEqual((rc, status), (0, 200), text)
        self.assertNotIn("tls-job", self.jobs())

    def test_page_metrics_and_healthz_over_https(self):
        rc, status, text = self.curl("GET", "/", token=None)
        self.assertEqual((rc, status), (0, 200))
        self.assertIn("<html", text.lower())
        rc, status, text = self.curl("GET", "/metrics", token=None)
        self.assertEqual((rc, status), (0, 200))
        self.assertIn("fabricdiag_http_requests_total", text)
        rc, status, text = self.curl("GET", "/healthz", token=None)
        self.assertEqual((rc, status), (0, 200), text)

    def test_plain_http_to_the_tls_port_fails_cleanly(self):
        rc, status, text = self.curl("GET", "/metrics", token=None,
                                     scheme="http")
        # 52: empty reply, 56: connection reset: never an answer in clear.
        self.assertIn(rc, (52, 56), text)
        self.assertNotIn("fabricdiag_", text)
        rc, status, _ = self.curl("GET", "/healthz", token=None)
        self.assertEqual((rc, status), (0, 200))
        self.assertIsNone(self.proc.poll())

    def test_a_client_that_does_not_trust_the_ca_fails(self):
        rc, _, _ = self.curl("GET", "/healthz", token=None, ca=self.other_ca)
        self.assertEqual(rc, 60)  # peer certificate cannot be authenticated

    def test_python_client_declares_over_https(self):
        code = (
            "import json, sys\n"
            "from fabricdiag import client\n"
            "c = client.Client(client.Config.from_env())\n"
            "r = c.put_layout('py-tls', json.loads(sys.argv[1]))\n"
            "print(r.status)\n")
        env = dict(os.environ,
                   PYTHONPATH=os.path.join(SOURCE_DIR, "python"),
                   FABRICDIAG_COLLECTOR=self.url,
                   FABRICDIAG_CA_FILE=self.ca,
                   FABRICDIAG_TOKEN_FILE=self.token_file)
        r = subprocess.run([sys.executable, "-c", code,
                            json.dumps(dict(DENSE, lease_seconds=60))],
                           env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.stdout.strip(), "201", r.stderr)
        self.assertIn("py-tls", self.jobs())
        # Without the CA the system's CAs do not trust this collector: the
        # module logs it and declares nothing, it does not raise.
        env.pop("FABRICDIAG_CA_FILE")
        code = code.replace("py-tls", "py-untrusted").replace(
            "print(r.status)", "print('unreachable')")
        code = code.replace(
            "r = c.put_layout", "try:\n  r = c.put_layout").replace(
            "print('unreachable')",
            "except client.Unreachable:\n  print('unreachable')")
        r = subprocess.run([sys.executable, "-c", code,
                            json.dumps(dict(DENSE, lease_seconds=60))],
                           env=env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.stdout.strip(), "unreachable", r.stderr)
        self.assertNotIn("py-untrusted", self.jobs())

    def test_slurm_prolog_declares_over_https(self):
        d = os.path.join(self.work, "slurm")
        os.makedirs(d, exist_ok=True)
        scontrol = os.path.join(d, "scontrol")
        with open(scontrol, "w") as f:
            f.write("#!/bin/sh\n"
                    "case \"$1 $2\" in\n"
                    "  'show hostnames') printf 'gpu-000\\ngpu-001\\n' ;;\n"
                    "  'show job') printf '   TimeLimit=00:10:00\\n' ;;\n"
                    "  *) exit 1 ;;\n"
                    "esac\n")
        os.chmod(scontrol, 0o755)
        log = os.path.join(d, "slurm.log")
        with open(os.path.join(d, "slurm.env"), "w") as f:
            f.write(f"FABRICDIAG_COLLECTOR={self.url}\n"
                    f"FABRICDIAG_TOKEN_FILE={self.token_file}\n"
                    f"FABRICDIAG_CA_FILE={self.ca}\n"
                    f"FABRICDIAG_SCONTROL={scontrol}\n"
                    f"FABRICDIAG_SLURM_LOG_FILE={log}\n"
                    "FABRICDIAG_SLURM_SYSLOG=no\n")
        r = subprocess.run(
            ["/bin/sh", os.path.join(SOURCE_DIR, "deploy", "slurm",
                                     "prolog-slurmctld")],
            env={"FABRICDIAG_SLURM_ENV": os.path.join(d, "slurm.env"),
                 "SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu-[000-001]",
                 "SLURM_JOB_USER": "alice",
                 "SLURM_JOB_COMMENT": "fabricdiag: tp=8"},
            capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        with open(log) as f:
            logged = f.read()
        self.assertIn("HTTP 201", logged)
        self.assertEqual(self.jobs()["slurm-77"]["source"], "slurm")

    def start_failure(self, *flags):
        """Runs the collector with `flags`; returns (exit code, output)."""
        r = subprocess.run(
            [COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
             f"--state_dir={self.work}/state-bad", *flags],
            capture_output=True, text=True, timeout=30)
        return r.returncode, r.stdout + r.stderr

    def test_startup_errors_name_the_flag_or_the_file(self):
        rc, out = self.start_failure(f"--http_tls_cert={self.cert}")
        self.assertEqual(rc, 2)
        self.assertIn("--http_tls_cert and --http_tls_key go together", out)
        rc, out = self.start_failure(f"--http_tls_key={self.key}")
        self.assertEqual(rc, 2)
        self.assertIn("go together", out)
        missing = os.path.join(self.work, "missing.pem")
        rc, out = self.start_failure(f"--http_tls_cert={missing}",
                                     f"--http_tls_key={self.key}")
        self.assertEqual(rc, 2)
        self.assertIn(f"--http_tls_cert={missing}: cannot read", out)
        rc, out = self.start_failure(f"--http_tls_cert={self.cert}",
                                     f"--http_tls_key={self.other_key}")
        self.assertEqual(rc, 1)
        self.assertIn("does not belong to the certificate", out)
        rc, out = self.start_failure(f"--http_tls_cert={self.token_file}",
                                     f"--http_tls_key={self.key}")
        self.assertEqual(rc, 1)
        self.assertIn("not a PEM certificate", out)

    def test_help_lists_the_flags(self):
        r = subprocess.run([COLLECTOR, "--help"], capture_output=True,
                           text=True, timeout=30)
        self.assertIn("--http_tls_cert", r.stdout + r.stderr)
        self.assertIn("--http_tls_key", r.stdout + r.stderr)


if __name__ == "__main__":
    COLLECTOR, SOURCE_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
