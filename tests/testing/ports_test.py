#!/usr/bin/env python3
"""The test ports of ports.py: outside the ephemeral range, never one a
server listens on, never the same to two processes, given back when the
process that held it exits."""

import os
import socket
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ports  # noqa: E402


def held_by_child(port_range, hold=True):
    """Starts a process that takes one port of `port_range` and, when
    `hold`, keeps it until its stdin closes; (process, its port)."""
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import ports; "
            f"print(ports.free_port_range(1, ranges=[{port_range!r}]), "
            "flush=True); " + ("sys.stdin.read()" if hold else ""))
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


class PortsTest(unittest.TestCase):
    def setUp(self):
        # A span of ports of this test's own, away from the others'.
        self.base = ports.free_port_range(64)
        for port in range(self.base, self.base + 64):
            ports._unlock(port)

    def test_ports_lie_outside_the_ephemeral_range(self):
        low, high = ports.ephemeral_range()
        for _ in range(50):
            port = ports.free_port()
            self.assertGreaterEqual(port, ports.LOWEST)
            self.assertFalse(low <= port <= high, port)

    def test_candidate_ranges_leave_the_ephemeral_range_out(self):
        self.assertEqual(ports.candidate_ranges((32768, 60999)),
                         [(10000, 32767), (61000, 65535)])
        self.assertEqual(ports.candidate_ranges((1024, 60000)),
                         [(60001, 65535)])
        self.assertEqual(ports.candidate_ranges((10000, 65535)),
                         [(10000, 65535)])  # too few left: every port
        self.assertEqual(ports.ephemeral_range("/nonexistent"),
                         (32768, 60999))

    def test_one_process_never_gets_a_port_twice(self):
        span = (self.base, self.base + 4)
        got = [ports.free_port_range(1, ranges=[span]) for _ in range(5)]
        self.assertEqual(sorted(got), list(range(self.base, self.base + 5)))
        with self.assertRaises(RuntimeError):
            ports.free_port_range(1, attempts=50, ranges=[span])

    def test_a_port_a_server_listens_on_is_skipped(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", self.base))
            s.listen()
            with self.assertRaises(RuntimeError):
                ports.free_port_range(1, attempts=20,
                                      ranges=[(self.base, self.base)])
            self.assertEqual(
                ports.free_port_range(1, ranges=[(self.base,
                                                  self.base + 1)]),
                self.base + 1)
        # Freed by the listener, and not held by the failed attempts.
        self.assertEqual(
            ports.free_port_range(1, ranges=[(self.base, self.base)]),
            self.base)

    def test_another_process_never_gets_a_held_port(self):
        child, theirs = held_by_child((self.base, self.base))
        try:
            self.assertEqual(theirs, self.base)
            with self.assertRaises(RuntimeError):
                ports.free_port_range(1, attempts=20,
                                      ranges=[(self.base, self.base)])
            self.assertEqual(
                ports.free_port_range(2, ranges=[(self.base,
                                                  self.base + 2)]),
                self.base + 1)
        finally:
            child.stdin.close()
            child.wait(timeout=10)

    def test_a_port_is_given_back_when_its_process_exits(self):
        child, theirs = held_by_child((self.base + 10, self.base + 10),
                                      hold=False)
        self.assertEqual(child.wait(timeout=10), 0)
        self.assertEqual(theirs, self.base + 10)
        self.assertEqual(
            ports.free_port_range(1, ranges=[(self.base + 10,
                                              self.base + 10)]),
            self.base + 10)

    def test_consecutive_ports_skip_a_span_with_one_taken(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", self.base + 21))
            s.listen()
            base = ports.free_port_range(3, ranges=[(self.base + 20,
                                                     self.base + 24)])
        self.assertEqual(base, self.base + 22)

    def test_no_lock_directory_is_a_clear_error(self):
        # Not a port handed out unheld, nor 2,000 attempts that say the
        # ports are all taken.
        code = (f"import sys; sys.path.insert(0, {HERE!r}); import ports; "
                "ports.LOCK_DIR = '/dev/null/ports'; ports.free_port()")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=10)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("RuntimeError: cannot make /dev/null/ports for test "
                      "ports", p.stderr)


if __name__ == "__main__":
    unittest.main()
