"""No sticky sessions: a battle started through one web process is shown and voted through
another, two real daphne processes sharing PostgreSQL and Redis, as behind a load balancer."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from arena.battles.models import Battle
from tests.helpers import (
    answer_texts,
    assert_no_identity,
    pane_text,
    real_socket,
    session_headers,
    socket_frames_until,
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
