"""Replica routing, caps, failover and health, against real local mock servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from arena.backends.base import ChatRequest, Message
from arena.backends.registry import backend_for
from arena.devtools.mock_server import MockServer
from arena.generation.runner import stream_answer

pytestmark = pytest.mark.django_db  # the pool publishes replica state through the cache

FAST = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20}
SLOW = {"ttft_ms": 80, "tokens_per_s": 200, "answer_tokens": 20}


def request(text: str = "hello") -> ChatRequest:
    return ChatRequest("m", (Message("user", text),), {"max_tokens": 40})


async def ask(backend, text: str = "hello"):
    async def ignore(_: str) -> None:
        return None

    return await stream_answer(
        backend, request(text), on_delta=ignore, max_chars=10_000, timeout_s=10
    )


Servers = Callable[..., Awaitable[list[MockServer]]]


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    """Start one mock replica per settings; every one is stopped, even when a test fails."""
    started: list[MockServer] = []

    async def start(*model_settings: dict, **kwargs) -> list[MockServer]:
        batch = []
        for settings in model_settings:
            server = await MockServer(models={"m": settings}, **kwargs).start()
            started.append(server)
            batch.append(server)
        return batch

    try:
        yield start
    finally:
        for server in started:
            await server.stop()


def pooled(replicas: list[MockServer], **settings):
    return backend_for(
        "openai_compatible", {"replicas": [{"base_url": r.url} for r in replicas], **settings}
    )


async def test_requests_spread_to_the_least_loaded_replica(servers: Servers):
    reps = await servers(SLOW, SLOW)
    backend = pooled(reps, max_concurrency=1)
    results = await asyncio.gather(ask(backend, "one"), ask(backend, "two"))
    assert [r.status for r in results] == ["ok", "ok"]
    assert {r.replica for r in results} == {reps[0].url.rstrip("/"), reps[1].url.rstrip("/")}
    assert [s.max_in_flight for s in reps] == [1, 1]


async def test_requests_beyond_every_cap_queue_instead_of_overloading(servers: Servers):
    (rep,) = await servers(SLOW)
    backend = pooled([rep], max_concurrency=2)
    results = await asyncio.gather(*(ask(backend, f"q{i}") for i in range(5)))
    assert all(r.status == "ok" for r in results)
    assert rep.requests == 5 and rep.max_in_flight == 2


async def test_a_failure_before_the_first_token_is_retried_on_another_replica(servers: Servers):
    broken, good = await servers(FAST, FAST)
    broken.fail_with = 500
    result = await ask(pooled([broken, good]))
    assert result.status == "ok" and result.replica == good.url.rstrip("/")
    assert broken.attempts == 1 and good.requests == 1


async def test_a_failure_after_the_first_token_is_not_retried(servers: Servers):
    flaky, good = await servers({**FAST, "misbehaviour": "error_midstream"}, FAST)
    result = await ask(pooled([flaky, good]))
    assert result.status == "partial" and result.text
    assert result.replica == flaky.url.rstrip("/")
    assert good.attempts == 0


async def test_rejected_requests_are_not_retried_and_do_not_mark_a_replica_down(servers: Servers):
    a, b = await servers(FAST, FAST, api_key="right-key")
    backend = pooled([a, b], fail_threshold=1)
    result = await ask(backend)
    assert result.status == "error" and result.error_kind == "auth"
    assert a.attempts + b.attempts == 1
    assert not any(r.down for r in backend.pool.replicas)


async def test_a_failing_replica_is_marked_down_then_probed_back_up(servers: Servers):
    bad, good = await servers(FAST, FAST)
    bad.fail_with = 500
    bad.healthy = False
    backend = pooled([bad, good], fail_threshold=2, probe_interval_s=0.02)
    for _ in range(2):
        assert (await ask(backend)).status == "ok"
    assert bad.attempts == 2
    replica = next(r for r in backend.pool.replicas if r.url == bad.url.rstrip("/"))
    assert replica.down
    assert (await ask(backend)).replica == good.url.rstrip("/")
    assert bad.attempts == 2  # a down replica gets no traffic

    bad.fail_with = None
    bad.healthy = True
    for _ in range(500):  # the prober runs in its own thread; give it its interval
        if not replica.down:
            break
        await asyncio.sleep(0.01)
    assert not replica.down
    results = await asyncio.gather(*(ask(backend, f"x{i}") for i in range(4)))
    assert bad.url.rstrip("/") in {r.replica for r in results}


async def test_no_healthy_replica_is_a_clear_error(servers: Servers):
    (bad,) = await servers(FAST)
    bad.fail_with = 500
    result = await ask(pooled([bad]))
    assert result.status == "error" and result.error_kind == "server"


async def test_a_rate_limited_lone_replica_is_retried_after_its_retry_after(servers: Servers):
    (limited,) = await servers({**FAST, "misbehaviour": "rate_limited"})
    result = await ask(pooled([limited]))
    assert result.status == "error" and result.error_kind == "rate_limited"
    assert limited.attempts == 2  # asked again once, after the Retry-After it was given
