#!/usr/bin/env python3
"""The Slurm scripts (deploy/slurm/) run by a real Slurm on loopback.

    slurm_e2e_test.py SOURCE_DIR COLLECTOR CLI

Starts, in a temporary directory, munged (as user munge, with its own key
and socket), slurmctld -D and eight slurmd -D -N gpu-00X (one port each on
127.0.0.1), with PrologSlurmctld/EpilogSlurmctld pointing at the scripts of
the source tree through wrappers that only add FABRICDIAG_SLURM_ENV (slurmctld
gives them an empty environment) and note when each hook returned. The
REAL fabricdiag-collector (COLLECTOR) listens on free loopback ports and
requires a bearer token (--auth_token_file; the scripts read the same file
through FABRICDIAG_TOKEN_FILE). What the scripts declared is read back from
it: GET /api/v1/jobs and /api/v1/jobs/JOB, and `fabricdiag layout show JOB
--json` (CLI) for the hosts in order. The exact request bodies and the
absence of any request are checked with a recording fake in
slurm_scripts_test.py; here the script's own log says what it sent.

Cases: a 4-node job with the comment is declared while it runs (hosts in
scontrol's order, which is srun's node rank order, parallelism, lease,
source, owner, the comment's labels=; the token accepted) and deleted after; a job without the
comment and one with a malformed comment declare nothing and end
COMPLETED; with the collector stopped a job still runs and ends COMPLETED.
Every wait polls with a deadline; everything started is stopped at the end,
also on failure. Needs root (slurmd starts jobs as their user, munged runs
as munge).
"""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime

SOURCE_DIR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
COLLECTOR = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
CLI = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "testing"))
from ports import free_port, free_port_range  # noqa: E402

TEST_DEADLINE = time.monotonic() + 100
NODES = [f"gpu-{i:03d}" for i in range(8)]
TOKEN = "e2e-T0ken_slurm-0123456789"


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_for(what, fn, timeout):
    """Polls fn() until it returns a true value; fails after timeout s."""
    deadline = min(time.monotonic() + timeout, TEST_DEADLINE)
    delay = 0.05
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.3)


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(tmp, "slurm.conf"))
        self.env.pop("SLURM_JOB_ID", None)
        self.collector = None
        self.collector_url = None

    def start(self, name, argv, user=None):
        log = open(os.path.join(self.tmp, "log", name + ".out"), "w")
        if user:
            argv = ["runuser", "-u", user, "--"] + argv
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             env=self.env, cwd=self.tmp,
                             start_new_session=True)
        log.close()
        self.procs.append((name, p))
        return p

    def run(self, *argv, timeout=10):
        p = subprocess.run(argv, env=self.env, cwd=self.tmp,
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise Failure(f"{' '.join(argv)}: exit {p.returncode}: "
                          f"{p.stderr.strip()}")
        return p.stdout

    # --- the collector ------------------------------------------------------

    def start_collector(self):
        token_file = os.path.join(self.tmp, "collector.token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token_file, 0o600)
        self.collector = self.start("collector", [
            COLLECTOR, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
            f"--state_dir={self.tmp}/collector-state",
            f"--auth_token_file={token_file}"])
        log = os.path.join(self.tmp, "log", "collector.out")

        def ports():
            if self.collector.poll() is not None:
                raise Failure("the collector exited:\n" + open(log).read())
            for line in open(log, errors="replace"):
                if "gRPC on port" in line and "HTTP on port" in line:
                    return (int(line.split("gRPC on port")[1].split()[0]
                                .rstrip(",;.")),
                            int(line.split("HTTP on port")[1].split()[0]
                                .rstrip(",;.")))
            return None
        self.grpc_port, http_port = wait_for("the collector's ports", ports,
                                             30)
        self.collector_url = f"http://127.0.0.1:{http_port}"

    def stop_collector(self):
        self.collector.terminate()
        self.collector.wait(timeout=15)

    def cli(self, *args):
        return self.run(CLI, f"--collector=127.0.0.1:{self.grpc_port}",
                        f"--token_file={self.tmp}/collector.token", *args,
                        timeout=30)

    def listed(self):
        status, body = self.http("/api/v1/jobs")
        check(status == 200, f"GET /api/v1/jobs: {status} {body}")
        return {j["job"]: j for j in body["jobs"]}

    def log_lines(self, job_id):
        path = os.path.join(self.tmp, "fabricdiag-slurm.log")
        if not os.path.exists(path):
            return []
        return [line for line in open(path)
                if f" job {job_id}: " in line]

    def http(self, path):
        """(status, JSON) of a GET on the collector (reads need the token)."""
        req = urllib.request.Request(self.collector_url + path,
                                     headers={"Authorization": "Bearer " + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    # --- Slurm --------------------------------------------------------------

    def write_config(self):
        tmp = self.tmp
        for d in ("log", "state", "spool", "munge"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        # Written before munged and slurmctld start; only the collector URL
        # is added once the collector listens.
        self.ctld_port = free_port()
        self.node_port = free_port_range(len(NODES))
        hooks = os.path.join(tmp, "hooks.log")
        env_file = os.path.join(tmp, "slurm.env")
        for hook in ("prolog", "epilog"):
            wrapper = os.path.join(tmp, f"{hook}-wrapper")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\n"
                        f"FABRICDIAG_SLURM_ENV={env_file} /bin/sh "
                        f"{SOURCE_DIR}/deploy/slurm/{hook}-slurmctld\n"
                        "rc=$?\n"
                        f"echo \"$SLURM_JOB_ID {hook} $rc\" >> {hooks}\n"
                        "exit $rc\n")
            os.chmod(wrapper, 0o755)
        last = self.node_port + len(NODES) - 1
        with open(os.path.join(tmp, "slurm.conf"), "w") as f:
            f.write(f"""ClusterName=fabricdiag
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={self.ctld_port}
AuthType=auth/munge
AuthInfo=socket={tmp}/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool/%n
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/spool/slurmd-%n.pid
SlurmctldLogFile={tmp}/log/slurmctld.log
SlurmdLogFile={tmp}/log/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
MinJobAge=300
PrologSlurmctld={tmp}/prolog-wrapper
EpilogSlurmctld={tmp}/epilog-wrapper
NodeName=gpu-[000-{len(NODES) - 1:03d}] NodeAddr=127.0.0.1 Port=[{self.node_port}-{last}] CPUs=1 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        for n in NODES:
            os.makedirs(os.path.join(tmp, "spool", n), exist_ok=True)

    def write_env(self):
        with open(os.path.join(self.tmp, "slurm.env"), "w") as f:
            f.write(f"FABRICDIAG_COLLECTOR={self.collector_url}\n"
                    f"FABRICDIAG_TOKEN_FILE={self.tmp}/collector.token\n"
                    f"SLURM_CONF={self.tmp}/slurm.conf\n"
                    "FABRICDIAG_LEASE_MARGIN_SECONDS=300\n"
                    f"FABRICDIAG_SLURM_LOG_FILE={self.tmp}/fabricdiag-slurm.log\n"
                    "FABRICDIAG_SLURM_SYSLOG=no\n")

    def start_munge(self):
        d = os.path.join(self.tmp, "munge")
        munge = pwd.getpwnam("munge")
        os.chown(d, munge.pw_uid, munge.pw_gid)
        os.chmod(d, 0o755)  # munged wants the socket's directory traversable
        self.run("runuser", "-u", "munge", "--", "mungekey", "-c", "-k",
                 f"{d}/munge.key")
        self.start("munged", [
            "munged", "-F", f"--socket={d}/socket", f"--key-file={d}/munge.key",
            f"--log-file={d}/munged.log", f"--pid-file={d}/munged.pid",
            f"--seed-file={d}/munged.seed"], user="munge")
        wait_for("munged's socket",
                 lambda: os.path.exists(f"{d}/socket"), 10)

    def start_slurm(self):
        self.start("slurmctld", ["slurmctld", "-D"])
        for n in NODES:
            self.start(f"slurmd-{n}", ["slurmd", "-D", "-N", n])

        def all_idle():
            try:
                out = self.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=5)
            except (Failure, subprocess.TimeoutExpired):
                return False
            states = dict(line.split() for line in out.splitlines())
            return len(states) == len(NODES) and \
                all(s == "idle" for s in states.values())
        wait_for("eight idle nodes", all_idle, 30)

    def job_state(self, job_id):
        out = self.run("scontrol", "-o", "show", "job", str(job_id))
        for field in out.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        return None

    def wait_state(self, job_id, states, timeout=30):
        return wait_for(f"job {job_id} in {states}",
                        lambda: (s := self.job_state(job_id)) in states and s,
                        timeout)

    def hook_done(self, job_id, hook):
        """The wrapper's exit status of hook for job_id once it returned."""
        path = os.path.join(self.tmp, "hooks.log")

        def find():
            if not os.path.exists(path):
                return None
            for line in open(path):
                j, h, rc = line.split()
                if j == str(job_id) and h == hook:
                    return rc
            return None
        return wait_for(f"{hook} of job {job_id}", find, 30)

    def sbatch(self, *args):
        return int(self.run("sbatch", "--parsable", *args).strip()
                   .split(";")[0])

    def shutdown(self):
        if any(p.poll() is None for n, p in self.procs if n == "slurmctld"):
            try:
                subprocess.run(["scontrol", "shutdown"], env=self.env,
                               capture_output=True, timeout=10)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + 10
        for name, p in self.procs:
            if name in ("munged", "collector"):
                continue
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for name, p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name, p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=5)


def prerequisites():
    missing = [t for t in ("slurmctld", "slurmd", "scontrol", "sbatch",
                           "sinfo", "munged", "mungekey", "runuser", "curl")
               if shutil.which(t) is None]
    if missing:
        raise Failure(f"missing {', '.join(missing)}: install slurm-wlm, munge "
                      "and curl (scripts/install-deps.sh)")
    if os.geteuid() != 0:
        raise Failure("must run as root: slurmd starts jobs as their user and "
                      "munged runs as user munge")
    try:
        pwd.getpwnam("munge")
    except KeyError:
        raise Failure("no user munge (the munge package creates it)")


def test_declared_while_running(c):
    release = os.path.join(c.tmp, "release")
    ranks = os.path.join(c.tmp, "ranks")
    # Nodes chosen out of order; srun -l prints each node rank's node name.
    job = c.sbatch("-N4", "-w", "gpu-[006,001,003,004]", "-t", "10",
                   "--comment",
                   "fabricdiag: tp=8 pp=2 ep=2 labels=team:ml,project:llm-7b",
                   "-o", os.path.join(c.tmp, "job-%j.out"),
                   "--wrap",
                   f"srun -N4 -n4 sh -c 'echo $SLURM_NODEID $SLURMD_NODENAME'"
                   f" > {ranks}; timeout 30 sh -c "
                   f"'while [ ! -e {release} ]; do sleep 0.1; done'")
    name = f"slurm-{job}"
    c.wait_state(job, {"RUNNING"})
    status, view = wait_for(f"{name} declared",
                            lambda: (r := c.http(f"/api/v1/jobs/{name}"))[0]
                            == 200 and r, 15)
    check(view["parallelism"] == "tp=8 pp=2 dp=2 ep=2" and
          view["ranks"] == 32 and view["hosts"] == 4, f"declared {view}")
    node_list = c.run("scontrol", "show", "hostnames",
                      c.run("squeue", "-h", "-j", str(job), "-o",
                            "%N").strip()).split()
    entry = c.listed()[name]
    check(entry["source"] == "slurm" and entry["owner"] == "root",
          f"source/owner {entry.get('source')}/{entry.get('owner')}")
    # The comment's labels= names the owners: on the layout, the job list
    # and the layout's view (what the job's findings and alerts carry).
    owners = {"team": "ml", "project": "llm-7b"}
    check(entry.get("labels") == owners, f"listed labels {entry}")
    check(view.get("labels") == owners, f"declared labels {view}")
    rfc = "%Y-%m-%dT%H:%M:%SZ"
    check(entry["expires"] is not None, f"no expiry: {entry}")
    lease = (datetime.strptime(entry["expires"], rfc) -
             datetime.strptime(entry["applied"], rfc)).total_seconds()
    check(abs(lease - (10 * 60 + 300)) <= 5,
          f"lease {lease} s ({entry['applied']} -> {entry['expires']}) for a "
          "10-minute limit + 300 s")
    body = json.loads(c.cli("layout", "show", name, "--json"))
    check(body["hosts"] == node_list,
          f"hosts {body['hosts']}, scontrol expands {node_list}")
    check(body["parallelism"] == {"tp": 8, "pp": 2, "dp": 2, "cp": 1, "ep": 2},
          f"parallelism {body['parallelism']}")
    check(body["gpus_per_node"] == 8, f"gpus_per_node {body['gpus_per_node']}")
    check(body.get("labels") == owners, f"layout labels {body.get('labels')}")
    # No rank list: the collector places rank r on hosts[r // 8], GPU r % 8.
    check("ranks" not in body or body["ranks"] == [], f"ranks {body}")
    # srun's block distribution: node rank i runs on the i-th host.
    wait_for("srun's node ranks", lambda: os.path.exists(ranks) and
             len(open(ranks).read().split("\n")) > 4, 15)
    by_rank = dict(line.split() for line in open(ranks) if line.strip())
    check([by_rank[str(i)] for i in range(4)] == body["hosts"],
          f"srun node ranks {by_rank}, declared hosts {body['hosts']}")
    open(release, "w").close()
    check(c.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED"}) ==
          "COMPLETED", f"job {job} did not complete")
    check(c.hook_done(job, "epilog") == "0", "epilog exit status")
    status, _ = c.http(f"/api/v1/jobs/{name}")
    check(status == 404, f"{name} still declared after the job ({status})")
    check(name not in c.listed(), f"{name} still listed after the job")
    lines = c.log_lines(job)
    check(any(f"prolog job {job}: declared {name} " in l and "HTTP 201" in l
              for l in lines), f"no 'declared ... HTTP 201' line: {lines}")
    check(any(f"epilog job {job}: deleted {name}: " in l and
              '"deleted":true' in l.replace(" ", "") for l in lines),
          f"no 'deleted ... true' line: {lines}")
    print(f"ok: {name} declared on {body['hosts']} while running (token "
          "accepted), deleted after")


def test_no_request(c, comment, what):
    args = ["-N2", "-t", "5", "-o", os.path.join(c.tmp, "job-%j.out")]
    if comment is not None:
        args += ["--comment", comment]
    job = c.sbatch(*args, "--wrap", "true")
    check(c.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED"}) ==
          "COMPLETED", f"job {job} ({what}) did not complete")
    check(c.hook_done(job, "prolog") == "0", "prolog exit status")
    check(c.hook_done(job, "epilog") == "0", "epilog exit status")
    status, _ = c.http(f"/api/v1/jobs/slurm-{job}")
    check(status == 404, f"{what}: slurm-{job} declared ({status})")
    sent = [l for l in c.log_lines(job)
            if any(w in l for w in (": declared slurm-", ": deleted slurm-",
                                    "HTTP ", "unreachable"))]
    check(sent == [], f"{what}: requests logged: {sent}")
    print(f"ok: job {job} ({what}) COMPLETED without a request")
    return job


def test_collector_down(c):
    c.stop_collector()
    start = time.monotonic()
    job = c.sbatch("-N4", "-t", "5", "--comment", "fabricdiag: tp=8",
                   "-o", os.path.join(c.tmp, "job-%j.out"), "--wrap", "true")
    check(c.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED"}) ==
          "COMPLETED", f"job {job} did not complete with the collector down")
    check(c.hook_done(job, "prolog") == "0", "prolog exit status")
    check(c.hook_done(job, "epilog") == "0", "epilog exit status")
    elapsed = time.monotonic() - start
    log = open(os.path.join(c.tmp, "fabricdiag-slurm.log")).read()
    for hook in ("prolog", "epilog"):
        check(f"fabricdiag-slurm {hook} job {job}: collector "
              f"{c.collector_url} unreachable" in log,
              f"no 'unreachable' line of the {hook} in the log:\n{log}")
    print(f"ok: job {job} COMPLETED in {elapsed:.1f} s with the collector "
          "down; logged")


def main():
    if not (COLLECTOR and CLI):
        print("usage: slurm_e2e_test.py SOURCE_DIR COLLECTOR CLI",
              file=sys.stderr)
        return 1
    try:
        prerequisites()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="fabricdiag-slurm-e2e-")
    os.chmod(tmp, 0o755)  # munged checks every directory above its socket
    c = Cluster(tmp)
    ok = False
    try:
        c.write_config()
        c.start_collector()
        c.write_env()
        c.start_munge()
        t0 = time.monotonic()
        c.start_slurm()
        print(f"slurm ready in {time.monotonic() - t0:.1f} s")
        t0 = time.monotonic()
        test_declared_while_running(c)
        print(f"  ({time.monotonic() - t0:.1f} s)")
        test_no_request(c, None, "no comment")
        test_no_request(c, "just a comment", "a comment without fabricdiag:")
        job = test_no_request(c, "fabricdiag: tp=8 pp=$(id) `id`",
                              "a malformed comment")
        log = open(os.path.join(tmp, "fabricdiag-slurm.log")).read()
        check(f"prolog job {job}: pp=$(id) in the job comment" in log,
              f"the malformed comment is not logged:\n{log}")
        test_collector_down(c)
        ok = True
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        c.shutdown()
        if not ok:
            for name in ("slurmctld.log", "slurmctld.out"):
                path = os.path.join(tmp, "log", name)
                if os.path.exists(path):
                    print(f"--- {name} (last 30 lines)", file=sys.stderr)
                    print("".join(open(path).readlines()[-30:]),
                          file=sys.stderr)
            path = os.path.join(tmp, "fabricdiag-slurm.log")
            if os.path.exists(path):
                print("--- fabricdiag-slurm.log", file=sys.stderr)
                print(open(path).read(), file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
