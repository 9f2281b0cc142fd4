#!/usr/bin/env python3
"""A stand-in for the collector's HTTP job API, strict about its contract.

    fake_collector.py --port_file=FILE [--token_file=FILE]

Listens on 127.0.0.1 port 0 and writes the port to --port_file once it
accepts connections. Serves what the Slurm scripts use, the way the
collector does (docs/http-api.md):

  PUT    /api/v1/jobs/{job}        layout JSON (+ lease_seconds, source,
                                   owner): 201 new / 200 replaced with
                                   {"job", "revision", "warnings"}; 400
                                   {"error": "<field>: ..."}; 401 without
                                   the bearer token when --token_file is set
  POST   /api/v1/jobs/{job}/renew  200, 404 when gone
  DELETE /api/v1/jobs/{job}        200 {"deleted": true|false}
  GET    /api/v1/jobs/{job}        {"job", "parallelism": "tp=8 pp=2 dp=2
                                   ep=2", "ranks", "hosts"} (a subset of the
                                   collector's answer); 404 when absent

and, for tests only, GET /fake/requests: every request received, in order,
as {"method", "path", "authorization", "content_type", "body"}.

The layout checks are the ones the scripts are expected to get right
(types, unknown keys, the rank count, ep dividing dp*cp, rails), plus a
simplified form of one rule the scripts leave to the collector (an order
with pp before other dimensions); anything else is the real collector's
business.
"""

import argparse
import http.server
import json
import os
import re
import threading

JOB_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
HOST_RE = re.compile(r"^[A-Za-z0-9._-]{1,253}$")
NIC_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
TOP_KEYS = {"job", "gpus_per_node", "nvlink_domain", "parallelism", "hosts",
            "rails", "ranks", "model", "lease_seconds", "source", "owner"}
PAR_KEYS = {"tp", "pp", "dp", "cp", "ep", "order"}


class LayoutError(Exception):
    pass


def integer(value, field, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int):
        raise LayoutError(f"{field}: expected an integer, got {value!r}")
    if not lo <= value <= hi:
        raise LayoutError(f"{field}: {value} is out of range [{lo}, {hi}]")
    return value


