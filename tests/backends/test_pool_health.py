"""A replica back from down: probed the way its server can answer (with the model's key, on a
path it has), not dog-piled by the next requests, and ramped in over its slow start."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from arena.backends.pools import health_check
from arena.backends.registry import backend_for
from tests.helpers import ask, pooled

pytestmark = pytest.mark.django_db  # the pool publishes replica state through the cache

FAST = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20}
SLOW = {"ttft_ms": 150, "tokens_per_s": 0, "answer_tokens": 20}


async def recover(backend, bad) -> None:
    """Take ``bad`` down through real failures, then let the prober bring it back."""
    bad.fail_with, bad.healthy = 500, False
    replica = next(r for r in backend.pool.replicas if r.url == bad.url.rstrip("/"))
    for _ in range(200):
        if backend.pool.is_down(replica):
            break
        await ask(backend)
    assert backend.pool.is_down(replica)
    bad.fail_with, bad.healthy = None, True
    for _ in range(500):
        if not backend.pool.is_down(replica):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the replica was never probed back up")


async def test_a_recovered_replica_is_not_sent_every_next_request(servers):
    bad, *others = await servers(FAST, FAST, FAST)
    backend = pooled([bad, *others], fail_threshold=1, probe_interval_s=0.02, slow_start_s=0)
    await recover(backend, bad)
    counts = Counter([(await ask(backend, f"q{i}")).replica for i in range(30)])
    # Ties go at random, not to the replica that has served least in its lifetime.
    assert counts[bad.url.rstrip("/")] < 20
    assert all(counts[o.url.rstrip("/")] >= 1 for o in others)


async def test_a_recovered_replica_is_ramped_in_over_its_slow_start(servers):
    bad, good = await servers(SLOW, SLOW)
    backend = pooled([bad, good], fail_threshold=1, probe_interval_s=0.02,
                     slow_start_s=60, max_concurrency=4)  # fmt: skip
    await recover(backend, bad)
    bad.max_in_flight = good.max_in_flight = 0
    results = await asyncio.gather(*(ask(backend, f"x{i}") for i in range(6)))
    assert all(r.status == "ok" for r in results)
    assert bad.max_in_flight == 1  # its cap starts at one, back from down
    assert good.max_in_flight >= 4


async def test_the_probe_sends_the_models_key_and_asks_a_path_every_server_has(
    servers, monkeypatch
):
    (keyed,) = await servers(FAST, api_key="pool-key")
    settings = {"replicas": [{"base_url": keyed.url}], "api_key_env": "POOL_TEST_KEY",
                "fail_threshold": 1, "probe_interval_s": 0.02, "slow_start_s": 0}  # fmt: skip
    monkeypatch.setenv("POOL_TEST_KEY", "pool-key")
    backend = backend_for("openai_compatible", settings)
    (replica,) = backend.pool.replicas
    assert replica.health["url"] == keyed.url.rstrip("/") + "/models"
    assert replica.health["headers"] == {"Authorization": "Bearer pool-key"}
    await recover(backend, keyed)  # /v1/models with the key: 200 once it is back
    assert (await ask(backend)).status == "ok"


def test_health_checks_can_name_their_path_method_and_status():
    # A path beside /v1 (llama.cpp's /health) is reached relative to base_url, never by URL.
    health = {"path": "../health", "status": 200}
    check = health_check({"base_url": "http://gpu-1:8080/v1", "health": health})
    assert (check["url"], check["method"], check["status"]) == (
        "http://gpu-1:8080/health",
        "GET",
        200,
    )
    ollama = health_check({"base_url": "http://ollama:11434/v1", "health": {"auth": False}})
    assert (ollama["url"], ollama["headers"]) == ("http://ollama:11434/v1/models", {})
    legacy = health_check({"base_url": "http://x/v1", "health_url": "http://x/healthz"})
    assert legacy["url"] == "http://x/healthz"
