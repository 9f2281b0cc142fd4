"""A strict stand-in for the collector's HTTP write API, for the Python tests.

Implements PUT/POST renew/DELETE /api/v1/jobs/{job} as docs/http-api.md
describes them, validates a PUT body the way the collector does
(docs/layout-format.md: known keys only, integer types, tp*cp*pp*dp equal
to the ranks, ep dividing dp*cp, every rank once, no GPU twice), expires
leases, and records every request. Runs in a thread on 127.0.0.1, port 0.

    with FakeCollector(token="s3cret") as fc:
        env = {"FABRICDIAG_COLLECTOR": fc.url}
        ...
        fc.requests("PUT")       # [Request(method, path, headers, body, time)]

Tests that only need a URL and the stored layouts use the base URL and
layout(job), which is what a test against the real collector binary
(GET /api/v1/jobs/JOB) would need as well.
"""

import collections
import http.server
import json
import os
import re
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testing"))
from ports import free_port  # noqa: E402

Request = collections.namedtuple("Request", "method path headers body time")

_JOB = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")
_NIC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}\Z")
_TOP = {"job", "gpus_per_node", "nvlink_domain", "parallelism", "hosts", "rails", "ranks",
        "model", "labels", "lease_seconds", "source", "owner"}
_PAR = {"tp", "pp", "dp", "cp", "ep", "order"}
_MODEL = {"params", "hidden", "layers", "seq_len", "micro_batch", "micro_batches",
          "dtype_bytes", "experts", "top_k"}


class Invalid(Exception):
    pass


def _int(field, v, low=0, high=4294967295):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Invalid("%s: expected an integer, got %r" % (field, v))
    if not low <= v <= high:
        raise Invalid("%s: %d is out of range [%d, %d]" % (field, v, low, high))
    return v


def validate(job, body):
    """Raises Invalid("<field>: ...") unless the collector would accept it."""
    if not isinstance(body, dict):
        raise Invalid("layout: expected a JSON object")
    for k in body:
        if k not in _TOP:
            raise Invalid("%s: unknown key" % k)
    if body.get("job") != job:
        raise Invalid("job: %r does not match the URL's job %r" % (body.get("job"), job))
    if not isinstance(job, str) or not _JOB.match(job):
        raise Invalid("job: %r must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}" % (job,))
    gpn = _int("gpus_per_node", body.get("gpus_per_node"), 1, 1024)
    if "nvlink_domain" in body:
        nvl = _int("nvlink_domain", body["nvlink_domain"], 1, 262144)
        if gpn % nvl and nvl % gpn:
            raise Invalid("nvlink_domain: %d is neither a divisor nor a multiple of "
                          "gpus_per_node = %d" % (nvl, gpn))
    par = body.get("parallelism")
    if not isinstance(par, dict):
        raise Invalid("parallelism: required mapping")
    for k in par:
        if k not in _PAR:
            raise Invalid("parallelism.%s: unknown key" % k)
    deg = {}
    for d in ("tp", "pp", "dp"):
        if d not in par:
            raise Invalid("parallelism.%s: required" % d)
        deg[d] = _int("parallelism." + d, par[d], 1, 262144)
    for d in ("cp", "ep"):
        deg[d] = _int("parallelism." + d, par.get(d, 1), 1, 262144)
    world = deg["tp"] * deg["cp"] * deg["pp"] * deg["dp"]
    if (deg["dp"] * deg["cp"]) % deg["ep"]:
        raise Invalid("parallelism.ep: %d does not divide dp*cp = %d"
                      % (deg["ep"], deg["dp"] * deg["cp"]))
    if "order" in par:
        tokens = [t.lower() for t in str(par["order"]).split("-")]
        if len(set(tokens)) != len(tokens) or not set(tokens) <= set(deg):
            raise Invalid("parallelism.order: %r is not an order string" % par["order"])
        for d in deg:
            if d not in tokens and deg[d] != 1:
                raise Invalid("parallelism.order: omits %s, whose degree is %d" % (d, deg[d]))
    hosts = body.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, list) or not all(isinstance(h, str) and _NODE.match(h)
                                                  for h in hosts):
            raise Invalid("hosts: expected a list of host names")
        if len(set(hosts)) != len(hosts):
            raise Invalid("hosts: a host is listed twice")
    rails = body.get("rails")
    if rails is not None:
        if not isinstance(rails, list) or len(rails) != gpn:
            raise Invalid("rails: %s NICs given, but gpus_per_node = %d"
                          % (len(rails) if isinstance(rails, list) else "no", gpn))
    ranks = body.get("ranks")
    if ranks is None:
        if hosts is None:
            raise Invalid("hosts: required when ranks is not given")
        if len(hosts) * gpn != world:
            raise Invalid("hosts: %d hosts x %d gpus = %d ranks, but tp*cp*pp*dp = %d"
                          % (len(hosts), gpn, len(hosts) * gpn, world))
    else:
        if not isinstance(ranks, list) or len(ranks) != world:
            raise Invalid("ranks: %s entries, but tp*cp*pp*dp = %d"
                          % (len(ranks) if isinstance(ranks, list) else "no", world))
        seen, gpus = {}, {}
        for i, r in enumerate(ranks):
            f = "ranks[%d]" % i
            if not isinstance(r, dict):
                raise Invalid("%s: expected a mapping" % f)
            for k in r:
                if k not in ("rank", "host", "gpu", "nic"):
                    raise Invalid("%s.%s: unknown key" % (f, k))
            rank = _int(f + ".rank", r.get("rank"), 0, world - 1)
            if rank in seen:
                raise Invalid("%s.rank: rank %d is placed twice (also ranks[%d])"
                              % (f, rank, seen[rank]))
            seen[rank] = i
            host = r.get("host")
            if not isinstance(host, str) or not _NODE.match(host):
                raise Invalid("%s.host: %r is not a valid host name" % (f, host))
            if hosts is not None and host not in hosts:
                raise Invalid("%s.host: %r is not in hosts" % (f, host))
            gpu = _int(f + ".gpu", r.get("gpu"), 0, gpn - 1)
            if (host, gpu) in gpus:
                raise Invalid("%s: %s gpu %d is already used by rank %d"
                              % (f, host, gpu, gpus[(host, gpu)]))
            gpus[(host, gpu)] = rank
            if "nic" in r and (not isinstance(r["nic"], str) or not _NIC.match(r["nic"])):
                raise Invalid("%s.nic: %r is not a valid NIC name" % (f, r["nic"]))
    model = body.get("model")
    if model is not None:
        if not isinstance(model, dict):
            raise Invalid("model: expected a mapping")
        for k in model:
            if k not in _MODEL:
                raise Invalid("model.%s: unknown key" % k)
    labels = body.get("labels")
    if labels is not None and (not isinstance(labels, dict) or
                               not all(isinstance(v, str) for v in labels.values())):
        raise Invalid("labels: expected a mapping of strings")
    if "lease_seconds" in body:
        _int("lease_seconds", body["lease_seconds"], 1, 10 ** 7)
    for k in ("source", "owner"):
        if k in body and not isinstance(body[k], str):
            raise Invalid("%s: expected a string" % k)


