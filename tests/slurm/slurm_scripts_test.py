#!/usr/bin/env python3
"""Fast tests of deploy/slurm/fabricdiag-slurmctld.

The script runs as slurmctld runs it: with an empty environment but the
Slurm variables, and a settings file. A fake scontrol stands in for Slurm's
(the real one is exercised by slurm_e2e_test.py). In --dry-run: the comment
parser, the body it would send (parsed as JSON), the lease from the time
limit, and hostile comments: the script must exit 0, send nothing and run
nothing. Then through the shipped wrappers against fake_collector.py: each
answer of the collector (201, 200, 400, 401, nothing) and how it is logged,
and the time bound when the collector never answers.

Usage: slurm_scripts_test.py SOURCE_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import socket
import tempfile
import time
import unittest
import urllib.request

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
SCRIPT = os.path.join(SOURCE_DIR, "deploy", "slurm", "fabricdiag-slurmctld")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from ports import free_port  # noqa: E402

FAKE_SCONTROL = """#!/bin/sh
# Fake scontrol: hostnames expand to $FAKE_HOSTS (one per line), show job
# prints $FAKE_LIMIT as the time limit.
case "$1 $2" in
  "show hostnames") cat "$(dirname "$0")/hosts" ;;
  "show job")
    printf 'JobId=%s JobName=TimeLimit=1\\n' "$3"
    printf '   RunTime=00:00:01 TimeLimit=%s TimeMin=N/A\\n' \
      "$(cat "$(dirname "$0")/limit")"
    printf '   Comment=x TimeLimit=99\\n' ;;
  *) exit 1 ;;
