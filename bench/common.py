"""What the benchmark scripts share: their own database, percentiles and verdicts, the child
processes they start (Celery workers, servers) and the options that size them, mock models and
signed-in raters."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CELERY = ("celery", "-A", "arena")


# Options ------------------------------------------------------------------------------------


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """The options of a bench that loads servers of its own: how many daphne processes, and
    the folder py-spy writes each process's samples to (their tops: bench/stacks.py)."""
    parser.add_argument("--servers", type=int, default=2, help="daphne processes")
    parser.add_argument("--profile", type=Path, help="py-spy each process into this folder")


# Database -----------------------------------------------------------------------------------


def django_environment(*, database: str) -> None:
    """The settings a bench's Django runs under, before it is set up: its own PostgreSQL
    database unless DATABASE_URL names one."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "arena.settings"
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{database}")


def celery_environment(*, name: str, database: str, redis_db: int) -> None:
    """The environment of a bench that runs battles through a real Celery worker: its own
    database, Redis db and queues, so no other worker on the same Redis takes its tasks. Call
    it before Django is set up; what the caller's environment already says wins."""
    django_environment(database=database)
    os.environ.setdefault("REDIS_URL", f"redis://127.0.0.1:6379/{redis_db}")
    os.environ.setdefault("GENERATION_MODE", "celery")
    os.environ["GENERATION_QUEUE"] = f"bench-{name}-generation"
    os.environ["CELERY_DEFAULT_QUEUE"] = f"bench-{name}-default"
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    # As the README's production shape: each process keeps its database connection.
    os.environ.setdefault("DATABASE_CONN_MAX_AGE", "60")


def ensure_database(*, require_postgres: bool = False) -> bool:
    """Create the PostgreSQL database DATABASE_URL names if it is missing; True if created."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    if not url.startswith("postgres"):
        if require_postgres:
            raise SystemExit("this bench needs PostgreSQL (DATABASE_URL=postgres://...)")
        return False
    base, name = url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        if conn.execute("select 1 from pg_database where datname = %s", [name]).fetchone():
            return False
        conn.execute(f'create database "{name}"')
        return True


def setup_database(*, require_postgres: bool = False) -> bool:
    """The bench's database made if missing, Django set up and the database migrated; True if
    the database was made."""
    created = ensure_database(require_postgres=require_postgres)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return created


# Figures ------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def verdict(ok: bool) -> str:
    """How a figure stands against its target."""
    return "meets" if ok else "MISSES"


# Child processes ----------------------------------------------------------------------------


def start(args: list[str], log: Path | None = None) -> subprocess.Popen:
    """``python -m *args`` in the project root and this environment; its output goes to
    ``log``, or nowhere."""
    with open(log or os.devnull, "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def start_worker(
    queues: str,
    *,
    concurrency: int,
    pool: str = "threads",
    log: Path | None = None,
    heartbeat: bool = True,
    name: str = "",
) -> subprocess.Popen:
    """A Celery worker on ``queues`` (comma-separated), ``pool`` (threads unless told), quiet;
    ``name``: its node name, needed when several run on one machine."""
    args = [*CELERY, "worker", "-Q", queues, "-P", pool, "-c", str(concurrency)]
    if name:
        args += ["-n", name]
    args += ["-l", "warning", "--without-gossip", "--without-mingle"]
    if not heartbeat:
        args.append("--without-heartbeat")
    return start(args, log)


def purge_queues(queues: str) -> None:
    """Drop the tasks waiting on ``queues`` (comma-separated; the bench's own, never shared
    ones): tasks a stopped run left behind would only slow the next one down."""
    purge = [sys.executable, "-m", *CELERY, "purge", "-f", "-Q", queues]
    subprocess.run(purge, cwd=ROOT, capture_output=True)


def start_daphne(port: int, log: Path | None = None) -> subprocess.Popen:
    """A daphne process serving the app on 127.0.0.1:``port``."""
    return start(["daphne", "-b", "127.0.0.1", "-p", str(port), "arena.asgi:application"], log)


def wait_until_serving(port: int, server: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    """Returns once the server on ``port`` answers a page; RuntimeError if it exits first or
    takes longer than ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/leaderboard/", timeout=2).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {log}") from None
            time.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a process has used: all its threads, its live descendants
    and the children it has reaped (``/proc/<pid>/stat`` utime, stime, cutime, cstime)."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)"
        except OSError:  # gone meanwhile
            continue
        parent[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(x) for x in fields[11:15])
    children = defaultdict(list)
    for child, ppid in parent.items():
        children[ppid].append(child)
    total, todo = 0, [pid]
    while todo:
        proc = todo.pop()
        total += ticks.get(proc, 0)
        todo += children[proc]
    return total / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# Data ---------------------------------------------------------------------------------------


def only_mock_models(prefix: str, backend_settings: dict, **defaults: Any) -> None:
    """``{prefix} A`` and ``{prefix} B`` on the mock backend become the only active models."""
    from arena.catalog.models import ModelEntry

    ModelEntry.objects.filter(active=True).exclude(public_name__startswith=f"{prefix} ").update(
        active=False
    )
    for name in (f"{prefix} A", f"{prefix} B"):
        ModelEntry.objects.update_or_create(
            public_name=name,
            defaults={
                "model_id": name.lower().replace(" ", "-"),
                "backend": "mock",
                "backend_settings": backend_settings,
                **defaults,
                "active": True,
            },
        )


def raters(tag: str, n: int) -> list[Any]:
    """``n`` new raters with verified addresses, ``<tag>-<i>@bench.local``."""
    from accounts.models import User

    users = []
    for i in range(n):
        user = User.objects.create_user(f"{tag}-{i}@bench.local", password=None)
        verify_email(user)
        users.append(user)
    return users


def verify_email(user: Any) -> None:
    """The user's address, verified and primary, and the rater's terms accepted: enough to
    rate."""
    from allauth.account.models import EmailAddress
    from django.conf import settings

    from accounts.services import terms_accept

    EmailAddress.objects.update_or_create(
        user=user, email=user.email, defaults={"verified": True, "primary": True}
    )
    terms_accept(user=user, version=settings.TERMS["VERSION"])


def session_cookie(user: Any) -> str:
    """A Cookie header value (``name=value``) that signs ``user`` in."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"
