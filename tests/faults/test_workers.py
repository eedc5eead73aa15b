"""Workers killed, and Redis restarted under them: no battle is stranded, the next one works."""

from __future__ import annotations

import json
import time

import pytest
from channels.db import database_sync_to_async

from arena.records.models import Answer, Battle
from tests.helpers import make_two_models, real_socket, session_headers, socket_frames_until

pytestmark = pytest.mark.faults

START = json.dumps({"action": "start", "prompt": "Explain recursion briefly."})


def battle_of(battle_id: str) -> Battle:
    return Battle.objects.get(pk=battle_id)


async def next_battle_works(sock) -> None:
    await sock.send(START)
    frames = await socket_frames_until(sock, "turn_complete", "void", "error")
    assert frames[-1]["type"] == "turn_complete", frames[-1]


async def test_a_worker_killed_mid_answer_voids_the_battle_in_seconds_not_at_the_deadline(
    stack, alice
):
    await database_sync_to_async(make_two_models)(tokens_per_s=8)  # 5 s of text a side
    headers = await database_sync_to_async(session_headers)(alice)
    async with real_socket(stack.daphne.url, headers) as sock:
        await sock.send(START)
        battle_id = (await socket_frames_until(sock, "battle"))[-1]["battle"]
        await socket_frames_until(sock, "delta")  # text is showing
        stack.workers[0].kill()
        killed = time.monotonic()
        stack.start_worker()  # as its supervisor would (compose: restart unless-stopped)
        # The deadline is a minute away: only the heartbeat can end the battle this soon
        # (each frame is waited for at most RECEIVE_TIMEOUT).
        frames = await socket_frames_until(sock, "void", "turn_complete")
        print(f"void {time.monotonic() - killed:.1f} s after the kill")
        assert frames[-1]["type"] == "void"
        battle = await database_sync_to_async(battle_of)(battle_id)
        assert (battle.status, battle.void_reason) == (Battle.Status.VOID, "a model server stopped")
        await next_battle_works(sock)


async def test_a_worker_killed_before_any_text_has_its_answers_handed_to_another(stack, alice):
    await database_sync_to_async(make_two_models)(ttft_ms=3000)  # a slow first token
    headers = await database_sync_to_async(session_headers)(alice)
    async with real_socket(stack.daphne.url, headers) as sock:
        await sock.send(START)
        battle_id = (await socket_frames_until(sock, "battle"))[-1]["battle"]
        await database_sync_to_async(wait_running)(battle_id)
        stack.workers[0].kill()
        stack.start_worker()
        frames = await socket_frames_until(sock, "turn_complete", "void")
        assert frames[-1]["type"] == "turn_complete"
        requeues = await database_sync_to_async(
            lambda: set(
                Answer.objects.filter(turn__battle_id=battle_id).values_list("requeues", flat=True)
            )
        )()
        assert requeues == {1}


def wait_running(battle_id: str) -> None:
    answers = Answer.objects.filter(turn__battle_id=battle_id)
    deadline = time.monotonic() + 30
    while answers.exclude(status=Answer.Status.RUNNING).exists():
        assert time.monotonic() < deadline, "the worker never claimed the answers"
        time.sleep(0.05)


async def test_redis_restarted_mid_generation_leaves_the_worker_up_and_the_battle_ended(
    stack, alice
):
    await database_sync_to_async(make_two_models)(tokens_per_s=8)
    headers = await database_sync_to_async(session_headers)(alice)
    async with real_socket(stack.daphne.url, headers) as sock:
        await sock.send(START)
        battle_id = (await socket_frames_until(sock, "battle"))[-1]["battle"]
        await socket_frames_until(sock, "delta")
        stack.redis.restart()  # kill -9, then a fresh one on the same port: nothing kept
        frames = await socket_frames_until(sock, "void", "turn_complete")
        battle = await database_sync_to_async(battle_of)(battle_id)
        if frames[-1]["type"] == "void":  # text was lost with Redis: ended, and said why
            assert battle.status == Battle.Status.VOID and frames[-1]["message"]
        else:  # every piece landed after all: shown whole
            assert battle.status == Battle.Status.READY
        assert all(worker.alive() for worker in stack.workers)
        await next_battle_works(sock)
    assert all(worker.alive() for worker in stack.workers)
