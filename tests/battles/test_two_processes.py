"""No sticky sessions: a battle started through one web process is shown and voted through
another, two real daphne processes sharing PostgreSQL and Redis, as behind a load balancer; and
a rater has one battle generating across both."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from arena.battles.services import ABANDONED
from arena.records.models import Answer, Battle
from tests.helpers import (
    answer_texts,
    assert_no_identity,
    make_model,
    pane_text,
    real_socket,
    session_headers,
    socket_frames_until,
    wait_until,
)

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL,
    reason="web processes share battles through Redis; the embedded default is one process",
)


async def test_a_battle_started_on_one_web_process_is_shown_and_voted_on_another(
    asgi_servers, alice, two_models
):
    one, two = asgi_servers
    headers = await database_sync_to_async(session_headers)(alice)
    async with real_socket(one, headers) as sock:
        await sock.send(json.dumps({"action": "start", "prompt": "Explain recursion briefly."}))
        (started,) = await socket_frames_until(sock, "battle")
    battle_id = started["battle"]  # the first socket is gone, mid-stream or later

    async with real_socket(two, headers) as sock:
        await sock.send(json.dumps({"action": "resume", "battle": battle_id}))
        frames = await socket_frames_until(sock, "turn_complete", "void", "error")
        assert (frames[0]["battle"], frames[0]["resumed"]) == (battle_id, True)
        assert frames[-1]["type"] == "turn_complete"
        answers = await database_sync_to_async(answer_texts)(battle_id)
        assert (pane_text(frames, "a"), pane_text(frames, "b")) == (answers["a"], answers["b"])
        assert_no_identity(json.dumps(frames), two_models)

        await sock.send(json.dumps({"action": "vote", "battle": battle_id, "choice": "tie"}))
        (revealed,) = await socket_frames_until(sock, "revealed")
    assert revealed["choice"] == "tie"
    status = await database_sync_to_async(lambda: Battle.objects.get(pk=battle_id).status)()
    assert status == Battle.Status.VOTED


def _stalling_pair() -> None:
    # Neither ends by itself before the deadline: only a stop ends their answers early.
    make_model("Stuck Heron", "stuck-heron", misbehaviour="stall")
    make_model("Slow Heron", "slow-heron", tokens_per_s=4, answer_tokens=400)


def _answers(battle_id: str) -> list[Answer]:
    return list(Answer.objects.filter(turn__battle_id=battle_id))


async def test_a_battle_started_on_another_web_process_abandons_the_one_still_generating(
    asgi_servers, alice
):
    one, two = asgi_servers
    await database_sync_to_async(_stalling_pair)()
    headers = await database_sync_to_async(session_headers)(alice)
    async with real_socket(one, headers) as first, real_socket(two, headers) as second:
        await first.send(json.dumps({"action": "start", "prompt": "Tell me a long story."}))
        (started,) = await socket_frames_until(first, "battle")
        await database_sync_to_async(wait_until)(
            lambda: {a.status for a in _answers(started["battle"])} == {Answer.Status.RUNNING}
        )
        await second.send(json.dumps({"action": "start", "prompt": "Another long story."}))
        (other,) = await socket_frames_until(second, "battle")
        battles = await database_sync_to_async(
            lambda: {str(b.pk): (b.status, b.void_reason) for b in Battle.objects.all()}
        )()
        assert battles[started["battle"]] == (Battle.Status.VOID, ABANDONED)
        assert battles[other["battle"]][0] == Battle.Status.GENERATING
        # Stopped where they ran, within a heartbeat: no model time for a battle nobody sees.
        await database_sync_to_async(wait_until)(
            lambda: all(a.is_terminal for a in _answers(started["battle"]))
        )
        answers = await database_sync_to_async(_answers)(started["battle"])
        assert {a.error_kind for a in answers} == {"stopped"}