class FakeCollector:
    """The fake server. mode: "ok", or "hang" (accepts, never answers);
    tls: (certificate, key) files to serve https://."""

    def __init__(self, token=None, mode="ok", tls=None):
        self.token = token
        self.mode = mode
        self.layouts = {}  # job -> (body, expiry or None, revision)
        self.revision = 0
        self.forced = {}  # method -> (status, body): answer this instead
        self._requests = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = None
                if raw:
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = raw
                with fake._lock:
                    fake._requests.append(Request(self.command, self.path,
                                                  dict(self.headers), body, time.monotonic()))
                if fake.mode == "hang":
                    fake._release.wait(60)
                    return
                status, obj = fake._respond(self.command, self.path, self.headers, body)
                self._answer(status, obj)

            do_PUT = do_POST = do_DELETE = do_GET = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        if tls is not None:  # (certificate file, key file)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
            self.url = "https://127.0.0.1:%d" % self.port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _respond(self, method, path, headers, body):
        now = time.monotonic()
        with self._lock:
            for job, (_, expiry, _) in list(self.layouts.items()):
                if expiry is not None and expiry < now:
                    del self.layouts[job]
            if method in self.forced:
                return self.forced[method]
            m = re.match(r"/api/v1/jobs/([^/]+)(/renew)?\Z", path)
            if not m:
                return 404, {"error": "no such path"}
            job, renew = m.group(1), m.group(2)
            if method == "GET" and not renew:
                if job not in self.layouts:
                    return 404, {"error": "job %s: not declared" % job}
                return 200, self.layouts[job][0]
            if method != "GET" and self.token is not None:
                if headers.get("Authorization") != "Bearer " + self.token:
                    return 401, {"error": "a valid bearer token is required"}
            if method == "PUT" and not renew:
                try:
                    validate(job, body)
                except Invalid as e:
                    return 400, {"error": str(e)}
                lease = body.get("lease_seconds")
                fresh = job not in self.layouts
                self.revision += 1
                self.layouts[job] = (body, now + lease if lease else None, self.revision)
                return (201 if fresh else 200), {"job": job, "revision": self.revision,
                                                 "warnings": []}
            if method == "POST" and renew:
                if job not in self.layouts:
                    return 404, {"error": "job %s: not declared" % job}
                lease = (body or {}).get("lease_seconds") or self.layouts[job][0].get(
                    "lease_seconds")
                b, _, rev = self.layouts[job]
                self.layouts[job] = (b, now + lease if lease else None, rev)
                return 200, {"job": job, "revision": rev}
            if method == "DELETE" and not renew:
                existed = self.layouts.pop(job, None) is not None
                return 200, {"deleted": existed}
            return 405, {"error": "method not allowed"}

    def requests(self, method=None):
        with self._lock:
            return [r for r in self._requests if method is None or r.method == method]

    def layout(self, job):
        """The stored layout of job, None when absent or its lease expired."""
        with self._lock:
            entry = self.layouts.get(job)
            if entry is None or (entry[1] is not None and entry[1] < time.monotonic()):
                return None
            return entry[0]

    def wait_for(self, predicate, timeout):
        """Polls predicate() until it is true or timeout s passed; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.02)

    def close(self):
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def refused_url():
    """A URL on which nothing listens (connection refused): a port no test
    gets and no server of ours listens on while this process runs."""
    return "http://127.0.0.1:%d" % free_port()
