"""Replica routing, caps, failover and health, against real local mock servers."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers import ask, pooled

pytestmark = pytest.mark.django_db  # the pool publishes replica state through the cache

FAST = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20}
SLOW = {"ttft_ms": 80, "tokens_per_s": 200, "answer_tokens": 20}


async def test_requests_spread_to_the_least_loaded_replica(servers):
    reps = await servers(SLOW, SLOW)
    backend = pooled(reps, max_concurrency=1)
    results = await asyncio.gather(ask(backend, "one"), ask(backend, "two"))
    assert [r.status for r in results] == ["ok", "ok"]
    assert {r.replica for r in results} == {reps[0].url.rstrip("/"), reps[1].url.rstrip("/")}
    assert [s.max_in_flight for s in reps] == [1, 1]


async def test_requests_beyond_every_cap_queue_instead_of_overloading(servers):
    (rep,) = await servers(SLOW)
    backend = pooled([rep], max_concurrency=2)
    results = await asyncio.gather(*(ask(backend, f"q{i}") for i in range(5)))
    assert all(r.status == "ok" for r in results)
    assert rep.requests == 5 and rep.max_in_flight == 2


async def test_a_failure_before_the_first_token_is_retried_on_another_replica(servers):
    broken, good = await servers(FAST, FAST)
    broken.fail_with = 500
    backend = pooled([broken, good], fail_threshold=100)
    results = [await ask(backend, f"q{i}") for i in range(20)]  # ties go either way
    assert all(r.status == "ok" and r.replica == good.url.rstrip("/") for r in results)
    assert broken.attempts >= 1 and good.requests == 20


async def test_a_failure_after_the_first_token_is_not_retried(servers):
    flaky, good = await servers({**FAST, "misbehaviour": "error_midstream"}, FAST)
    results = [await ask(pooled([flaky, good], fail_threshold=100)) for _ in range(20)]
    partial = [r for r in results if r.status == "partial"]
    assert partial and all(r.text and r.replica == flaky.url.rstrip("/") for r in partial)
    assert good.attempts == len(results) - len(partial)  # none asked again elsewhere


async def test_rejected_requests_are_not_retried_and_do_not_mark_a_replica_down(servers):
    a, b = await servers(FAST, FAST, api_key="right-key")
    backend = pooled([a, b], fail_threshold=1)
    result = await ask(backend)
    assert result.status == "error" and result.error_kind == "auth"
    assert a.attempts + b.attempts == 1
    assert not any(backend.pool.is_down(r) for r in backend.pool.replicas)


async def test_a_failing_replica_is_marked_down_then_probed_back_up(servers):
    bad, good = await servers(FAST, FAST)
    bad.fail_with = 500
    bad.healthy = False
    backend = pooled([bad, good], fail_threshold=2, probe_interval_s=0.02, slow_start_s=0)
    for _ in range(200):  # ties go either way: until the bad one has failed twice
        if bad.attempts == 2:
            break
        assert (await ask(backend)).status == "ok"
    assert bad.attempts == 2
    replica = next(r for r in backend.pool.replicas if r.url == bad.url.rstrip("/"))
    assert backend.pool.is_down(replica)
    assert (await ask(backend)).replica == good.url.rstrip("/")
    assert bad.attempts == 2  # a down replica gets no traffic

    bad.fail_with = None
    bad.healthy = True
    for _ in range(500):  # the prober runs in its own thread; give it its interval
        if not backend.pool.is_down(replica):
            break
        await asyncio.sleep(0.01)
    assert not backend.pool.is_down(replica)
    results = await asyncio.gather(*(ask(backend, f"x{i}") for i in range(4)))
    assert bad.url.rstrip("/") in {r.replica for r in results}


async def test_no_healthy_replica_is_a_clear_error(servers):
    (bad,) = await servers(FAST)
    bad.fail_with = 500
    result = await ask(pooled([bad]))
    assert result.status == "error" and result.error_kind == "server"


async def test_a_rate_limited_lone_replica_is_retried_after_its_retry_after(servers):
    (limited,) = await servers({**FAST, "misbehaviour": "rate_limited"})
    result = await ask(pooled([limited]))
    assert result.status == "error" and result.error_kind == "rate_limited"
    assert limited.attempts == 2  # asked again once, after the Retry-After it was given
