"""Votes under faults: sent as the web process is killed, or while PostgreSQL restarts; the
client retries as the page does, and every vote is stored exactly once and answered with the
reveal. Generation waits out the database's restart too."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from arena.devtools.rater import RaterSocket
from arena.records.models import Vote
from tests.helpers import make_two_models, session_headers

pytestmark = pytest.mark.faults

BATTLES = 6


async def ready_battles(rater: RaterSocket, n: int) -> list[str]:
    ids = []
    for i in range(n):
        battle_id, last = await rater.battle(f"Is {i * 7 + 3} a prime number?")
        assert last["type"] == "turn_complete", last
        ids.append(battle_id)
    return ids


def stored_votes() -> dict[str, int]:
    counts: dict[str, int] = {}
    for battle_id in Vote.objects.values_list("battle_id", flat=True):
        counts[str(battle_id)] = counts.get(str(battle_id), 0) + 1
    return counts


async def test_votes_in_flight_as_the_web_process_is_killed_are_each_stored_once(stack, alice):
    await database_sync_to_async(make_two_models)()
    cookie = dict(await database_sync_to_async(session_headers)(alice))[b"cookie"].decode()
    async with RaterSocket(stack.daphne.url, cookie) as rater:
        ids = await ready_battles(rater, BATTLES)
        for battle_id in ids:  # all sent at once, no reply awaited: then the process dies
            await rater.sock.send(
                json.dumps({"action": "vote", "battle": battle_id, "choice": "a"})
            )
        stack.daphne.kill()
        stack.daphne.start()
        replies = [await rater.vote(battle_id, "a") for battle_id in ids]
    assert [r["type"] for r in replies] == ["revealed"] * BATTLES
    assert rater.tally.reconnects >= 1
    assert await database_sync_to_async(stored_votes)() == dict.fromkeys(ids, 1)


async def test_votes_across_a_redis_restart_are_each_stored_once(stack, alice):
    await database_sync_to_async(make_two_models)()
    cookie = dict(await database_sync_to_async(session_headers)(alice))[b"cookie"].decode()
    async with RaterSocket(stack.daphne.url, cookie) as rater:
        ids = await ready_battles(rater, BATTLES)
        half = BATTLES // 2
        before = [await rater.vote(battle_id, "tie") for battle_id in ids[:half]]
        stack.redis.restart()  # kill -9 and back, empty: rate-limit counters and streams gone
        during = [await rater.vote(battle_id, "tie") for battle_id in ids[half:]]
        await ready_battles(rater, 1)  # and a battle after it works
    assert [r["type"] for r in before + during] == ["revealed"] * BATTLES
    assert await database_sync_to_async(stored_votes)() == {**dict.fromkeys(ids, 1)}
    assert all(worker.alive() for worker in stack.workers)


async def test_votes_while_postgresql_restarts_are_each_stored_once(postgres_stack):
    stack, cluster = postgres_stack.stack, postgres_stack.cluster
    async with RaterSocket(stack.daphne.url, postgres_stack.cookie) as rater:
        ids = await ready_battles(rater, BATTLES)
        half = BATTLES // 2
        before = [await rater.vote(battle_id, "b") for battle_id in ids[:half]]
        await asyncio.to_thread(cluster.kill)
        # Down for a while, then back: the votes sent meanwhile are refused as unavailable
        # and sent again until they land.
        back = asyncio.get_running_loop().run_in_executor(None, restart_after, cluster, 1.5)
        during = [await rater.vote(battle_id, "b") for battle_id in ids[half:]]
        await back
    assert [r["type"] for r in before + during] == ["revealed"] * BATTLES
    assert rater.tally.unavailable >= 1
    assert postgres_stack.votes() == dict.fromkeys(ids, 1)
    assert all(worker.alive() for worker in stack.workers)


@pytest.mark.mock(ttft_ms=1500)
async def test_a_battle_generating_while_postgresql_restarts_still_completes(postgres_stack):
    stack, cluster = postgres_stack.stack, postgres_stack.cluster
    async with RaterSocket(stack.daphne.url, postgres_stack.cookie) as rater:
        await rater.sock.send(json.dumps({"action": "start", "prompt": "Explain recursion."}))
        frames = [json.loads(await rater.sock.recv())]
        assert frames[0]["type"] == "battle"
        # The worker has claimed the answers, or is about to: the database goes away under it
        # for longer than the model takes, so its finish (or claim) meets the outage.
        await asyncio.to_thread(cluster.kill)
        await asyncio.to_thread(restart_after, cluster, 2.5)
        last = (await rater.request({"action": "resume", "battle": frames[0]["battle"]},
                                    "turn_complete", "void"))[-1]  # fmt: skip
    assert last["type"] == "turn_complete", last
    assert all(worker.alive() for worker in stack.workers)


def restart_after(cluster, seconds: float) -> None:
    import time

    time.sleep(seconds)  # how long the outage lasts, not a wait for something to happen
    cluster.start()
