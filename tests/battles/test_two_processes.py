"""No sticky sessions: a battle started through one web process is shown and voted through
another, two real daphne processes sharing PostgreSQL and Redis, as behind a load balancer."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from websockets.asyncio.client import connect

from arena.battles.models import Battle
from tests.helpers import (
    RECEIVE_TIMEOUT,
    answer_texts,
    assert_no_identity,
    pane_text,
    session_headers,
)

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL,
    reason="web processes share battles through Redis; the embedded default is one process",
)


def socket_to(url: str, headers: list[tuple[bytes, bytes]]):
    cookie = dict(headers)[b"cookie"].decode()
    return connect(
        f"ws://{urlsplit(url).netloc}/ws/battle/",
        additional_headers={"Cookie": cookie, "Origin": url},
        open_timeout=RECEIVE_TIMEOUT,
    )


async def frames_until(sock, *types: str) -> list[dict]:
    seen: list[dict] = []
    while not seen or seen[-1]["type"] not in types:
        seen.append(json.loads(await sock.recv(decode=True)))
    return seen


async def test_a_battle_started_on_one_web_process_is_shown_and_voted_on_another(
    asgi_servers, alice, two_models
):
    one, two = asgi_servers
    headers = await database_sync_to_async(session_headers)(alice)
    async with socket_to(one, headers) as sock:
        await sock.send(json.dumps({"action": "start", "prompt": "Explain recursion briefly."}))
        (started,) = await frames_until(sock, "battle")
    battle_id = started["battle"]  # the first socket is gone, mid-stream or later

    async with socket_to(two, headers) as sock:
        await sock.send(json.dumps({"action": "resume", "battle": battle_id}))
        frames = await frames_until(sock, "turn_complete", "void", "error")
        assert (frames[0]["battle"], frames[0]["resumed"]) == (battle_id, True)
        assert frames[-1]["type"] == "turn_complete"
        answers = await database_sync_to_async(answer_texts)(battle_id)
        assert (pane_text(frames, "a"), pane_text(frames, "b")) == (answers["a"], answers["b"])
        assert_no_identity(json.dumps(frames), two_models)

        await sock.send(json.dumps({"action": "vote", "battle": battle_id, "choice": "tie"}))
        (revealed,) = await frames_until(sock, "revealed")
    assert revealed["choice"] == "tie"
    status = await database_sync_to_async(lambda: Battle.objects.get(pk=battle_id).status)()
    assert status == Battle.Status.VOTED
