"""The collector's HTTP write API, and a layout kept alive by a lease.

Stdlib only. Every request has a timeout; nothing here raises on a
collector that is down, slow or refusing: problems are logged once per
episode on the `fabricdiag` logger (and once more when they clear), because
the caller is a training job that must never stop for its monitoring.

    cfg = client.Config.from_env()            # FABRICDIAG_COLLECTOR, ...
    lease = client.Lease(client.Client(cfg), layout_doc, cfg.lease)
    lease.start()                              # PUT, then renew in a thread
    lease.wait_declared(3.0)
    ...
    lease.stop()                               # DELETE

The API (docs/http-api.md): PUT /api/v1/jobs/JOB with the layout (plus
lease_seconds, source, owner; FABRICDIAG_LABELS as its labels), POST /api/v1/jobs/JOB/renew, DELETE
/api/v1/jobs/JOB.
"""

import getpass
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

log = logging.getLogger("fabricdiag")

DEFAULT_LEASE = 120
DEFAULT_TIMEOUT = 2.0
MIN_LEASE = 2


class Config:
    """Where and how to reach the collector; see Config.from_env."""

    def __init__(self, collector=None, token_file=None, ca_file=None,
                 lease=DEFAULT_LEASE, timeout=DEFAULT_TIMEOUT, labels=None):
        self.collector = collector
        self.token_file = token_file
        self.ca_file = ca_file
        self.lease = lease
        self.timeout = timeout
        self.labels = labels or {}  # the layout's `labels` (its owners)

    @classmethod
    def from_env(cls, env=None):
        """Reads FABRICDIAG_COLLECTOR, FABRICDIAG_TOKEN_FILE, FABRICDIAG_CA_FILE,
        FABRICDIAG_LEASE, FABRICDIAG_TIMEOUT and FABRICDIAG_LABELS. A bad value
        is logged and replaced by its default; a bad collector URL leaves
        `collector` None (nothing will be declared).
        """
        env = os.environ if env is None else env
        cfg = cls(token_file=env.get("FABRICDIAG_TOKEN_FILE") or None,
                  ca_file=env.get("FABRICDIAG_CA_FILE") or None)
        url = env.get("FABRICDIAG_COLLECTOR", "").strip()
        if url:
            cfg.collector = normalize_url(url)
        cfg.lease = _env_number(env, "FABRICDIAG_LEASE", DEFAULT_LEASE, int, MIN_LEASE, 86400 * 7)
        cfg.timeout = _env_number(env, "FABRICDIAG_TIMEOUT", DEFAULT_TIMEOUT, float, 0.1, 60)
        cfg.labels = _env_labels(env)
        return cfg


LABEL_KEY = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")
MAX_LABELS = 16
MAX_LABEL_VALUE_BYTES = 128


def parse_labels(text):
    """"team=ml-infra,project=llama" -> {"team": "ml-infra", ...}, checked
    as the collector checks a layout's labels (docs/layout-format.md#labels);
    ValueError naming the label at fault."""
    labels = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not LABEL_KEY.match(key):
            raise ValueError("%r is not KEY=VALUE with KEY [a-z_][a-z0-9_]{0,62}" % (item,))
        if key in labels:
            raise ValueError("%s given twice" % key)
        size = len(value.encode("utf-8"))
        if not value or size > MAX_LABEL_VALUE_BYTES or \
                any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
            raise ValueError("%s: the value must be 1 to %d printable bytes"
                             % (key, MAX_LABEL_VALUE_BYTES))
        labels[key] = value
    if len(labels) > MAX_LABELS:
        raise ValueError("%d labels exceed the limit of %d" % (len(labels), MAX_LABELS))
    return labels


def _env_labels(env):
    # Bad labels are logged and left out: the job is still declared (the
    # collector would refuse the whole layout for them).
    try:
        return parse_labels(env.get("FABRICDIAG_LABELS", ""))
    except ValueError as e:
        log.error("fabricdiag: FABRICDIAG_LABELS: %s; declaring the job without labels", e)
        return {}


def _env_number(env, name, default, kind, low, high):
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
        if low <= value <= high:
            return value
    except ValueError:
        pass
    log.warning("fabricdiag: %s=%r is not a number in [%s, %s]; using %s",
                name, raw, low, high, default)
    return default


def normalize_url(url):
    """http(s)://host[:port] without a trailing slash, or None (logged)."""
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        log.error("fabricdiag: FABRICDIAG_COLLECTOR=%r is not an http:// or https:// "
                  "URL; the job's layout will not be declared", url)
        return None
    return "%s://%s%s" % (parts.scheme, parts.netloc, parts.path.rstrip("/"))


