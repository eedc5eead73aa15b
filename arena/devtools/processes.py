"""A Redis server and a PostgreSQL cluster of one's own, on free ports, to kill and restart.

For fault tests and ``bench/faults.py``: they start these, never touch the shared servers, and
break them for real (``kill -9``, a restart on the same port with nothing kept).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from arena.devtools.http_server import free_port


def _wait(check, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout:g} s")
        time.sleep(0.05)


class RedisServer:
    """``redis-server`` on a port of its own that it keeps across restarts; it keeps nothing
    on disk, so a restart comes back empty, as the shared one does."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],  # fmt: skip
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait(self.ping, f"redis-server on {self.port}")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """``kill -9``: every connection dropped, everything it held gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        self.kill()


class PostgresCluster:
    """A PostgreSQL cluster of its own (``initdb`` into a temporary folder, run as the
    ``postgres`` user when started as root), trust auth on 127.0.0.1 and a port of its own."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="arena-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.bin = Path(
            subprocess.run(
                ["pg_config", "--bindir"], capture_output=True, text=True, check=False
            ).stdout.strip()
            or Path(shutil.which("initdb") or "initdb").resolve().parent
        )
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            uid = pwd.getpwnam(self.user)
            os.chown(self.dir, uid.pw_uid, uid.pw_gid)

    def url(self, database: str, role: str = "postgres") -> str:
        return f"postgres://{role}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True)

    def init(self) -> None:
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync",
            "-E", "UTF8", "--locale=C",
        )  # fmt: skip

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "start")  # fmt: skip

    def kill(self) -> None:
        """``kill -9`` of the postmaster and its backends: every connection dropped mid-query;
        the next start recovers from the log."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text().split()[0])
        for proc in [pid, *self._backends(pid)]:  # its backends too, or they hold its memory
            try:
                os.kill(proc, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _wait(lambda: not self._listening() and not Path(f"/proc/{pid}").exists(), "the kill")
        pid_file.unlink(missing_ok=True)

    def _backends(self, postmaster: int) -> list[int]:
        found = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                    found.append(int(entry.name))
        return found

    def _listening(self) -> bool:
        import socket

        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
