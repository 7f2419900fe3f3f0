"""A real PostgreSQL server for tests: Debian's binaries, `initdb` into a temporary folder, `pg_ctl` on a
free port. As root the server runs as the `postgres` user (PostgreSQL refuses to run as root).
`make test` installs Debian's postgresql package when it is missing."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.servers import free_port


def binaries() -> Path | None:
    """The folder of initdb/pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin (newest)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(folders[-1]) if folders else None


class PostgresServer:
    """initdb + pg_ctl start on 127.0.0.1; stop()/start() for the tests of a server that goes away."""

    def __init__(self) -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise FileNotFoundError("no PostgreSQL (make test installs it: apt-get install postgresql)")
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="attention-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        self.start()
        self._count = 0

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def processes(self) -> list[int]:
        """The postmaster's pid and its children's (the backends, the checkpointer, …)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False)
        return [postmaster, *map(int, children.stdout.split())]

    def freeze(self) -> None:
        """A server that stops answering without closing anything (a frozen host, a network cut):
        SIGSTOP to the postmaster and every child. Its sockets stay open; nothing answers."""
        for pid in self.processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.processes():
            os.kill(pid, signal.SIGCONT)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database's URL."""
        import psycopg

        self._count += 1
        name = f"lessons_{os.getpid()}_{self._count}_{int(time.time() * 1000) % 100000}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
