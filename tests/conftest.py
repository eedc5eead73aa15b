"""Named users, small model factories, and the real moving parts the suite runs against.

With REDIS_URL set (CI), generation goes through a real Celery worker process started here, the
channel layer is Redis and the database is whatever DATABASE_URL names (PostgreSQL in CI). With
no environment, the same tests run on the embedded default.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from accounts.models import User
from arena.catalog.models import ModelEntry

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct-horse-battery-staple"


SESSION_RATELIMIT_PREFIX = f"rl-test-{uuid.uuid4().hex}:"


@pytest.fixture(autouse=True)
def _fast_pacing(settings):
    settings.ARENA = {**settings.ARENA, "PACE_TICK_MS": 2, "PACE_CHARS": 60, "TURN_DEADLINE_S": 30}
    # Rate-limit counters of our own, not shared with earlier runs against the same Redis.
    settings.RATELIMIT_CACHE_PREFIX = f"rl-test-{uuid.uuid4().hex}:"


def make_user(email: str, *, verified: bool = True, **extra) -> User:
    """A rater; crowd raters need a verified email to battle, so by default they have one."""
    from allauth.account.models import EmailAddress

    user = User.objects.create_user(email, PASSWORD, **extra)
    EmailAddress.objects.create(user=user, email=user.email, verified=verified, primary=True)
    return user


@pytest.fixture
def alice(db) -> User:
    return make_user("alice@example.com")


@pytest.fixture
def bob(db) -> User:
    return make_user("bob@example.com")


@pytest.fixture
def staff(db) -> User:
    return make_user("admin@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(staff) -> Client:
    """A client signed in as a superuser (replaces pytest-django's fixture of that name)."""
    client = Client()
    client.force_login(staff)
    return client


def make_model(name: str, model_id: str, *, organisation: str = "", vendor: str = "", **mock):
    return ModelEntry.objects.create(
        public_name=name,
        organisation=organisation,
        vendor=vendor,
        model_id=model_id,
        backend=ModelEntry.Backend.MOCK,
        backend_settings={"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 40, **mock},
        supported_params=["temperature", "top_p", "max_tokens"],
    )


def make_two_models(**extra) -> tuple[ModelEntry, ModelEntry]:
    """Two fast mock models whose names, ids and vendors are easy to spot in any payload."""
    return (
        make_model(
            "Zephyr Quill",
            "zq-large-001",
            organisation="Nimbus Research",
            vendor="Nimbusvendor",
            style="markdown",
            **extra,
        ),
        make_model(
            "Orchid Lantern",
            "ol-small-002",
            organisation="Basalt Labs",
            vendor="Basaltvendor",
            style="plain",
            answer_tokens=25,
            **extra,
        ),
    )


@pytest.fixture
def two_models(db) -> tuple[ModelEntry, ModelEntry]:
    return make_two_models()


def identity_strings(*models: ModelEntry) -> list[str]:
    out: list[str] = []
    for m in models:
        out += [m.public_name, m.model_id, m.organisation, m.vendor, m.backend]
        wire = m.backend_settings
        out += [str(wire[k]) for k in ("base_url", "api_key_env") if k in wire]
    return [s for s in out if s]


# Real processes -----------------------------------------------------------------------------


def subprocess_env() -> dict[str, str]:
    """The environment a server or worker needs to share this test session's database."""
    db = connections["default"].settings_dict
    env = dict(os.environ)
    if db["ENGINE"].endswith("postgresql"):
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env["ARENA_PACE_TICK_MS"] = "5"
    env["ARENA_PACE_CHARS"] = "60"
    # Short, so a deliberately stalled answer is over before the next test flushes the tables.
    env["ARENA_TURN_DEADLINE_S"] = "8"
    env["RATELIMIT_CACHE_PREFIX"] = SESSION_RATELIMIT_PREFIX
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a child for good before the test database it uses is dropped."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen | None]:
    """A real Celery worker process on the test database, when generation runs on Celery."""
    if settings.GENERATION_MODE != "celery":
        yield None
        return
    env = subprocess_env()
    celery = [sys.executable, "-m", "celery", "-A", "arena"]
    queues = f"{settings.GENERATION_QUEUE},default"
    subprocess.run(
        [*celery, "purge", "-f", "-Q", queues], env=env, cwd=ROOT, check=False, capture_output=True
    )
    log = open(ROOT / "var" / "test-celery-worker.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            *celery,
            "worker",
            "-Q",
            queues,
            "-P",
            "threads",
            "-c",
            "8",
            "-l",
            "warning",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield proc
    _stop(proc, signal.SIGQUIT)  # cold shutdown: stalled mock streams need not finish
    log.close()


@pytest.fixture
def generation(transactional_db, celery_worker) -> Iterator[None]:
    """Tests that generate answers: committed data, and a worker when Celery is in use.

    Afterwards it waits for the worker to finish what the test started: a task still writing
    while the tables are flushed for the next test would deadlock with the flush.
    """
    yield
    if celery_worker is not None:
        import time

        from arena.battles.models import Answer

        deadline = time.monotonic() + 12
        while (
            time.monotonic() < deadline
            and Answer.objects.filter(
                status__in=[Answer.Status.PENDING, Answer.Status.RUNNING]
            ).exists()
        ):
            time.sleep(0.05)


def session_headers(user: User) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return [
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()),
        (b"origin", b"http://testserver"),
    ]


@pytest.fixture
def ws_connect() -> Callable[[User | None], Awaitable[WebsocketCommunicator]]:
    """Open a websocket through the real ASGI router, signed in as ``user`` (or not)."""
    from arena.asgi import application

    async def connect(user: User | None) -> WebsocketCommunicator:
        headers = [(b"origin", b"http://testserver")]
        if user is not None:
            headers = await database_sync_to_async(session_headers)(user)
        return WebsocketCommunicator(application, "/ws/battle/", headers=headers)

    return connect


def wait_for_answers(battle_id: object, *, limit_s: float = 30.0) -> None:
    """Block until every answer of the battle is finished (a worker may be producing them)."""
    import time

    from arena.battles.models import Answer

    deadline = time.monotonic() + limit_s
    while Answer.objects.filter(turn__battle_id=battle_id, finished_at__isnull=True).exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"answers of battle {battle_id} did not finish in {limit_s} s")
        time.sleep(0.05)


def ready_battle(rater: User, text: str = "What is a monad?"):
    """A battle whose answers are complete and shown, ready for a vote."""
    from arena.battles.models import Battle
    from arena.battles.prompts import prompt_create
    from arena.battles.services import battle_start, turn_mark_shown

    # A curated prompt, as a drawn one would be (gold items can only come from those).
    prompt, _ = prompt_create(text=text)
    battle = battle_start(rater=rater, text=text, prompt_id=prompt.pk)
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get(index=0).pk)
    return Battle.objects.get(pk=battle.pk)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def asgi_server(generation) -> Iterator[str]:
    """The real app under daphne in its own process, on this test's committed data."""
    import time
    import urllib.request

    port = _free_port()
    log = open(ROOT / "var" / "test-daphne.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "arena.asgi:application",
        ],
        env=subprocess_env(),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/leaderboard/", timeout=2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"daphne did not start; see {log.name}") from None
            time.sleep(0.1)
    yield url
    _stop(proc)
    log.close()


CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser_page():
    """A Playwright page in Debian's Chromium (no browser download)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test itself only talks to
    # the database between browser steps, never concurrently with them.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        page.console_log = console
        try:
            yield page
        finally:
            # Queries made while Playwright's loop runs land on a context-local connection
            # that the usual teardown never sees; close it here, in the same context.
            connections.close_all()
            if console:
                print("browser console:", *console, sep="\n  ")
            browser.close()
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
