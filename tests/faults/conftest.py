"""Fault tests: the app's real processes on a Redis (and, where the fault is the database's, a
PostgreSQL cluster) of the test's own, killed and restarted for real. The shared servers are
never touched. They run where CI runs, on PostgreSQL.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from django.db import connection

from arena.devtools.processes import (
    APP_ROLE,
    AppStack,
    PostgresCluster,
    RedisServer,
    database_create,
)
from tests.helpers import LOGS, subprocess_env

# Long, so that only the heartbeat or the fault itself, never the deadline, can end a battle.
FAULT_TURN_DEADLINE_S = 60


def stack_env(*, redis_url: str, database_url: str | None = None) -> dict[str, str]:
    env = subprocess_env()
    env.update(
        REDIS_URL=redis_url,
        GENERATION_MODE="celery",
        ARENA_TURN_DEADLINE_S=str(FAULT_TURN_DEADLINE_S),
        EVALS_STALE_S="4",  # a killed worker's evaluation is picked up in seconds
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def stack_start(env: dict[str, str], redis: RedisServer) -> AppStack:
    return AppStack(env, redis, logs=LOGS, name="faults").start()


def require_fault_tools() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("fault tests run on PostgreSQL (CI sets DATABASE_URL)")
    if shutil.which("redis-server") is None:
        pytest.skip("fault tests start their own redis-server")


@pytest.fixture
def stack(transactional_db) -> Iterator[AppStack]:
    """The whole app on a Redis of its own and the test database."""
    require_fault_tools()
    redis = RedisServer()
    redis.start()
    stack = stack_start(stack_env(redis_url=redis.url), redis)
    yield stack
    stack.stop()


SEED = """
from django.conf import settings
from django.test import Client
from tests.helpers import make_two_models, make_user
make_two_models(**MOCK)
client = Client()
client.force_login(make_user("pia@example.com"))
name = settings.SESSION_COOKIE_NAME
print("COOKIE", f"{name}={client.cookies[name].value}")
"""


@dataclass
class PostgresStack:
    stack: AppStack
    cluster: PostgresCluster
    cookie: str  # a signed-in rater's session cookie

    def votes(self) -> dict[str, int]:
        """Votes stored per battle, read as the owner."""
        with psycopg.connect(self.cluster.url("arena")) as conn:
            rows = conn.execute("SELECT battle_id, count(*) FROM arena_vote GROUP BY battle_id")
            return {str(battle): n for battle, n in rows}


@pytest.fixture
def postgres_stack(request) -> Iterator[PostgresStack]:
    """The whole app on a PostgreSQL cluster and a Redis of its own, connected as a role that
    does not own the tables (grant_app_role), with one rater and two mock models
    (``@pytest.mark.mock(...)`` sets their backend settings)."""
    require_fault_tools()
    cluster = PostgresCluster()
    redis = RedisServer()
    try:
        cluster.init()
        cluster.start()
        marker = request.node.get_closest_marker("mock")
        seed = SEED.replace("MOCK", repr(marker.kwargs if marker else {}))
        printed = database_create(cluster, stack_env(redis_url=""), seed=seed)
        cookie = printed.split("COOKIE", 1)[1].strip()
        redis.start()
        env = stack_env(redis_url=redis.url, database_url=cluster.url("arena", role=APP_ROLE))
        stack = stack_start(env, redis)
    except Exception:
        redis.stop()
        cluster.stop()
        raise
    yield PostgresStack(stack, cluster, cookie)
    stack.stop()
    cluster.stop()