def validate(job, layout):
    if not isinstance(layout, dict):
        raise LayoutError("the body must be a JSON object")
    for key in layout:
        if key not in TOP_KEYS:
            raise LayoutError(f"{key}: unknown key")
    if layout.get("job") != job:
        raise LayoutError(f"job: {layout.get('job')!r} differs from the URL's "
                          f"{job!r}")
    gpn = integer(layout.get("gpus_per_node"), "gpus_per_node", 1, 1024)
    par = layout.get("parallelism")
    if not isinstance(par, dict):
        raise LayoutError("parallelism: required mapping")
    for key in par:
        if key not in PAR_KEYS:
            raise LayoutError(f"parallelism.{key}: unknown key")
    deg = {d: integer(par.get(d, 1 if d in ("cp", "ep") else None),
                      f"parallelism.{d}", 1, 262144)
           for d in ("tp", "pp", "dp", "cp", "ep")}
    if (deg["dp"] * deg["cp"]) % deg["ep"]:
        raise LayoutError(f"parallelism.ep: {deg['ep']} does not divide dp*cp")
    if "order" in par and not isinstance(par["order"], str):
        raise LayoutError("parallelism.order: expected a string")
    # The collector's rule that the scripts leave to it (docs/layout-format.md,
    # Groups): pp before other dimensions needs dp*cp/ep = dp.
    tokens = par.get("order", "tp-cp-ep-dp-pp").lower().split("-")
    if ("pp" in tokens and tokens[-1] != "pp" and
            deg["dp"] * deg["cp"] // deg["ep"] != deg["dp"]):
        raise LayoutError(f"parallelism.order: \"{par['order']}\" puts pp "
                          "before other dimensions")
    if "ranks" in layout:
        raise LayoutError("ranks: this fake does not check explicit placement")
    hosts = layout.get("hosts")
    if not isinstance(hosts, list) or not hosts:
        raise LayoutError("hosts: required list")
    for h in hosts:
        if not isinstance(h, str) or not HOST_RE.match(h):
            raise LayoutError(f"hosts: {h!r} is not a host name")
    if len(set(hosts)) != len(hosts):
        raise LayoutError("hosts: a host is listed twice")
    world = deg["tp"] * deg["cp"] * deg["pp"] * deg["dp"]
    if len(hosts) * gpn != world:
        raise LayoutError(f"hosts: {len(hosts)} hosts x {gpn} gpus = "
                          f"{len(hosts) * gpn} ranks, but tp*cp*pp*dp = {world}")
    if "rails" in layout:
        rails = layout["rails"]
        if (not isinstance(rails, list) or len(rails) != gpn or
                not all(isinstance(r, str) and NIC_RE.match(r) for r in rails)):
            raise LayoutError(f"rails: expected {gpn} NIC names")
    if "lease_seconds" in layout:
        integer(layout["lease_seconds"], "lease_seconds", 1, 2**32 - 1)
    for key in ("source", "owner"):
        if key in layout and not isinstance(layout[key], str):
            raise LayoutError(f"{key}: expected a string")
    return deg, len(hosts), world


class State:
    def __init__(self, token):
        self.token = token
        self.lock = threading.Lock()
        self.jobs = {}
        self.requests = []
        self.revision = 0


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "fake-collector"

    def log_message(self, fmt, *args):  # quiet: the test prints the record
        pass

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        path = self.path
        if self.command == "GET" and path == "/fake/requests":
            with st.lock:
                return self.reply(200, list(st.requests))
        with st.lock:
            st.requests.append({
                "method": self.command, "path": path,
                "authorization": self.headers.get("Authorization"),
                "content_type": self.headers.get("Content-Type"),
                "body": body})
        m = re.match(r"^/api/v1/jobs/([^/?]+)(/renew)?$", path)
        if not m or not JOB_RE.match(m.group(1)):
            return self.reply(404, {"error": f"no such endpoint: {path}"})
        job, renew = m.group(1), bool(m.group(2))
        if self.command == "GET" and not renew:
            with st.lock:
                entry = st.jobs.get(job)
            if entry is None:
                return self.reply(404, {"error": f"job: no layout {job}"})
            return self.reply(200, entry["view"])
        allowed = {"PUT": not renew, "DELETE": not renew, "POST": renew}
        if not allowed.get(self.command):
            return self.reply(405, {"error": f"{self.command} not allowed"})
        if st.token is not None and \
                self.headers.get("Authorization") != f"Bearer {st.token}":
            return self.reply(401, {"error": "missing or wrong bearer token"})
        with st.lock:
            if self.command == "DELETE":
                return self.reply(200, {"job": job,
                                        "deleted": st.jobs.pop(job, None)
                                        is not None})
            if self.command == "POST":
                if job not in st.jobs:
                    return self.reply(404, {"error": f"job: no layout {job}"})
                return self.reply(200, {"job": job})
        if not (self.headers.get("Content-Type") or "").startswith(
                "application/json"):
            return self.reply(400, {"error": "Content-Type must be "
                                    "application/json"})
        try:
            layout = json.loads(body)
            deg, hosts, world = validate(job, layout)
        except (ValueError, LayoutError) as e:
            return self.reply(400, {"error": str(e)})
        with st.lock:
            st.revision += 1
            code = 200 if job in st.jobs else 201
            st.jobs[job] = {"layout": layout, "view": {
                "job": job,
                # As the collector summarises it: cp and ep only when > 1.
                "parallelism": " ".join(
                    f"{d}={deg[d]}" for d in ("tp", "pp", "dp", "cp", "ep")
                    if d in ("tp", "pp", "dp") or deg[d] > 1),
                "ranks": world, "hosts": hosts}}
            return self.reply(code, {"job": job, "revision": st.revision,
                                     "warnings": []})

    do_GET = do_PUT = do_POST = do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port_file", required=True)
    ap.add_argument("--token_file")
    args = ap.parse_args()
    token = None
    if args.token_file:
        with open(args.token_file) as f:
            token = f.readline().strip()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.state = State(token)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
