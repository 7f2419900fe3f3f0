"""What the tests that start a server process share: waiting until it answers, and stopping it."""

from __future__ import annotations

import subprocess
import time
import urllib.request


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