def owner():
    """user@host of this process, for `fabricdiag layout list`."""
    try:
        user = getpass.getuser()
    except Exception:  # no USER and no passwd entry (some containers)
        user = "uid%d" % os.getuid()
    return "%s@%s" % (user, socket.gethostname())


class Response:
    def __init__(self, status, body):
        self.status = status
        self.body = body  # the decoded JSON object, or {} when there is none

    def error(self):
        if isinstance(self.body, dict) and self.body.get("error"):
            return str(self.body["error"])
        return "HTTP %d" % self.status


class Unreachable(Exception):
    """The request got no HTTP answer: refused, timed out, TLS failure."""


class Client:
    """One collector's write API. Thread-safe (no shared mutable state)."""

    def __init__(self, config):
        self.config = config
        self._token = self._read_token()
        self._ssl = None
        if config.collector and config.collector.startswith("https://"):
            try:
                self._ssl = ssl.create_default_context(cafile=config.ca_file)
            except (OSError, ssl.SSLError) as e:
                log.error("fabricdiag: cannot use FABRICDIAG_CA_FILE=%s (%s); "
                          "trusting the system's CAs instead", config.ca_file, e)
                self._ssl = ssl.create_default_context()

    def _read_token(self):
        path = self.config.token_file
        if not path:
            return None
        try:
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            log.warning("fabricdiag: cannot read the token file FABRICDIAG_TOKEN_FILE=%s (%s); "
                        "sending without a token", path, e.strerror or e)
            return None
        if not token:
            log.warning("fabricdiag: the token file %s is empty; sending without a token", path)
            return None
        return token

    def request(self, method, path, body=None):
        """Returns a Response for any HTTP answer; raises Unreachable otherwise."""
        url = self.config.collector + path
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout,
                                        context=self._ssl) as resp:
                return Response(resp.status, _decode(resp.read()))
        except urllib.error.HTTPError as e:
            try:
                payload = e.read()
            except Exception:
                payload = b""
            return Response(e.code, _decode(payload))
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise Unreachable("%s %s: %s" % (method, url, reason)) from None
        except Exception as e:  # http.client oddities on a broken peer
            raise Unreachable("%s %s: %s" % (method, url, e)) from None

    def put_layout(self, job, doc):
        return self.request("PUT", "/api/v1/jobs/" + urllib.parse.quote(job, safe=""), doc)

    def renew(self, job, lease_seconds):
        return self.request("POST", "/api/v1/jobs/%s/renew" % urllib.parse.quote(job, safe=""),
                            {"lease_seconds": lease_seconds})

    def delete(self, job):
        return self.request("DELETE", "/api/v1/jobs/" + urllib.parse.quote(job, safe=""))


def _decode(payload):
    if not payload:
        return {}
    try:
        return json.loads(payload.decode("utf-8", "replace"))
    except ValueError:
        return {"error": payload[:200].decode("utf-8", "replace")}


class _Episodes:
    """Logs a problem when it starts or changes, and once when it clears."""

    def __init__(self, job):
        self.job = job
        self.current = None

    def problem(self, key, level, message):
        if key != self.current:
            log.log(level, "fabricdiag: job %s: %s", self.job, message)
            self.current = key

    def ok(self, message):
        if self.current is not None:
            log.info("fabricdiag: job %s: %s", self.job, message)
            self.current = None


