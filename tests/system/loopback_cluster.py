"""A fabricdiag cluster of real processes on loopback, for system tests.

One fabricdiag-sim writes a sysfs tree and `ethtool -S` files per simulated
node; one fabricdiag-agent per node reads its tree; a fabricdiag-collector
runs the analyzers; the fabricdiag CLI declares layouts and watches
findings. Switches the simulator serves over gNMI reach the collector through
fabricdiag-gnmi-bridge. Every process runs in its own session and stop_all()
ends them.

    cluster = System((sim, agent, collector, cli), work, interval=0.5,
                     bridge=bridge)  # bridge: only for start_bridge()
    cluster.use_tokens()  # optional: scoped tokens, before start_collector
    cluster.start_collector()
    cluster.cli_run("layout", "apply", "layout.yaml")
    ...
    cluster.stop_all()

`work` holds the logs (NAME.log), the state dir and analysis.yaml, which
start_collector() passes to the collector.
"""

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time

# A CPU spinner that ends itself after argv[1] seconds, so it is bounded even
# if the test that started it dies before stopping it.
_SPIN = ("import sys, time\n"
         "end = time.monotonic() + float(sys.argv[1])\n"
         "while time.monotonic() < end:\n"
         "    pass\n")


class System:
    def __init__(self, binaries, work, interval, bridge=None):
        self.sim, self.agent, self.collector, self.cli = binaries
        self.bridge = bridge
        self.work = work
        self.tokens = None  # name -> token file, once use_tokens() ran
        self.interval = interval
        self.procs = {}
        self.grpc = None
        self.http = None
        self.events = []  # (wall time, event dict)
        self.events_lock = threading.Lock()
        self.t0 = None
        # Added to every collector's and every CLI call's flags.
        self.collector_args = []
        self.cli_args = []

    # --- processes -------------------------------------------------------
    def spawn(self, name, argv):
        log = open(os.path.join(self.work, f"{name}.log"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log,
                                            start_new_session=True)
        return self.procs[name]

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs.pop(name, None)
        if p is None:
            return
        try:
            p.send_signal(sig)
            p.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()

    def stop_all(self):
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)

    def start_spinners(self, count, seconds):
        """Starts `count` processes that each keep a CPU busy for at most
        `seconds`; stop_spinners() (or stop_all()) ends them sooner."""
        for i in range(count):
            self.spawn(f"spin-{i}", [sys.executable, "-c", _SPIN,
                                     str(seconds)])

    def stop_spinners(self):
        """Kills the spinners; returns the CPU seconds they used."""
        used = 0.0
        for name in [n for n in self.procs if n.startswith("spin-")]:
            try:
                with open(f"/proc/{self.procs[name].pid}/stat") as f:
                    # utime and stime (fields 14, 15), after the comm field.
                    fields = f.read().rsplit(")", 1)[1].split()
                used += (int(fields[11]) + int(fields[12])) / os.sysconf(
                    "SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
            self.kill(name)
        return used

    def log_tail(self, name, lines=15):
        try:
            with open(os.path.join(self.work, f"{name}.log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode(
                    errors="replace")
        except OSError:
            return "(no log)"

    def _secret(self, name, text):
        path = os.path.join(self.work, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def use_tokens(self):
        """Runs the collector with scoped tokens (--auth_token_file): the CLI
        calls with an admin token, the gNMI bridge reads the topology with
        a read-only one. Call before start_collector()."""
        tokens = {"operator": ("admin", secrets.token_hex(16)),
                  "bridge": ("read", secrets.token_hex(16))}
        self._secret("tokens", "".join(f"{n} {scope} {tok}\n" for n, (
            scope, tok) in tokens.items()))
        self.tokens = {n: self._secret(f"{n}.token", tok + "\n")
                       for n, (_, tok) in tokens.items()}

    def _token_flag(self, name):
        return [f"--token_file={self.tokens[name]}"] if self.tokens else []

    def start_collector(self, port=0):
        argv = [self.collector, f"--listen=127.0.0.1:{port}",
                "--http_listen=127.0.0.1:0",
                f"--state_dir={self.work}/state",
                f"--analysis_config={self.work}/analysis.yaml",
                f"--analysis_interval={int(self.interval * 1000)}ms",
                *self.collector_args]
        if self.tokens:
            argv.append(f"--auth_token_file={self.work}/tokens")
        log = os.path.join(self.work, "collector.log")
        # Only this process's lines: a restart appends to the same log.
        offset = os.path.getsize(log) if os.path.exists(log) else 0
        self.grpc = None
        self.spawn("collector", argv)
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(log, "rb") as f:
                f.seek(offset)
                for line in f.read().decode(errors="replace").splitlines():
                    if "gRPC on port" in line:
                        self.grpc = int(line.split("gRPC on port")[1].split()[0].rstrip(",;."))
                    if "HTTP on port" in line:
                        self.http = int(line.split("HTTP on port")[1].split()[0].rstrip(",;."))
                if self.grpc and (port == 0 or self.grpc == port):
                    return
            time.sleep(0.05)
        raise AssertionError("collector did not start:\n" +
                             self.log_tail("collector"))

    def start_sim(self, last_node, tick=None, extra=()):
        """Starts fabricdiag-sim on work/layout.yaml, topology.yaml and
        scenario.json, advancing its counters every `tick` seconds (default:
        the interval), with `extra` flags (e.g. --gnmi_*); returns, once it
        wrote `last_node`'s tree, the wall time (time.time()) of its clock's
        t=0."""
        w = self.work
        tick_ms = int((tick or self.interval) * 1000)
        self.spawn("sim", [self.sim, f"--layout={w}/layout.yaml",
                           f"--topology={w}/topology.yaml",
                           f"--scenario={w}/scenario.json", f"--out={w}/fabric",
                           f"--interval={tick_ms}ms", *extra])
        deadline = time.time() + 20
        start = None
        while (start is None or
               not os.path.isdir(f"{w}/fabric/{last_node}/sys/class/net")):
            if time.time() > deadline:
                raise AssertionError("sim wrote no tree or no start time:\n"
                                     + self.log_tail("sim"))
            if start is None:
                with open(os.path.join(w, "sim.log"), "rb") as f:
                    m = re.search(rb"t=0 at \S+ \(unix ([0-9.]+)\)", f.read())
                    start = float(m.group(1)) if m else None
            time.sleep(0.05)
        return start

    def start_agent(self, node):
        self.spawn(f"agent-{node}", [
            self.agent, f"--node={node}",
            f"--sysfs_root={self.work}/fabric/{node}/sys",
            f"--ethtool_dir={self.work}/fabric/{node}/ethtool",
            "--listen=127.0.0.1:0", f"--interval={int(self.interval * 1000)}ms",
            f"--collector=127.0.0.1:{self.grpc}"])

    def start_bridge(self):
        """Starts fabricdiag-gnmi-bridge, reading the topology from the
        collector (with the bridge's token under use_tokens()) every second
        and reporting every interval; returns its /metrics port."""
        log = os.path.join(self.work, "bridge.log")
        offset = os.path.getsize(log) if os.path.exists(log) else 0
        self.spawn("bridge", [
            self.bridge, f"--collector=127.0.0.1:{self.grpc}",
            "--http_listen=127.0.0.1:0",
            f"--interval={int(self.interval * 1000)}ms",
            "--topology_refresh=1s", *self._token_flag("bridge")])
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(log, "rb") as f:
                f.seek(offset)
                m = re.search(rb"serving /metrics on port (\d+)", f.read())
            if m:
                return int(m.group(1))
            time.sleep(0.05)
        raise AssertionError("bridge did not start:\n" +
                             self.log_tail("bridge"))

    def cli_run(self, *args, check=True):
        r = subprocess.run([self.cli, f"--collector=127.0.0.1:{self.grpc}",
                            *self._token_flag("operator"), *self.cli_args,
                            *args],
                           capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            raise AssertionError(f"fabricdiag {' '.join(args)}: exit "
                                 f"{r.returncode}: {r.stderr}")
        return r

    def start_watch(self):
        p = subprocess.Popen([self.cli, f"--collector=127.0.0.1:{self.grpc}",
                              *self._token_flag("operator"), *self.cli_args,
                              "watch", "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
        self.procs["watch"] = p

        def read():
            for line in p.stdout:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                with self.events_lock:
                    self.events.append((time.time() - self.t0, e))

        threading.Thread(target=read, daemon=True).start()

    def now(self):
        return time.time() - self.t0

    def sleep_until(self, t):
        while self.now() < t:
            time.sleep(0.05)

    def active(self):
        r = self.cli_run("findings", "--json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None