esac
"""


def read(path):
    with open(path) as f:
        return f.read()


class DryRunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fabricdiag-slurm-unit-")
        self.scontrol = os.path.join(self.dir, "scontrol")
        with open(self.scontrol, "w") as f:
            f.write(FAKE_SCONTROL)
        os.chmod(self.scontrol, 0o755)
        self.set_hosts(["gpu-000", "gpu-001", "gpu-002", "gpu-003"])
        self.set_limit("01:00:00")
        self.pwned = os.path.join(self.dir, "pwned")
        self.write_env()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def set_hosts(self, hosts):
        with open(os.path.join(self.dir, "hosts"), "w") as f:
            f.write("".join(h + "\n" for h in hosts))

    def set_limit(self, limit):
        with open(os.path.join(self.dir, "limit"), "w") as f:
            f.write(limit)

    def write_env(self, extra=""):
        self.env_file = os.path.join(self.dir, "slurm.env")
        with open(self.env_file, "w") as f:
            f.write("# test settings\n"
                    "FABRICDIAG_COLLECTOR=http://127.0.0.1:9/\n"
                    f"FABRICDIAG_SCONTROL=\"{self.scontrol}\"\n"
                    "FABRICDIAG_SLURM_LOG_FILE=\n"
                    "FABRICDIAG_SLURM_SYSLOG=no\n" + extra)

    def run_script(self, comment, action="prolog", job_id="42",
                   nodelist="gpu-[000-003]", user="alice"):
        env = {"FABRICDIAG_SLURM_ENV": self.env_file, "SLURM_JOB_ID": job_id,
               "SLURM_JOB_NODELIST": nodelist, "SLURM_JOB_USER": user}
        if comment is not None:
            env["SLURM_JOB_COMMENT"] = comment
        p = subprocess.run(["/bin/sh", SCRIPT, "--dry-run", action], env=env,
                           cwd=self.dir, capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(self.pwned), "the comment was run")
        return p.stdout, p.stderr

    def declared(self, comment, **kw):
        out, err = self.run_script(comment, **kw)
        lines = out.split("\n", 1)
        self.assertEqual(lines[0],
                         "PUT http://127.0.0.1:9/api/v1/jobs/slurm-42", out + err)
        return json.loads(lines[1]), err

    def refused(self, comment, message, **kw):
        out, err = self.run_script(comment, **kw)
        self.assertEqual(out, "", f"a request for {comment!r}")
        self.assertIn(message, err)
        return err

    def test_declares_the_layout(self):
        body, err = self.declared("fabricdiag: tp=8 pp=4 ep=1")
        self.assertEqual(err, "")
        self.assertEqual(body, {
            "job": "slurm-42", "gpus_per_node": 8,
            "parallelism": {"tp": 8, "pp": 4, "dp": 1, "cp": 1, "ep": 1},
            "hosts": ["gpu-000", "gpu-001", "gpu-002", "gpu-003"],
            "source": "slurm", "owner": "alice", "lease_seconds": 3600 + 600})

    def test_hosts_keep_scontrol_order(self):
        self.set_hosts(["n7", "n1", "n3", "n2"])
        body, _ = self.declared("fabricdiag: tp=8", nodelist="n[1-3,7]")
        self.assertEqual(body["hosts"], ["n7", "n1", "n3", "n2"])
        self.assertEqual(body["parallelism"]["dp"], 4)

    def test_all_settings_and_text_around_them(self):
        self.set_hosts([f"gpu-{i:03d}" for i in range(8)])
        body, _ = self.declared(
            "my run; fabricdiag: tp=2  cp=2\tpp=2 ep=4 dp=4 "
            "order=TP-CP-EP-DP-PP gpus_per_node=4; more text")
        self.assertEqual(body["gpus_per_node"], 4)
        self.assertEqual(body["parallelism"], {
            "tp": 2, "pp": 2, "dp": 4, "cp": 2, "ep": 4,
            "order": "TP-CP-EP-DP-PP"})

    def test_defaults_and_leading_zeros(self):
        body, _ = self.declared("fabricdiag:")
        self.assertEqual(body["parallelism"],
                         {"tp": 1, "pp": 1, "dp": 32, "cp": 1, "ep": 1})
        # 010 is ten, not octal eight.
        body, _ = self.declared("fabricdiag: tp=08 pp=004",
                                nodelist="gpu-[000-009]")
        self.assertEqual(body["parallelism"]["tp"], 8)
        self.assertEqual(body["parallelism"]["pp"], 4)
        self.set_hosts([f"gpu-{i:03d}" for i in range(10)])
        body, _ = self.declared("fabricdiag: tp=010")
        self.assertEqual(body["parallelism"]["tp"], 10)

    def test_settings_file(self):
        self.write_env("FABRICDIAG_GPUS_PER_NODE=4\n"
                       "FABRICDIAG_RAILS=mlx5_0, mlx5_1,mlx5_2,mlx5_3\n"
                       "FABRICDIAG_LEASE_MARGIN_SECONDS=60\n")
        self.set_limit("2-00:00:30")
        body, _ = self.declared("fabricdiag: tp=4")
        self.assertEqual(body["gpus_per_node"], 4)
        self.assertEqual(body["rails"], ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"])
        self.assertEqual(body["lease_seconds"], 2 * 86400 + 30 + 60)

    def test_lease_without_a_time_limit(self):
        self.write_env("FABRICDIAG_LEASE_SECONDS=7200\n")
        for limit in ("UNLIMITED", "Partition_Limit", "", "1:$(x)"):
            self.set_limit(limit)
            body, _ = self.declared("fabricdiag: tp=8")
            self.assertEqual(body["lease_seconds"], 7200, limit)
        self.set_limit("05:09")
        body, _ = self.declared("fabricdiag: tp=8")
        self.assertEqual(body["lease_seconds"], 5 * 60 + 9 + 600)

    def test_lease_at_most_a_week(self):
        # The collector refuses lease_seconds over 604800 with a 400.
        self.set_limit("14-00:00:00")
        body, _ = self.declared("fabricdiag: tp=8")
        self.assertEqual(body["lease_seconds"], 604800)
        self.set_limit("6-23:55:00")
        body, _ = self.declared("fabricdiag: tp=8")
        self.assertEqual(body["lease_seconds"], 604800)
        self.write_env("FABRICDIAG_LEASE_SECONDS=999999\n")
        self.set_limit("UNLIMITED")
        body, _ = self.declared("fabricdiag: tp=8")
        self.assertEqual(body["lease_seconds"], 604800)

    def test_token(self):
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write("s3cr3t-Token\n")
        self.write_env(f"FABRICDIAG_TOKEN_FILE={token}\n")
        out, err = self.run_script("fabricdiag: tp=8")
        self.assertIn(f"Authorization: Bearer <token from {token}>", out)
        self.assertNotIn("s3cr3t", out + err)
        self.write_env("FABRICDIAG_TOKEN_FILE=/nonexistent/token\n")
        out, err = self.run_script("fabricdiag: tp=8")
        self.assertTrue(out.startswith("PUT "))
        self.assertIn("token file /nonexistent/token is missing", err)

    def test_labels_name_the_owners(self):
        body, err = self.declared(
            "fabricdiag: tp=8 labels=team:ml,project:llm-7b,cost_center:x/1")
        self.assertEqual(err, "")
        self.assertEqual(body["labels"], {"team": "ml", "project": "llm-7b",
                                          "cost_center": "x/1"})
        # A value may hold ':'; the most labels a layout takes.
        body, _ = self.declared("fabricdiag: labels=url:http://wiki/ml")
        self.assertEqual(body["labels"], {"url": "http://wiki/ml"})
        many = ",".join(f"k{i}:v" for i in range(16))
        body, _ = self.declared(f"fabricdiag: labels={many}")
        self.assertEqual(len(body["labels"]), 16)
        body, _ = self.declared("fabricdiag: tp=8")
        self.assertNotIn("labels", body)

    def test_hostile_labels_are_refused(self):
        cases = [
            ("fabricdiag: labels=", "expected key:value pairs"),
            ("fabricdiag: labels=team", "expected key:value pairs"),
            ("fabricdiag: labels=team:ml,", "expected key:value pairs"),
            ("fabricdiag: labels=Team:ml", 'key "Team"'),
            ("fabricdiag: labels=9team:ml", 'key "9team"'),
            ("fabricdiag: labels=:ml", 'key ""'),
            ("fabricdiag: labels=" + "k" * 64 + ":v", "[a-z_][a-z0-9_]{0,62}"),
            ("fabricdiag: labels=team:", "labels.team= in the job comment"),
            ("fabricdiag: labels=team:" + "v" * 129, "1 to 128 printable"),
            ('fabricdiag: labels=team:a"},"hosts":["x', "labels.team="),
            ("fabricdiag: labels=team:a\\b", "labels.team="),
            ("fabricdiag: labels=team:\x01", "labels.team="),
            ("fabricdiag: labels=team:a,team:b", "labels.team is given twice"),
            ("fabricdiag: labels=a:1 labels=b:2", '"labels" is given twice'),
            ("fabricdiag: labels=" + ",".join(f"k{i}:v" for i in range(17)),
             "more than 16 labels"),
            (f"fabricdiag: labels=team:$(touch${{IFS}}{self.pwned})", None),
            (f"fabricdiag: labels=team:`touch${{IFS}}{self.pwned}`", None),
        ]
        for comment, message in cases:
            with self.subTest(comment=comment[:60]):
                out, err = self.run_script(comment)
                if message is None:
                    # Harmless text: sent as it is, never run (run_script
                    # checks that the file was not created).
                    body = json.loads(out.split("\n", 1)[1])
                    self.assertEqual(body["labels"]["team"], comment[24:])
                    continue
                self.assertEqual(out, "", f"a request for {comment!r}")
                self.assertIn(message, err)
                self.assertEqual(err.count("\n"), 1, err)

    def test_epilog_deletes(self):
        out, err = self.run_script("fabricdiag: tp=8", action="epilog")
        self.assertEqual(out, "DELETE http://127.0.0.1:9/api/v1/jobs/slurm-42\n")
        self.assertEqual(err, "")
        # The action may come from Slurm's own variable instead.
        p = subprocess.run(
            ["/bin/sh", SCRIPT, "--dry-run"],
            env={"FABRICDIAG_SLURM_ENV": self.env_file, "SLURM_JOB_ID": "42",
                 "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
                 "SLURM_JOB_COMMENT": "fabricdiag: tp=8"},
            capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("DELETE "), p.stdout + p.stderr)

    def test_no_comment_no_request(self):
        for comment in (None, "", "just a comment", "fabricdiag tp=8"):
            for action in ("prolog", "epilog"):
                out, err = self.run_script(comment, action=action)
                self.assertEqual((out, err), ("", ""), comment)

    def test_malformed_comments(self):
        cases = [
            ("fabricdiag: tp=0", "tp=0 in the job comment: expected an integer"),
            ("fabricdiag: tp=-8", "tp=-8 in the job comment"),
            ("fabricdiag: tp=8.0", "tp=8.0 in the job comment"),
            ("fabricdiag: tp=", "tp= in the job comment"),
            ("fabricdiag: tp=99999999999999999999999", "expected an integer"),
            ("fabricdiag: tp=262145", "from 1 to 262144"),
            ("fabricdiag: gpus_per_node=1025", "from 1 to 1024"),
            ("fabricdiag: tp=8 tp=8", '"tp" is given twice'),
            ("fabricdiag: tp=8 typo=1", 'unknown setting "typo=1"'),
            ("fabricdiag: TP=8", 'unknown setting "TP=8"'),
            ("fabricdiag: tp=\"8\"", "expected an integer"),
            ("fabricdiag: tp='8'", "expected an integer"),
            (f"fabricdiag: tp=$(touch {self.pwned})", "expected an integer"),
            (f"fabricdiag: tp=`touch {self.pwned}`", "expected an integer"),
            (f"fabricdiag: `touch {self.pwned}`", "unknown setting"),
            (f"fabricdiag: $(touch {self.pwned})", "unknown setting"),
            (f"fabricdiag: tp=8 pp=${{x:=$(touch {self.pwned})}}",
             "expected an integer"),
            ("fabricdiag: *", 'unknown setting "*"'),
            ("fabricdiag: order=tp-xx", 'unknown dimension "xx"'),
            ("fabricdiag: order=tp-tp", '"tp" appears twice'),
            (f"fabricdiag: order=$(touch {self.pwned})", "order="),
            ("fabricdiag: tp=8\nfabricdiag: forged log line", "unknown setting"),
            ("fabricdiag: tp=8 " + "x" * 5000, "longer than 4096"),
        ]
        for i, (comment, message) in enumerate(cases):
            with self.subTest(comment=comment[:60]):
                err = self.refused(comment, message)
                self.assertEqual(err.count("\n"), 1, err)
            # The epilog parses the same way (every third case: each run
            # costs a process start).
            if i % 3 == 0:
                with self.subTest(comment=comment[:60], action="epilog"):
                    self.refused(comment, message, action="epilog")

    def test_invalid_combinations(self):
        # 4 hosts x 8 GPUs = 32 ranks.
        self.refused("fabricdiag: tp=3",
                     "tp*cp*pp = 3*1*1 = 3 does not divide 4 nodes x 8 GPUs = 32")
        self.refused("fabricdiag: tp=8 pp=8",
                     "does not divide 4 nodes x 8 GPUs = 32")
        self.refused("fabricdiag: tp=8 ep=3", "ep=3 does not divide dp*cp = 4")
        self.refused("fabricdiag: tp=8 dp=2",
                     "dp=2 in the job comment, but 4 nodes x 8 GPUs")
        self.refused("fabricdiag: tp=8 order=tp-pp", "omits dp, whose degree is 4")
        self.refused("fabricdiag: tp=8 ep=4 dp=4 order=tp-dp-pp",
                     "omits ep, whose degree is 4")
        # Text after ";" is not settings.
        self.refused("fabricdiag: tp=8 order=tp;dp", "omits dp")
        # The epilog needs no hosts: it deletes whatever the prolog declared.
        out, _ = self.run_script("fabricdiag: tp=3", action="epilog")
        self.assertTrue(out.startswith("DELETE "))

    def test_hostile_environment(self):
        self.refused("fabricdiag: tp=8", "is not a job id", job_id="42; id")
        self.refused("fabricdiag: tp=8", "is not a node list",
                     nodelist="gpu-[000-003] $(id)")
        self.set_hosts(["gpu-000", "gpu\"1", "gpu-002", "gpu-003"])
        self.refused("fabricdiag: tp=8", "is not a valid layout host")
        self.set_hosts(["gpu-000", "gpu-001", "gpu-002", "gpu-003"])
        body, err = self.declared("fabricdiag: tp=8", user='bob"x')
        self.assertNotIn("owner", body)
        self.assertIn("not sent as owner", err)
        self.write_env("FABRICDIAG_RAILS=mlx5_0,\"x\n")
        self.refused("fabricdiag: tp=8", "is not a NIC name")
        self.write_env("FABRICDIAG_RAILS=mlx5_0,mlx5_1\n")
        self.refused("fabricdiag: tp=8", "names 2 NICs, but gpus_per_node = 8")

    def test_settings_problems(self):
        out, err = self.run_script("fabricdiag: tp=8")
        self.assertTrue(out)
        os.remove(self.env_file)
        self.refused("fabricdiag: tp=8", f"cannot read {self.env_file}")
        with open(self.env_file, "w") as f:
            f.write("FABRICDIAG_COLLECTOR=collector:9812\n")
        self.refused("fabricdiag: tp=8", "is not an http:// or https:// URL")
        self.write_env("FABRICDIAG_GPUS_PER_NODE=$(id)\nEXTRA=1\n")
        err = self.refused("fabricdiag: tp=8", "FABRICDIAG_GPUS_PER_NODE=$(id)")
        self.assertIn("unknown keys ignored: EXTRA", err)

    def test_too_many_ranks(self):
        self.set_hosts([f"gpu-{i:05d}" for i in range(32768)])
        body, _ = self.declared("fabricdiag: tp=8 pp=8")
        self.assertEqual(len(body["hosts"]), 32768)
        self.assertEqual(body["parallelism"]["dp"], 4096)
        self.refused("fabricdiag: tp=8 gpus_per_node=16",
                     "32768 nodes x 16 GPUs = 524288 ranks")
        self.set_hosts([f"gpu-{i:05d}" for i in range(32769)])
        self.refused("fabricdiag: tp=8", "32769 hosts")


class AgainstFakeCollectorTest(unittest.TestCase):
    """The requests really sent (curl), to fake_collector.py with a token:
    the answers the collector can give and how each is logged."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fabricdiag-slurm-http-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.scontrol = os.path.join(self.dir, "scontrol")
        with open(self.scontrol, "w") as f:
            f.write(FAKE_SCONTROL)
        os.chmod(self.scontrol, 0o755)
        with open(os.path.join(self.dir, "hosts"), "w") as f:
            f.write("gpu-000\ngpu-001\n")
        with open(os.path.join(self.dir, "limit"), "w") as f:
            f.write("00:10:00")
        self.token = os.path.join(self.dir, "token")
        with open(self.token, "w") as f:
            f.write("tok-123\n")
        port_file = os.path.join(self.dir, "port")
        self.collector = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(
                os.path.abspath(__file__)), "fake_collector.py"),
             f"--port_file={port_file}", f"--token_file={self.token}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Stopped even when the rest of setUp fails (tearDown would not run).
        self.addCleanup(self.collector.wait)
        self.addCleanup(self.collector.kill)
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            self.assertLess(time.monotonic(), deadline, "fake collector")
            time.sleep(0.05)
        with open(port_file) as f:
            self.url = f"http://127.0.0.1:{f.read()}"
        self.log = os.path.join(self.dir, "fabricdiag-slurm.log")
        self.write_env(self.url, self.token)

    def write_env(self, url, token):
        with open(os.path.join(self.dir, "slurm.env"), "w") as f:
            f.write(f"FABRICDIAG_COLLECTOR={url}\n"
                    f"FABRICDIAG_TOKEN_FILE={token}\n"
                    f"FABRICDIAG_SCONTROL={self.scontrol}\n"
                    f"FABRICDIAG_SLURM_LOG_FILE={self.log}\n"
                    "FABRICDIAG_SLURM_SYSLOG=no\n"
                    "FABRICDIAG_TIMEOUT_SECONDS=1\n")

    def hook(self, action, comment="fabricdiag: tp=8 ep=2"):
        """Runs the shipped wrapper the way slurmctld does; returns the new
        log lines."""
        before = read(self.log) if os.path.exists(self.log) else ""
        p = subprocess.run(
            ["/bin/sh", os.path.join(SOURCE_DIR, "deploy", "slurm",
                                     f"{action}-slurmctld")],
            env={"FABRICDIAG_SLURM_ENV": os.path.join(self.dir, "slurm.env"),
                 "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu-[000-001]",
                 "SLURM_JOB_USER": "alice", "SLURM_JOB_COMMENT": comment},
            capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout + p.stderr, "", "output slurmctld drops")
        return read(self.log)[len(before):]

    def requests(self):
        with urllib.request.urlopen(self.url + "/fake/requests") as r:
            return json.load(r)

    def test_answers_are_logged(self):
        log = self.hook("prolog")
        self.assertIn("info fabricdiag-slurm prolog job 7: declared slurm-7 "
                      "(2 hosts, tp=8 pp=1 cp=1 ep=2 dp=2, lease 1200s): "
                      "HTTP 201", log)
        # Idempotent: again replaces (200), and two deletes both succeed.
        self.assertIn("HTTP 200", self.hook("prolog"))
        self.assertIn('deleted slurm-7: {"job": "slurm-7", "deleted": true}',
                      self.hook("epilog"))
        self.assertIn('"deleted": false}', self.hook("epilog"))
        reqs = self.requests()
        self.assertEqual([r["method"] for r in reqs],
                         ["PUT", "PUT", "DELETE", "DELETE"])
        self.assertTrue(all(r["authorization"] == "Bearer tok-123"
                            for r in reqs))
        self.assertEqual(reqs[0]["content_type"], "application/json")
        self.assertEqual(reqs[2]["body"], "")

    def test_refusals_are_logged(self):
        wrong = os.path.join(self.dir, "wrong-token")
        with open(wrong, "w") as f:
            f.write("nope\n")
        self.write_env(self.url, wrong)
        self.assertIn("err fabricdiag-slurm prolog job 7: PUT slurm-7: HTTP "
                      "401 (token missing or wrong)", self.hook("prolog"))
        self.assertIn("epilog job 7: DELETE slurm-7: HTTP 401",
                      self.hook("epilog"))
        self.write_env(self.url, self.token)
        # A rule the script leaves to the collector: its 400 is logged.
        log = self.hook("prolog", "fabricdiag: tp=8 ep=2 order=tp-ep-pp-dp")
        self.assertIn("err fabricdiag-slurm prolog job 7: PUT slurm-7 (2 hosts,"
                      " tp=8 pp=1 cp=1 ep=2 dp=2, lease 1200s): HTTP 400: "
                      '{"error": "parallelism.order: ', log)
        # One the script checks itself: nothing is sent.
        log = self.hook("prolog", "fabricdiag: tp=8 ep=3")
        self.assertIn("ep=3 does not divide dp*cp = 2", log)
        self.assertEqual(len(self.requests()), 3)

    def test_collector_that_never_answers(self):
        # Accepts connections (the kernel's backlog) and never replies.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        try:
            self.write_env(f"http://127.0.0.1:{s.getsockname()[1]}",
                           self.token)
            start = time.monotonic()
            log = self.hook("prolog")
            elapsed = time.monotonic() - start
        finally:
            s.close()
        self.assertIn("unreachable: curl: (28)", log)
        # FABRICDIAG_TIMEOUT_SECONDS=1, plus process starts on a busy host.
        self.assertLess(elapsed, 5, log)

    def test_collector_down(self):
        port = free_port()  # nothing of ours listens there
        self.write_env(f"http://127.0.0.1:{port}", self.token)
        for action in ("prolog", "epilog"):
            self.assertIn(f"{action} job 7: collector http://127.0.0.1:{port}"
                          " unreachable: curl: (7)", self.hook(action))


class ShellcheckTest(unittest.TestCase):
    def test_scripts_are_posix_sh_and_shellcheck_clean(self):
        shellcheck = shutil.which("shellcheck")
        self.assertIsNotNone(
            shellcheck, "shellcheck is not installed (scripts/install-deps.sh)")
        d = os.path.join(SOURCE_DIR, "deploy", "slurm")
        scripts = [os.path.join(d, n) for n in
                   ("fabricdiag-slurmctld", "prolog-slurmctld",
                    "epilog-slurmctld")]
        for path in scripts:
            self.assertTrue(os.access(path, os.X_OK), f"{path} not executable")
        p = subprocess.run([shellcheck, "-s", "sh", *scripts],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
