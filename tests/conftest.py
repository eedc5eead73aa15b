"""Fixtures: named users and models, and the real moving parts the suite runs against.

With REDIS_URL set (CI), generation goes through a real Celery worker process started here, the
answer streams are on Redis and the database is whatever DATABASE_URL names (PostgreSQL in CI). With
no environment, the same tests run on the embedded default. Helpers live in tests/helpers.py.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import CodeType, ModuleType
from urllib.parse import urlsplit

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.devtools.http_server import HTTPServer
from arena.devtools.processes import (
    AppStack,
    CeleryProcess,
    DaphneServer,
    PostgresCluster,
    RedisServer,
)
from tests import databases
from tests.backends.vendors import TEST_ALLOW_HOSTS, TEST_SECRET_ENV_PREFIXES
from tests.helpers import (
    FAST_PASSWORD_HASHERS,
    LOGS,
    ROOT,
    SAME_ORIGIN,
    WORKER_TURN_DEADLINE_S,
    make_two_models,
    make_user,
    session_headers,
    subprocess_env,
    wait_for_answers,
)

# pytest-xdist -------------------------------------------------------------------------------
# `-n N` runs the tests in N worker processes. pytest-django gives each a test database of its
# own; here each also gets a Redis database of its own (so one worker's Celery worker never
# takes another's tasks, and sockets, caches and streams keyed by ids that both databases hand
# out stay apart) and a folder of its own for its servers' logs (LOGS).


databases.flush_install()  # a transactional test's flush by DELETE: see tests/databases.py


def worker_redis_url(url: str, worker: str, workers: int) -> str:
    """Worker ``gwK`` of ``workers`` on Redis database base + K * (16 // workers), modulo 16:
    runs on different base databases keep apart for as long as there are few workers."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    index = (base + int(worker.removeprefix("gw")) * (16 // workers)) % 16
    return parts._replace(path=f"/{index}").geturl()


def pytest_configure(config: pytest.Config) -> None:
    # Made by the first process (xdist's controller, before its workers), used by every one.
    databases.template_use(config)
    databases.main_connection_keep()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    LOGS.mkdir(parents=True, exist_ok=True)
    if not settings.REDIS_URL:
        return
    from django.test.utils import override_settings

    from arena.celery import app

    url = worker_redis_url(settings.REDIS_URL, worker, int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    caches = {"default": {**settings.CACHES["default"], "LOCATION": url}}
    # Before anything connects: the settings read at import time, and what servers and
    # workers started later inherit (subprocess_env copies this environment).
    override_settings(REDIS_URL=url, CELERY_BROKER_URL=url, CACHES=caches).enable()
    app.conf.broker_url = url
    os.environ["REDIS_URL"] = url


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's, and before it drops the test database, the sessions still open on it
    (a server's, a thread's) ended, so the drop neither waits nor fails (tests/databases.py)."""
    yield
    with django_db_blocker.unblock():
        databases.others_end()


@pytest.fixture(autouse=True)
def _fast_pacing(settings):
    settings.ARENA = {**settings.ARENA, "PACE_TICK_MS": 2, "PACE_CHARS": 60, "TURN_DEADLINE_S": 30}
    # Rate-limit counters of our own, not shared with earlier runs against the same Redis.
    settings.RATELIMIT_CACHE_PREFIX = f"rl-test-{uuid.uuid4().hex}:"


@pytest.fixture(autouse=True)
def _fresh_public_figures(settings):
    """The public judge tab's figures come fresh: a cached copy would outlive its test."""
    settings.CALIBRATION = {**settings.CALIBRATION, "PUBLIC_MAX_AGE_S": 0}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """The default hasher costs a fifth of a second per user made or signed in; no test is
    about its strength."""
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


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


@pytest.fixture
def two_models(db) -> tuple[ModelEntry, ModelEntry]:
    return make_two_models()


# Real processes -----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker) -> Iterator[CeleryProcess | None]:
    """A real Celery worker process on the test database, when generation runs on Celery."""
    if settings.GENERATION_MODE != "celery":
        yield None
        return
    env = subprocess_env()
    queues = f"{settings.GENERATION_QUEUE},default"
    subprocess.run(
        [sys.executable, "-m", "celery", "-A", "arena", "purge", "-f", "-Q", queues],
        env=env,
        cwd=ROOT,
        check=False,
        capture_output=True,
    )
    log = LOGS / "test-celery-worker.log"
    log.write_text("")
    worker = CeleryProcess("worker", log, env=env, queues=queues)
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def generation(transactional_db, celery_worker) -> Iterator[None]:
    """Tests that generate answers: committed data, and a worker when Celery is in use.

    Afterwards it ends every battle the test left generating, as a rater's Stop does, so that
    their answers stop within a heartbeat instead of at the deadline, and waits for the worker
    to finish: a task still writing while the tables are flushed for the next test would
    deadlock with the flush. An answer still open well past the deadline fails the test.
    """
    yield
    if celery_worker is not None:
        from arena.battles.ending import battle_void
        from arena.records.models import Battle

        for battle_id in Battle.objects.filter(status=Battle.Status.GENERATING).values_list(
            "pk", flat=True
        ):
            battle_void(battle_id=battle_id, reason="the test is over")
        wait_for_answers(limit_s=2.5 * WORKER_TURN_DEADLINE_S)
        _tag_jobs_settle()


def _tag_jobs_settle(limit_s: float = 3.0) -> None:
    """Each vote sends a tagging job once it commits (tagging.services.votes_tag_later); let
    those the worker is running write their rows before the flush, which would otherwise wait
    on them, and they on it. Only a rater's vote sends one (the demo's simulated votes are
    written straight to the log). A job that never ran (a test that stopped the worker) is no
    failure of this test: the flush empties its queue's work anyway."""
    from arena.records.models import Vote

    untagged = Vote.objects.filter(tag_rows__isnull=True, simulated=False)
    deadline = time.monotonic() + limit_s
    while untagged.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture
def ws_connect() -> Callable[[User | None], Awaitable[WebsocketCommunicator]]:
    """Open a websocket through the real ASGI router, signed in as ``user`` (or not)."""
    from arena.asgi import application

    async def connect(user: User | None) -> WebsocketCommunicator:
        headers = SAME_ORIGIN
        if user is not None:
            headers = await database_sync_to_async(session_headers)(user)
        return WebsocketCommunicator(application, "/ws/battle/", headers=headers)

    return connect


@contextlib.contextmanager
def daphne_process(log_name: str) -> Iterator[DaphneServer]:
    server = DaphneServer(LOGS / log_name, env=subprocess_env())
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _web_process(django_db_setup, celery_worker) -> Iterator[DaphneServer]:
    """One web process for every test that only needs one: starting daphne costs seconds, and
    no test leaves state in it that the next could see (the database is flushed between tests,
    ids are never reused, and what it keeps in memory is keyed by them)."""
    with daphne_process("test-daphne.log") as server:
        yield server


@pytest.fixture
def asgi_server(generation, _web_process) -> str:
    if _web_process.proc.poll() is not None:  # a test brought it down: the next gets a fresh one
        _web_process.start()
    return _web_process.url


@pytest.fixture
def asgi_servers(generation) -> Iterator[tuple[str, str]]:
    """Two web processes on the same database and Redis, as a deployment behind a balancer."""
    with daphne_process("test-daphne-1.log") as one, daphne_process("test-daphne-2.log") as two:
        yield one.url, two.url


@pytest.fixture
def daphne_server(generation) -> Iterator[DaphneServer]:
    """One web process that a test may kill and start again on the same address."""
    with daphne_process("test-daphne-killed.log") as server:
        yield server


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
    """A Playwright page in Debian's Chromium (no browser download). Without one, the test is
    skipped with the reason on a developer's machine, and fails where ARENA_CHROMIUM names one
    that is missing (CI sets it)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        if "ARENA_CHROMIUM" in os.environ or os.environ.get("CI"):
            pytest.fail(f"ARENA_CHROMIUM names {CHROMIUM}, which does not exist")
        pytest.skip(
            f"no Chromium at {CHROMIUM}: install Debian's chromium, or set ARENA_CHROMIUM to one"
        )

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


@pytest.fixture(autouse=True)
def _backends_reach_test_servers(settings):
    """Test servers listen on loopback, which backends refuse unless allowed, and tests name
    key variables of their own: both allowed here as an operator would allow theirs (server
    and worker subprocesses get the same through helpers.subprocess_env)."""
    settings.ARENA_BACKEND_ALLOW_HOSTS = list(TEST_ALLOW_HOSTS)
    settings.ARENA_SECRET_ENV_PREFIXES = list(TEST_SECRET_ENV_PREFIXES)


# The fast layer -----------------------------------------------------------------------------
# `pytest -m fast`: every test that starts no server and no process (pure and database tests).
# Told from the code a test runs, so a new test lands in its layer without a marker of its own:
# it is not fast when it carries a slow layer's marker, uses a fixture that starts something
# (live_server, or one whose body does), or its body or a function of the tests' own that it
# calls names a server class, a process or subprocess.

SLOW_MARKERS = {"browser", "faults"}
SERVER_FIXTURES = {"live_server"}  # pytest-django's: a threaded server of its own
SERVER_TYPES = (HTTPServer, DaphneServer, CeleryProcess, RedisServer, PostgresCluster, AppStack)
SERVER_NAMES = {"subprocess", "multiprocessing", "Popen", "sync_playwright", "daphne_process"}


def _server_names() -> set[str]:
    """SERVER_NAMES and every server class's name, subclasses included (a name imported inside
    a function is not in its globals to look at)."""
    names, types = set(SERVER_NAMES), list(SERVER_TYPES)
    while types:
        kind = types.pop()
        names.add(kind.__name__)
        types += kind.__subclasses__()
    return names


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _starts_servers(func: object, seen: dict[object, bool], servers: set[str]) -> bool:
    """Whether calling ``func`` starts a server or a process, directly or through a function
    of the tests' own."""
    func = inspect.unwrap(func)
    if func in seen:
        return seen[func]
    seen[func] = False  # a recursion comes back here: it adds nothing
    code = getattr(func, "__code__", None)
    found = False
    if code is not None:
        scope = getattr(func, "__globals__", {})
        for name in {n for c in _codes(code) for n in c.co_names}:
            value = scope.get(name)
            if name in servers or (isinstance(value, type) and issubclass(value, SERVER_TYPES)):
                found = True
            elif (
                inspect.isfunction(value)
                and value.__module__.split(".")[0] == "tests"
                and _starts_servers(value, seen, servers)
            ):
                found = True
            elif isinstance(value, ModuleType) and value.__name__ in servers:
                found = True
            if found:
                break
    seen[func] = found
    return found


def _is_fast(item: pytest.Item, seen: dict[object, bool], servers: set[str]) -> bool:
    if any(item.get_closest_marker(m) for m in SLOW_MARKERS):
        return False
    names = getattr(item, "fixturenames", ())
    if SERVER_FIXTURES.intersection(names):
        return False
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    fixtures = [d.func for name in names for d in defs.get(name, ())]
    funcs = [getattr(item, "obj", None), *fixtures]
    return not any(_starts_servers(f, seen, servers) for f in funcs)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[object, bool] = {}
    servers = _server_names()
    for item in items:
        if _is_fast(item, seen, servers):
            item.add_marker(pytest.mark.fast)
