"""Real processes to kill and restart: the app under daphne, a Celery worker or beat, and a
Redis server and a PostgreSQL cluster of one's own, each on a port it keeps across restarts.

For the test suite and ``bench/faults.py``: they start these, never touch the shared servers,
and break them for real (``kill -9``, a restart on the same port with nothing kept).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from arena.devtools.http_server import free_port


def _wait(check, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout:g} s")
        time.sleep(0.05)


ROOT = Path(__file__).resolve().parent.parent.parent


class DaphneServer:
    """The app under daphne in its own process, with ``env``, on a port of its own."""

    def __init__(self, log: Path, *, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.log = open(log, "w")  # noqa: SIM115
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "arena.asgi:application",
            ],  # fmt: skip
            env=self.env,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/leaderboard/", timeout=2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    raise RuntimeError(f"daphne did not start; see {self.log.name}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        """``kill -9``: no shutdown, every socket dropped at once."""
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.log.close()


class CeleryProcess:
    """``celery -A arena worker`` (threads, the README's shape) or ``celery -A arena beat``."""

    def __init__(
        self, kind: str, log: Path, *, env: dict[str, str], queues: str = "", concurrency: int = 8
    ) -> None:
        self.kind, self.log_path, self.env, self.queues = kind, log, env, queues
        self.concurrency = concurrency
        self.proc: subprocess.Popen | None = None
        self.schedule = Path(tempfile.mkdtemp(prefix="arena-beat-")) / "schedule"

    def start(self) -> None:
        args = [sys.executable, "-m", "celery", "-A", "arena", self.kind, "-l", "warning"]
        if self.kind == "worker":
            args += ["-Q", self.queues, "-P", "threads", "-c", str(self.concurrency),
                     "--without-gossip",
                     "--without-mingle", "--without-heartbeat"]  # fmt: skip
        else:
            args += ["--schedule", str(self.schedule)]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                args, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """``kill -9`` mid-whatever: no ack, no cleanup."""
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, signal.SIGQUIT)  # cold: stalled streams need not finish
        shutil.rmtree(self.schedule.parent, ignore_errors=True)


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a child for good (before the database it uses is dropped)."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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


class AppStack:
    """The whole app on a Redis of its own: daphne, Celery workers and beat, with ``env``
    (which names the database). Logs go to ``logs/<name>-*.log``."""

    def __init__(self, env: dict[str, str], redis: RedisServer, *, logs: Path, name: str):
        self.env, self.redis, self.logs, self.name = env, redis, logs, name
        self.daphne: DaphneServer | None = None
        self.workers: list[CeleryProcess] = []
        self.beat: CeleryProcess | None = None

    def start(self) -> AppStack:
        try:
            self.daphne = DaphneServer(self.logs / f"{self.name}-daphne.log", env=self.env)
            self.daphne.start()
            self.start_worker()
            self.beat = CeleryProcess("beat", self.logs / f"{self.name}-beat.log", env=self.env)
            self.beat.start()
        except Exception:
            self.stop()
            raise
        return self

    def start_worker(self, queues: str = "generation,default") -> CeleryProcess:
        """Another worker (as a supervisor restarting a killed one would), or one of a GPU
        pool's own (``queues``: its queue)."""
        log = self.logs / f"{self.name}-worker-{len(self.workers) + 1}.log"
        log.write_text("")
        worker = CeleryProcess("worker", log, env=self.env, queues=queues)
        worker.start()
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for proc in [*self.workers, self.beat, self.daphne]:
            if proc is not None:
                proc.stop()
        self.redis.stop()


APP_ROLE = "arena_app"


def database_create(cluster: PostgresCluster, env: dict[str, str], *, seed: str) -> str:
    """Database "arena" on the cluster, migrated and granted to APP_ROLE as its owner would,
    then ``seed`` (Python, run by ``manage.py shell``) run; what the seed printed."""
    import psycopg

    with psycopg.connect(cluster.url("postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE arena")
        conn.execute(f"CREATE ROLE {APP_ROLE} LOGIN")
    owner = {**env, "DATABASE_URL": cluster.url("arena")}
    owner.pop("REDIS_URL", None)  # the embedded default: nothing of this needs Redis
    # One process for all three steps: each start of the app costs seconds.
    script = (
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        f"call_command('grant_app_role', {APP_ROLE!r})\n" + seed
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        env=owner, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout
