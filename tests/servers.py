"""What the tests that start a server process share: a port for it, waiting until it answers, stopping it."""

from __future__ import annotations

import itertools
import os
import random
import socket
import subprocess
import time
import urllib.request

LOWEST = 10_000  # the ports handed out lie between this and the first port the kernel picks itself


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _ports() -> itertools.cycle[int]:
    """This process's ports, a slice of its own per xdist worker (gw0, gw1, ...), from a random place in it."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    size = (_ephemeral_start() - LOWEST) // max(workers, worker + 1)
    first = LOWEST + worker * size
    start = random.randrange(size)
    return itertools.cycle([*range(first + start, first + size), *range(first, first + start)])


_PORTS = _ports()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing is bound to, for a server a test starts.

    Not a port the kernel picks (bind to port 0, then close): that one is free only until it is closed,
    and the kernel gives ports from the same range to every outgoing connection (Chromium's, a test's
    client's), so one of those could take it before the server binds it (a fresh clone's run once failed
    so: "[Errno 98] address already in use"). The ports here lie below that range, where the kernel puts
    nothing unasked, and each xdist worker takes them from a slice of its own, so no two workers of a
    run try the same one; a port something holds already is skipped."""
    for _ in range(1000):
        port = next(_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port below the kernel's ephemeral range")


def answers(url: str, proc: subprocess.Popen[bytes], seconds: float, pause: float = 0.1) -> bool:
    """Polls `url` (GET, 1 s each) until it answers 200: True; False, with `proc` killed, when
    `proc` exits first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            return False
        time.sleep(pause)


def stop(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Asks `proc` to end; kills it after `seconds`."""
    proc.terminate()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
