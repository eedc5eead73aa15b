"""A GPU pool's limits hold across every worker: two real Celery worker processes, one
replica with a cap of one, never two requests on it at once."""

from __future__ import annotations

import asyncio

import pytest
from django.conf import settings

from arena.backends.pools import pools_forget
from arena.battles.prompts import prompt_create
from arena.battles.services import battle_start
from arena.catalog.models import ModelEntry
from arena.devtools.processes import CeleryProcess
from arena.records.models import Answer
from tests.helpers import ROOT, make_user, serving, subprocess_env, wait_for_answers

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL, reason="workers share pool state through Redis; CI sets REDIS_URL"
)
QUEUE = "pool-cluster-test"
SLOW = {"ttft_ms": 120, "tokens_per_s": 0, "answer_tokens": 8}


def test_a_replica_cap_of_one_holds_across_two_worker_processes(generation):
    with serving(models={"m-a": SLOW, "m-b": SLOW}) as server:
        replicas = {"replicas": [{"base_url": server.url}], "max_concurrency": 1, "queue": QUEUE}
        for name, model_id in (("Pool A", "m-a"), ("Pool B", "m-b")):
            ModelEntry.objects.create(
                public_name=name, vendor=name.lower(), model_id=model_id,
                backend=ModelEntry.Backend.OPENAI_COMPATIBLE, backend_settings=replicas,
                supported_params=["temperature", "top_p", "max_tokens"],
            )  # fmt: skip
        # Two processes of the pool's own, one task at a time each: both take part.
        workers = [
            CeleryProcess(
                "worker",
                ROOT / "var" / f"test-cluster-worker-{i}.log",
                env=subprocess_env(),
                queues=QUEUE,
                concurrency=1,
            )  # fmt: skip
            for i in range(2)
        ]
        for worker in workers:
            worker.start()
        try:
            battles = []
            for i in range(8):
                prompt, _ = prompt_create(text=f"Question {i}: why is the sky blue?")
                rater = make_user(f"rater{i}@example.com")
                battles.append(battle_start(rater=rater, text=prompt.text, prompt_id=prompt.pk))
            for battle in battles:
                wait_for_answers(battle.pk, limit_s=120)
        finally:
            for worker in workers:
                worker.stop()
            pools_forget([server.url.rstrip("/")])
        statuses = set(Answer.objects.values_list("status", flat=True))
        assert statuses == {Answer.Status.OK}
        assert server.requests == 16
        assert server.max_in_flight == 1


async def test_a_dead_workers_lease_lapses_and_frees_its_slot():
    from arena.backends.pool_state import RedisState, Replica

    state = RedisState(settings.REDIS_URL, lease_s=0.3)
    replica = Replica("http://127.0.0.1:1/v1/lease-test", cap=1, health={})
    try:
        held = await state.acquire([replica], set(), 0)
        assert held is not False and held is not None
        assert await state.acquire([replica], set(), 0) is False  # at its cap
        # Its worker died: nobody renews the lease. The slot frees itself.
        for _ in range(100):
            got = await state.acquire([replica], set(), 0)
            if got not in (False, None):
                break
            await asyncio.sleep(0.05)
        assert got not in (False, None)
    finally:
        state.forget([replica.url])
