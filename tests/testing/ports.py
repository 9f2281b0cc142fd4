"""Ports for the servers a test starts, that nothing else takes first.

A port found by binding port 0 and letting it go lies in the kernel's
ephemeral range: the range it also gives every outgoing connection and
every other test's port-0 bind, so between the test letting the port go and
its server binding it another process can take it (seen in CI as a
server's "address already in use"). The ports handed out here lie outside
that range, and each is held by a lock file for the life of the process
that took it, so that tests running side by side (ctest -j) never hand out
the same port. A port some server already listens on is skipped. The lock
files (empty, one per port ever handed out) stay: removing one another
process holds would let a third process lock the port anew.

    sys.path.insert(0, <repo>/tests/testing)
    from ports import free_port, free_port_range
"""

import errno
import fcntl
import os
import random
import socket
import tempfile

LOCK_DIR = os.path.join(tempfile.gettempdir(), "fabricdiag-test-ports")
# Never below this: well-known and registered services' ports.
LOWEST = 10000
HIGHEST = 65535

# port -> the descriptor of the lock file holding it, kept until the process
# exits (the kernel drops the lock with it, whatever way the process ends;
# not inherited by the servers the test starts).
_held = {}


def ephemeral_range(path="/proc/sys/net/ipv4/ip_local_port_range"):
    """(low, high) of the kernel's ephemeral ports; Linux's default when
    it cannot be read."""
    try:
        with open(path, encoding="ascii") as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def candidate_ranges(ephemeral=None):
    """The [first, last] ranges free ports are taken from: LOWEST..HIGHEST
    without the ephemeral range. A machine whose ephemeral range leaves
    fewer than 2,000 ports out is given every port from LOWEST up (the race
    is then possible again, if rare)."""
    low, high = ephemeral or ephemeral_range()
    ranges = []
    if low - 1 >= LOWEST:
        ranges.append((LOWEST, low - 1))
    if high + 1 <= HIGHEST:
        ranges.append((max(high + 1, LOWEST), HIGHEST))
    if sum(last - first + 1 for first, last in ranges) < 2000:
        ranges = [(LOWEST, HIGHEST)]
    return ranges


def _make_lock_dir():
    """LOCK_DIR, shared by every user's tests; RuntimeError when no lock
    file can be made there (a port could then be no test's alone)."""
    try:
        os.makedirs(LOCK_DIR, exist_ok=True)
    except OSError as e:
        raise RuntimeError(f"cannot make {LOCK_DIR} for test ports: {e}")
    try:
        os.chmod(LOCK_DIR, 0o1777)
    except OSError:
        pass  # another user's: it made it shared
    if not os.access(LOCK_DIR, os.W_OK | os.X_OK):
        raise RuntimeError(f"cannot make lock files in {LOCK_DIR}")


def _lock(port):
    """Holds `port` for this process: True when no other process holds it."""
    if port in _held:
        return False
    if not _held:
        _make_lock_dir()
    try:
        # Read-only: a lock file another user made is locked all the same.
        fd = os.open(os.path.join(LOCK_DIR, str(port)),
                     os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EACCES):
            return False
        raise
    _held[port] = fd
    return True


def _unlock(port):
    fd = _held.pop(port, None)
    if fd is not None:
        os.close(fd)


def _bindable(port, host="127.0.0.1"):
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port_range(count, attempts=2000, ranges=None):
    """`count` consecutive ports on 127.0.0.1, free now and held for this
    process until it exits; the first. Raises RuntimeError when no such
    ports are found."""
    ranges = ranges or candidate_ranges()
    spans = [(first, last - count + 1) for first, last in ranges
             if last - first + 1 >= count]
    if not spans:
        raise RuntimeError(f"no range holds {count} consecutive ports")
    weights = [last - first + 1 for first, last in spans]
    for _ in range(attempts):
        first, last = random.choices(spans, weights)[0]
        base = random.randint(first, last)
        taken = []
        for port in range(base, base + count):
            if not _lock(port):
                break
            taken.append(port)
            if not _bindable(port):
                break
        else:
            return base
        for port in taken:
            _unlock(port)
    raise RuntimeError(f"no {count} consecutive free ports in {ranges}")


def free_port():
    """A port on 127.0.0.1, free now and held for this process until it
    exits."""
    return free_port_range(1)