class Lease:
    """A declared layout kept alive from a daemon thread.

    The thread PUTs the layout, then renews it every `lease / 3` seconds;
    a renewal answered 404 (the collector dropped the layout, e.g. after a
    restart without state or an expiry during an outage) re-PUTs it. While
    the collector is unreachable it retries at the same period. A 400 or
    401/403 answer to the PUT ends the thread: retrying would be refused
    the same way. stop() ends the thread and deletes the layout.
    """

    def __init__(self, client, doc, lease_seconds, source="python"):
        self.client = client
        self.job = doc["job"]
        self.lease_seconds = lease_seconds
        self.period = max(1.0, lease_seconds / 3.0)
        self.body = dict(doc, lease_seconds=lease_seconds, source=source, owner=owner())
        if client.config.labels and "labels" not in doc:
            self.body["labels"] = dict(client.config.labels)
        self.state = "pending"  # pending, declared, refused, stopped
        self.revision = None
        self.warnings = []
        self.renewals = 0
        self.puts = 0
        self.last_status = None
        self.thread_cpu_seconds = 0.0
        self.gather_seconds = None  # set by fabricdiag.torch.declare
        self.declare_seconds = None
        self._first = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._episodes = _Episodes(self.job)
        self._thread = None
        self._pid = os.getpid()

    def start(self):
        self._thread = threading.Thread(target=self._run, name="fabricdiag-lease", daemon=True)
        self._thread.start()

    def wait_declared(self, timeout):
        """Waits at most `timeout` s for the first PUT's outcome; True if declared."""
        self._first.wait(timeout)
        return self.state == "declared"

    def _run(self):
        try:
            self._put()
            self._first.set()
            while self.state != "refused" and not self._stop.wait(self.period):
                if self.state == "declared":
                    self._renew()
                else:
                    self._put()
                self.thread_cpu_seconds = time.thread_time()
        except Exception:  # a bug here must not reach the training job
            log.exception("fabricdiag: job %s: the lease thread failed", self.job)
        finally:
            self.thread_cpu_seconds = time.thread_time()
            self._first.set()

    def _put(self):
        try:
            resp = self.client.put_layout(self.job, self.body)
        except Unreachable as e:
            self._episodes.problem("unreachable", logging.WARNING,
                                   "collector unreachable (%s); training goes on, retrying "
                                   "every %.0f s" % (e, self.period))
            return
        self.puts += 1
        self.last_status = resp.status
        if resp.status in (200, 201):
            with self._lock:
                if self.state != "stopped":
                    self.state = "declared"
            self.revision = resp.body.get("revision") if isinstance(resp.body, dict) else None
            self.warnings = list(resp.body.get("warnings") or []) if isinstance(resp.body, dict) else []
            self._episodes.ok("declared again")
            log.info("fabricdiag: job %s declared (%d ranks, lease %d s, revision %s)",
                     self.job, len(self.body.get("ranks", [])), self.lease_seconds, self.revision)
            for w in self.warnings:
                log.warning("fabricdiag: job %s: collector warning: %s", self.job, w)
        elif resp.status in (400, 401, 403):
            with self._lock:
                if self.state != "stopped":
                    self.state = "refused"
            what = {400: "refused the layout", 401: "requires a token (set FABRICDIAG_TOKEN_FILE)",
                    403: "rejected the token"}[resp.status]
            self._episodes.problem("refused", logging.ERROR,
                                   "the collector %s: %s; not declaring this job"
                                   % (what, resp.error()))
        else:
            self._episodes.problem("http-%d" % resp.status, logging.WARNING,
                                   "declaring failed: %s; retrying every %.0f s"
                                   % (resp.error(), self.period))

    def _renew(self):
        try:
            resp = self.client.renew(self.job, self.lease_seconds)
        except Unreachable as e:
            self._episodes.problem("unreachable", logging.WARNING,
                                   "collector unreachable (%s); training goes on, retrying "
                                   "every %.0f s" % (e, self.period))
            return
        if resp.status == 200:
            self.renewals += 1
            self._episodes.ok("renewing again")
        elif resp.status == 404:
            log.info("fabricdiag: job %s: the collector no longer has the layout; declaring it again",
                     self.job)
            self._put()
        else:
            self._episodes.problem("renew-%d" % resp.status, logging.WARNING,
                                   "renewing failed: %s" % resp.error())

    def stop(self, delete=True, timeout=None):
        """Ends the renewals and deletes the layout; bounded by about 2 x timeout.

        Idempotent; does nothing in a forked child (the layout is its parent's).
        """
        if os.getpid() != self._pid:
            return
        timeout = self.client.config.timeout if timeout is None else timeout
        with self._lock:
            if self.state == "stopped":
                return
            was = self.state
            self.state = "stopped"
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if not delete or was == "refused":
            return
        done = threading.Event()

        def _delete():
            try:
                resp = self.client.delete(self.job)
                if resp.status == 200:
                    log.info("fabricdiag: job %s: layout deleted", self.job)
                else:
                    log.warning("fabricdiag: job %s: deleting the layout failed: %s; "
                                "it expires with its lease", self.job, resp.error())
            except Unreachable as e:
                log.warning("fabricdiag: job %s: cannot delete the layout (%s); "
                            "it expires with its lease", self.job, e)
            finally:
                done.set()

        t = threading.Thread(target=_delete, name="fabricdiag-delete", daemon=True)
        t.start()
        done.wait(timeout + 0.5)

    def stats(self):
        return {"job": self.job, "state": self.state, "puts": self.puts,
                "renewals": self.renewals, "thread_cpu_seconds": self.thread_cpu_seconds,
                "gather_seconds": self.gather_seconds, "declare_seconds": self.declare_seconds}
