#!/usr/bin/env python3
"""The HTTP write API on a collector cluster: three nats-servers from
deploy/nats/nats-server.conf on loopback (tests/deploy/nats_config_test.py
starts them), three real fabricdiag-collectors joined through them with a
token, driven over HTTP.

usage: http_write_cluster_e2e_test.py SOURCE_DIR COLLECTOR

A PUT on one collector is served by all three (GET on each), one
collector's If-Match write refuses another's stale revision (412), a DELETE on
another is gone from all three, and a 2 s lease declared on the third
expires everywhere and is removed once in all
(fabricdiag_layouts_expired_total summed over the three is 1). Exits 77
(skipped) without nats-server. Bounded: every wait has a deadline.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SOURCE_DIR, COLLECTOR = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "deploy"))
import nats_config_test as nats_cluster  # noqa: E402

TOKEN = "cluster-e2e-token-0123456789"
IDS = ["col-a", "col-b", "col-c"]
DENSE = {"gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1, "dp": 2},
         "hosts": ["gpu-000", "gpu-001"]}


def request(port, method, path, body=None, token=TOKEN, headers=None):
    """(status, parsed JSON or text) of one request to 127.0.0.1:port."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 method=method)
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            status, payload = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, payload = e.code, e.read()
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload.decode(errors="replace")


def jobs(port):
    status, body = request(port, "GET", "/api/v1/jobs")
    assert status == 200, (status, body)
    return {j["job"] for j in body["jobs"]}


def wait(what, predicate, deadline_s=20):
    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.1)


def expired_total(port):
    _, text = request(port, "GET", "/metrics", token=None)
    for line in text.splitlines():
        if line.startswith("fabricdiag_layouts_expired_total "):
            return float(line.split()[1])
    raise AssertionError("no fabricdiag_layouts_expired_total")


def main():
    nats = shutil.which("nats-server") or (
        "/usr/sbin/nats-server" if os.access("/usr/sbin/nats-server", os.X_OK)
        else None)
    if nats is None:
        print("SKIP: nats-server not found (apt-get install nats-server)")
        return 77
    work = tempfile.mkdtemp(prefix="http-write-cluster-")
    procs = []
    try:
        with open(f"{SOURCE_DIR}/deploy/nats/nats-server.conf",
                  encoding="utf-8") as f:
            conf_text = f.read()
        nats_ports, nats_flags = nats_cluster.start_secured_servers(
            nats, conf_text, work, procs)
        if nats_cluster.wait_meta_leader(work, nats_ports, procs) is None:
            raise AssertionError("; ".join(nats_cluster.FAILURES))
        urls = ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in nats_ports)
        token_file = os.path.join(work, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token_file, 0o600)
        http = {cid: nats_cluster.free_port() for cid in IDS}
        for cid in IDS:
            log = open(os.path.join(work, f"{cid}.log"), "wb")
            procs.append(subprocess.Popen(
                [COLLECTOR, "--listen=127.0.0.1:0",
                 f"--http_listen=127.0.0.1:{http[cid]}",
                 f"--state_dir={work}/state-{cid}", f"--nats={urls}",
                 f"--collector_id={cid}", "--nats_replicas=3",
                 f"--auth_token_file={token_file}",
                 "--analysis_interval=500ms", *nats_flags],
                stdout=log, stderr=subprocess.STDOUT))

        def healthy(cid):
            try:
                return request(http[cid], "GET", "/healthz")[0] == 200
            except OSError:
                return False
        for cid in IDS:
            wait(f"{cid} healthy", lambda c=cid: healthy(c), 60)

        a, b, c = (http[cid] for cid in IDS)
        status, body = request(a, "PUT", "/api/v1/jobs/shared",
                               dict(DENSE, lease_seconds=600))
        assert status == 201, (status, body)
        for port in (a, b, c):
            wait(f"shared served on {port}", lambda p=port: "shared" in jobs(p))
            status, body = request(port, "GET", "/api/v1/jobs/shared")
            assert status == 200 and body["job"] == "shared", (status, body)
        print("PUT on col-a served by all three")

        # Revision-aware writes across collectors: B replaces A's version
        # by its revision; C's write naming A's revision is refused (412:
        # C already serves B's, or the bucket's compare-and-set refuses),
        # and C's naming B's is taken.
        first = body["revision"]
        status, body = request(b, "PUT", "/api/v1/jobs/shared",
                               dict(DENSE, lease_seconds=600),
                               headers={"If-Match": f'"{first}"'})
        assert status == 200, (status, body)
        second = body["revision"]
        status, body = request(c, "PUT", "/api/v1/jobs/shared",
                               dict(DENSE, lease_seconds=600),
                               headers={"If-Match": f'"{first}"'})
        assert status == 412, (status, body)
        wait("col-c serves the second revision", lambda: request(
            c, "GET", "/api/v1/jobs/shared")[1].get(
                "revision") == second)
        status, body = request(c, "PUT", "/api/v1/jobs/shared",
                               dict(DENSE, lease_seconds=600),
                               headers={"If-Match": f'"{second}"'})
        assert status == 200 and body["revision"] > second, (status, body)
        third = body["revision"]
        print(f"If-Match across collectors: {first} -> {second} on col-b, "
              f"412 for {first} on col-c, then {third}")

        # A DELETE removes the revision its collector serves (409 when the
        # bucket holds a newer one): col-b first catches up with col-c's.
        wait("col-b serves the third revision", lambda: request(
            b, "GET", "/api/v1/jobs/shared")[1].get("revision") == third)
        status, body = request(b, "DELETE", "/api/v1/jobs/shared")
        assert status == 200 and body["deleted"] is True, (status, body)
        for port in (a, b, c):
            wait(f"shared gone on {port}",
                 lambda p=port: "shared" not in jobs(p))
        print("DELETE on col-b gone from all three")

        status, body = request(c, "PUT", "/api/v1/jobs/short",
                               dict(DENSE, lease_seconds=2))
        assert status == 201, (status, body)
        wait("short served by all", lambda: all("short" in jobs(p)
                                                for p in (a, b, c)))
        for port in (a, b, c):
            wait(f"short expired on {port}",
                 lambda p=port: "short" not in jobs(p))
        # Give a late second removal the time to be counted, then count.
        time.sleep(2)
        total = sum(expired_total(p) for p in (a, b, c))
        assert total == 1, f"the lease was removed {total} times"
        print("the 2 s lease expired everywhere, removed once")
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}")
        for name in IDS:
            path = os.path.join(work, f"{name}.log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    print(f"--- {name}\n" + f.read()[-2000:])
        return 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
